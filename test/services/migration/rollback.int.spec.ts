import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { JOBS, uploadExport, waitForPhase } from '../../support/externalImport';
import { waitUntil } from '../../support/wait';

/**
 * A rollback gives back what it took (issue 36 §2): the e-mails of the placeholder users it
 * deletes (so the same export imports again), the old ids (mapped rows too), the failure the job
 * ended with; it reports only what it deleted. And the lookup by old id narrows by job and project.
 * Slow: 3 tests, each migrating generated exports through the worker (upload, analysis, execution) and rolling one back, waiting for every job's end
 */
const PASSWORD = 'migration-password-1';
const FIXTURES = path.join(__dirname, 'fixtures');
const complete = () => JSON.parse(fs.readFileSync(path.join(FIXTURES, 'export-complete.json'), 'utf8'));

describe('External-tool migration: what a rollback gives back', function () {
  this.timeout(240_000);
  let app: TestApp;
  let admin: HttpClient;

  /** Uploads, saves the suggested mappings (or these), executes and waits for the end. */
  const importOf = async (exported: unknown, mappings?: Record<string, unknown>) => {
    const up = await uploadExport(app.url, admin, JSON.stringify(exported), 'webshop.json');
    expect(up.status, JSON.stringify(up.body)).to.equal(201);
    const jobId = up.body.data.jobId as number;
    const analysed = await waitForPhase(admin, jobId, ['analysed', 'failed']);
    expect(analysed.phase, JSON.stringify(analysed.errors)).to.equal('analysed');
    const put = await admin.request('PUT', `${JOBS}/${jobId}/configuration`, mappings ? { mappings } : {});
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);
    const job = await waitForPhase(admin, jobId, ['completed', 'failed']);
    await closed(jobId);
    return { jobId, job };
  };
  /** The end of a job is followed by its notification and its close: a refusal's "appends nothing" is checked after them. */
  const closed = (jobId: number) => waitUntil(
    async () => (await app.deps.knex('external_import_jobs').where({ job_id: jobId }).first('closed'))?.closed === true, `job ${jobId} closed`);
  const rollBack = async (jobId: number) => {
    const res = await admin.post(`${JOBS}/${jobId}/rollback`);
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    const done = await waitForPhase(admin, jobId, ['rolledBack', 'failed']);
    expect(done.phase, JSON.stringify(done.error)).to.equal('rolledBack');
    await closed(jobId);
    return done;
  };
  const lookup = (body: Record<string, unknown>) => admin.post('/api/lookup', body);

  before(async () => {
    app = await startTestApp({ worker: { chunkSize: 2 }, externalImportMaxBytes: 2 * 1024 * 1024 });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    // Alice is here already: the export's user 11 is mapped onto her; its user 12 (ci-bot) becomes a placeholder.
    await registerUser(app.deps, { email: 'alice@example.com', name: 'Alice (here)', password: PASSWORD, access: 'USER' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
  });
  after(() => app.stop());

  it('gives back the placeholder users\' e-mails (released through events) and the old ids, mapped ones too: the same export imports again', async () => {
    const first = await importOf(complete());
    expect(first.job.phase, JSON.stringify(first.job.error)).to.equal('completed');
    expect(first.job.counts.users).to.deep.equal({ created: 1, mapped: 1, skipped: 0 });
    const bot = await app.deps.knex('users').where({ email: 'ci-bot@example.com' }).first('id');
    expect((await lookup({ type: 'user', externalId: 11 })).status, 'mapped onto Alice').to.equal(200);

    const back = await rollBack(first.jobId);
    expect(back.deleted.users).to.equal(1);
    // The e-mail is given back through an event on its claim stream, which the claims projection (and so a rebuild) applies.
    const [released] = await app.deps.store.readStream('uniqueEmail-ci-bot@example.com', { direction: 'backwards', maxCount: 1 });
    expect(released.type).to.equal('UniqueValueReleased');
    expect(released.data).to.deep.include({ ownerId: bot.id, reason: 'owner-rolled-back' });
    expect(released.metadata.correlationId).to.equal(`externalImport-${first.jobId}`);
    const claim = await app.deps.knex('unique_claims').where({ stream_id: 'uniqueEmail-ci-bot@example.com' }).first('state');
    expect(claim.state).to.equal('released');
    // Old ids resolve no more, those the job mapped onto existing rows neither (docs: 404).
    expect((await expectRefused(app, () => lookup({ type: 'user', externalId: 11 }), 404)).code).to.equal('not-found');
    expect((await expectRefused(app, () => lookup({ type: 'case', externalId: 'C1001' }), 404)).code).to.equal('not-found');

    const again = await importOf(complete());
    expect(again.job.phase, JSON.stringify(again.job.error)).to.equal('completed');
    expect(again.job.counts.users).to.deep.equal({ created: 1, mapped: 1, skipped: 0 });
    const bots = await app.deps.knex('users').where({ email: 'ci-bot@example.com', is_deleted: false }).pluck('id');
    expect(bots).to.have.length(1);
    expect(bots[0]).to.not.equal(bot.id);
    const found = await lookup({ type: 'user', externalId: 12 });
    expect(found.status, JSON.stringify(found.body)).to.equal(200);
    expect(found.body.data).to.deep.include({ id: bots[0] });
    expect(found.body.data.source.jobId).to.equal(again.jobId);
  });

  it('narrows an ambiguous old id by job or project, the parameters validated', async () => {
    const exported = complete();
    exported.projects.data[0].name = 'Web Shop Copy';
    const copy = await importOf(exported);
    expect(copy.job.phase, JSON.stringify(copy.job.error)).to.equal('completed');
    const ambiguous = await expectRefused(app, () => lookup({ type: 'case', externalId: 'C1001' }), 409);
    expect(ambiguous.code).to.equal('ambiguous-external-id');
    expect(ambiguous.details.ids).to.have.length(2);
    const byJob = await lookup({ type: 'case', externalId: 'C1001', jobId: copy.jobId });
    expect(byJob.status, JSON.stringify(byJob.body)).to.equal(200);
    expect(byJob.body.data.source.jobId).to.equal(copy.jobId);
    const project = await app.deps.knex('projects').where({ name: 'Web Shop Copy' }).first('id');
    const byProject = await lookup({ type: 'case', externalId: 'C1001', projectId: project.id });
    expect(byProject.status, JSON.stringify(byProject.body)).to.equal(200);
    expect(byProject.body.data.id).to.equal(byJob.body.data.id);
    // A project's own lookup narrows by itself; a run test's project is its run's.
    expect((await lookup({ type: 'project', externalId: 10, projectId: project.id })).body.data.id).to.equal(project.id);
    expect((await lookup({ type: 'runCase', externalId: 5000, projectId: project.id })).status).to.equal(200);
    expect((await expectRefused(app, () => lookup({ type: 'case', externalId: 'C1001', projectId: project.id, jobId: copy.jobId - 1 }), 404)).code).to.equal('not-found');
    for (const bad of [{ jobId: 'x' }, { jobId: 0 }, { projectId: -3 }, { projectId: 1.5 }]) {
      const refused = await expectRefused(app, () => lookup({ type: 'case', externalId: 'C1001', ...bad }), 400);
      expect(refused.code, JSON.stringify(bad)).to.equal('invalid-argument');
      expect(refused.details.path).to.equal(Object.keys(bad)[0]);
    }
    expect((await expectRefused(app, () => lookup({ type: 'status', externalId: 1, projectId: project.id }), 400)).details.path).to.equal('projectId');
  });

  it('reports only what it deleted, and keeps the reason the job failed with', async () => {
    const exported = complete();
    exported.projects.data[0].name = 'Refused Shop';
    exported.users.data.push({ id: 13, email: 'late@example.com', name: 'Late', is_active: 1 });
    const up = await uploadExport(app.url, admin, JSON.stringify(exported), 'refused.json');
    const jobId = up.body.data.jobId as number;
    expect((await waitForPhase(admin, jobId, ['analysed', 'failed'])).phase).to.equal('analysed');
    expect((await admin.request('PUT', `${JOBS}/${jobId}/configuration`, {})).status).to.equal(200);
    // The address is taken after the configuration: execute refuses the row, and the job writes no user.
    await registerUser(app.deps, { email: 'late@example.com', name: 'Late (here)', password: PASSWORD, access: 'USER' }, systemMetadata('test'));
    expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);
    const failed = await waitForPhase(admin, jobId, ['completed', 'failed']);
    expect(failed.phase).to.equal('failed');
    expect(failed.error).to.deep.include({ code: 'external-import-row-refused' });
    expect(await app.deps.knex('users').where({ email: 'late@example.com' }).count('* as n').first()).to.deep.equal({ n: '1' });

    const back = await rollBack(jobId);
    expect(back.deleted.users ?? 0, 'no user of this job was written').to.equal(0);
    // What it did write before the users (the new status, the configuration rows) is counted as deleted.
    const written = await app.deps.knex('external_import_rows').where({ job_id: jobId, mapped: false }).whereNotNull('entity_id').whereNot({ dataset: 'users' }).count('* as n').first();
    expect(Object.values(back.deleted as Record<string, number>).reduce((n, c) => n + c, 0)).to.be.at.most(Number(written!.n));
    expect(back.error, 'the failure stays on the job').to.deep.include({ code: 'external-import-row-refused' });
    expect(back.error.error).to.match(/late@example\.com|e-mail/);
    // The e-mail of the user the job never wrote stays with its owner.
    const [last] = await app.deps.store.readStream('uniqueEmail-late@example.com', { direction: 'backwards', maxCount: 1 });
    expect(last.type).to.equal('UniqueValueClaimed');
  });
});
