import { expect } from 'chai';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { HttpClient } from '../../support/server';
import { expectCompleted, importingAdmin, postImport } from '../../imports/importClient';

/**
 * `asOf` on the model API's reads against the whole application: a case as it was before each
 * change, with its steps, tags and counts as of then; a deleted row back; a run's results as of a
 * point between two result imports; aggregate and groupBy as of then; times; bad input refused.
 */
describe('model API reads asOf a point of the log', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let projectId: number;
  let model: (entity: string, op: string, body: unknown) => Promise<any>;
  let token: string;
  const upload = async (fields: Record<string, string | number>, xml: string) =>
    expectCompleted(await postImport(app.url, '/api/junit/import', { projectId, ...fields }, [{ name: 'TEST-a.xml', content: xml }], token));

  /** A write through the model API, answering its row and the position of its last event. */
  const write = async (entity: string, op: string, body: unknown) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(op === 'create' ? 201 : 200);
    return { data: res.body.data, position: res.headers.get('x-event-position')! };
  };
  const read = async (entity: string, op: string, body: Record<string, unknown>) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data;
  };

  before(async () => {
    app = await startTestApp({ imports: { chunkSize: 2 } });
    ({ admin, projectId, model, token } = await importingAdmin(app, 'AsOf'));
  });
  after(async () => {
    await app?.stop();
  });

  it('answers a case, its steps, tags and counts as they were right after each position', async () => {
    const tag = (await model('tag', 'create', { data: { name: 'asof-smoke' } })).id as number;
    const created = await write('repositoryCase', 'create', { data: { title: 'Log in', project: { connect: { id: projectId } }, steps: { create: [{ step: 'Open the page' }] } } });
    const id = created.data.id as number;
    const renamed = await write('repositoryCase', 'update', { where: { id }, data: { title: 'Log in with a password', tags: { connect: [{ id: tag }] }, steps: { create: [{ step: 'Type the password' }] } } });
    const deleted = await write('repositoryCase', 'delete', { where: { id } });
    const shape = { where: { id }, include: { steps: { orderBy: { id: 'asc' } }, tags: true }, select: undefined };
    const at = (asOf: unknown) => read('repositoryCase', 'findUnique', { ...shape, asOf });

    expect(await at(String(BigInt(created.position) - 1n))).to.equal(null);
    const first = await at(created.position);
    expect(first).to.include({ title: 'Log in', isDeleted: false });
    expect(first.steps.map((s: any) => s.step)).to.deep.equal(['Open the page']);
    expect(first.tags).to.deep.equal([]);
    const second = await at(Number(renamed.position));
    expect(second).to.include({ title: 'Log in with a password', isDeleted: false });
    expect(second.steps.map((s: any) => s.step)).to.deep.equal(['Open the page', 'Type the password']);
    expect(second.tags.map((t: any) => t.id)).to.deep.equal([tag]);
    expect((await at(deleted.position)).isDeleted).to.equal(true);
    // The same read without asOf is the read model now.
    expect(await at(deleted.position)).to.deep.equal(await read('repositoryCase', 'findUnique', shape));

    const counted = await read('repositoryCase', 'findMany', { where: { id }, select: { id: true, _count: { select: { steps: true, tags: true } } }, asOf: created.position });
    expect(counted).to.deep.equal([{ id, _count: { steps: 1, tags: 0 } }]);
    expect(await read('repositoryCase', 'count', { where: { id, tags: { some: { id: tag } } }, asOf: created.position })).to.equal(0);
    expect(await read('repositoryCase', 'count', { where: { id, tags: { some: { id: tag } } }, asOf: renamed.position })).to.equal(1);
  });

  it('answers a run\'s results between two result imports, aggregate and groupBy included, and a time for a position', async () => {
    const junit = (status: 'ok' | 'fail') =>
      `<testsuite name="S" tests="1"><testcase classname="c.A" name="works" time="0.5">${status === 'fail' ? '<failure message="no"/>' : ''}</testcase></testsuite>`;
    const runId = await upload({ name: 'AsOf run' }, junit('ok'));
    const between = await app.deps.store.headPosition();
    const recordedBetween = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await upload({ testRunId: runId }, junit('fail'))).to.equal(runId);

    const results = (asOf?: string) => read('testRunResult', 'findMany', { where: { testRunId: runId }, orderBy: { id: 'asc' }, include: { status: true }, ...(asOf && { asOf }) });
    const then = await results(between);
    const now = await results();
    expect(then).to.have.length(1);
    expect(now).to.have.length(2);
    expect(then[0]).to.deep.equal(now[0]);
    expect(await results(recordedBetween)).to.deep.equal(then);
    const runCase = (asOf?: string) => read('testRunCase', 'findFirst', { where: { testRunId: runId }, include: { status: true }, ...(asOf && { asOf }) });
    expect((await runCase(between)).status.systemName).to.equal('passed');
    expect((await runCase()).status.systemName).to.equal('failed');
    const sum = (asOf?: string) => read('testRunResult', 'aggregate', { where: { testRunId: runId }, _count: true, _sum: { durationMs: true }, ...(asOf && { asOf }) });
    expect(await sum(between)).to.deep.equal({ _count: 1, _sum: { durationMs: 500 } });
    expect(await sum()).to.deep.equal({ _count: 2, _sum: { durationMs: 1000 } });
    const groups = await read('testRunResult', 'groupBy', { by: ['statusId'], where: { testRunId: runId }, _count: true, asOf: between });
    expect(groups).to.deep.equal([{ statusId: then[0].statusId, _count: 1 }]);

    // The run's diff between the two imports: its run cases and results, as of each point.
    const res = await admin.get(`/api/history/diff?entity=testRun&id=${runId}&from=${between}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const { testRunCases, results: resultDiff } = res.body.data.children;
    expect(resultDiff.added.map((r: any) => r.id)).to.deep.equal([now[1].id]);
    expect(resultDiff.removed).to.deep.equal([]);
    expect(testRunCases.added).to.deep.equal([]);
    expect(testRunCases.changed).to.have.length(1);
    const statusChange = testRunCases.changed[0].changes.find((c: any) => c.field === 'statusId');
    expect(statusChange).to.deep.equal({ field: 'statusId', before: (await runCase(between)).statusId, after: (await runCase()).statusId });
    const none = await admin.get(`/api/history/diff?entity=testRun&id=${runId}&from=${between}&to=${between}`);
    expect(none.body.data.children.results).to.deep.equal({ added: [], removed: [], changed: [] });
  });

  it('decides access by the caller\'s rights now: a user outside the project reads nothing of its past', async () => {
    const head = await app.deps.store.headPosition();
    await registerUser(app.deps, { email: 'outside@example.com', name: 'Outside', password: 'outside-password-1', access: 'USER' }, systemMetadata('test'));
    const outsider = new HttpClient(app.url);
    expect((await outsider.post('/api/auth/login', { email: 'outside@example.com', password: 'outside-password-1' })).status).to.equal(200);
    expect(await read('repositoryCase', 'count', { where: { projectId }, asOf: head })).to.be.greaterThan(0);
    for (const entity of ['repositoryCase', 'testRunResult', 'project']) {
      const res = await outsider.post(`/api/model/${entity}/count`, { asOf: head });
      expect(res.body.data, entity).to.equal(0);
    }
  });

  it('refuses a bad asOf, one past the head, and asOf on a write, each with nothing changed', async () => {
    const head = await app.deps.store.headPosition();
    const post = (op: string, body: unknown) => () => admin.post(`/api/model/project/${op}`, body);
    await expectRefusedAs(app, post('findMany', { asOf: 'yesterday' }), 400, 'invalid-argument', 'asOf');
    await expectRefusedAs(app, post('findMany', { asOf: -1 }), 400, 'invalid-argument', 'asOf');
    await expectRefusedAs(app, post('findMany', { asOf: '2026-01-01T00:00:00' }), 400, 'invalid-argument', 'asOf');
    await expectRefusedAs(app, post('count', { asOf: String(BigInt(head) + 1000n) }), 400, 'invalid-argument', 'asOf');
    await expectRefusedAs(app, post('create', { data: { name: 'Never' }, asOf: head }), 400, 'invalid-argument', 'asOf');
  });
});
