import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { seedDefaults } from '../../../services/entities/seed';
import { deleteUser, registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { JOBS, uploadExport, waitForPhase } from '../../support/externalImport';
import { zipOf } from './zipWriter';

const PASSWORD = 'migration-password-1';
const fixtureText = (name: string) => fs.readFileSync(path.join(__dirname, 'fixtures', name), 'utf8');

/**
 * The migration on exports shaped as TestPlanIt's own fixtures (issue 36 §2): what can be placed is
 * imported and what cannot is listed with the reason and a count; field types by name; a template's
 * fields left out are counted; what execute would refuse is caught at configuration and in the
 * preview; errors name the file as uploaded.
 */
describe('External-tool migration: reading real-shaped exports', function () {
  this.timeout(240_000);
  let app: TestApp;
  let admin: HttpClient;
  const analysed = async (content: Buffer | string, name: string) => {
    const up = await uploadExport(app.url, admin, content, name);
    expect(up.status, JSON.stringify(up.body)).to.equal(201);
    return waitForPhase(admin, up.body.data.jobId, ['analysed', 'failed']);
  };
  const find = async (entity: string, where: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const res = await admin.post(`/api/model/${entity}/findMany`, { where: { ...where, isDeleted: false }, ...extra });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data as any[];
  };
  /** Saves the suggestions, executes, and waits for the end. */
  const execute = async (jobId: number) => {
    const put = await admin.request('PUT', `${JOBS}/${jobId}/configuration`, { reset: true });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    expect(put.body.data.mappings).to.deep.equal(put.body.data.suggestions);
    expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);
    return waitForPhase(admin, jobId, ['completed', 'failed']);
  };

  before(async () => {
    app = await startTestApp({ worker: { chunkSize: 2 } });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
  });
  after(() => app.stop());

  it('sample-small (users, statuses, cases, no projects): imports the users and statuses; the cases are listed as skipped with the reason and a count', async () => {
    const job = await analysed(fixtureText('export-top-level.json'), 'testmo-export-sample-small.json');
    expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
    expect(job.errors).to.deep.equal([]);
    expect(job.warnings).to.deep.include({
      code: 'dataset-missing',
      message: 'The export has no projects; 1 row(s) by repository_cases.project_id cannot be placed without it: they are skipped and counted',
      details: { dataset: 'projects', neededBy: ['repository_cases.project_id'], skipped: { 'repository_cases.project_id': 1 }, emptied: {} },
    });
    const preview = (await admin.post(`${JOBS}/${job.jobId}/preview`)).body.data;
    const of = (name: string) => preview.datasets.find((d: any) => d.dataset === name);
    expect(of('repository_cases')).to.include({ rows: 1, create: 0, skip: 1 });
    expect(of('repository_cases').skipReasons).to.deep.equal({ 'its project is not imported': 1 });
    expect(of('users')).to.include({ rows: 2, create: 2 });
    expect(preview.conflicts).to.deep.equal([]);

    const done = await execute(job.jobId);
    expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
    expect(done.counts.users).to.deep.equal({ created: 2, mapped: 0, skipped: 0 });
    expect(done.counts.statuses.created + done.counts.statuses.mapped).to.equal(2);
    expect(done.counts.repository_cases).to.deep.equal({ created: 0, mapped: 0, skipped: 1 });
    expect(done.skipReasons).to.deep.equal({ repository_cases: { 'its project is not imported': 1 } });
    expect((await find('user', { email: 'qa@example.com' })).map((u) => u.isActive)).to.deep.equal([false]);
  });

  it('template-fields, zipped: field types by name, options in the listed order, a template field of a missing template warned, previewed and counted', async () => {
    const zipped = zipOf([{ name: 'testmo-export-template-fields.json', content: fixtureText('export-template-fields-named.json') }]);
    const job = await analysed(zipped, 'testmo-export-template-fields.zip');
    expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
    expect(job.datasets.map((d: any) => `${d.name}: ${d.rowCount}`)).to.deep.equal(['field_values: 3', 'fields: 2', 'template_fields: 2', 'templates: 1']);
    const templateFields = job.datasets.find((d: any) => d.name === 'template_fields');
    expect(templateFields.warnings.map((w: any) => [w.code, w.details.field, w.details.count])).to.deep.equal([['reference-unresolved', 'template_id', 1]]);
    expect(job.sources.templateFields.map((s: any) => s.hint.type)).to.deep.equal(['DROPDOWN', 'TEXT_LONG']);

    const preview = (await admin.post(`${JOBS}/${job.jobId}/preview`)).body.data;
    const line = preview.datasets.find((d: any) => d.dataset === 'template_fields');
    expect(line).to.deep.include({ rows: 2, create: 1, skip: 1, readWith: 'templates', skipReasons: { 'its template is not imported': 1 } });

    const done = await execute(job.jobId);
    expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
    expect(done.counts.template_fields).to.deep.equal({ created: 1, mapped: 0, skipped: 1 });
    const [priority] = await find('caseField', { systemName: 'priority' });
    expect(priority.type).to.equal('DROPDOWN');
    expect((await find('caseField', { systemName: 'steps_text' }))[0].type).to.equal('TEXT_LONG');
    const options = await find('fieldOption', { caseFieldId: priority.id }, { orderBy: { order: 'asc' } });
    expect(options.map((o) => [o.name, o.order])).to.deep.equal([['Low', 0], ['Medium', 1], ['High', 2]]);
    const [template] = await find('template', { name: 'Regression steps' }, { include: { caseFields: true } });
    expect(template.caseFields.map((f: any) => f.id)).to.deep.equal([priority.id]);
  });

  it('a user whose e-mail a deleted account still claims: suggested skip, a create refused at configuration; a claim made after it shown in the preview', async () => {
    const meta = systemMetadata('test');
    const gone = await registerUser(app.deps, { email: 'gone@example.com', name: 'Gone', password: PASSWORD, access: 'USER' }, meta);
    await deleteUser(app.deps, { userId: gone }, meta);
    const kept = await registerUser(app.deps, { email: 'Kept@Example.com', name: 'Kept', password: PASSWORD, access: 'USER' }, meta);
    const job = await analysed(JSON.stringify({ users: { data: [
      { id: 11, email: 'gone@example.com', name: 'Gone' }, { id: 12, email: 'kept@example.com' }, { id: 13, email: 'late@example.com' },
    ] } }), 'users.json');
    expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
    expect(job.suggestions.users).to.deep.equal([
      { sourceId: '11', action: 'skip' }, { sourceId: '12', action: 'map', targetId: kept }, { sourceId: '13', action: 'create' },
    ]);
    const refused = await expectRefused(app, () => admin.request('PUT', `${JOBS}/${job.jobId}/configuration`, { mappings: { users: [{ sourceId: '11', action: 'create' }] } }), 400);
    expect(refused.code).to.equal('mapping-name-taken');
    expect(refused.details).to.include({ path: 'mappings.users[0].action', sourceId: '11', email: 'gone@example.com', claimedBy: gone });
    expect((await admin.request('PUT', `${JOBS}/${job.jobId}/configuration`, { reset: true })).status).to.equal(200);

    // Someone registers late@example.com after the configuration: the preview shows execute would refuse the placeholder.
    const late = await registerUser(app.deps, { email: 'late@example.com', name: 'Late', password: PASSWORD, access: 'USER' }, meta);
    const preview = (await admin.post(`${JOBS}/${job.jobId}/preview`)).body.data;
    expect(preview.conflicts).to.deep.equal([{
      dataset: 'users', sourceId: '13', code: 'email-taken',
      message: `The row with id 13 of users would be refused: the e-mail late@example.com is claimed by user ${late} (an existing or a deleted account)`,
      details: { email: 'late@example.com', claimedBy: late },
    }]);
    // Saving the configuration again checks it again: the create is refused now (the account exists: map it).
    const again = await expectRefused(app, () => admin.request('PUT', `${JOBS}/${job.jobId}/configuration`, { reset: true }), 400);
    expect(again.code).to.equal('mapping-name-taken');
    expect(again.details).to.include({ path: 'mappings.users[2].action', existingId: late });
  });

  it('names the file as uploaded in the analysis and in errors, never the stored file', async () => {
    const job = await analysed(fixtureText('export-top-level.json'), 'My Testmo export.json');
    expect([...new Set(job.datasets.flatMap((d: any) => d.entries))]).to.deep.equal(['My Testmo export.json']);
    const broken = await analysed('{"users":{"data":[{"id":1,}]}}', 'broken export.json');
    expect(broken.phase).to.equal('failed');
    expect(broken.error.code).to.equal('export-invalid-json');
    expect(broken.error.error).to.contain('broken export.json');
    expect(broken.error.details).to.include({ entry: 'broken export.json' });
    expect(JSON.stringify(broken.error)).not.to.match(/[0-9a-f]{64}/);
  });
});
