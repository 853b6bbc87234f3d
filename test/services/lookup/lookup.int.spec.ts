import { expect } from 'chai';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const PASSWORD = 'lookup-password-1';

/** POST /api/lookup: names to ids through the caller's permissions; 404 for none, 409 for several. */
describe('POST /api/lookup (names to ids, for the CLI)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let user: HttpClient;
  const ids: Record<string, number> = {};
  const create = async (entity: string, data: unknown) => {
    const res = await admin.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  const lookup = (c: HttpClient, body: unknown) => c.post('/api/lookup', body);

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    const userId = await registerUser(app.deps, { email: 'user@example.com', name: 'User', password: PASSWORD, access: 'USER' }, meta);
    admin = new HttpClient(app.url);
    user = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
    expect((await user.post('/api/auth/login', { email: 'user@example.com', password: PASSWORD })).status).to.equal(200);
    ids.shop = await create('project', { name: 'Shop' });
    ids.secret = await create('project', { name: 'Secret' });
    ids.twinA = await create('project', { name: 'Twin' });
    ids.twinB = await create('project', { name: 'Twin' });
    await create('projectAssignment', { user: { connect: { id: userId } }, project: { connect: { id: ids.shop } } });
    ids.folder = await create('repositoryFolder', { name: 'Checkout', project: { connect: { id: ids.shop } } });
    ids.milestone = await create('milestone', { name: 'R1', project: { connect: { id: ids.shop } } });
    ids.oldRun = await create('testRun', { name: 'Nightly', project: { connect: { id: ids.shop } } });
    app.clock.advance(1000);
    ids.newRun = await create('testRun', { name: 'Nightly', project: { connect: { id: ids.shop } } });
    ids.config = await create('configuration', { name: 'Chrome' });
    ids.tag = await create('tag', { name: 'smoke' });
  });
  after(() => app.stop());

  it('finds each type by its exact name', async () => {
    const state = (await admin.post('/api/model/workflow/findFirst', { where: { scope: 'RUNS' } })).body.data;
    const template = (await admin.post('/api/model/template/findFirst', {})).body.data;
    for (const [body, id] of [
      [{ type: 'project', name: 'Shop' }, ids.shop],
      [{ type: 'state', name: state.name }, state.id],
      [{ type: 'config', name: 'Chrome' }, ids.config],
      [{ type: 'tag', name: 'smoke' }, ids.tag],
      [{ type: 'template', name: template.name }, template.id],
      [{ type: 'milestone', name: 'R1', projectId: ids.shop }, ids.milestone],
      [{ type: 'folder', name: 'Checkout', projectId: ids.shop }, ids.folder],
    ] as const) {
      const res = await lookup(user, body);
      expect(res.status, JSON.stringify([body, res.body])).to.equal(200);
      expect(res.body.data.id).to.equal(id);
    }
  });

  it('a test run name used twice answers the newest run', async () => {
    const res = await lookup(user, { type: 'testRun', name: 'Nightly', projectId: ids.shop });
    expect(res.body.data.id).to.equal(Math.max(ids.oldRun, ids.newRun));
  });

  it('an unknown name is 404; a name two projects share is 409 with their ids; a project the caller cannot see is not found', async () => {
    expect((await expectRefused(app, () => lookup(user, { type: 'config', name: 'Safari' }), 404)).code).to.equal('not-found');
    expect((await expectRefused(app, () => lookup(user, { type: 'project', name: 'shop' }), 404)).code, 'exact, case and all').to.equal('not-found');
    const twins = await expectRefused(app, () => lookup(admin, { type: 'project', name: 'Twin' }), 409);
    expect(twins.code).to.equal('ambiguous-name');
    expect(twins.details.ids).to.deep.equal([ids.twinA, ids.twinB]);
    expect((await expectRefused(app, () => lookup(user, { type: 'project', name: 'Secret' }), 404)).code).to.equal('not-found');
    expect((await expectRefused(app, () => lookup(user, { type: 'folder', name: 'Checkout', projectId: ids.secret }), 404)).details.path).to.equal('projectId');
  });

  it('creates a missing tag when asked and allowed (201, created), once', async () => {
    const created = await admin.post('/api/lookup', { type: 'tag', name: 'nightly-ci', createIfMissing: true });
    expect(created.status).to.equal(201);
    expect(created.body.data).to.include({ name: 'nightly-ci', created: true });
    const again = await lookup(admin, { type: 'tag', name: 'nightly-ci', createIfMissing: true });
    expect(again.status).to.equal(200);
    expect(again.body.data.id).to.equal(created.body.data.id);
  });

  it('refuses bad input with 400 naming the field, and creating a tag without the permission (access NONE) with 403', async () => {
    expect((await expectRefused(app, () => lookup(user, { type: 'user', name: 'x' }), 400)).details.path).to.equal('type');
    expect((await expectRefused(app, () => lookup(user, { type: 'tag', name: '' }), 400)).details.path).to.equal('name');
    expect((await expectRefused(app, () => lookup(user, { type: 'folder', name: 'Checkout' }), 400)).details.path).to.equal('projectId');
    expect((await expectRefused(app, () => lookup(user, { type: 'tag', name: 'x', extra: 1 }), 400)).details.path).to.equal('extra');
    expect((await expectRefused(app, () => lookup(user, { type: 'config', name: 'x', createIfMissing: true }), 400)).details.path).to.equal('createIfMissing');
    await registerUser(app.deps, { email: 'none@example.com', name: 'None', password: PASSWORD, access: 'NONE' }, systemMetadata('test'));
    const nobody = new HttpClient(app.url);
    expect((await nobody.post('/api/auth/login', { email: 'none@example.com', password: PASSWORD })).status).to.equal(200);
    expect((await expectRefused(app, () => lookup(nobody, { type: 'tag', name: 'brand-new', createIfMissing: true }), 403)).code).to.equal('forbidden');
    // The model API shows access NONE nothing; no more does a lookup.
    const state = (await admin.post('/api/model/workflow/findFirst', { where: { scope: 'RUNS' } })).body.data;
    for (const body of [{ type: 'tag', name: 'smoke' }, { type: 'config', name: 'Chrome' }, { type: 'state', name: state.name }, { type: 'project', name: 'Shop' }]) {
      expect((await lookup(user, body)).status, `a user: ${JSON.stringify(body)}`).to.equal(200);
      expect((await expectRefused(app, () => lookup(nobody, body), 404)).code, `NONE: ${JSON.stringify(body)}`).to.equal('not-found');
    }
    expect((await nobody.post('/api/model/tag/findMany', { where: { name: 'smoke' } })).body.data).to.deep.equal([]);
    expect((await expectRefused(app, () => new HttpClient(app.url).post('/api/lookup', { type: 'tag', name: 'smoke' }), 401)).code).to.equal('unauthenticated');
  });
});
