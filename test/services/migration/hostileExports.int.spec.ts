import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { JOBS, uploadExport, waitForPhase } from '../../support/externalImport';
import { HttpClient } from '../../support/server';
import { zipOf } from './zipWriter';

const PASSWORD = 'migration-password-1';
const FIXTURES = path.join(__dirname, 'fixtures');
const complete = () => fs.readFileSync(path.join(FIXTURES, 'export-complete.json'), 'utf8');
const USERS = '{"schema": {"id": "id", "email": "string"}, "data": [{"id": 11, "email": "alice@example.com"}]}';

/** A stable code of docs/errors.md's external-tool migration section. */
const documentedCodes = (): string[] => {
  const doc = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'errors.md'), 'utf8');
  return [...doc.matchAll(/^\| `((?:export|external-import)-[a-z-]+)` \|/gm)].map((m) => m[1]);
};

/**
 * Issue 35, section 2: migration analysis ended in external-import-internal-error for a 65,000
 * character entry name, 30,000 datasets, datasets named `__proto__` and `constructor`, and a row
 * holding an array 200,000 levels deep. Each is uploaded through the API to a worker: the job ends
 * with a stable, documented code (or a correct analysis), never the internal error, and the
 * worker goes on analysing the next upload.
 */
describe('External-tool migration: hostile exports end with a stable code, the worker stays healthy', function () {
  this.timeout(300_000);
  let app: TestApp;
  let admin: HttpClient;

  before(async () => {
    app = await startTestApp({ worker: {} });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
  });
  after(() => app?.stop());

  /** Uploads and waits for the job to end its analysis; then a good export is still analysed (the worker is healthy). */
  const analysed = async (content: Buffer | string, name: string) => {
    const up = await uploadExport(app.url, admin, content, name);
    expect(up.status, JSON.stringify(up.body)).to.equal(201);
    const job = await waitForPhase(admin, up.body.data.jobId, ['analysed', 'failed'], 180_000);
    const next = await uploadExport(app.url, admin, complete(), 'export-complete.json');
    expect(next.status, JSON.stringify(next.body)).to.equal(201);
    const healthy = await waitForPhase(admin, next.body.data.jobId, ['analysed', 'failed']);
    expect(healthy.phase, `the next upload: ${JSON.stringify(healthy.error)}`).to.equal('analysed');
    return job;
  };
  const expectFailedWith = (job: any, code: string) => {
    expect(job.phase, JSON.stringify(job)).to.equal('failed');
    expect(job.error.code, JSON.stringify(job.error)).to.equal(code);
    expect(documentedCodes(), 'the code is in docs/errors.md').to.include(code);
  };

  it('a ZIP entry named with 65,000 characters: export-name-too-long', async () => {
    const name = `${'a'.repeat(65_000 - '.json'.length)}.json`;
    const job = await analysed(zipOf([{ name: 'users.json', content: USERS }, { name, content: '{"data": [{"id": 1}]}' }]), 'long-name.zip');
    expectFailedWith(job, 'export-name-too-long');
    expect(job.error.details).to.include({ length: 65_000, maxLength: 1000 });
    expect(JSON.stringify(job.error).length, 'the name is not repeated in the answer').to.be.below(5000);
  });

  it('30,000 datasets: export-too-many-datasets', async () => {
    const datasets = Array.from({ length: 30_000 }, (_, i) => `"dataset_${i}": {"data": [{"id": ${i}}]}`);
    const job = await analysed(`{"users": ${USERS}, ${datasets.join(', ')}}`, 'many.json');
    expectFailedWith(job, 'export-too-many-datasets');
    expect(job.error.details).to.include({ maxDatasets: 1000 });
  });

  it('datasets named __proto__ and constructor: analysed, listed as unknown datasets with their rows', async () => {
    // Written as JSON text: a JavaScript object literal would not keep a key named __proto__.
    const text = `{"users": ${USERS}, "__proto__": {"data": [{"id": 1, "__proto__": {"polluted": true}}, {"id": 2}]}, `
      + '"constructor": {"data": [{"id": 3}]}, "toString": [{"id": 4}], "hasOwnProperty": {"rows": []}}';
    const job = await analysed(text, 'prototype.json');
    expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
    const byName = new Map((job.datasets as any[]).map((d) => [d.name, d]));
    expect([...byName.keys()].sort()).to.deep.equal(['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'users']);
    expect(byName.get('__proto__')).to.deep.include({ disposition: 'skip', rowCount: 2, errors: [] });
    expect(byName.get('__proto__').skipReason).to.match(/^unknown dataset/);
    // The row's own key stays its own: the sample shows it, no prototype was set.
    expect(Object.keys(byName.get('__proto__').sampleRows[0])).to.deep.equal(['id', '__proto__']);
    expect(byName.get('constructor')).to.deep.include({ disposition: 'skip', rowCount: 1 });
    expect(byName.get('toString')).to.deep.include({ disposition: 'skip', rowCount: 1 });
    expect(byName.get('hasOwnProperty')).to.deep.include({ disposition: 'skip', rowCount: 0 });
    expect(byName.get('users')).to.deep.include({ disposition: 'import', rowCount: 1, errors: [] });
    expect(({} as Record<string, unknown>).polluted, 'Object.prototype untouched').to.equal(undefined);
    // The staged rows per dataset count them as the analysis does.
    const staged = await app.deps.knex('external_import_staged').where({ job_id: job.jobId }).first('counts');
    expect(staged.counts).to.deep.equal(JSON.parse('{"users": 1, "__proto__": 2, "constructor": 1, "toString": 1}'));
    // The preview of an export with prototype-named datasets lists them as not placed, like any unknown dataset.
    expect((await admin.request('PUT', `${JOBS}/${job.jobId}/configuration`, {})).status).to.equal(200);
    const preview = await admin.post(`${JOBS}/${job.jobId}/preview`);
    expect(preview.status, JSON.stringify(preview.body)).to.equal(200);
  });

  it('a row holding an array 200,000 levels deep: export-row-too-deep', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const job = await analysed(`{"users": ${USERS}, "repository_cases": {"data": [{"id": 1, "title": "deep", "custom_x": ${deep}}]}}`, 'deep.json');
    expectFailedWith(job, 'export-row-too-deep');
    expect(job.error.details).to.include({ dataset: 'repository_cases', row: 0, maxDepth: 64 });
  });
});
