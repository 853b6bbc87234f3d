import { expect } from 'chai';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';

/**
 * findUnique, findUniqueOrThrow, update, delete and upsert by every unique the catalogue declares
 * (a tag's name, a user's e-mail, a project assignment's userId_projectId), with other filters
 * beside the key as Prisma 5+ takes them; upsert with `update: {}` creates what is missing and
 * writes nothing for a row that exists.
 */
describe('model API: unique wheres by any unique key, over HTTP', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let other: HttpClient;
  let otherId: number;
  let projectId: number;
  const post = (path: string, body: unknown, as = admin) => as.post(`/api/model/${path}`, body);
  const head = async () => (await app.deps.store.headPosition()).toString();

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'unique-admin@example.com', name: 'Admin', password: 'unique-password-1', access: 'ADMIN' }, systemMetadata('test'));
    otherId = await registerUser(app.deps, { email: 'Other.User@Example.com', name: 'Other', password: 'unique-password-2', access: 'USER' }, systemMetadata('test'));
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'unique-admin@example.com', password: 'unique-password-1' })).status).to.equal(200);
    other = new HttpClient(app.url);
    expect((await other.post('/api/auth/login', { email: 'other.user@example.com', password: 'unique-password-2' })).status).to.equal(200);
    projectId = (await post('project/create', { data: { name: 'Unique' } })).body.data.id;
    for (const name of ['smoke', 'regression', 'nightly']) expect((await post('tag/create', { data: { name } })).status).to.equal(201);
  });
  after(() => app?.stop());

  it('findUnique and findUniqueOrThrow by a tag name, a user e-mail and a compound unique', async () => {
    const smoke = await post('tag/findUnique', { where: { name: 'smoke' } });
    expect(smoke.status).to.equal(200);
    expect(smoke.body.data).to.include({ name: 'smoke', isDeleted: false });
    expect((await post('user/findUniqueOrThrow', { where: { email: 'other.user@example.com' }, select: { id: true } })).body.data).to.deep.equal({ id: otherId });
    // Compared exactly, as Prisma: the e-mail is stored in lower case, the tag name as written.
    expect((await post('user/findUnique', { where: { email: 'Other.User@Example.com' } })).body.data).to.equal(null);
    expect((await post('tag/findUnique', { where: { name: 'Smoke' } })).body.data).to.equal(null);
    const missing = await post('tag/findUniqueOrThrow', { where: { name: 'absent' } });
    expect(missing.status).to.equal(404);
    expect(missing.body.code).to.equal('not-found');

    const assignment = await post('projectAssignment/create', { data: { user: { connect: { id: otherId } }, project: { connect: { id: projectId } } } });
    expect(assignment.status).to.equal(201);
    const byPair = await post('projectAssignment/findUnique', { where: { userId_projectId: { userId: otherId, projectId } } });
    expect(byPair.body.data.id).to.equal(assignment.body.data.id);
    // Other filters beside the key: all must hold.
    expect((await post('tag/findUnique', { where: { name: 'smoke', createdAt: { lt: '2000-01-01T00:00:00Z' } } })).body.data).to.equal(null);
    expect((await post('tag/findUnique', { where: { id: smoke.body.data.id, name: 'regression' } })).body.data).to.equal(null);
  });

  it('a refused unique where is a 400 that names the keys', async () => {
    const refused = await expectRefused(app, () => post('tag/update', { where: { createdAt: { lt: '2100-01-01T00:00:00Z' } }, data: { name: 'x' } }), 400);
    expect(refused).to.deep.include({ code: 'invalid-argument', details: { path: 'where' } });
    expect(refused.error).to.contain('id, or name');
    const filter = await expectRefused(app, () => post('tag/findUnique', { where: { name: { startsWith: 'sm' } } }), 400);
    expect(filter.details).to.deep.equal({ path: 'where.name' });
  });

  it('update and delete by a unique value; with a filter beside it that fails, a 404 that writes nothing', async () => {
    const renamed = await post('tag/update', { where: { name: 'regression' }, data: { name: 'regression suite' } });
    expect(renamed.status).to.equal(200);
    expect(renamed.body.data.name).to.equal('regression suite');
    const stale = await expectRefused(app, () => post('tag/update', { where: { name: 'regression suite', updatedAt: { lt: '2000-01-01T00:00:00Z' } }, data: { name: 'stale' } }), 404);
    expect(stale).to.deep.equal({ error: 'No tag matches the unique where', code: 'not-found', details: { path: 'where', entity: 'tag' } });
    await expectRefused(app, () => post('tag/delete', { where: { name: 'no such tag' } }), 404);

    const assignment = await post('projectAssignment/delete', { where: { userId_projectId: { userId: otherId, projectId } } });
    expect(assignment.status).to.equal(200);
    expect((await post('projectAssignment/findUnique', { where: { userId_projectId: { userId: otherId, projectId } } })).body.data).to.equal(null);
  });

  it('a deleted row gives its unique value up: not found by it, and a new row may take it', async () => {
    const old = (await post('tag/create', { data: { name: 'retired' } })).body.data.id;
    expect((await post('tag/delete', { where: { name: 'retired' } })).body.data).to.include({ id: old, isDeleted: true });
    expect((await post('tag/findUnique', { where: { name: 'retired' } })).body.data).to.equal(null);
    expect((await post('tag/findUnique', { where: { id: old } })).body.data).to.include({ name: 'retired', isDeleted: true });
    const fresh = await post('tag/upsert', { where: { name: 'retired' }, create: { name: 'retired' }, update: {} });
    expect(fresh.status).to.equal(201);
    expect(fresh.body.data.id).to.not.equal(old);
    expect((await post('tag/findUnique', { where: { name: 'retired' } })).body.data.id).to.equal(fresh.body.data.id);
  });

  it('upsert by a unique value with update: {} creates what is missing, and answers a row that exists without writing', async () => {
    const created = await post('tag/upsert', { where: { name: 'flaky' }, create: { name: 'flaky' }, update: {} });
    expect(created.status).to.equal(201);
    expect(created.body.data.name).to.equal('flaky');
    const before = await head();
    const again = await post('tag/upsert', { where: { name: 'flaky' }, create: { name: 'flaky' }, update: {} });
    expect(again.status).to.equal(200);
    expect(again.body.data).to.deep.equal(created.body.data);
    expect(await head(), 'nothing appended').to.equal(before);
    // By id too, as Prisma: the row as it is.
    expect((await post('tag/upsert', { where: { id: created.body.data.id }, create: { name: 'never' }, update: {} })).body.data.name).to.equal('flaky');
    expect(await head()).to.equal(before);
    // With changes, the row found by its unique value is updated.
    const updated = await post('tag/upsert', { where: { name: 'flaky' }, create: { name: 'never' }, update: { name: 'flaky tests' } });
    expect(updated.status).to.equal(200);
    expect(updated.body.data).to.include({ id: created.body.data.id, name: 'flaky tests' });
    // A user by e-mail: there, answered as is.
    const user = await post('user/upsert', { where: { email: 'other.user@example.com' }, create: { email: 'other.user@example.com', name: 'Again', password: 'another-password' }, update: {} });
    expect(user.status).to.equal(200);
    expect(user.body.data.id).to.equal(otherId);
  });

  it('a unique where finds only rows the caller sees: one they cannot see is null for a read and a 404 for a write', async () => {
    expect((await post('user/findUnique', { where: { email: 'unique-admin@example.com' } }, other)).body.data).to.equal(null);
    const adminId = (await post('user/findUnique', { where: { email: 'unique-admin@example.com' } })).body.data.id;
    const assignment = await post('projectAssignment/create', { data: { user: { connect: { id: adminId } }, project: { connect: { id: projectId } } } });
    expect(assignment.status).to.equal(201);
    const pair = { userId_projectId: { userId: adminId, projectId } };
    expect((await post('projectAssignment/findUnique', { where: pair }, other)).body.data).to.equal(null);
    const hidden = await expectRefused(app, () => post('projectAssignment/delete', { where: pair }, other), 404);
    expect(hidden).to.deep.include({ code: 'not-found', details: { path: 'where', entity: 'projectAssignment' } });
    // A tag is seen by everyone; writing it takes the Tags permission, checked first.
    expect((await expectRefused(app, () => post('tag/update', { where: { name: 'nightly' }, data: { name: 'x' } }, other), 403)).code).to.equal('forbidden');
  });
});
