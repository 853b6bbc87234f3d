import { expect } from 'chai';
import type { EventEnvelope } from '../../../contracts/envelope';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { waitUntil } from '../../support/wait';

/**
 * GET /api/events against the whole application: the log as NDJSON, paged by position, the pages
 * together exactly the log; filtered by type and project; project administrators their projects'
 * events only; credentials never in it; bad input and other callers refused.
 */
describe('GET /api/events', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let projectAdmin: HttpClient;
  const ids: Record<string, number> = {};

  const login = async (email: string) => {
    const c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email, password: 'events-password-1' })).status).to.equal(200);
    return c;
  };
  const create = async (entity: string, data: unknown) => {
    const res = await admin.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  /** One page: its events, parsed line by line, and its headers. */
  const page = async (c: HttpClient, query: string) => {
    const res = await fetch(`${app.url}/api/events${query}`, { headers: { cookie: c.cookie! } });
    const text = await res.text();
    expect(res.status, text).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/x-ndjson/);
    const events = text === '' ? [] : text.trimEnd().split('\n').map((line) => JSON.parse(line) as EventEnvelope);
    return { events, next: res.headers.get('x-next-after')!, head: res.headers.get('x-head-position')! };
  };
  /** Every event the caller may see for the query, following X-Next-After until a page is empty. */
  const everything = async (c: HttpClient, query: string) => {
    const all: EventEnvelope[] = [];
    let after = '0';
    for (;;) {
      const p = await page(c, `?after=${after}${query}`);
      if (p.events.length === 0 && p.next === after) return all;
      all.push(...p.events);
      after = p.next;
    }
  };
  const refused = (c: HttpClient, query: string, status: number, code: string, path?: string) =>
    expectRefusedAs(app, () => c.get(`/api/events${query}`), status, code, path);

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('events-setup');
    ids.admin = await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: 'events-password-1', access: 'ADMIN' }, meta);
    ids.projectAdmin = await registerUser(app.deps, { email: 'pa@example.com', name: 'Pat', password: 'events-password-1', access: 'PROJECTADMIN' }, meta);
    ids.user = await registerUser(app.deps, { email: 'user@example.com', name: 'Uma', password: 'events-password-1', access: 'USER' }, meta);
    admin = await login('admin@example.com');
    ids.projectA = await create('project', { name: 'A' });
    ids.projectB = await create('project', { name: 'B' });
    await create('projectAssignment', { user: { connect: { id: ids.projectAdmin } }, project: { connect: { id: ids.projectA } } });
    for (const [project, name] of [[ids.projectA, 'run A1'], [ids.projectB, 'run B1'], [ids.projectA, 'run A2']] as const) {
      await create('testRun', { name, project: { connect: { id: project } } });
    }
    await create('repositoryCase', { title: 'Pay', project: { connect: { id: ids.projectA } } });
    projectAdmin = await login('pa@example.com');
  });
  after(() => app?.stop());

  it('pages through the whole log in order: the pages together are exactly the log, credentials left out', async () => {
    const log = await app.deps.store.readAll({});
    const paged: EventEnvelope[] = [];
    let after = '0';
    for (;;) {
      const p = await page(admin, `?after=${after}&limit=4`);
      expect(p.events.length).to.be.at.most(4);
      expect(BigInt(p.head) >= BigInt(log.at(-1)!.position), 'the head is the log\'s last position or later').to.equal(true);
      if (p.events.length === 0) break;
      expect(p.next).to.equal(p.events.at(-1)!.position);
      paged.push(...p.events);
      after = p.next;
    }
    expect(paged.map((e) => e.position)).to.deep.equal(log.map((e) => e.position));
    const registered = paged.filter((e) => e.type === 'UserRegistered');
    expect(registered).to.have.length(3);
    for (const e of registered) expect((e.data as { passwordHash: string }).passwordHash).to.equal('redacted');
    const original = log.find((e) => e.type === 'UserRegistered')!;
    expect(JSON.stringify(paged)).to.not.include((original.data as { passwordHash: string }).passwordHash);
    const project = paged.find((e) => e.type === 'ProjectCreated')!;
    expect(project).to.deep.equal(log.find((e) => e.position === project.position));
  });

  it('filters by event types and by project', async () => {
    const runs = await everything(admin, '&types=TestRunCreated');
    expect(runs.map((e) => (e.data as { name: string }).name)).to.deep.equal(['run A1', 'run B1', 'run A2']);
    const both = await everything(admin, '&types=TestRunCreated,RepositoryCaseCreated&limit=1');
    expect(both.map((e) => e.type)).to.deep.equal(['TestRunCreated', 'TestRunCreated', 'TestRunCreated', 'RepositoryCaseCreated']);
    await waitUntil(async () => (await everything(admin, `&project=${ids.projectB}`)).length > 0, 'the audit projection has the project of the events');
    const inB = await everything(admin, `&project=${ids.projectB}`);
    expect(inB.map((e) => e.type)).to.deep.equal(['ProjectCreated', 'TestRunCreated']);
  });

  it('gives a project administrator the events of the projects they administer, nothing without a project', async () => {
    // A page ends before events the audit projection has not applied yet: wait until it has the last one.
    await waitUntil(async () => (await everything(projectAdmin, '')).some((e) => e.type === 'RepositoryCaseCreated'), 'the audit projection caught up');
    const seen = await everything(projectAdmin, '');
    const log = await app.deps.store.readAll({});
    const projectOfRun = new Map(log.filter((e) => e.type === 'TestRunCreated').map((e) => [e.streamId, (e.data as { projectId: number }).projectId]));
    for (const e of seen) {
      expect(e.type, 'no user, token or global event').to.not.match(/^User|^ApiToken|^Status|^Tag/);
      if (e.type === 'TestRunCreated') expect(projectOfRun.get(e.streamId)).to.equal(ids.projectA);
    }
    expect(seen.map((e) => e.type)).to.include.members(['ProjectCreated', 'TestRunCreated', 'RepositoryCaseCreated']);
    expect((await page(projectAdmin, `?project=${ids.projectB}`)).events, 'another project: an empty page').to.deep.equal([]);
  });

  it('refuses other callers and bad input with the error shape', async () => {
    await refused(await login('user@example.com'), '', 403, 'forbidden');
    expect((await new HttpClient(app.url).get('/api/events')).status).to.equal(401);
    await refused(admin, '?after=-1', 400, 'invalid-argument', 'after');
    await refused(admin, '?after=abc', 400, 'invalid-argument', 'after');
    await refused(admin, '?limit=0', 400, 'invalid-argument', 'limit');
    await refused(admin, '?limit=10001', 400, 'invalid-argument', 'limit');
    await refused(admin, '?types=TestRunCreated,NoSuchEvent', 400, 'invalid-argument', 'types');
    await refused(admin, '?project=x', 400, 'invalid-argument', 'project');
    await refused(admin, '?after=1&after=2', 400, 'invalid-argument', 'after');
    await refused(admin, '?since=1', 400, 'invalid-argument', 'since');
  });
});
