import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { expectCompleted, importingAdmin, postImport } from '../../imports/importClient';

interface Entry {
  position: string; type: string; recordedAt: string;
  actor: { userId: number | null; name: string | null; tokenId: number | null; via: string };
  correlationId: string; import: { kind: string; jobId: number; chunk: number } | null;
  changes: { field: string; before: unknown; after: unknown }[];
}

/**
 * GET /api/history/{entity}/{id} against the whole application: the timeline of real commands
 * (created, changed field by field, deleted), of rows a result import wrote in bulk and changed
 * afterwards, of a user (no credential ever shown), its pages, who may read it, and bad input.
 */
describe('GET /api/history/{entity}/{id}', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let token: string;
  let adminId: number;
  let projectId: number;
  let model: (entity: string, op: string, body: unknown) => Promise<any>;
  let userId: number;
  let user: HttpClient;

  const history = async (c: HttpClient, path: string) => {
    const res = await c.get(`/api/history/${path}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body as { data: Entry[]; nextCursor: string | null };
  };
  const refused = (c: HttpClient, path: string, status: number, code: string, detailPath?: string) =>
    expectRefusedAs(app, () => c.get(`/api/history/${path}`), status, code, detailPath);

  before(async () => {
    app = await startTestApp({ imports: { chunkSize: 2 } });
    ({ token, projectId, model } = await importingAdmin(app, 'History'));
    admin = new HttpClient(app.url, token);
    adminId = (await admin.get('/api/auth/me')).body.user.id;
    userId = await registerUser(app.deps, { email: 'reader@example.com', name: 'Rita Reader', password: 'history-password-1', access: 'USER' }, systemMetadata('test'));
    user = new HttpClient(app.url);
    expect((await user.post('/api/auth/login', { email: 'reader@example.com', password: 'history-password-1' })).status).to.equal(200);
  });
  after(async () => {
    await app?.stop();
  });

  it('lists a case\'s events oldest first, each with who, through what, and its field changes from what to what', async () => {
    const tag = (await model('tag', 'create', { data: { name: 'smoke' } })).id as number;
    const id = (await model('repositoryCase', 'create', { data: { title: 'Log in', project: { connect: { id: projectId } }, steps: { create: [{ step: 'Open the page' }] } } })).id as number;
    await model('repositoryCase', 'update', { where: { id }, data: { title: 'Log in with a password', tags: { connect: [{ id: tag }] } } });
    await model('repositoryCase', 'update', { where: { id }, data: { estimate: 60 } });
    // Through the API token this time (the others through the administrator's session).
    expect((await admin.post('/api/model/repositoryCase/delete', { where: { id } })).status).to.equal(200);
    const { data, nextCursor } = await history(admin, `repositoryCase/${id}`);
    expect(nextCursor).to.equal(null);
    expect(data.map((e) => e.type)).to.deep.equal(['RepositoryCaseCreated', 'RepositoryCaseUpdated', 'RepositoryCaseUpdated', 'RepositoryCaseDeleted']);
    const positions = data.map((e) => BigInt(e.position));
    expect(positions).to.deep.equal([...positions].sort((a, b) => (a < b ? -1 : 1)));
    for (const [i, e] of data.entries()) {
      expect(e.actor).to.include({ userId: adminId, name: 'Admin', via: i === 3 ? 'api' : 'session' });
      if (i === 3) expect(e.actor.tokenId).to.be.a('number');
      else expect(e.actor.tokenId).to.equal(null);
      expect(e.import).to.equal(null);
      expect(Number.isNaN(Date.parse(e.recordedAt))).to.equal(false);
    }
    const created = data[0].changes;
    expect(created.find((c) => c.field === 'title')).to.deep.equal({ field: 'title', before: null, after: 'Log in' });
    expect(created.find((c) => c.field === 'projectId')).to.deep.equal({ field: 'projectId', before: null, after: projectId });
    expect((created.find((c) => c.field === 'steps')?.after as any[]).map((s) => s.step)).to.deep.equal(['Open the page']);
    expect(data[1].changes).to.deep.equal([
      { field: 'title', before: 'Log in', after: 'Log in with a password' },
      { field: 'tagIds', before: [], after: [tag] },
    ]);
    expect(data[2].changes).to.deep.equal([{ field: 'estimate', before: null, after: 60 }]);
    expect(data[3].changes).to.deep.equal([{ field: 'isDeleted', before: false, after: true }]);
  });

  it('pages with take and cursor, the pages together the whole timeline', async () => {
    const id = (await model('milestone', 'create', { data: { name: 'M1', project: { connect: { id: projectId } } } })).id as number;
    for (const name of ['M2', 'M3', 'M4']) await model('milestone', 'update', { where: { id }, data: { name } });
    const whole = (await history(admin, `milestone/${id}`)).data;
    expect(whole).to.have.length(4);
    const seen: Entry[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: Entry[]; nextCursor: string | null } = await history(admin, `milestone/${id}?take=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.data.length).to.be.at.most(3);
      seen.push(...page.data);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).to.deep.equal(whole);
    expect(whole.slice(1).map((e) => e.changes)).to.deep.equal([
      [{ field: 'name', before: 'M1', after: 'M2' }], [{ field: 'name', before: 'M2', after: 'M3' }], [{ field: 'name', before: 'M3', after: 'M4' }],
    ]);
  });

  it('shows rows a result import wrote in bulk: the chunk that created them first, then their own changes', async () => {
    const xml = '<testsuite name="pkg.Login" tests="3"><testcase classname="pkg.Login" name="ok" time="0.5"/>'
      + '<testcase classname="pkg.Login" name="fails" time="1.25"><failure message="boom">trace</failure></testcase>'
      + '<testcase classname="pkg.Login" name="third" time="0.1"/></testsuite>';
    const answer = await postImport(app.url, '/api/junit/import', { projectId, name: 'History run' }, [{ name: 'report.xml', content: xml }], token);
    const testRunId = expectCompleted(answer);
    const jobId = Number(answer.headers.get('x-import-job-id'));
    const results = await model('testRunResult', 'findMany', { where: { testRunId }, orderBy: { id: 'asc' } });
    expect(results).to.have.length(3);
    // chunkSize 2: the third result is in the second chunk.
    for (const [index, result] of results.entries()) {
      const { data } = await history(admin, `testRunResult/${result.id}`);
      expect(data).to.have.length(1);
      expect(data[0]).to.deep.include({ type: 'TestResultsImported', import: { kind: 'results', jobId, chunk: index < 2 ? 0 : 1 } });
      expect(data[0].actor.userId).to.equal(adminId);
      expect(data[0].changes.find((c) => c.field === 'testRunId')).to.deep.equal({ field: 'testRunId', before: null, after: testRunId });
    }
    const [kase] = await model('repositoryCase', 'findMany', { where: { className: 'pkg.Login', title: 'fails' } });
    await model('repositoryCase', 'update', { where: { id: kase.id }, data: { estimate: 5 } });
    const { data } = await history(admin, `repositoryCase/${kase.id}`);
    expect(data.map((e) => [e.type, e.import?.kind ?? null])).to.deep.equal([['TestResultsImported', 'results'], ['RepositoryCaseUpdated', null]]);
    expect(data[0].changes.find((c) => c.field === 'title')).to.deep.equal({ field: 'title', before: null, after: 'fails' });
    expect(data[1].changes).to.deep.equal([{ field: 'estimate', before: null, after: 5 }]);
  });

  it('answers 404 to whoever may not read the row now, and the timeline once they may', async () => {
    const id = (await model('repositoryCase', 'create', { data: { title: 'Private', project: { connect: { id: projectId } } } })).id as number;
    await refused(user, `repositoryCase/${id}`, 404, 'not-found');
    await refused(admin, `repositoryCase/${id + 100000}`, 404, 'not-found');
    await model('projectAssignment', 'create', { data: { user: { connect: { id: userId } }, project: { connect: { id: projectId } } } });
    const { data } = await history(user, `repositoryCase/${id}`);
    expect(data.map((e) => e.type)).to.deep.equal(['RepositoryCaseCreated']);
  });

  it('never shows a credential: a user\'s password change is an entry that changes nothing visible', async () => {
    await model('user', 'update', { where: { id: userId }, data: { password: 'history-password-2' } });
    await model('user', 'update', { where: { id: userId }, data: { name: 'Rita R.' } });
    const { data } = await history(admin, `user/${userId}`);
    const text = JSON.stringify(data);
    const hashes = (await app.deps.store.readStream(`user-${userId}`)).map((e) => (e.data as { passwordHash?: string }).passwordHash).filter(Boolean);
    expect(hashes).to.have.length(2);
    for (const hash of hashes) expect(text).to.not.include(hash!);
    for (const e of data) for (const c of e.changes) expect(c.field).to.not.match(/password|hash/i);
    expect(data[0].type).to.equal('UserRegistered');
    expect(data[0].changes.find((c) => c.field === 'email')).to.deep.equal({ field: 'email', before: null, after: 'reader@example.com' });
    const passwordEntry = data.find((e) => e.type === 'UserPasswordChanged');
    expect(passwordEntry?.changes).to.deep.equal([]);
    expect(data.at(-1)!.changes).to.deep.equal([{ field: 'name', before: 'Rita Reader', after: 'Rita R.' }]);
  });

  it('diffs an entity between two points (positions or times), its owned children item by item', async () => {
    const id = (await model('repositoryCase', 'create', { data: { title: 'A', project: { connect: { id: projectId } }, steps: { create: [{ step: 'one' }, { step: 'two' }] } } })).id as number;
    await model('repositoryCase', 'update', { where: { id }, data: { title: 'B', steps: { create: [{ step: 'three' }] } } });
    await model('repositoryCase', 'update', { where: { id }, data: { estimate: 9 } });
    const timeline = (await history(admin, `repositoryCase/${id}`)).data;
    const [created, titled, estimated] = timeline;
    const diff = async (query: string) => {
      const res = await admin.get(`/api/history/diff?entity=repositoryCase&id=${id}&${query}`);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.data;
    };
    const sinceCreation = await diff(`from=${created.position}&to=${titled.position}`);
    expect(sinceCreation.changes).to.deep.equal([{ field: 'title', before: 'A', after: 'B' }]);
    expect(sinceCreation.children.steps.added.map((s: any) => s.step)).to.deep.equal(['three']);
    expect(sinceCreation.children.steps.removed).to.deep.equal([]);
    expect(sinceCreation).to.deep.include({ entity: 'repositoryCase', id });
    expect(sinceCreation.from).to.include({ position: created.position, exists: true, events: 1 });
    const toNow = await diff(`from=${titled.position}`);
    expect(toNow.changes).to.deep.equal([{ field: 'estimate', before: null, after: 9 }]);
    expect(toNow.to).to.include({ position: estimated.position, exists: true, events: 3 });
    const before = new Date(Date.parse(created.recordedAt) - 60_000).toISOString();
    const whole = await diff(`from=${encodeURIComponent(before)}&to=${encodeURIComponent(estimated.recordedAt)}`);
    expect(whole.from.exists).to.equal(false);
    expect(whole.changes).to.deep.include({ field: 'title', before: null, after: 'B' });
    expect(whole.children.steps.added.map((s: any) => s.step)).to.deep.equal(['one', 'two', 'three']);
    const refusedDiff = async (query: string, path: string) => {
      const res = await admin.get(`/api/history/diff?${query}`);
      expect(res.status, JSON.stringify(res.body)).to.equal(400);
      expect(res.body.details.path).to.equal(path);
    };
    await refusedDiff(`entity=repositoryCase&id=${id}`, 'from');
    await refusedDiff(`entity=repositoryCase&id=${id}&from=yesterday`, 'from');
    await refusedDiff(`entity=repositoryCase&id=${id}&from=1&to=2026-13-01`, 'to');
    await refusedDiff(`entity=nothing&id=${id}&from=1`, 'entity');
    expect((await admin.get(`/api/history/diff?entity=repositoryCase&id=${id + 100000}&from=1`)).status).to.equal(404);
    const reader = new HttpClient(app.url);
    expect((await reader.post('/api/auth/login', { email: 'reader@example.com', password: 'history-password-2' })).status).to.equal(200);
    expect((await reader.get(`/api/history/diff?entity=repositoryCase&id=${id}&from=1`)).status, 'the reader is a member by now').to.equal(200);
    const other = (await model('project', 'create', { data: { name: 'Elsewhere' } })).id as number;
    const hidden = (await model('repositoryCase', 'create', { data: { title: 'Hidden', project: { connect: { id: other } } } })).id as number;
    expect((await reader.get(`/api/history/diff?entity=repositoryCase&id=${hidden}&from=1`)).status, 'not a member there').to.equal(404);
  });

  it('refuses bad input with 400 and the error shape', async () => {
    await refused(admin, 'nothing/1', 400, 'invalid-argument', 'entity');
    await refused(admin, 'step/1', 400, 'not-an-aggregate');
    await refused(admin, 'repositoryCase/abc', 400, 'invalid-argument', 'id');
    await refused(admin, 'repositoryCase/0', 400, 'invalid-argument', 'id');
    await refused(admin, 'repositoryCase/99999999999', 400, 'invalid-argument', 'id');
    await refused(admin, 'repositoryCase/1?take=0', 400, 'invalid-argument', 'take');
    await refused(admin, 'repositoryCase/1?take=501', 400, 'invalid-argument', 'take');
    await refused(admin, 'repositoryCase/1?cursor=bogus', 400, 'invalid-argument', 'cursor');
    await refused(admin, 'repositoryCase/1?take=1&take=2', 400, 'invalid-argument', 'take');
    await refused(admin, 'repositoryCase/1?asOf=now', 400, 'invalid-argument', 'asOf');
    const anonymous = await new HttpClient(app.url).get('/api/history/repositoryCase/1');
    expect(anonymous.status).to.equal(401);
  });
});
