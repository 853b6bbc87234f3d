import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { readModelProjection } from '../../../projections/readModel';
import { rebuildProjection } from '../../../projections/runtime/rebuild';
import { generateExport } from '../../../scripts/generateExport';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { cutConnections, restoreConnections, type TestDatabase } from '../../support/database';
import { HttpClient } from '../../support/server';
import { JOBS, uploadExport, waitForPhase } from '../../support/externalImport';
import { waitUntil } from '../../support/wait';
import { zipOf } from './zipWriter';
import { FAILURE_STATUS } from '../../../projections/search/documents';
import { caughtUp, documents, expected, indexed, postgresEngine, startIndexer } from '../../projections/search/support';

const PASSWORD = 'migration-password-1';
const FIXTURES = path.join(__dirname, 'fixtures');
const complete = () => JSON.parse(fs.readFileSync(path.join(FIXTURES, 'export-complete.json'), 'utf8'));

/** A test app whose worker runs external imports with these settings, its defaults seeded, and an administrator signed in. */
async function appWithAdmin(worker: NonNullable<Parameters<typeof startTestApp>[0]>['worker']): Promise<{ app: TestApp; admin: HttpClient }> {
  const app = await startTestApp({ worker });
  const meta = systemMetadata('test');
  await seedDefaults(app.deps, meta);
  await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
  const admin = new HttpClient(app.url);
  expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
  return { app, admin };
}

