import { expect } from 'chai';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient, signIn } from '../../support/server';
import { expectCompleted, postImport } from '../../imports/importClient';

const PASSWORD = 'quarantine-password-1';

/**
 * Quarantine against the whole application: a case quarantined and released with a reason (events
 * with who and why), listed per project, reported apart by run comparisons while its results stay
 * recorded; who may do it, and bad input.
 */
describe('quarantine: POST /api/cases/{id}/quarantine, /release, GET /api/quarantine', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let viewer: HttpClient;
  let outsider: HttpClient;
  let adminId: number;
  let projectId: number;
  let caseId: number;

  const login = (email: string) => signIn(app.url, email, PASSWORD);
  const model = async (entity: string, op: string, body: unknown) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(op === 'create' ? 201 : 200);
    return res.body.data;
  };
  const refused = (c: HttpClient, path: string, body: unknown, status: number, code: string, detailPath?: string) =>
    expectRefusedAs(app, () => c.post(path, body), status, code, detailPath);
  const listed = async (c: HttpClient) => {
    const res = await c.get(`/api/quarantine?projectId=${projectId}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data as { caseId: number; title: string; reason: string; since: string; by: { userId: number; name: string } }[];
  };

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    adminId = await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: PASSWORD, access: 'ADMIN' }, meta);
    const viewerId = await registerUser(app.deps, { email: 'viewer@example.com', name: 'Vic', password: PASSWORD, access: 'USER' }, meta);
    await registerUser(app.deps, { email: 'out@example.com', name: 'Oz', password: PASSWORD, access: 'USER' }, meta);
    admin = await login('admin@example.com');
    viewer = await login('viewer@example.com');
    outsider = await login('out@example.com');
    projectId = (await model('project', 'create', { data: { name: 'Shop' } })).id;
    const viewerRole = (await model('role', 'findMany', { where: { name: 'Viewer' } }))[0].id;
    await model('userProjectPermission', 'create', { data: { user: { connect: { id: viewerId } }, project: { connect: { id: projectId } }, accessType: 'SPECIFIC_ROLE', role: { connect: { id: viewerRole } } } });
    caseId = (await model('repositoryCase', 'create', { data: { title: 'pays', project: { connect: { id: projectId } } } })).id;
  });
  after(() => app?.stop());

  it('quarantines and releases a case with a reason: events with who and why, the list per project', async () => {
    const res = await admin.post(`/api/cases/${caseId}/quarantine`, { reason: '  flaky on Fridays  ' });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.data).to.include({ caseId, quarantined: true, reason: 'flaky on Fridays' });
    const [entry] = await listed(viewer);
    expect(entry).to.deep.include({ caseId, title: 'pays', reason: 'flaky on Fridays', by: { userId: adminId, name: 'Ada' } });
    await refused(admin, `/api/cases/${caseId}/quarantine`, { reason: 'again' }, 409, 'case-quarantined');
    expect((await admin.post(`/api/cases/${caseId}/release`, { reason: 'mock fixed' })).status).to.equal(200);
    expect(await listed(admin)).to.deep.equal([]);
    await refused(admin, `/api/cases/${caseId}/release`, { reason: 'again' }, 409, 'case-not-quarantined');
    const events = await app.deps.store.readStream(`caseQuarantine-${caseId}`);
    expect(events.map((e) => [e.type, (e.data as { reason: string }).reason, e.metadata.actor.userId])).to.deep.equal([
      ['CaseQuarantined', 'flaky on Fridays', adminId], ['CaseReleased', 'mock fixed', adminId],
    ]);
    const [audited] = (await admin.get(`/api/audit?type=CaseQuarantined&projectId=${projectId}`)).body.data;
    expect(audited).to.deep.include({ type: 'CaseQuarantined', projectId });
    // The case's own timeline shows both, in the order of the log, with who.
    const timeline = (await admin.get(`/api/history/repositoryCase/${caseId}`)).body.data as { type: string; actor: { userId: number }; changes: unknown[] }[];
    expect(timeline.map((e) => e.type)).to.deep.equal(['RepositoryCaseCreated', 'CaseQuarantined', 'CaseReleased']);
    expect(timeline[1].actor.userId).to.equal(adminId);
    expect(timeline[1].changes).to.deep.equal([{ field: 'quarantined', before: false, after: true }, { field: 'quarantineReason', before: null, after: 'flaky on Fridays' }]);
    expect(timeline[2].changes).to.deep.equal([{ field: 'quarantined', before: true, after: false }, { field: 'quarantineReason', before: 'flaky on Fridays', after: 'mock fixed' }]);
  });

  it('reports a quarantined case apart in run comparisons; its results stay recorded', async () => {
    const token = (await admin.post('/api/tokens', { name: 'ci' })).body.token as string;
    const junit = (outcome: string) => `<testsuite name="s"><testcase classname="shop" name="flaky" time="1">${outcome}</testcase><testcase classname="shop" name="solid" time="1">${outcome}</testcase></testsuite>`;
    const run = async (name: string, outcome: string) =>
      expectCompleted(await postImport(app.url, '/api/junit/import', { projectId, name }, [{ name: 'r.xml', content: junit(outcome) }], token));
    const base = await run('one', '');
    const head = await run('two', '<failure message="boom"/>');
    const [flaky] = await model('repositoryCase', 'findMany', { where: { title: 'flaky' } });
    expect((await admin.post(`/api/cases/${flaky.id}/quarantine`, { reason: 'known flaky' })).status).to.equal(200);
    const compared = (await admin.get(`/api/runs/compare?base=${base}&head=${head}`)).body.data;
    expect(compared.categories.newFailures.cases.map((c: any) => c.title)).to.deep.equal(['solid']);
    expect(compared.categories.quarantined.cases.map((c: any) => [c.title, c.head.status.systemName, c.quarantine.reason])).to.deep.equal([['flaky', 'failed', 'known flaky']]);
    expect(compared.summary).to.include({ newFailures: 1, quarantined: 1 });
    const results = await model('testRunResult', 'count', { where: { testRunId: head } });
    expect(results, 'every result stays recorded').to.equal(2);
  });

  it('needs the right to change the case (403), a case the caller sees (404), and a reason (400)', async () => {
    const other = (await model('repositoryCase', 'create', { data: { title: 'other', project: { connect: { id: projectId } } } })).id as number;
    await refused(viewer, `/api/cases/${other}/quarantine`, { reason: 'no' }, 403, 'forbidden');
    await refused(outsider, `/api/cases/${other}/quarantine`, { reason: 'no' }, 404, 'not-found', 'id');
    await refused(admin, `/api/cases/${other + 1000}/quarantine`, { reason: 'no' }, 404, 'not-found', 'id');
    await refused(admin, `/api/cases/${other}/quarantine`, {}, 400, 'invalid-argument');
    await refused(admin, `/api/cases/${other}/quarantine`, { reason: '   ' }, 400, 'invalid-argument');
    await refused(admin, `/api/cases/${other}/quarantine`, { reason: 'x'.repeat(2001) }, 400, 'invalid-argument');
    await refused(admin, `/api/cases/${other}/quarantine`, { reason: 'ok', until: 'later' }, 400, 'invalid-argument');
    await refused(admin, '/api/cases/abc/quarantine', { reason: 'ok' }, 400, 'invalid-argument', 'id');
    expect((await app.deps.store.readStream(`caseQuarantine-${other}`))).to.deep.equal([]);
    expect((await outsider.get(`/api/quarantine?projectId=${projectId}`)).status).to.equal(404);
    expect((await admin.get('/api/quarantine')).status).to.equal(400);
    expect((await admin.get('/api/quarantine?projectId=x')).status).to.equal(400);
  });
});
