import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { AUDIT_PARAMETERS } from '../../../services/audit/audit.query';
import { hashToken } from '../../../services/identity/secrets';
import { sessionRefOf, systemMetadata } from '../../../services/shared/context';
import { startTestApp, TEST_TOKEN_SECRET, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

interface Entry {
  position: string; recordedAt: string; type: string; streamId: string; entity: string; entityId: string; projectId: number | null;
  actor: { userId: number | null; email: string | null; name: string | null; tokenId: number | null; via: string; ip: string | null; sessionRef: string | null };
  correlationId: string; changedFields: string[];
}

/**
 * GET /api/audit against the whole application: the trail of real commands (session, token, CLI,
 * behind a trusted proxy), its filters and pages, and who may read which part of it.
 */
describe('GET /api/audit', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let projectAdmin: HttpClient;
  let plainUser: HttpClient;
  const ids: Record<string, number> = {};
  let token: { id: number; value: string };

  const login = async (email: string) => {
    const c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email, password: 'audit-password-1' })).status).to.equal(200);
    return c;
  };
  /** A request with headers HttpClient does not send: the CLI's User-Agent, a proxy's X-Forwarded-For, a correlation id. */
  const send = async (path: string, body: unknown, headers: Record<string, string>) => {
    const res = await fetch(app.url + path, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token.value}`, ...headers }, body: JSON.stringify(body),
    });
    const json = (await res.json()) as { data: { id: number } };
    expect(res.status, JSON.stringify(json)).to.be.oneOf([200, 201]);
    return json.data;
  };
  const create = async (c: HttpClient, entity: string, data: unknown) => {
    const res = await c.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  const audit = async (c: HttpClient, query = '') => {
    const res = await c.get(`/api/audit${query}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body as { data: Entry[]; nextCursor: string | null };
  };
  /** Every entry the caller may see for the query, following the cursor. */
  const everything = async (c: HttpClient, query = '') => {
    const all: Entry[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: Entry[]; nextCursor: string | null } = await audit(c, `?take=7${query}${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...page.data);
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  };
  const refused = async (c: HttpClient, query: string, status: number, code: string, path?: string) => {
    const res = await c.get(`/api/audit${query}`);
    expect(res.status, `${query}: ${JSON.stringify(res.body)}`).to.equal(status);
    expect(res.body).to.have.all.keys('error', 'code', 'details');
    expect(res.body.code, query).to.equal(code);
    if (path !== undefined) expect(res.body.details.path, query).to.equal(path);
  };

  before(async () => {
    app = await startTestApp({ trustProxy: true });
    const meta = systemMetadata('audit-setup');
    ids.admin = await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada Admin', password: 'audit-password-1', access: 'ADMIN' }, meta);
    ids.projectAdmin = await registerUser(app.deps, { email: 'pa@example.com', name: 'Pat Projectadmin', password: 'audit-password-1', access: 'PROJECTADMIN' }, meta);
    ids.user = await registerUser(app.deps, { email: 'user@example.com', name: 'Uma User', password: 'audit-password-1', access: 'USER' }, meta);
    admin = await login('admin@example.com');
    ids.projectA = await create(admin, 'project', { name: 'A' });
    ids.projectB = await create(admin, 'project', { name: 'B' });
    await create(admin, 'projectAssignment', { user: { connect: { id: ids.projectAdmin } }, project: { connect: { id: ids.projectA } } });
    await create(admin, 'projectAssignment', { user: { connect: { id: ids.user } }, project: { connect: { id: ids.projectA } } });
    const created = await admin.post('/api/tokens', { name: 'ci' });
    expect(created.status).to.equal(201);
    token = { id: created.body.id, value: created.body.token };

    // Through the CLI, behind the proxy: a run in A. Through the API: a case with a step, a run case, its update; a run in B.
    const cli = { 'user-agent': 'testament-cli/1.0', 'x-forwarded-for': '203.0.113.9', 'x-correlation-id': 'cli-run-1' };
    ids.runA = (await send('/api/model/testRun/create', { data: { name: 'Nightly', project: { connect: { id: ids.projectA } } } }, cli)).id;
    const api = { 'x-correlation-id': 'api-case-1' };
    ids.caseA = (await send('/api/model/repositoryCase/create', {
      data: { title: 'Pay', project: { connect: { id: ids.projectA } }, steps: { create: [{ step: 'Open the cart' }] } },
    }, api)).id;
    ids.runCase = (await send('/api/model/testRunCase/create', {
      data: { testRun: { connect: { id: ids.runA } }, repositoryCase: { connect: { id: ids.caseA } } },
    }, { 'x-correlation-id': 'api-runcase-1' })).id;
    await send('/api/model/testRunCase/update', { where: { id: ids.runCase }, data: { notes: 'flaky on Fridays' } }, { 'x-correlation-id': 'api-runcase-2' });
    ids.runB = (await send('/api/model/testRun/create', { data: { name: 'Smoke', project: { connect: { id: ids.projectB } } } }, {})).id;

    projectAdmin = await login('pa@example.com');
    plainUser = await login('user@example.com');
  });
  after(() => app?.stop());

  it('records who did it, through which token or session, how, from where and under which request', async () => {
    const cliEvents = (await audit(admin, '?correlationId=cli-run-1')).data;
    expect(cliEvents.map((e) => e.type)).to.include('TestRunCreated');
    for (const e of cliEvents) {
      expect(e.actor).to.deep.equal({
        userId: ids.admin, email: 'admin@example.com', name: 'Ada Admin', tokenId: token.id, via: 'cli', ip: '203.0.113.9', sessionRef: null,
      });
      expect(e.correlationId).to.equal('cli-run-1');
    }

    const [apiEvent] = (await audit(admin, '?correlationId=api-case-1&type=RepositoryCaseCreated')).data;
    expect(apiEvent.actor).to.deep.include({ userId: ids.admin, tokenId: token.id, via: 'api', ip: '127.0.0.1', sessionRef: null });

    // The session is named by the first 16 hex digits of SHA-256 of its id, never by the id itself.
    const sid = /^s:(.+)\.[^.]+$/.exec(decodeURIComponent(admin.cookie!.split('=')[1]))![1];
    const [projectCreated] = (await audit(admin, `?entity=project&entityId=${ids.projectA}`)).data;
    expect(projectCreated).to.deep.include({ type: 'ProjectCreated', streamId: `project-${ids.projectA}`, entity: 'project', entityId: String(ids.projectA), projectId: ids.projectA });
    expect(projectCreated.actor).to.deep.equal({
      userId: ids.admin, email: 'admin@example.com', name: 'Ada Admin', tokenId: null, via: 'session', ip: '127.0.0.1', sessionRef: sessionRefOf(sid),
    });
    expect(JSON.stringify(await everything(admin))).to.not.include(sid);

    const setup = (await audit(admin, `?entity=user&entityId=${ids.user}`)).data;
    expect(setup.map((e) => [e.type, e.actor.userId, e.actor.via, e.correlationId, e.projectId])).to.deep.equal([['UserRegistered', null, 'system', 'audit-setup', null]]);
  });

  it('a CLI User-Agent makes a session request nothing but a session request', async () => {
    const res = await fetch(`${app.url}/api/model/tag/create`, {
      method: 'POST', body: JSON.stringify({ data: { name: 'from-a-browser' } }),
      headers: { 'content-type': 'application/json', cookie: admin.cookie!, origin: app.url, 'user-agent': 'testament-cli/1.0', 'x-correlation-id': 'session-ua' },
    });
    expect(res.status).to.equal(201);
    const entries = (await audit(admin, '?correlationId=session-ua&entity=tag')).data;
    expect(entries.map((e) => e.actor.via)).to.deep.equal(['session']);
  });

  it('finds the project of nested entities: a run case through its run, a step through its case', async () => {
    const runCase = (await audit(admin, `?entity=testRunCase&entityId=${ids.runCase}`)).data;
    expect(runCase.map((e) => [e.type, e.projectId])).to.deep.equal([['TestRunCaseUpdated', ids.projectA], ['TestRunCaseCreated', ids.projectA]]);
    expect(runCase[0].changedFields).to.deep.equal(['notes']);
    expect(runCase[1].changedFields).to.include.members(['testRunCaseId', 'testRunId', 'repositoryCaseId', 'createdAt']);
    const stepsChanged = (await send('/api/model/repositoryCase/update', {
      where: { id: ids.caseA }, data: { steps: { create: [{ step: 'Pay' }] } },
    }, { 'x-correlation-id': 'api-step-1' }));
    expect(stepsChanged.id).to.equal(ids.caseA);
    const [stepEvent] = (await audit(admin, '?correlationId=api-step-1&type=RepositoryCaseUpdated')).data;
    expect(stepEvent).to.deep.include({ entity: 'repositoryCase', entityId: String(ids.caseA), projectId: ids.projectA, changedFields: ['steps'] });
  });

  it('filters by entity, id, project, actor, token, via, type, correlation id and time, together', async () => {
    const all = await everything(admin);
    const expectSame = async (query: string, keep: (e: Entry) => boolean) => {
      const found = await everything(admin, query);
      expect(found.map((e) => e.position), query).to.deep.equal(all.filter(keep).map((e) => e.position));
      expect(found.length, `${query} finds something`).to.be.greaterThan(0);
    };
    await expectSame('&entity=testRun', (e) => e.entity === 'testRun');
    await expectSame(`&entity=testRun&entityId=${ids.runB}`, (e) => e.streamId === `testRun-${ids.runB}`);
    await expectSame(`&projectId=${ids.projectB}`, (e) => e.projectId === ids.projectB);
    await expectSame(`&actor=${ids.admin}`, (e) => e.actor.userId === ids.admin);
    await expectSame(`&tokenId=${token.id}`, (e) => e.actor.tokenId === token.id);
    await expectSame('&via=cli', (e) => e.actor.via === 'cli');
    await expectSame('&via=system', (e) => e.actor.via === 'system');
    await expectSame('&type=ProjectCreated', (e) => e.type === 'ProjectCreated');
    await expectSame('&entity=ids', (e) => e.entity === 'ids');
    await expectSame(`&via=api&projectId=${ids.projectA}&type=TestRunCaseUpdated`, (e) => e.actor.via === 'api' && e.projectId === ids.projectA && e.type === 'TestRunCaseUpdated');
    expect((await audit(admin, `?actor=${ids.user}`)).data).to.deep.equal([]);

    // from is inclusive, to exclusive.
    const middle = all[Math.floor(all.length / 2)];
    const at = encodeURIComponent(middle.recordedAt);
    await expectSame(`&from=${at}`, (e) => e.recordedAt >= middle.recordedAt);
    await expectSame(`&to=${encodeURIComponent(all[0].recordedAt)}&from=${encodeURIComponent(all[all.length - 1].recordedAt)}`, (e) => e.recordedAt < all[0].recordedAt);
    expect((await audit(admin, `?from=${at}&to=${at}`)).data).to.deep.equal([]);
  });

  it('pages newest first; a cursor stays valid and its pages stay the same while new events arrive', async () => {
    const all = await everything(admin);
    const positions = all.map((e) => BigInt(e.position));
    expect(positions).to.deep.equal([...positions].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0)));
    expect(new Set(all.map((e) => e.position)).size).to.equal(all.length);

    const first = await audit(admin, '?take=3');
    expect(first.data.map((e) => e.position)).to.deep.equal(all.slice(0, 3).map((e) => e.position));
    expect(first.nextCursor).to.be.a('string');
    await create(admin, 'tag', { name: 'arrived-meanwhile' });
    const second = await audit(admin, `?take=3&cursor=${first.nextCursor}`);
    expect(second.data).to.deep.equal(all.slice(3, 6));
    const fresh = await audit(admin, '?take=3');
    expect(fresh.data[0].type).to.equal('TagCreated');

    const last = await audit(admin, `?take=500&cursor=${second.nextCursor}`);
    expect(last.nextCursor).to.equal(null);
    expect(last.data).to.deep.equal(all.slice(6));
    const now = await everything(admin);
    expect(now.slice(now.length - all.length)).to.deep.equal(all);
    expect(now.slice(0, now.length - all.length).every((e) => BigInt(e.position) > positions[0])).to.equal(true);
  });

  it('administrators see everything, a project administrator only the projects they administer, others nothing', async () => {
    const everythingForAdmin = await everything(admin);
    expect(everythingForAdmin.some((e) => e.projectId === null)).to.equal(true);
    expect(everythingForAdmin.some((e) => e.projectId === ids.projectB)).to.equal(true);

    const mine = await everything(projectAdmin);
    expect(mine.length).to.be.greaterThan(0);
    expect(mine.map((e) => e.position)).to.deep.equal(everythingForAdmin.filter((e) => e.projectId === ids.projectA).map((e) => e.position));
    expect(mine.map((e) => e.streamId)).to.include.members([`testRun-${ids.runA}`, `testRunCase-${ids.runCase}`, `repositoryCase-${ids.caseA}`]);

    // Another project's events: an empty page, as if there were none (reads filter silently).
    expect(await audit(projectAdmin, `?projectId=${ids.projectB}`)).to.deep.equal({ data: [], nextCursor: null });
    expect((await audit(projectAdmin, `?entity=testRun&entityId=${ids.runB}`)).data).to.deep.equal([]);
    expect((await audit(projectAdmin, '?entity=user')).data).to.deep.equal([]);

    await refused(plainUser, '', 403, 'forbidden');
    await refused(plainUser, `?projectId=${ids.projectA}`, 403, 'forbidden');
    await refused(new HttpClient(app.url), '', 401, 'unauthenticated');
    await refused(new HttpClient(app.url, 'tst_not-a-token'), '', 401, 'invalid-token');
  });

  it('never shows a password hash, a token hash or a token value', async () => {
    const passwordHash = (await app.deps.knex('users').where({ id: ids.admin }).first('password_hash')).password_hash as string;
    const text = JSON.stringify(await everything(admin)) + JSON.stringify((await app.deps.knex.raw('SELECT * FROM audit_events')).rows);
    expect(text).to.include('ApiTokenCreated').and.include('UserRegistered');
    for (const secret of [passwordHash, token.value, hashToken(TEST_TOKEN_SECRET, token.value), 'passwordHash', 'tokenHash']) expect(text).to.not.include(secret);
  });

  it('is described in the custom OpenAPI document: every parameter it takes, the shape of its answer', async () => {
    const doc = (await new HttpClient(app.url).get('/api/docs?category=custom')).body;
    const operation = doc.paths['/api/audit'].get;
    expect(operation.parameters.map((p: { name: string }) => p.name)).to.have.members([...AUDIT_PARAMETERS]);
    expect(Object.keys(operation.responses)).to.have.members(['200', '400', '401', '403']);
    const entry = operation.responses[200].content['application/json'].schema.properties.data.items;
    const [answered] = (await audit(admin, '?take=1')).data;
    expect(Object.keys(answered)).to.have.members(entry.required);
    expect(Object.keys(answered.actor)).to.have.members(entry.properties.actor.required);
  });

  it('refuses unknown, repeated and malformed parameters with 400 naming the parameter', async () => {
    const bad: [query: string, path: string][] = [
      ['?colour=red', 'colour'],
      ['?entity=test-run', 'entity'],
      ['?entity=', 'entity'],
      ['?entityId=' + 'x'.repeat(201), 'entityId'],
      ['?projectId=abc', 'projectId'],
      ['?projectId=0', 'projectId'],
      ['?projectId=2147483648', 'projectId'],
      ['?projectId=1&projectId=2', 'projectId'],
      ['?actor=-1', 'actor'],
      ['?tokenId=1.5', 'tokenId'],
      ['?via=pigeon', 'via'],
      ['?type=testRunCreated', 'type'],
      ['?correlationId=' + encodeURIComponent('a b'), 'correlationId'],
      ['?from=yesterday', 'from'],
      ['?from=2026-06-01', 'from'],
      ['?to=2026-13-01T00:00:00Z', 'to'],
      ['?from=2026-06-02T00:00:00Z&to=2026-06-01T00:00:00Z', 'to'],
      ['?take=0', 'take'],
      ['?take=501', 'take'],
      ['?take=ten', 'take'],
      ['?cursor=nonsense', 'cursor'],
      ['?cursor=' + Buffer.from('p0').toString('base64url'), 'cursor'],
      ['?entity[name]=testRun', 'entity'],
    ];
    for (const [query, path] of bad) await refused(admin, query, 400, 'invalid-argument', path);
    // The same for a project administrator (parameters are checked whoever asks).
    await refused(projectAdmin, '?take=501', 400, 'invalid-argument', 'take');
  });
});