/** A generated export (scripts/generateExport.ts) of one project as one JSON file: `cases` with steps, `runs`, `results`. */
async function generatedExport(size: { cases: number; runs: number; results: number }, seed: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const sink = new Writable({ write: (chunk, _e, done) => void (chunks.push(chunk), done()) });
  await generateExport({ ...size, projects: 1, users: 4, seed, format: 'json', matchEmails: [] }, sink);
  return Buffer.concat(chunks);
}
// Slow: starts 3 test apps and imports 5 generated exports of 150 cases and 600 results in 25-row chunks, rolling 3 back, through database outages of 3 s and 2 s and 2 read-model rebuilds
describe('External-tool migration: jobs through the API and a worker', function () {
  this.timeout(240_000);
  let app: TestApp;
  let admin: HttpClient;
  let user: HttpClient;
  let aliceId: number;
  let adminId: number;
  const upload = (content: Buffer | string, name = 'export.json') => uploadExport(app.url, admin, content, name);
  /** Uploads and waits for the analysis. */
  const analysed = async (content: Buffer | string, name?: string) => {
    const up = await upload(content, name);
    expect(up.status, JSON.stringify(up.body)).to.equal(201);
    return waitForPhase(admin, up.body.data.jobId, ['analysed', 'failed']);
  };
  /** Rows not deleted. */
  const find = async (entity: string, args: { where?: Record<string, unknown> } & Record<string, unknown>) => {
    const res = await admin.post(`/api/model/${entity}/findMany`, { ...args, where: { ...args.where, isDeleted: false } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data as any[];
  };

  before(async () => {
    app = await startTestApp({ worker: { chunkSize: 2, limits: { maxCompressionRatio: 50, ratioCheckFromBytes: 256 * 1024 } }, externalImportMaxBytes: 2 * 1024 * 1024 });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    adminId = await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    await registerUser(app.deps, { email: 'user@example.com', name: 'User', password: PASSWORD, access: 'USER' }, meta);
    aliceId = await registerUser(app.deps, { email: 'Alice@Example.com', name: 'Alice (here)', password: PASSWORD, access: 'USER' }, meta);
    admin = new HttpClient(app.url);
    user = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
    expect((await user.post('/api/auth/login', { email: 'user@example.com', password: PASSWORD })).status).to.equal(200);
  });
  after(() => app.stop());

  describe('upload and analysis', () => {
    it('analyses an export: per dataset its rows and samples, the datasets it cannot place skipped with the reason, sources and suggestions', async () => {
      const job = await analysed(JSON.stringify(complete()), 'export-complete.json');
      expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
      expect(job.file).to.include({ name: 'export-complete.json', container: 'json', deleted: false });
      expect(job.createdBy).to.include({ id: adminId, email: 'admin@example.com' });
      const cases = job.datasets.find((d: any) => d.name === 'repository_cases');
      expect(cases).to.include({ disposition: 'import', rowCount: 1, samplesTruncated: false });
      expect(cases.sampleRows[0]).to.include({ key: 'C1001' });
      const issues = job.datasets.find((d: any) => d.name === 'issues');
      expect(issues).to.include({ disposition: 'skip', skipReason: 'this service has no issue entity yet' });
      expect(job.sources.users.map((s: any) => s.name)).to.deep.equal(['alice@example.com', 'ci-bot@example.com']);
      // Alice has an account here (the e-mail matched without regard to case); the CI bot does not.
      expect(job.suggestions.users).to.deep.equal([{ sourceId: '11', action: 'map', targetId: aliceId }, { sourceId: '12', action: 'create' }]);
      expect(job.suggestions.statuses.every((e: any) => e.action === 'map'), 'passed, failed, untested exist').to.equal(true);
      expect(job.suggestions.tags).to.deep.equal([{ sourceId: '1', action: 'create' }, { sourceId: '2', action: 'create' }]);
    });

    it('lists jobs newest first, paged, without sample rows', async () => {
      const newest = (await analysed(JSON.stringify(complete()))).jobId;
      const page = await admin.get(`${JOBS}?take=1`);
      expect(page.body.data[0].jobId).to.equal(newest);
      expect(page.status).to.equal(200);
      expect(page.body.data).to.have.length(1);
      expect(page.body.data[0].datasets[0].sampleRows).to.equal(undefined);
      expect(page.body.data[0]).not.to.have.property('sources');
      expect(page.body.nextCursor).to.be.a('string');
      const next = await admin.get(`${JOBS}?take=1&cursor=${page.body.nextCursor}`);
      expect(next.body.data[0].jobId).to.be.lessThan(newest);
      const analysedOnly = await admin.get(`${JOBS}?phase=analysed`);
      expect(analysedOnly.body.data.every((j: any) => j.phase === 'analysed')).to.equal(true);
    });

    it('refuses what is not an export, and non-administrators, appending nothing', async () => {
      expect((await expectRefused(app, () => upload('hello, world', 'notes.txt'), 400)).code).to.equal('export-not-recognised');
      expect((await expectRefused(app, () => upload(Buffer.alloc(0), 'empty.json'), 400)).code).to.equal('empty-file');
      expect((await expectRefused(app, () => uploadExport(app.url, admin, '{}', 'x.json', 'other'), 400)).code).to.equal('unexpected-field');
      expect((await expectRefused(app, () => upload(Buffer.alloc(3 * 1024 * 1024, 0x7b), 'big.json'), 413)).code).to.equal('payload-too-large');
      expect((await expectRefused(app, () => uploadExport(app.url, user, '{}'), 403)).code).to.equal('forbidden');
      expect((await expectRefused(app, () => uploadExport(app.url, new HttpClient(app.url), '{}'), 401)).code).to.equal('unauthenticated');
      expect((await expectRefused(app, () => user.get(JOBS), 403)).code).to.equal('forbidden');
      expect((await expectRefused(app, () => admin.get(`${JOBS}/abc`), 400)).code).to.equal('invalid-argument');
      expect((await expectRefused(app, () => admin.get(`${JOBS}/999999`), 404)).code).to.equal('external-import-not-found');
      expect((await expectRefused(app, () => admin.get(`${JOBS}?take=0`), 400)).code).to.equal('invalid-argument');
    });

    it('fails the job on a hostile or broken file, with the reader\'s code, and deletes the file', async () => {
      const cases: Array<[string, Buffer | string, string]> = [
        ['zip slip', zipOf([{ name: '../evil.json', content: '{"users":{"data":[]}}' }]), 'export-unsafe-entry'],
        ['truncated JSON', '{"users":{"data":[{"id":1,"email":"a@b.c"}', 'export-truncated'],
        ['a ZIP without an export', zipOf([{ name: 'readme.txt', content: 'hello' }]), 'export-no-datasets'],
        ['invalid JSON', '{"users":{"data":[{"id":1,}]}}', 'export-invalid-json'],
        // 1 MiB of blanks in a few KiB: far past the ratio allowed here (50).
        ['zip bomb', zipOf([{ name: 'users.json', content: Buffer.concat([Buffer.from('{"users":{"data":[]}}'), Buffer.alloc(1024 * 1024, 0x20)]) }]), 'export-compression-ratio'],
      ];
      for (const [what, content, code] of cases) {
        const job = await analysed(content, Buffer.isBuffer(content) ? 'export.zip' : 'export.json');
        expect(job.phase, what).to.equal('failed');
        expect(job.error.code, what).to.equal(code);
        await waitUntil(async () => (await admin.get(`${JOBS}/${job.jobId}`)).body.data.file.deleted === true, `${what}: the file deleted`);
        const [uploaded] = await app.deps.store.readStream(`externalImport-${job.jobId}`, { maxCount: 1 });
        expect(await app.appDeps.files.localPath((uploaded.data as { storedAs: string }).storedAs), `${what}: gone from UPLOAD_DIR`).to.equal(null);
      }
    });

    it('reads TestPlanIt\'s own fixtures in every container shape, and a ZIP of one entry per dataset', async () => {
      const zipped = zipOf(Object.entries(complete()).filter(([name]) => name !== 'meta').map(([name, dataset]) => ({ name: `export/${name}.json`, content: JSON.stringify(dataset) })));
      for (const [name, content] of [
        ['export-top-level.json', fs.readFileSync(path.join(FIXTURES, 'export-top-level.json'))],
        ['export-with-container.json', fs.readFileSync(path.join(FIXTURES, 'export-with-container.json'))],
        ['export-array.json', fs.readFileSync(path.join(FIXTURES, 'export-array.json'))],
        ['export-template-fields.json', fs.readFileSync(path.join(FIXTURES, 'export-template-fields.json'))],
        ['per-dataset.zip', zipped],
      ] as const) {
        const job = await analysed(content, name);
        expect(job.phase, `${name}: ${JSON.stringify(job.error)}`).to.equal('analysed');
        // The small top-level fixture has cases of a project it does not export: they cannot be placed, and are counted (a warning).
        if (name === 'export-top-level.json') expect(job.warnings.map((e: any) => e.code)).to.deep.equal(['dataset-missing']);
        if (name === 'per-dataset.zip') {
          expect(job.datasets.find((d: any) => d.name === 'repository_cases')).to.include({ rowCount: 1, disposition: 'import' });
          const preview = await admin.post(`${JOBS}/${job.jobId}/preview`);
          expect(preview.body.data.datasets.find((d: any) => d.dataset === 'repository_cases')).to.include({ create: 1 });
        }
      }
    });

    it('warns when rows cannot be placed (a parent dataset missing), counting them; the preview lists them as skipped with the reason', async () => {
      const job = await analysed(JSON.stringify({ runs: { data: [{ id: 1, project_id: 5, name: 'orphan' }, { id: 2, project_id: 5, name: 'orphan too' }] } }));
      expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
      expect(job.warnings.map((w: any) => [w.code, w.details.skipped])).to.deep.equal([['dataset-missing', { 'runs.project_id': 2 }]]);
      const preview = await admin.post(`${JOBS}/${job.jobId}/preview`);
      expect(preview.body.data.datasets.find((d: any) => d.dataset === 'runs')).to.deep.include({ rows: 2, skip: 2, skipReasons: { 'its project is not imported': 2 } });
    });
  });

  describe('configuration', () => {
    let jobId: number;
    before(async () => {
      jobId = (await analysed(JSON.stringify(complete()))).jobId;
    });
    const put = (body: unknown) => admin.request('PUT', `${JOBS}/${jobId}/configuration`, body);

    it('refuses a bad mapping naming the entry, saving nothing', async () => {
      const tag = (await admin.post('/api/model/tag/create', { data: { name: 'regression' } })).body.data.id;
      const refusals: Array<[unknown, string, string]> = [
        [{ mappings: { colours: [] } }, 'invalid-argument', 'mappings.colours'],
        [{ mappings: { tags: [{ sourceId: '99', action: 'create' }] } }, 'invalid-mapping', 'mappings.tags[0].sourceId'],
        [{ mappings: { tags: [{ sourceId: '1', action: 'map', targetId: 987654 }] } }, 'invalid-mapping', 'mappings.tags[0].targetId'],
        // A user id is not a tag: a target of the wrong kind does not exist among tags.
        [{ mappings: { tags: [{ sourceId: '1', action: 'map', targetId: aliceId + 100000 }] } }, 'invalid-mapping', 'mappings.tags[0].targetId'],
        [{ mappings: { tags: [{ sourceId: '1', action: 'map' }] } }, 'invalid-argument', 'mappings.tags[0].targetId'],
        [{ mappings: { tags: [{ sourceId: '1', action: 'delete' }] } }, 'invalid-argument', 'mappings.tags[0].action'],
        [{ mappings: { tags: [{ sourceId: '1', action: 'skip' }, { sourceId: '1', action: 'create' }] } }, 'invalid-mapping', 'mappings.tags[1].sourceId'],
        [{ mappings: { states: [{ sourceId: '1', action: 'create', kind: 'caseField' }] } }, 'invalid-argument', 'mappings.states[0].kind'],
        // "regression" exists now: creating it again is refused before the import runs.
        [{ mappings: { tags: [{ sourceId: '2', action: 'create' }] } }, 'mapping-name-taken', 'mappings.tags[1].action'],
        [{ durationUnit: 'minutes' }, 'invalid-argument', 'durationUnit'],
        [{ reset: true, mappings: {} }, 'invalid-argument', 'mappings'],
      ];
      for (const [body, code, at] of refusals) {
        const error = await expectRefused(app, () => put(body), 400);
        expect(error.code, JSON.stringify(body)).to.equal(code);
        expect(error.details.path, JSON.stringify(body)).to.equal(at);
      }
      const mapped = await put({ mappings: { tags: [{ sourceId: '2', action: 'map', targetId: tag }] } });
      expect(mapped.status, JSON.stringify(mapped.body)).to.equal(200);
      expect(mapped.body.data.phase).to.equal('configured');
      expect(mapped.body.data.mappings.tags).to.deep.equal([{ sourceId: '1', action: 'create' }, { sourceId: '2', action: 'map', targetId: tag }]);
      // Reset restores the suggestions, checked again: the suggested create of "regression" would be refused now.
      const reset = await expectRefused(app, () => put({ reset: true }), 400);
      expect(reset.code).to.equal('mapping-name-taken');
      expect(reset.details.path).to.equal('mappings.tags[1].action');
    });

    it('previews without writing: per dataset what would be created, mapped and skipped', async () => {
      const before = (await app.deps.store.headPosition()).toString();
      const res = await admin.post(`${JOBS}/${jobId}/preview`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect((await app.deps.store.headPosition()).toString()).to.equal(before);
      const of = (name: string) => res.body.data.datasets.find((d: any) => d.dataset === name);
      expect(of('users')).to.include({ rows: 2, create: 1, map: 1, skip: 0 });
      expect(of('repository_cases')).to.include({ rows: 1, create: 1 });
      expect(of('repository_folders')).to.include({ rows: 1, create: 1 });
      expect(res.body.data.skipped.map((s: any) => s.dataset)).to.include('issues');
    });

    it('cancels a job waiting for its mappings at once', async () => {
      const other = (await analysed(JSON.stringify(complete()))).jobId;
      const res = await admin.post(`${JOBS}/${other}/cancel`);
      expect(res.status, JSON.stringify(res.body)).to.equal(202);
      expect(res.body.data.phase).to.equal('cancelled');
      // The worker tidies the ended job up (ExternalImportClosed) on its own time: the refusal below is checked after that append.
      await waitUntil(async () => Boolean(await app.deps.knex('external_import_jobs').where({ job_id: other, closed: true }).first('job_id')), 'the cancelled job closed');
      expect((await expectRefused(app, () => admin.post(`${JOBS}/${other}/execute`), 409)).code).to.equal('external-import-cancelled');
    });

    it('refuses to execute before the mappings are saved, and a rollback before the import ended', async () => {
      const other = (await analysed(JSON.stringify(complete()))).jobId;
      expect((await expectRefused(app, () => admin.post(`${JOBS}/${other}/execute`), 409)).code).to.equal('external-import-not-configured');
      expect((await expectRefused(app, () => admin.post(`${JOBS}/${other}/rollback`), 409)).code).to.equal('external-import-analysed');
      expect((await expectRefused(app, () => admin.post(`${JOBS}/${other}/execute`, { now: true }), 400)).code).to.equal('invalid-argument');
    });
  });

  /**
   * Imports an export without its runs, the configuration it would create skipped (what exists is
   * mapped, so jobs of several tests add only their own projects, folders and cases): the job as
   * analysed, and as it ended.
   */
  async function importWithoutRuns(exported: any): Promise<{ job: any; done: any }> {
    for (const dataset of ['runs', 'run_tests', 'run_results', 'run_result_steps', 'run_tags', 'run_links', 'run_issues', 'run_result_issues']) delete exported[dataset];
    const job = await analysed(JSON.stringify(exported));
    expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
    const mappings: Record<string, unknown> = {};
    for (const key of ['states', 'statuses', 'users', 'tags', 'groups', 'roles', 'milestoneTypes', 'configurations', 'templates', 'templateFields', 'issueTrackers'])
      mappings[key] = job.suggestions[key].map((e: any) => (e.action === 'create' ? { sourceId: e.sourceId, action: 'skip' } : e));
    expect((await admin.request('PUT', `${JOBS}/${job.jobId}/configuration`, { mappings })).status).to.equal(200);
    expect((await admin.post(`${JOBS}/${job.jobId}/execute`)).status).to.equal(202);
    return { job, done: await waitForPhase(admin, job.jobId, ['completed', 'failed']) };
  }

  describe('import and rollback', () => {
    let jobId: number;
    let job: any;
    before(async () => {
      const exported = complete();
      // A status the service does not have (created), a tag skipped, and a case pointing at a project the export lacks (warned, skipped).
      exported.statuses.data.push({ id: 9, name: 'Flaky', system_name: 'flaky', color: 'F1C40F', is_passed: 0, is_failed: 1, is_final: 1 });
      exported.run_results.data.push({ id: 6001, run_id: 300, test_id: 5000, status_id: 9, comment: '<p>flaked <b>again</b></p>', elapsed: 1000, is_deleted: 0, created_at: '2023-03-09T09:20:00Z', created_by: 11 });
      exported.run_results.data.push({ id: 6002, run_id: 300, test_id: 5000, status_id: 2, comment: 'deleted', elapsed: 1, is_deleted: 1, created_at: '2023-03-09T09:21:00Z', created_by: 11 });
      exported.repository_cases.data.push({ id: 1002, project_id: 77, repo_id: 100, folder_id: 200, name: 'Lost case', key: 'C1002' });
      exported.repository_cases.data.push({ id: 1003, project_id: 10, repo_id: 101, folder_id: 200, name: 'Snapshot copy', key: 'C1003' });
      exported.repository_case_tags.data.push({ case_id: 1001, tag_id: 1 });
      // A test not selected in its run and without results is dropped; the same case twice in a run once.
      exported.run_tests.data.push({ id: 5001, run_id: 300, case_id: 1001, name: 'unselected', status_id: 3, is_selected: 0 });
      exported.run_tests.data.push({ id: 5002, run_id: 300, case_id: 1001, name: 'twice', status_id: 3, is_selected: 1 });
      const up = await analysed(JSON.stringify(exported), 'webshop.json');
      jobId = up.jobId;
      const lost = up.datasets.find((d: any) => d.name === 'repository_cases');
      expect(lost.warnings.length, JSON.stringify(lost)).to.be.greaterThan(0);
      const put = await admin.request('PUT', `${JOBS}/${jobId}/configuration`, { mappings: { tags: [{ sourceId: '1', action: 'skip' }] } });
      expect(put.status, JSON.stringify(put.body)).to.equal(200);
      expect(put.body.data.mappings.statuses.find((e: any) => e.sourceId === '9')).to.deep.equal({ sourceId: '9', action: 'create' });
      const exec = await admin.post(`${JOBS}/${jobId}/execute`);
      expect(exec.status, JSON.stringify(exec.body)).to.equal(202);
      expect(exec.body.data.phase).to.be.oneOf(['queued', 'importing', 'completed']);
      job = await waitForPhase(admin, jobId, ['completed', 'failed']);
      expect(job.phase, JSON.stringify(job.error)).to.equal('completed');
    });

    it('imports every dataset it can place, in order, with progress, counts and skipped rows listed with the reason', async () => {
      expect(job.progress.percent).to.equal(100);
      expect(job.counts.repository_cases).to.deep.equal({ created: 1, mapped: 0, skipped: 2 });
      expect(job.counts.users).to.deep.equal({ created: 1, mapped: 1, skipped: 0 });
      expect(job.counts.run_results).to.deep.equal({ created: 2, mapped: 0, skipped: 1 });
      const tests = await app.deps.knex('external_import_rows').where({ job_id: jobId, dataset: 'run_tests' }).orderBy('source_id').select('source_id', 'skip_reason');
      expect(tests).to.deep.equal([
        { source_id: '5000', skip_reason: null },
        { source_id: '5001', skip_reason: 'not selected in its run, and without results' },
        { source_id: '5002', skip_reason: 'the run has this case already' },
      ]);
      const cases = job.datasets.find((d: any) => d.name === 'repository_cases');
      expect(cases.progress).to.include({ rows: 3, processed: 3, created: 1, skipped: 2, percent: 100 });
      const rows = await app.deps.knex('external_import_rows').where({ job_id: jobId, dataset: 'repository_cases' }).orderBy('source_id').select('source_id', 'skip_reason');
      expect(rows).to.deep.equal([
        { source_id: '1001', skip_reason: null },
        { source_id: '1002', skip_reason: 'its project is not imported' },
        { source_id: '1003', skip_reason: 'a run snapshot of the repository (reference §2)' },
      ]);
    });

    it('keeps creators, times, steps, tags, custom values and durations, rich text as plain text', async () => {
      const [project] = await find('project', { where: { name: 'Web Shop' } });
      expect(project.note).to.equal('Main shop');
      expect(project.createdById).to.equal(aliceId);
      const [kase] = await find('repositoryCase', { where: { className: 'C1001' }, include: { steps: true, tags: true, fieldValues: true, folder: true } });
      expect(kase).to.include({ title: 'Pay with saved card', createdById: aliceId, projectId: project.id, estimate: 300 });
      expect(new Date(kase.createdAt).toISOString()).to.equal('2023-02-03T09:00:00.000Z');
      expect(kase.folder.name).to.equal('Checkout');
      expect(kase.steps.map((s: any) => [s.step, s.expectedResult])).to.deep.equal([['Open checkout\n\nData: cart=3 items', 'Saved card is listed']]);
      expect(kase.tags.map((t: any) => t.name), 'smoke was skipped').to.deep.equal(['regression']);
      expect(kase.fieldValues.map((v: any) => v.value)).to.include.members(['User has a saved card']);
      const [run] = await find('testRun', { where: { name: 'v2.0 regression' }, include: { tags: true } });
      expect(run).to.include({ elapsedMs: 1_800_000, isCompleted: true, createdById: aliceId });
      const results = await find('testRunResult', { where: { testRunId: run.id }, orderBy: { durationMs: 'desc' }, include: { status: true, stepResults: true } });
      expect(results.map((r: any) => [r.durationMs, r.status.systemName, r.notes])).to.deep.equal([[95_000, 'passed', 'ok'], [1, 'flaky', 'flaked again']]);
      expect(results[0].stepResults).to.have.length(1);
      expect(await find('resultField', { where: { systemName: 'browser_version' } })).to.have.length(1);
      const [bot] = await find('user', { where: { email: 'ci-bot@example.com' } });
      expect(bot).to.include({ isActive: false, name: 'CI' });
      expect((await find('user', { where: { id: aliceId } }))[0].name, 'a mapped user is not changed').to.equal('Alice (here)');
    });

    it('records the administrator as actor through the import, correlated by the job', async () => {
      // A project is written through its own command; a case in bulk, in a chunk event of the job's stream.
      const [project] = await find('project', { where: { name: 'Web Shop' } });
      const [projectCreated] = await app.deps.store.readStream(`project-${project.id}`, { maxCount: 1 });
      expect(projectCreated.metadata.actor).to.include({ userId: adminId, via: 'import' });
      expect(projectCreated.metadata.correlationId).to.equal(`externalImport-${jobId}`);
      const [kase] = await find('repositoryCase', { where: { className: 'C1001' } });
      expect(kase.externalImportJobId).to.equal(jobId);
      const chunk = (await app.deps.store.readStream(`externalImport-${jobId}`))
        .find((e) => e.type === 'ExternalImportRowsWritten' && (e.data as any).entity === 'repositoryCase'
          && (e.data as any).rows.some((r: unknown[]) => r[(e.data as any).fields.indexOf('caseId')] === kase.id));
      expect(chunk, 'the chunk that wrote the case').to.not.equal(undefined);
      expect(chunk!.metadata.actor).to.include({ userId: adminId, via: 'import' });
      expect(chunk!.metadata.correlationId).to.equal(`externalImport-${jobId}`);
      // Its history (GET /api/history) begins with that chunk: the job, the chunk, the values it wrote.
      const history = await admin.get(`/api/history/repositoryCase/${kase.id}`);
      expect(history.status, JSON.stringify(history.body)).to.equal(200);
      const [first] = history.body.data;
      expect(first).to.deep.include({ position: chunk!.position, type: 'ExternalImportRowsWritten', import: { kind: 'external', jobId, chunk: (chunk!.data as any).chunk } });
      expect(first.actor).to.include({ userId: adminId, via: 'import' });
      expect(first.changes.find((c: any) => c.field === 'title')).to.deep.equal({ field: 'title', before: null, after: 'Pay with saved card' });
      const [result] = await find('testRunResult', { where: { notes: 'ok' } });
      const resultHistory = await admin.get(`/api/history/testRunResult/${result.id}`);
      expect(resultHistory.body.data.map((e: any) => [e.type, e.import?.kind])).to.deep.equal([['ExternalImportRowsWritten', 'external']]);
      expect(resultHistory.body.data[0].changes.find((c: any) => c.field === 'durationMs')).to.deep.equal({ field: 'durationMs', before: null, after: 95_000 });
    });

    it('resolves old ids: POST /api/lookup by source id or key, through the caller\'s permissions', async () => {
      const [kase] = await find('repositoryCase', { where: { className: 'C1001' } });
      for (const externalId of ['C1001', '1001', 1001]) {
        const res = await admin.post('/api/lookup', { type: 'case', externalId });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        expect(res.body.data).to.deep.include({ id: kase.id, type: 'case' });
        expect(res.body.data.source).to.include({ tool: 'testmo', jobId, sourceId: '1001', key: 'C1001', createdBy: '11', createdAt: '2023-02-03T09:00:00Z' });
      }
      expect((await admin.post('/api/lookup', { type: 'testRun', externalId: '300' })).status).to.equal(200);
      expect((await expectRefused(app, () => user.post('/api/lookup', { type: 'case', externalId: 'C1001' }), 404)).code, 'a project the user cannot see').to.equal('not-found');
      // The rules of the model API: a user sees the global configuration (tags, groups, roles), of the
      // users themselves and those they share a project with; access NONE sees nothing at all.
      await registerUser(app.deps, { email: 'none-lookup@example.com', name: 'Nobody', password: PASSWORD, access: 'NONE' }, systemMetadata('test'));
      const none = new HttpClient(app.url);
      expect((await none.post('/api/auth/login', { email: 'none-lookup@example.com', password: PASSWORD })).status).to.equal(200);
      for (const [type, externalId, userSees] of [['user', '11', false], ['user', '12', false], ['tag', '2', true], ['group', '3', true], ['role', '2', true]] as const) {
        const body = { type, externalId };
        const seen = await admin.post('/api/lookup', body);
        expect(seen.status, `admin ${JSON.stringify([body, seen.body])}`).to.equal(200);
        const model = await admin.post(`/api/model/${type}/findUnique`, { where: { id: seen.body.data.id } });
        expect(model.body.data, `${type} ${externalId}`).not.to.equal(null);
        expect((await user.post(`/api/model/${type}/findMany`, { where: { id: seen.body.data.id } })).body.data.length, `the model API shows the user ${type} ${externalId}`).to.equal(userSees ? 1 : 0);
        expect((await user.post('/api/lookup', body)).status, `user ${JSON.stringify(body)}`).to.equal(userSees ? 200 : 404);
        expect((await none.post(`/api/model/${type}/findMany`, { where: { id: seen.body.data.id } })).body.data, `NONE: model ${type}`).to.deep.equal([]);
        expect((await expectRefused(app, () => none.post('/api/lookup', body), 404)).code, `NONE ${JSON.stringify(body)}`).to.equal('not-found');
      }
      expect((await expectRefused(app, () => admin.post('/api/lookup', { type: 'case', externalId: 'C1002' }), 404)).code, 'skipped').to.equal('not-found');
      expect((await expectRefused(app, () => admin.post('/api/lookup', { type: 'tank', externalId: '1' }), 400)).details.path).to.equal('type');
      expect((await expectRefused(app, () => admin.post('/api/lookup', { type: 'case', externalId: '' }), 400)).details.path).to.equal('externalId');
      expect((await expectRefused(app, () => admin.post('/api/lookup', { type: 'case', externalId: '1', name: 'x' }), 400)).details.path).to.equal('name');
    });

    it('a row written in bulk changes like any other: its imported steps, tags and values are its own, its history goes on', async () => {
      const include = { steps: { orderBy: { order: 'asc' } }, tags: true, fieldValues: true };
      const [before] = await find('repositoryCase', { where: { className: 'C1001' }, include });
      expect(before.steps.length, 'the fixture case has steps').to.be.greaterThan(0);
      expect(before.currentVersion).to.equal(1);
      // Without the imported steps in its state the domain would not know the step it is asked to delete.
      const res = await admin.post('/api/model/repositoryCase/update', {
        where: { id: before.id }, data: { title: 'Log in (edited)', steps: { delete: [{ id: before.steps[0].id }] } }, include,
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const after = res.body.data;
      expect(after.steps.map((st: any) => st.id)).to.deep.equal(before.steps.slice(1).map((st: any) => st.id));
      expect(after.tags.map((t: any) => t.id)).to.deep.equal(before.tags.map((t: any) => t.id));
      expect(after.fieldValues.map((v: any) => [v.fieldId, v.value])).to.deep.equal(before.fieldValues.map((v: any) => [v.fieldId, v.value]));
      expect(after).to.include({ title: 'Log in (edited)', currentVersion: 2, externalImportJobId: jobId });
      const versions = await admin.post('/api/model/repositoryCaseVersion/findMany', { where: { repositoryCaseId: before.id }, orderBy: { version: 'asc' } });
      expect(versions.body.data.map((v: any) => [v.version, v.title])).to.deep.equal([[1, before.title], [2, 'Log in (edited)']]);
      // The edit is on the case's own stream, and the audit trail files it under the case's project (known from the chunk).
      const [edited] = await app.deps.store.readStream(`repositoryCase-${before.id}`);
      expect(edited.type).to.equal('RepositoryCaseUpdated');
      await waitUntil(async () => Boolean(await app.deps.knex('audit_events').where({ event_id: edited.id }).first('project_id')), 'the audit row');
      expect((await app.deps.knex('audit_events').where({ event_id: edited.id }).first('project_id')).project_id).to.equal(before.projectId);
      // A result written in bulk is deleted as a user deletes one.
      const [result] = await find('testRunResult', { where: { notes: 'ok' } });
      expect(result.externalImportJobId).to.equal(jobId);
      const deleted = await admin.post('/api/model/testRunResult/delete', { where: { id: result.id } });
      expect(deleted.status, JSON.stringify(deleted.body)).to.equal(200);
      expect(await find('testRunResult', { where: { id: result.id } })).to.deep.equal([]);
    });

    it('tells the administrator, deletes the file and the staged rows', async () => {
      await waitUntil(async () => (await admin.get(`${JOBS}/${jobId}`)).body.data.file.deleted === true, 'the file deleted');
      const notes = await admin.get('/api/notifications');
      expect(notes.body.data.find((n: any) => n.kind === 'external-import-completed' && n.link === `${JOBS}/${jobId}`)).to.not.equal(undefined);
      expect(await app.deps.knex('external_import_staging').where({ job_id: jobId }).count('* as n').first()).to.deep.equal({ n: '0' });
    });

    it('rolls back: every row it created deleted as a user would, mapped entities untouched; old ids no longer resolve', async () => {
      const res = await admin.post(`${JOBS}/${jobId}/rollback`);
      expect(res.status, JSON.stringify(res.body)).to.equal(202);
      const done = await waitForPhase(admin, jobId, ['rolledBack', 'failed']);
      expect(done.phase, JSON.stringify(done.error)).to.equal('rolledBack');
      expect(done.deleted.repository_cases).to.equal(1);
      expect(await find('repositoryCase', { where: { className: 'C1001' } })).to.deep.equal([]);
      expect(await find('project', { where: { name: 'Web Shop' } })).to.deep.equal([]);
      expect(await find('status', { where: { systemName: 'flaky' } })).to.deep.equal([]);
      // Fields became case and result fields by their mappings: each is deleted as what it became.
      expect(await find('resultField', { where: { systemName: 'browser_version' } })).to.deep.equal([]);
      expect(await find('caseField', { where: { systemName: 'severity' } })).to.deep.equal([]);
      expect(await find('user', { where: { email: 'ci-bot@example.com' } })).to.deep.equal([]);
      expect((await find('user', { where: { id: aliceId } }))).to.have.length(1);
      expect((await find('tag', { where: { name: 'regression' } }))).to.have.length(1);
      const caseId = (await app.deps.knex('external_import_rows').where({ job_id: jobId, source_id: '1001', dataset: 'repository_cases' }).first('entity_id')).entity_id;
      const [deletion] = await app.deps.knex('audit_events').where({ stream_id: `repositoryCase-${caseId}` }).orderBy('position', 'desc').limit(1).select('type', 'actor_user_id');
      expect(deletion).to.deep.equal({ type: 'RepositoryCaseDeleted', actor_user_id: adminId });
      expect((await expectRefused(app, () => admin.post('/api/lookup', { type: 'case', externalId: 'C1001' }), 404)).code).to.equal('not-found');
      expect((await expectRefused(app, () => admin.post(`${JOBS}/${jobId}/execute`), 409)).code).to.equal('external-import-rolled-back');
    });

    it('fails on a row the domain refuses (a case in another project\'s folder), naming it; nothing of its chunk is written', async () => {
      const exported = complete();
      exported.projects.data[0].name = 'Refusing Shop';
      exported.projects.data.push({ id: 11, name: 'Other Shop', created_at: '2023-02-01T09:00:00Z', created_by: 11 });
      exported.repository_folders.data.push({ id: 210, project_id: 11, repo_id: 100, parent_id: null, name: 'Elsewhere' });
      exported.repository_cases.data.push({ ...exported.repository_cases.data[0], id: 1010, key: 'C1010', name: 'Misplaced', folder_id: 210 });
      const { job, done } = await importWithoutRuns(exported);
      expect(done.phase).to.equal('failed');
      expect(done.error).to.deep.include({ code: 'external-import-row-refused' });
      expect(done.error.details).to.deep.equal({ dataset: 'repository_cases', sourceId: '1010', reason: 'repository-folder-in-other-project' });
      // Named by its id (not a row number).
      expect(done.error.error).to.match(/^The row with id 1010 of repository_cases was refused: /);
      // The chunk is one append: the other case of it is not written either, and nothing is half there.
      expect(await app.deps.knex('repository_cases').where({ external_import_job_id: job.jobId }).count('* as n').first()).to.deep.equal({ n: '0' });
      expect((await app.deps.store.readStream(`externalImport-${job.jobId}`)).filter((e) => e.type === 'ExternalImportRowsWritten')).to.deep.equal([]);
      const [project] = await find('project', { where: { name: 'Refusing Shop' } });
      expect(project, 'what earlier datasets wrote stays (until a rollback)').to.not.equal(undefined);
    });

    it('imports a tree written children first: parents come first; a cycle is skipped with its reason', async () => {
      const exported = complete();
      exported.projects.data[0].name = 'Tree Shop';
      exported.repository_folders.data = [
        { id: 203, project_id: 10, repo_id: 100, parent_id: 202, name: 'Grandchild' },
        { id: 202, project_id: 10, repo_id: 100, parent_id: 201, name: 'Child' },
        { id: 201, project_id: 10, repo_id: 100, parent_id: null, name: 'Root' },
        { id: 204, project_id: 10, repo_id: 100, parent_id: 205, name: 'Loop A' },
        { id: 205, project_id: 10, repo_id: 100, parent_id: 204, name: 'Loop B' },
      ];
      exported.repository_cases.data[0].folder_id = 203;
      exported.repository_cases.data[0].key = 'T1001';
      exported.milestones.data = [
        { id: 41, project_id: 10, parent_id: 40, name: 'v2.0 sprint 1' },
        { id: 40, project_id: 10, parent_id: null, name: 'v2.0' },
      ];
      const { job, done } = await importWithoutRuns(exported);
      expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
      const [project] = await find('project', { where: { name: 'Tree Shop' } });
      const folders = await find('repositoryFolder', { where: { projectId: project.id }, include: { parent: true } });
      expect(folders.map((f: any) => [f.name, f.parent?.name ?? null])).to.have.deep.members([['Child', 'Root'], ['Grandchild', 'Child'], ['Root', null]]);
      const [kase] = await find('repositoryCase', { where: { projectId: project.id }, include: { folder: true } });
      expect(kase.folder.name).to.equal('Grandchild');
      const milestones = await find('milestone', { where: { projectId: project.id }, include: { parent: true } });
      expect(milestones.map((m: any) => [m.name, m.parent?.name ?? null])).to.have.deep.members([['v2.0', null], ['v2.0 sprint 1', 'v2.0']]);
      const skipped = await app.deps.knex('external_import_rows').where({ job_id: job.jobId, dataset: 'repository_folders' }).whereNull('entity_id').orderBy('source_id').pluck('skip_reason');
      expect(skipped).to.deep.equal(['its parent folder is not imported (missing, or a cycle)', 'its parent folder is not imported (missing, or a cycle)']);
    });
  });
});

describe('External-tool migration: an outage, a cancel mid-import, kept files', function () {
  this.timeout(300_000);
  let app: TestApp;
  let admin: HttpClient;

  before(async () => {
    ({ app, admin } = await appWithAdmin({ chunkSize: 25, retryBudgetMs: 600_000, keepFiles: true }));
  });
  after(() => app.stop());

  it('waits while the database refuses connections and goes on where it was: every row once', async () => {
    const exported = await generatedExport({ cases: 150, runs: 4, results: 600 }, 3);
    const up = await uploadExport(app.url, admin, exported);
    expect(up.status, JSON.stringify(up.body)).to.equal(201);
    const jobId = up.body.data.jobId;
    expect((await waitForPhase(admin, jobId, ['analysed', 'failed'])).phase).to.equal('analysed');
    expect((await admin.request('PUT', `${JOBS}/${jobId}/configuration`, {})).status).to.equal(200);
    expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);
    await waitUntil(async () => {
      const job = (await admin.get(`${JOBS}/${jobId}`)).body.data;
      return job.phase === 'importing' && job.progress.percent >= 20;
    }, 'the import to be part-way');
    const db = { name: new URL(app.databaseUrl).pathname.slice(1) } as TestDatabase;
    expect(await cutConnections(db, null)).to.be.greaterThan(0);
    await new Promise((r) => setTimeout(r, 3000));
    await restoreConnections(db);
    const job = await waitForPhase(admin, jobId, ['completed', 'failed'], 240_000);
    expect(job.phase, JSON.stringify(job.error)).to.equal('completed');
    // Each row written once: once in the job's chunk events, once in the read model.
    const written = (await app.deps.store.readStream(`externalImport-${jobId}`)).filter((e) => e.type === 'ExternalImportRowsWritten');
    for (const [dataset, table, idKey] of [['repository_cases', 'repository_cases', 'caseId'], ['run_tests', 'test_run_cases', 'testRunCaseId'], ['run_results', 'test_run_results', 'testRunResultId']]) {
      const ids = written.filter((e) => (e.data as any).dataset === dataset)
        .flatMap((e) => (e.data as any).rows.map((r: unknown[]) => r[(e.data as any).fields.indexOf(idKey)]));
      expect({ n: ids.length, ids: new Set(ids).size }, dataset).to.deep.equal({ n: job.counts[dataset].created, ids: job.counts[dataset].created });
      const rows = await app.deps.knex(table).where({ external_import_job_id: jobId })
        .select(app.deps.knex.raw('count(*)::int AS n'), app.deps.knex.raw('count(DISTINCT id)::int AS ids')).first();
      expect(rows, table).to.deep.equal({ n: job.counts[dataset].created, ids: job.counts[dataset].created });
    }
    expect(job.counts.run_results.created).to.equal(600);
    // EXTERNAL_IMPORT_KEEP_FILES: the job is closed, its staging gone, the file kept.
    await waitUntil(async () => Boolean(await app.deps.knex('external_import_jobs').where({ job_id: jobId, closed: true }).first('job_id')), 'the job closed');
    const [uploaded] = await app.deps.store.readStream(`externalImport-${jobId}`, { maxCount: 1 });
    expect(await app.appDeps.files.localPath((uploaded.data as { storedAs: string }).storedAs)).to.be.a('string');
    expect((await admin.get(`${JOBS}/${jobId}`)).body.data.file.deleted).to.equal(false);
  });

  it('cancels a running import at its next chunk, lists what it wrote, and rolls that back (deleting the kept file)', async () => {
    const exported = await generatedExport({ cases: 150, runs: 4, results: 600 }, 4);
    const jobId = (await uploadExport(app.url, admin, exported)).body.data.jobId;
    expect((await waitForPhase(admin, jobId, ['analysed', 'failed'])).phase).to.equal('analysed');
    // Another import made these configuration rows already: map them (the suggestions do).
    expect((await admin.request('PUT', `${JOBS}/${jobId}/configuration`, { reset: true })).status).to.equal(200);
    expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);
    await waitUntil(async () => (await admin.get(`${JOBS}/${jobId}`)).body.data.progress.percent >= 10, 'the import to be part-way');
    const cancel = await admin.post(`${JOBS}/${jobId}/cancel`);
    expect(cancel.status, JSON.stringify(cancel.body)).to.equal(202);
    expect(cancel.body.data.cancelRequested).to.equal(true);
    const cancelled = await waitForPhase(admin, jobId, ['cancelled', 'completed', 'failed']);
    expect(cancelled.phase).to.equal('cancelled');
    const written = cancelled.datasets.reduce((n: number, d: any) => n + (d.progress?.created ?? 0), 0);
    expect(written, 'what it wrote is listed').to.be.greaterThan(0);
    const results = cancelled.datasets.find((d: any) => d.name === 'run_results');
    expect(results.progress.processed, 'it stopped before the end').to.be.lessThan(results.progress.rows);
    const rolled = await admin.post(`${JOBS}/${jobId}/rollback`);
    expect(rolled.status, JSON.stringify(rolled.body)).to.equal(202);
    const back = await waitForPhase(admin, jobId, ['rolledBack', 'failed']);
    expect(back.phase, JSON.stringify(back.error)).to.equal('rolledBack');
    const created = await app.deps.knex('external_import_rows').where({ job_id: jobId, mapped: false }).whereNotNull('entity_id').where({ dataset: 'repository_cases' }).pluck('entity_id');
    expect(created.length).to.be.greaterThan(0);
    expect(await app.deps.knex('repository_cases').whereIn('id', created).where({ is_deleted: false }).count('* as n').first()).to.deep.equal({ n: '0' });
    await waitUntil(async () => (await admin.get(`${JOBS}/${jobId}`)).body.data.file.deleted === true, 'a rolled-back job\'s kept file deleted');
  });
});

describe('External-tool migration: a large rollback, recorded as it goes', function () {
  this.timeout(300_000);
  let app: TestApp;
  let admin: HttpClient;

  before(async () => {
    // Bulk chunks of 50 rows: the rollback records every 50 rows it deletes.
    ({ app, admin } = await appWithAdmin({ chunkSize: 25, bulkChunkSize: 50, retryBudgetMs: 600_000 }));
  });
  after(() => app.stop());

  /** A generated export uploaded, configured with the suggestions and imported to completion. */
  async function importedExport(size: { cases: number; runs: number; results: number }, seed: number): Promise<{ jobId: number; job: any }> {
    const jobId = (await uploadExport(app.url, admin, await generatedExport(size, seed))).body.data.jobId as number;
    expect((await waitForPhase(admin, jobId, ['analysed', 'failed'])).phase).to.equal('analysed');
    expect((await admin.request('PUT', `${JOBS}/${jobId}/configuration`, {})).status).to.equal(200);
    expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);
    const job = await waitForPhase(admin, jobId, ['completed', 'failed'], 240_000);
    expect(job.phase, JSON.stringify(job.error)).to.equal('completed');
    return { jobId, job };
  }

  it('indexes the failures among the results it wrote in bulk, as the search indexer following the log (each row\'s status decides)', async () => {
    const engine = postgresEngine(app);
    const indexer = startIndexer(app, engine);
    try {
      await caughtUp(app, indexer, engine);
      const { jobId } = await importedExport({ cases: 60, runs: 2, results: 300 }, 13);
      await caughtUp(app, indexer, engine, 120_000);
      // Every document the read model has, no other: the job's failed results among them, its passed ones not.
      expect(await indexed(engine)).to.deep.equal(await expected(app));
      const knex = app.deps.knex;
      const failed = await knex('test_run_results as x').join('statuses as s', 's.id', 'x.status_id').where({ 'x.external_import_job_id': jobId })
        .whereRaw(FAILURE_STATUS).pluck('x.id');
      const passed = await knex('test_run_results as x').join('statuses as s', 's.id', 'x.status_id').where({ 'x.external_import_job_id': jobId, 's.is_success': true }).pluck('x.id');
      expect(failed.length, 'failed results in the export').to.be.greaterThan(5);
      expect(passed.length, 'passed results in the export').to.be.greaterThan(5);
      const failures = await documents(engine, 'failures');
      for (const id of failed) expect(failures.has(String(id)), `failure ${id}`).to.equal(true);
      for (const id of passed) expect(failures.has(String(id)), `passed ${id}`).to.equal(false);
    } finally {
      await indexer.stop();
    }
  });

  it('counts the runs and results it wrote in the statistics once the job ends, as a rebuild of the read model does', async () => {
    // Enough for COPY to write the statistics (COPY_FROM_ROWS in projections/runtime/rowBatch.ts: from 200 rows on).
    const { jobId } = await importedExport({ cases: 150, runs: 3, results: 600 }, 11);
    const knex = app.deps.knex;
    const runs = await knex('test_runs').where({ external_import_job_id: jobId }).pluck('id');
    expect(runs).to.have.length(3);
    // Every run counted (the job's end is applied in the read model's own time, after the job's phase).
    await waitUntil(async () => Number((await knex('test_run_statistics').whereIn('test_run_id', runs).count('* as n').first())!.n) === 3, 'the job\'s runs counted', 60_000);
    // Each case's executions: its run cases with a result, as counted straight from the rows.
    const expected = await knex.raw(`SELECT rc.repository_case_id AS case_id, count(*)::int AS n FROM test_run_cases rc
      WHERE rc.external_import_job_id = ? AND EXISTS (SELECT 1 FROM test_run_results r WHERE r.test_run_case_id = rc.id AND NOT r.is_deleted)
      GROUP BY rc.repository_case_id ORDER BY 1`, [jobId]);
    expect(expected.rows.length).to.be.greaterThan(5);
    const counted = await knex('case_statistics').whereIn('repository_case_id', expected.rows.map((r: { case_id: number }) => r.case_id))
      .where({ all_configurations: true }).orderBy('repository_case_id').select('repository_case_id as case_id', 'executions as n');
    expect(counted).to.deep.equal(expected.rows);
    const totals = await knex('test_run_statistics').whereIn('test_run_id', runs).orderBy('test_run_id').pluck('total');
    const runCases = await knex('test_run_cases').whereIn('test_run_id', runs).groupBy('test_run_id').orderBy('test_run_id').select(knex.raw('count(*)::int AS n'));
    expect(totals).to.deep.equal(runCases.map((r: { n: number }) => r.n));
    expect(Number((await knex('case_daily_statistics').count('* as n').first())!.n), 'rows enough for COPY').to.be.at.least(200);
    // The last statuses as the run cases have them, newest first (an array through COPY's text).
    const statuses = new Set(await knex('statuses').pluck('id'));
    for (const row of await knex('case_statistics').where({ all_configurations: true }).whereIn('repository_case_id', counted.map((c: { case_id: number }) => c.case_id))) {
      expect(row.last_status_ids).to.have.length(Math.min(row.executions, 10));
      for (const id of row.last_status_ids) expect(statuses.has(id), `status ${id}`).to.equal(true);
    }
    const project = (await knex('test_runs').where({ id: runs[0] }).first('project_id')).project_id as number;
    const rows = (list: Array<Record<string, unknown>>) => list.map(({ id: _id, ...row }) => row);
    const snapshot = async () => ({
      cases: rows(await knex('case_statistics').where({ project_id: project }).orderBy(['repository_case_id', 'all_configurations', 'config_id']).select('*')),
      days: rows(await knex('case_daily_statistics').where({ project_id: project }).orderBy(['repository_case_id', 'day', 'config_id', 'branch']).select('*')),
      runs: rows(await knex('test_run_statistics').where({ project_id: project }).orderBy('test_run_id').select('*')),
      project: rows(await knex('project_daily_statistics').where({ project_id: project }).orderBy('day').select('*')),
    });
    const before = await snapshot();
    await rebuildProjection(readModelProjection, { store: app.deps.store, knex });
    const after = await snapshot();
    for (const key of Object.keys(before) as Array<keyof typeof before>) expect(after[key], key).to.deep.equal(before[key]);
  });

  it('counts what its rollback deleted out of the statistics once the rollback ends, as a rebuild of the read model does', async () => {
    const { jobId } = await importedExport({ cases: 150, runs: 3, results: 600 }, 12);
    const knex = app.deps.knex;
    const runs = await knex('test_runs').where({ external_import_job_id: jobId }).pluck('id');
    const cases = await knex('repository_cases').where({ external_import_job_id: jobId }).pluck('id');
    const project = (await knex('test_runs').where({ id: runs[0] }).first('project_id')).project_id as number;
    await waitUntil(async () => Number((await knex('test_run_statistics').whereIn('test_run_id', runs).count('* as n').first())!.n) === 3, 'the job\'s runs counted', 60_000);
    expect(Number((await knex('case_statistics').whereIn('repository_case_id', cases).count('* as n').first())!.n)).to.be.greaterThan(0);

    expect((await admin.post(`${JOBS}/${jobId}/rollback`)).status).to.equal(202);
    expect((await waitForPhase(admin, jobId, ['rolledBack', 'failed'], 240_000)).phase).to.equal('rolledBack');
    // The rollback's end is applied in the read model's own time, after the job's phase.
    await waitUntil(async () => Number((await knex('test_run_statistics').whereIn('test_run_id', runs).count('* as n').first())!.n) === 0, 'the job\'s runs counted out', 60_000);
    expect(Number((await knex('case_statistics').whereIn('repository_case_id', cases).count('* as n').first())!.n)).to.equal(0);
    expect(Number((await knex('case_daily_statistics').whereIn('repository_case_id', cases).count('* as n').first())!.n)).to.equal(0);
    // The project's days count the executions left in it (earlier tests' jobs may have written into the same project).
    const executions = await knex('project_daily_statistics').where({ project_id: project }).sum('executions as n').first();
    const left = await knex.raw(`SELECT count(*)::int AS n FROM test_run_cases rc JOIN test_runs r ON r.id = rc.test_run_id
      WHERE r.project_id = ? AND NOT r.is_deleted AND NOT rc.is_deleted AND EXISTS (SELECT 1 FROM test_run_results x WHERE x.test_run_case_id = rc.id AND NOT x.is_deleted)`, [project]);
    expect(Number(executions?.n ?? 0)).to.equal(left.rows[0].n);
    const rows = (list: Array<Record<string, unknown>>) => list.map(({ id: _id, ...row }) => row);
    const snapshot = async () => ({
      cases: rows(await knex('case_statistics').orderBy(['repository_case_id', 'all_configurations', 'config_id']).select('*')),
      days: rows(await knex('case_daily_statistics').orderBy(['repository_case_id', 'day', 'config_id', 'branch']).select('*')),
      runs: rows(await knex('test_run_statistics').orderBy('test_run_id').select('*')),
      project: rows(await knex('project_daily_statistics').orderBy(['project_id', 'day']).select('*')),
    });
    const before = await snapshot();
    await rebuildProjection(readModelProjection, { store: app.deps.store, knex });
    const after = await snapshot();
    for (const key of Object.keys(before) as Array<keyof typeof before>) expect(after[key], key).to.deep.equal(before[key]);
  });

  it('deletes rows many at a time, records its progress, and after an outage goes on from what it recorded: every row deleted', async () => {
    const { jobId, job: imported } = await importedExport({ cases: 150, runs: 4, results: 600 }, 5);
    expect(imported.counts.run_results.created).to.equal(600);

    expect((await admin.post(`${JOBS}/${jobId}/rollback`)).status).to.equal(202);
    // Part-way through the results, the database goes away for a while.
    await waitUntil(async () => ((await admin.get(`${JOBS}/${jobId}`)).body.data.deleted?.run_results ?? 0) >= 100, 'the rollback to record some results', 120_000);
    const db = { name: new URL(app.databaseUrl).pathname.slice(1) } as TestDatabase;
    await cutConnections(db, null);
    await new Promise((r) => setTimeout(r, 2000));
    await restoreConnections(db);
    const back = await waitForPhase(admin, jobId, ['rolledBack', 'failed'], 240_000);
    expect(back.phase, JSON.stringify(back.error)).to.equal('rolledBack');
    for (const dataset of ['repository_cases', 'run_tests', 'run_results', 'runs']) expect(back.deleted[dataset], dataset).to.equal(imported.counts[dataset].created);

    // Recorded as it went: the results' count grows 50 by 50 to the end, never back.
    const progressed = (await app.deps.store.readStream(`externalImport-${jobId}`))
      .filter((e) => e.type === 'ExternalImportRollbackProgressed' && (e.data as { dataset: string }).dataset === 'run_results')
      .map((e) => (e.data as { deleted: number }).deleted);
    expect(progressed.length).to.be.greaterThan(5);
    expect(progressed[progressed.length - 1]).to.equal(600);
    progressed.forEach((n, i) => expect(n, `progress ${i}`).to.be.greaterThan(i === 0 ? 0 : progressed[i - 1]));
    // Every row the job created is deleted.
    for (const table of ['repository_cases', 'test_runs', 'test_run_cases', 'test_run_results']) {
      const ids = await app.deps.knex('external_import_rows').where({ job_id: jobId, mapped: false }).whereNotNull('entity_id')
        .whereIn('dataset', { repository_cases: ['repository_cases'], test_runs: ['runs'], test_run_cases: ['run_tests'], test_run_results: ['run_results'] }[table]!).pluck('entity_id');
      expect(ids.length, table).to.be.greaterThan(0);
      const alive = await app.deps.knex(table).whereIn('id', ids).where({ is_deleted: false }).count('* as n').first();
      expect(alive, table).to.deep.equal({ n: '0' });
    }
  });
});
