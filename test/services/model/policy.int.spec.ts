import { expect } from 'chai';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

/**
 * The policy hook of the model API: administrators see and change everything; other users see
 * their projects and what belongs to them (plus the global configuration) and write only there.
 */
describe('model API row-level security (the policy hook)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let user: HttpClient;
  let stranger: HttpClient;
  let userId: number;
  const ids: Record<string, number> = {};

  const login = async (email: string) => {
    const c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email, password: 'policy-password-1' })).status).to.equal(200);
    return c;
  };
  const created = async (c: HttpClient, entity: string, data: unknown) => {
    const res = await c.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  const data = async (c: HttpClient, entity: string, op: string, body: unknown) => {
    const res = await c.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data;
  };
  const refusedWith = (c: HttpClient, entity: string, op: string, body: unknown, status: number) =>
    expectRefused(app, () => c.post(`/api/model/${entity}/${op}`, body), status);

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta); // the default role (Tester) is what an assigned user gets
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: 'policy-password-1', access: 'ADMIN' }, meta);
    userId = await registerUser(app.deps, { email: 'user@example.com', name: 'User', password: 'policy-password-1', access: 'USER' }, meta);
    await registerUser(app.deps, { email: 'stranger@example.com', name: 'Stranger', password: 'policy-password-1', access: 'USER' }, meta);
    admin = await login('admin@example.com');
    user = await login('user@example.com');
    stranger = await login('stranger@example.com');
    ids.mine = await created(admin, 'project', { name: 'Mine' });
    ids.theirs = await created(admin, 'project', { name: 'Theirs' });
    await created(admin, 'projectAssignment', { user: { connect: { id: userId } }, project: { connect: { id: ids.mine } } });
    ids.tag = await created(admin, 'tag', { name: 'shared-tag' });
    ids.myFolder = await created(admin, 'repositoryFolder', { name: 'My folder', project: { connect: { id: ids.mine } } });
    ids.theirFolder = await created(admin, 'repositoryFolder', { name: 'Their folder', project: { connect: { id: ids.theirs } } });
    ids.myCase = await created(admin, 'repositoryCase', { title: 'Mine 1', project: { connect: { id: ids.mine } }, tags: { connect: { id: ids.tag } } });
    ids.theirCase = await created(admin, 'repositoryCase', { title: 'Theirs 1', project: { connect: { id: ids.theirs } }, tags: { connect: { id: ids.tag } } });
    ids.theirRun = await created(admin, 'testRun', { name: 'Their run', project: { connect: { id: ids.theirs } } });
  });
  after(() => app.stop());

  it('administrators see everything', async () => {
    expect(await data(admin, 'project', 'count', {})).to.equal(2);
    expect(await data(admin, 'repositoryCase', 'count', {})).to.equal(2);
  });

  it('a user sees the projects assigned to them and what belongs to them; a stranger sees none', async () => {
    expect((await data(user, 'project', 'findMany', {})).map((p: { id: number }) => p.id)).to.deep.equal([ids.mine]);
    expect((await data(user, 'repositoryCase', 'findMany', {})).map((c: { id: number }) => c.id)).to.deep.equal([ids.myCase]);
    expect(await data(user, 'testRun', 'findMany', {})).to.deep.equal([]);
    expect(await data(stranger, 'project', 'findMany', {})).to.deep.equal([]);
    expect(await data(user, 'repositoryCase', 'findUnique', { where: { id: ids.theirCase } })).to.equal(null);
    expect((await user.post('/api/model/repositoryCase/findUniqueOrThrow', { where: { id: ids.theirCase } })).status).to.equal(404);
  });

  it('nothing leaks through includes, relation filters, counts, aggregates or groupBy', async () => {
    const tag = await data(user, 'tag', 'findUnique', { where: { id: ids.tag }, include: { repositoryCases: true, _count: { select: { repositoryCases: true } } } });
    expect(tag.repositoryCases.map((c: { id: number }) => c.id)).to.deep.equal([ids.myCase]);
    expect(tag._count.repositoryCases).to.equal(1);
    expect(await data(user, 'tag', 'count', { where: { repositoryCases: { some: { title: 'Theirs 1' } } } })).to.equal(0);
    expect(await data(user, 'repositoryCase', 'count', {})).to.equal(1);
    expect(await data(user, 'repositoryCase', 'aggregate', { _count: { _all: true }, _max: { id: true } })).to.deep.equal({ _count: { _all: 1 }, _max: { id: ids.myCase } });
    expect(await data(user, 'repositoryCase', 'groupBy', { by: ['projectId'], _count: { _all: true } })).to.deep.equal([{ projectId: ids.mine, _count: { _all: 1 } }]);
    const folder = await data(user, 'repositoryFolder', 'findMany', { where: { project: { name: 'Theirs' } } });
    expect(folder).to.deep.equal([]);
  });

  it('global configuration is readable by everyone, written only by administrators (403)', async () => {
    expect((await data(stranger, 'status', 'findMany', {})).length).to.equal(7);
    expect((await data(user, 'tag', 'findMany', {})).map((t: { name: string }) => t.name)).to.deep.equal(['shared-tag']);
    const refusal = await refusedWith(user, 'status', 'create', { data: { name: 'Mine', systemName: 'mine' } }, 403);
    expect(refusal.code).to.equal('forbidden');
    // Tags are global too, but whoever holds the Tags permission in a project creates them; a stranger holds none.
    await refusedWith(stranger, 'tag', 'create', { data: { name: 'mine' } }, 403);
    await refusedWith(user, 'project', 'create', { data: { name: 'Mine too' } }, 403);
    // Another project does not exist for them (404); their own project's members are its project admins' business (403).
    await refusedWith(user, 'projectAssignment', 'create', { data: { user: { connect: { id: userId } }, project: { connect: { id: ids.theirs } } } }, 404);
    await refusedWith(user, 'projectAssignment', 'create', { data: { user: { connect: { id: userId } }, project: { connect: { id: ids.mine } } } }, 403);
  });

  it('a user writes within their projects; naming a row they cannot see is a 404, as if it did not exist', async () => {
    const id = await created(user, 'repositoryCase', { title: 'Mine 2', project: { connect: { id: ids.mine } }, folder: { connect: { id: ids.myFolder } }, tags: { connect: { id: ids.tag } } });
    expect(await data(user, 'repositoryCase', 'update', { where: { id }, data: { title: 'Mine 2b' } })).to.include({ title: 'Mine 2b' });
    await refusedWith(user, 'repositoryCase', 'create', { data: { title: 'x', project: { connect: { id: ids.theirs } } } }, 404);
    await refusedWith(user, 'repositoryCase', 'update', { where: { id }, data: { folder: { connect: { id: ids.theirFolder } } } }, 404);
    await refusedWith(user, 'repositoryCase', 'update', { where: { id: ids.theirCase }, data: { title: 'hijacked' } }, 404);
    await refusedWith(user, 'repositoryCase', 'delete', { where: { id: ids.theirCase } }, 404);
    await refusedWith(user, 'testRunCase', 'create', { data: { testRun: { connect: { id: ids.theirRun } }, repositoryCase: { connect: { id } } } }, 404);
    expect(await data(user, 'repositoryCase', 'updateMany', { data: { description: 'bulk' } })).to.deep.equal({ count: 2 });
    expect((await data(admin, 'repositoryCase', 'findUnique', { where: { id: ids.theirCase } })).description).to.equal(null);
    expect(await data(stranger, 'repositoryCase', 'deleteMany', {})).to.deep.equal({ count: 0 });
  });
});
