import { expect } from 'chai';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient, newToken, signIn } from '../support/server';

/**
 * Tags are global: renaming or deleting one changes every project that uses it. A
 * non-administrator may only when every row it labels is in a project where their role may
 * (docs/access.md, "Tags").
 */
describe('tags used beyond the caller\'s projects', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let tester: HttpClient;
  let projectAdmin: HttpClient;
  const project = { a: 0, b: 0, c: 0 };
  const PASSWORD = 'tags-password-1';
  const connect = (id: number) => ({ connect: { id } });

  const clientOf = async (email: string) => new HttpClient(app.url, (await newToken(await signIn(app.url, email, PASSWORD), 'tags')).token);
  const created = async (entity: string, data: Record<string, unknown>) => {
    const res = await admin.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  /** A tag labelling one case in each of `projects`. */
  let serial = 0;
  const tagUsedIn = async (...projects: number[]) => {
    const tag = await created('tag', { name: `tag ${++serial}` });
    for (const p of projects) await created('repositoryCase', { title: `case ${serial}`, project: connect(p), tags: { connect: [{ id: tag }] } });
    return tag;
  };
  const nameOf = async (tag: number) => (await admin.post('/api/model/tag/findUnique', { where: { id: tag } })).body.data;
  /** A refusal: 403 forbidden naming no project, and nothing appended. */
  const refused = async (client: HttpClient, path: string, body: unknown, operation: string, id: number) => {
    const before = (await app.deps.store.headPosition()).toString();
    const res = await client.post(path, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(403);
    expect(res.body.code).to.equal('forbidden');
    expect(res.body.details).to.deep.equal({ entity: 'tag', operation, id });
    expect((await app.deps.store.headPosition()).toString(), 'nothing appended').to.equal(before);
  };

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('tags');
    await seedDefaults(app.deps, meta);
    const testerId = await registerUser(app.deps, { email: 'tester@example.com', name: 'Tess', password: PASSWORD, access: 'USER' }, meta);
    const managerId = await registerUser(app.deps, { email: 'manager@example.com', name: 'Max', password: PASSWORD, access: 'PROJECTADMIN' }, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: PASSWORD, access: 'ADMIN' }, meta);
    admin = await clientOf('admin@example.com');
    project.a = await created('project', { name: 'A' });
    project.b = await created('project', { name: 'B' });
    project.c = await created('project', { name: 'C' });
    // The tester: Tester (the default role) in A, Viewer in C, nothing in B. The manager: project admin of A.
    const viewer = (await admin.post('/api/model/role/findFirst', { where: { name: 'Viewer' } })).body.data.id;
    await created('projectAssignment', { user: connect(testerId), project: connect(project.a) });
    await created('userProjectPermission', { user: connect(testerId), project: connect(project.c), accessType: 'SPECIFIC_ROLE', role: connect(viewer) });
    await created('projectAssignment', { user: connect(managerId), project: connect(project.a) });
    tester = await clientOf('tester@example.com');
    projectAdmin = await clientOf('manager@example.com');
  });
  after(() => app?.stop());

  it('a Tester renames a tag used only in projects where they edit tags (or used nowhere)', async () => {
    for (const tag of [await tagUsedIn(project.a), await tagUsedIn()]) {
      const res = await tester.post('/api/model/tag/update', { where: { id: tag }, data: { name: `renamed ${tag}` } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect((await nameOf(tag)).name).to.equal(`renamed ${tag}`);
    }
  });

  it('a Tester may not rename a tag another project uses, seen or not (Viewer there, or no access); an administrator may', async () => {
    for (const tag of [await tagUsedIn(project.a, project.b), await tagUsedIn(project.a, project.c), await tagUsedIn(project.b)]) {
      const { name } = await nameOf(tag);
      await refused(tester, '/api/model/tag/update', { where: { id: tag }, data: { name: 'hijacked' } }, 'update', tag);
      await refused(tester, '/api/model/tag/upsert', { where: { id: tag }, create: { name: 'hijacked' }, update: { name: 'hijacked' } }, 'update', tag);
      await refused(tester, '/api/model/tag/updateMany', { where: { id: { in: [tag] } }, data: { name: 'hijacked' } }, 'update', tag);
      expect((await nameOf(tag)).name).to.equal(name);
      const res = await admin.post('/api/model/tag/update', { where: { id: tag }, data: { name: `${name} (admin)` } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    }
  });

  it('a project admin deletes a tag used only in their projects, not one another project uses', async () => {
    const own = await tagUsedIn(project.a);
    expect((await projectAdmin.post('/api/model/tag/delete', { where: { id: own } })).status).to.equal(200);
    const shared = await tagUsedIn(project.a, project.b);
    await refused(projectAdmin, '/api/model/tag/delete', { where: { id: shared } }, 'delete', shared);
    await refused(projectAdmin, '/api/model/tag/deleteMany', { where: { id: shared } }, 'delete', shared);
    expect((await nameOf(shared)).isDeleted).to.equal(false);
  });
});
