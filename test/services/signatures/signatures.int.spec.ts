import { expect } from 'chai';
import { chainHash, contentHash } from '../../../contracts/chain';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient, signIn } from '../../support/server';
import { expectCompleted, postImport } from '../../imports/importClient';

const PASSWORD = 'signatures-password-1';

/**
 * Electronic signatures against the whole application: who may sign with which meaning (roles),
 * re-authentication (password, a fresh session login; never a token alone), the content hash as
 * of the signature's position, a later change shown as an earlier version, revocation as a signed
 * act, the timeline, and bad input that appends nothing.
 */
describe('signatures: POST /api/signatures, GET /api/signatures, POST /api/signatures/{id}/revoke', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let tester: HttpClient;
  let outsider: HttpClient;
  let testerId: number;
  let projectId: number;
  let runId: number;
  let milestoneId: number;
  let caseId: number;
  let token: string;

  const login = (email: string) => signIn(app.url, email, PASSWORD);
  const model = async (entity: string, op: string, body: unknown) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(op === 'create' ? 201 : 200);
    return res.body.data;
  };
  const signatures = async (c: HttpClient, entity: string, id: number) => {
    const res = await c.get(`/api/signatures?entity=${entity}&id=${id}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body as { data: any[]; content: { position: string; hash: string; events: number } };
  };

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: PASSWORD, access: 'ADMIN' }, meta);
    testerId = await registerUser(app.deps, { email: 'tester@example.com', name: 'Tess Ünïcode', password: PASSWORD, access: 'USER' }, meta);
    await registerUser(app.deps, { email: 'out@example.com', name: 'Oz', password: PASSWORD, access: 'USER' }, meta);
    admin = await login('admin@example.com');
    tester = await login('tester@example.com');
    outsider = await login('out@example.com');
    projectId = (await model('project', 'create', { data: { name: 'Pacemaker firmware' } })).id;
    const testerRole = (await model('role', 'findMany', { where: { name: 'Tester' } }))[0].id;
    await model('userProjectPermission', 'create', { data: { user: { connect: { id: testerId } }, project: { connect: { id: projectId } }, accessType: 'SPECIFIC_ROLE', role: { connect: { id: testerRole } } } });
    milestoneId = (await model('milestone', 'create', { data: { name: 'Release 4.2', project: { connect: { id: projectId } } } })).id;
    token = (await tester.post('/api/tokens', { name: 'ci' })).body.token as string;
    const junit = '<testsuite name="s"><testcase classname="pace" name="paces — «ünïcode»" time="1"/><testcase classname="pace" name="alarms" time="2"><failure message="late"/></testcase></testsuite>';
    runId = await expectCompleted(await postImport(app.url, '/api/junit/import', { projectId, name: 'Verification run' }, [{ name: 'r.xml', content: junit }], token));
    await model('testRun', 'update', { where: { id: runId }, data: { milestone: { connect: { id: milestoneId } } } });
    caseId = (await model('repositoryCase', 'create', { data: { title: 'pacing at 60 bpm', project: { connect: { id: projectId } } } })).id;
  });
  after(() => app?.stop());

  it('signs a run with a meaning a role may use: the content hash is that of the events behind the run, rebuilt offline from their chain', async () => {
    // Nobody defined who may sign "executed": a tester may not (403), nothing appended.
    await expectRefusedAs(app, () => tester.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed' }), 403, 'forbidden');
    const testerRole = (await model('role', 'findMany', { where: { name: 'Tester' } }))[0].id;
    await model('signatureMeaning', 'create', { data: { name: 'executed', description: 'I ran these tests', roles: { connect: [{ id: testerRole }] } } });

    const res = await tester.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed', comment: '  all tests run on bench 3  ' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const signed = res.body.data;
    expect(signed).to.deep.include({
      entity: 'testRun', entityId: runId, projectId, meaning: 'executed', comment: 'all tests run on bench 3', reauthentication: 'session-login',
      signer: { userId: testerId, name: 'Tess Ünïcode', email: 'tester@example.com' }, appliesTo: 'current', revoked: null,
    });
    // The content: the run's stream, its run cases' and results' streams, the import job that wrote them.
    const store = app.deps.store;
    const events = await store.readChained!({ upTo: signed.content.position, streams: [`testRun-${runId}`] });
    expect(events.length).to.be.greaterThan(0);
    const all = await store.readChained!({ upTo: signed.content.position, positions: Array.from({ length: Number(signed.content.position) }, (_, i) => String(i + 1)) });
    for (const e of all) expect(chainHash(e.previousHash, e), `event ${e.position} (${e.type}) hashed outside the database`).to.equal(e.hash);
    const runCases = await model('testRunCase', 'findMany', { where: { testRunId: runId }, select: { id: true } });
    const results = await model('testRunResult', 'findMany', { where: { testRunId: runId }, select: { id: true } });
    const streams = new Set([`testRun-${runId}`, ...runCases.map((r: any) => `testRunCase-${r.id}`), ...results.map((r: any) => `testRunResult-${r.id}`)]);
    const behind = all.filter((e) => streams.has(e.streamId) || e.streamId.startsWith('importJob-'));
    expect(signed.content).to.deep.equal({ position: behind.at(-1)!.position, hash: contentHash(behind), events: behind.length });

    // Listed for whoever may read the run; the signature event records who, through what.
    const listed = await signatures(admin, 'testRun', runId);
    expect(listed.data).to.have.length(1);
    expect(listed.data[0]).to.deep.equal(signed);
    expect(listed.content.hash).to.equal(signed.content.hash);
    const [event] = await store.readStream(`signatures-testRun-${runId}`);
    expect(event.type).to.equal('RecordSigned');
    expect(event.metadata.actor).to.include({ userId: testerId, via: 'session' });
  });

  it('shows a signature as applying to an earlier version once the record changes; the timeline shows both', async () => {
    await model('testRun', 'update', { where: { id: runId }, data: { note: 'a remark after signing' } });
    const listed = await signatures(tester, 'testRun', runId);
    expect(listed.data[0].appliesTo).to.equal('earlier-version');
    expect(BigInt(listed.content.position) > BigInt(listed.data[0].content.position)).to.equal(true);
    const timeline = (await admin.get(`/api/history/testRun/${runId}?take=500`)).body.data as { type: string }[];
    const types = timeline.map((e) => e.type);
    expect(types.indexOf('RecordSigned')).to.be.greaterThan(-1);
    expect(types.indexOf('TestRunUpdated', types.indexOf('RecordSigned')), 'the change after the signature').to.be.greaterThan(types.indexOf('RecordSigned'));
  });

  it('needs a re-authentication: a token alone cannot sign, a wrong password counts as a failed login, an old session needs the password', async () => {
    const ci = new HttpClient(app.url, token);
    await expectRefusedAs(app, () => ci.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed' }), 401, 'reauthentication-required', 'password');
    const before = await app.deps.store.headPosition();
    const wrong = await ci.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed', password: 'not-it' });
    expect(wrong.status).to.equal(401);
    expect(wrong.body.code).to.equal('reauthentication-failed');
    const appended = (await app.deps.store.readAll({ after: before })).map((e) => e.type);
    expect(appended, 'only the failed login is recorded').to.deep.equal(['LoginFailed']);
    const withPassword = await ci.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed', password: PASSWORD });
    expect(withPassword.status, JSON.stringify(withPassword.body)).to.equal(201);
    expect(withPassword.body.data).to.include({ reauthentication: 'password', appliesTo: 'current' });

    app.clock.advance(6 * 60_000);
    await expectRefusedAs(app, () => tester.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed' }), 401, 'reauthentication-required', 'password');
    tester = await login('tester@example.com');
    expect((await tester.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'executed' })).status).to.equal(201);
  });

  it('revokes a signature by a signed act: only its signer or an admin, never deleted', async () => {
    const [first] = (await signatures(tester, 'testRun', runId)).data;
    const body = { entity: 'testRun', id: runId, reason: 'signed before the remark was reviewed' };
    await expectRefusedAs(app, () => outsider.post(`/api/signatures/${first.id}/revoke`, { ...body, password: PASSWORD }), 404, 'not-found');
    const res = await tester.post(`/api/signatures/${first.id}/revoke`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.data.revoked).to.deep.include({ reason: body.reason, by: { userId: testerId, name: 'Tess Ünïcode' }, reauthentication: 'session-login' });
    await expectRefusedAs(app, () => tester.post(`/api/signatures/${first.id}/revoke`, body), 409, 'signature-revoked');
    await expectRefusedAs(app, () => tester.post('/api/signatures/00000000-0000-4000-8000-000000000000/revoke', body), 404, 'not-found');
    const listed = await signatures(admin, 'testRun', runId);
    expect(listed.data.map((s) => [s.id === first.id, s.revoked === null])).to.deep.equal([[true, false], [false, true], [false, true]]);
    const types = (await app.deps.store.readStream(`signatures-testRun-${runId}`)).map((e) => e.type);
    expect(types).to.deep.equal(['RecordSigned', 'RecordSigned', 'RecordSigned', 'SignatureRevoked']);
  });

  it('signs a milestone (its runs\' events with it) and a repository case; admins may use any meaning', async () => {
    const milestone = await admin.post('/api/signatures', { entity: 'milestone', id: milestoneId, meaning: 'approved', password: PASSWORD });
    expect(milestone.status, JSON.stringify(milestone.body)).to.equal(201);
    const run = (await signatures(admin, 'testRun', runId)).content;
    expect(milestone.body.data.content.events).to.be.greaterThan(run.events);
    const signedCase = await admin.post('/api/signatures', { entity: 'repositoryCase', id: caseId, meaning: 'reviewed', password: PASSWORD });
    expect(signedCase.status, JSON.stringify(signedCase.body)).to.equal(201);
    expect(signedCase.body.data.content.events).to.equal(1);
    await expectRefusedAs(app, () => tester.post('/api/signatures', { entity: 'repositoryCase', id: caseId, meaning: 'reviewed' }), 403, 'forbidden');
  });

  it('refuses bad input with the error shape and appends nothing', async () => {
    const sign = (c: HttpClient, body: unknown) => () => c.post('/api/signatures', body);
    await expectRefusedAs(app, sign(admin, { entity: 'testRun', id: runId, meaning: 'blessed' }), 400, 'unknown-meaning', 'meaning');
    await expectRefusedAs(app, sign(admin, { entity: 'project', id: projectId, meaning: 'approved' }), 400, 'invalid-argument', 'entity');
    await expectRefusedAs(app, sign(admin, { entity: 'testRun', id: 0, meaning: 'approved' }), 400, 'invalid-argument', 'id');
    await expectRefusedAs(app, sign(admin, { entity: 'testRun', id: runId, meaning: ' approved' }), 400, 'invalid-argument', 'meaning');
    await expectRefusedAs(app, sign(admin, { entity: 'testRun', id: runId, meaning: 'approved', signedAt: 'yesterday' }), 400, 'invalid-argument');
    await expectRefusedAs(app, sign(admin, { entity: 'testRun', id: runId, meaning: 'approved', comment: 'x'.repeat(2001) }), 400, 'invalid-argument', 'comment');
    await expectRefusedAs(app, sign(admin, { entity: 'testRun', id: runId + 1000, meaning: 'approved' }), 404, 'not-found');
    await expectRefusedAs(app, sign(outsider, { entity: 'testRun', id: runId, meaning: 'approved', password: PASSWORD }), 404, 'not-found');
    await expectRefusedAs(app, () => admin.post('/api/signatures/not-a-uuid/revoke', { entity: 'testRun', id: runId, reason: 'x' }), 400, 'invalid-argument', 'signatureId');
    await expectRefusedAs(app, () => admin.post(`/api/signatures/${'0'.repeat(8)}-0000-4000-8000-000000000000/revoke`, { entity: 'testRun', id: runId, reason: ' ' }), 400, 'invalid-argument', 'reason');
    for (const query of ['', '?entity=testRun', '?entity=user&id=1', '?entity=testRun&id=x']) {
      const res = await admin.get(`/api/signatures${query}`);
      expect(res.status, query).to.equal(400);
      expect(res.body.code).to.equal('invalid-argument');
    }
    expect((await outsider.get(`/api/signatures?entity=testRun&id=${runId}`)).status).to.equal(404);
  });
});
