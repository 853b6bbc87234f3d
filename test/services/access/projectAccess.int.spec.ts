import { expect } from 'chai';
import { administeredProjectIds, permits, resolveProjectAccess, type ProjectAccess } from '../../../services/access/projectAccess';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import type { AccessLevel } from '../../../contracts/events';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

/**
 * Who reaches which project, with which permissions: every rule of the resolution order
 * (services/access/projectAccess.ts), then the same rules as the model API applies them to writes.
 */
describe('project access: resolution order and permissions', function () {
  this.timeout(180_000);
  let app: TestApp;
  let admin: HttpClient;
  const users: Record<string, { id: number; access: AccessLevel }> = {};
  const ids: Record<string, number> = {};
  const PASSWORD = 'access-password-1';

  const create = async (c: HttpClient, entity: string, data: unknown) => {
    const res = await c.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  const roleId = async (name: string) => (await admin.post('/api/model/role/findFirst', { where: { name } })).body.data.id as number;
  const connect = (id: number) => ({ connect: { id } });
  const accessOf = (name: string): Promise<ProjectAccess> =>
    resolveProjectAccess(app.deps.knex, { id: users[name].id, email: `${name}@example.com`, name, access: users[name].access });
  const login = async (name: string) => {
    const c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email: `${name}@example.com`, password: PASSWORD })).status).to.equal(200);
    return c;
  };
  const refused = (c: HttpClient, entity: string, op: string, body: unknown, status: number) =>
    expectRefused(app, () => c.post(`/api/model/${entity}/${op}`, body), status);

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta); // roles Project Admin, Tester (default), Viewer
    const people: [string, AccessLevel][] = [
      ['admin', 'ADMIN'], ['creator', 'PROJECTADMIN'], ['pa', 'USER'], ['shut', 'USER'], ['viewer', 'USER'], ['member', 'USER'],
      ['grouped', 'USER'], ['groupShut', 'USER'], ['assignedSpecific', 'USER'], ['nobody', 'USER'], ['none', 'NONE'], ['projectAdminLevel', 'PROJECTADMIN'],
    ];
    for (const [name, access] of people) {
      users[name] = { id: await registerUser(app.deps, { email: `${name}@example.com`, name, password: PASSWORD, access }, meta), access };
    }
    admin = await login('admin');
    const creator = await login('creator');
    ids.created = await create(creator, 'project', { name: 'Created by creator' });
    ids.p = await create(admin, 'project', { name: 'P' });
    ids.specific = await create(admin, 'project', { name: 'Specific default', defaultAccessType: 'SPECIFIC_ROLE', defaultRole: connect(await roleId('Viewer')) });
    ids.closed = await create(admin, 'project', { name: 'Closed by default', defaultAccessType: 'NO_ACCESS' });
    const assign = (user: string, project: number) => create(admin, 'projectAssignment', { user: connect(users[user].id), project: connect(project) });
    const permit = (user: string, project: number, accessType: string, role?: string) => (async () =>
      create(admin, 'userProjectPermission', { user: connect(users[user].id), project: connect(project), accessType, ...(role && { role: connect(await roleId(role)) }) }))();
    await permit('pa', ids.p, 'SPECIFIC_ROLE', 'Project Admin');
    await assign('shut', ids.p);
    await permit('shut', ids.p, 'NO_ACCESS');
    await permit('viewer', ids.p, 'SPECIFIC_ROLE', 'Viewer');
    await assign('member', ids.p);
    await assign('member', ids.closed);
    await assign('assignedSpecific', ids.specific);
    await assign('projectAdminLevel', ids.p);
    ids.testers = await create(admin, 'group', { name: 'Testers' });
    ids.outcasts = await create(admin, 'group', { name: 'Outcasts' });
    await create(admin, 'groupAssignment', { user: connect(users.grouped.id), group: connect(ids.testers) });
    await create(admin, 'groupAssignment', { user: connect(users.groupShut.id), group: connect(ids.outcasts) });
    await create(admin, 'groupProjectPermission', { group: connect(ids.testers), project: connect(ids.p), accessType: 'GLOBAL_ROLE' });
    await create(admin, 'groupProjectPermission', { group: connect(ids.outcasts), project: connect(ids.p), accessType: 'NO_ACCESS' });
    await assign('groupShut', ids.p);
    ids.folder = await create(admin, 'repositoryFolder', { name: 'F', project: connect(ids.p) });
    ids.case = await create(admin, 'repositoryCase', { title: 'C', project: connect(ids.p) });
    ids.run = await create(admin, 'testRun', { name: 'R', project: connect(ids.p) });
  });
  after(() => app.stop());

  it('administrators reach everything; access NONE and users with no rule reach nothing', async () => {
    expect((await accessOf('admin')).all).to.equal(true);
    expect(administeredProjectIds(await accessOf('admin'))).to.equal('all');
    expect([...(await accessOf('none')).projects.keys()]).to.deep.equal([]);
    expect([...(await accessOf('nobody')).projects.keys()]).to.deep.equal([]);
  });

  it('the creator of a project is its project admin', async () => {
    const access = await accessOf('creator');
    expect([...access.projects.keys()]).to.deep.equal([ids.created]);
    expect(administeredProjectIds(access)).to.deep.equal([ids.created]);
  });

  it('a user permission with the Project Admin role makes a project admin; NO_ACCESS shuts out even an assigned user', async () => {
    expect(administeredProjectIds(await accessOf('pa'))).to.deep.equal([ids.p]);
    expect([...(await accessOf('shut')).projects.keys()]).to.deep.equal([]);
  });

  it('a specific role grants exactly its permissions (Viewer: read only)', async () => {
    const grant = (await accessOf('viewer')).projects.get(ids.p)!;
    expect(grant.projectAdmin).to.equal(false);
    expect(permits(grant, 'TestCaseRepository', 'canAddEdit')).to.equal(false);
  });

  it("a direct assignment follows the project's default: the user's role (Tester, the default role), a specific role, or no access", async () => {
    const member = await accessOf('member');
    expect([...member.projects.keys()]).to.deep.equal([ids.p]); // the NO_ACCESS-by-default project is not reached
    const grant = member.projects.get(ids.p)!;
    expect(permits(grant, 'TestCaseRepository', 'canAddEdit')).to.equal(true);
    expect(permits(grant, 'TestCaseRepository', 'canDelete')).to.equal(false);
    const specific = (await accessOf('assignedSpecific')).projects.get(ids.specific)!;
    expect(permits(specific, 'TestCaseRepository', 'canAddEdit')).to.equal(false);
  });

  it('group permissions grant their role; a group with NO_ACCESS shuts out a member assigned directly', async () => {
    const grant = (await accessOf('grouped')).projects.get(ids.p)!;
    expect(permits(grant, 'TestRuns', 'canAddEdit')).to.equal(true);
    expect([...(await accessOf('groupShut')).projects.keys()]).to.deep.equal([]);
  });

  it('access level PROJECTADMIN administers every project it reaches', async () => {
    expect(administeredProjectIds(await accessOf('projectAdminLevel'))).to.deep.equal([ids.p]);
  });

  it('the model API enforces it: reads filter, writes need the area permission (403, nothing appended)', async () => {
    const member = await login('member');
    const viewer = await login('viewer');
    const shut = await login('shut');
    const pa = await login('pa');
    expect((await shut.post('/api/model/repositoryCase/count', {})).body.data).to.equal(0);
    expect((await viewer.post('/api/model/repositoryCase/count', {})).body.data).to.equal(1);
    // Viewer: read only.
    await refused(viewer, 'repositoryCase', 'create', { data: { title: 'v', project: connect(ids.p) } }, 403);
    await refused(viewer, 'repositoryCase', 'update', { where: { id: ids.case }, data: { title: 'v' } }, 403);
    await refused(viewer, 'repositoryCase', 'updateMany', { data: { title: 'v' } }, 403);
    // Shut out: the rows do not exist for them.
    await refused(shut, 'repositoryCase', 'update', { where: { id: ids.case }, data: { title: 's' } }, 404);
    // Tester (the default role): adds and edits, does not delete or close.
    const caseId = await create(member, 'repositoryCase', { title: 'by member', project: connect(ids.p), folder: connect(ids.folder) });
    await refused(member, 'repositoryCase', 'delete', { where: { id: caseId } }, 403);
    await refused(member, 'repositoryCase', 'deleteMany', { where: { id: caseId } }, 403);
    await create(member, 'testRunCase', { testRun: connect(ids.run), repositoryCase: connect(caseId) });
    await refused(member, 'testRun', 'update', { where: { id: ids.run }, data: { isCompleted: true } }, 403);
    // Members and access are the project admins' business.
    await refused(member, 'projectAssignment', 'create', { data: { user: connect(users.viewer.id), project: connect(ids.p) } }, 404); // a user they cannot see
    await refused(member, 'userProjectPermission', 'create', { data: { user: connect(users.shut.id), project: connect(ids.p), accessType: 'GLOBAL_ROLE' } }, 403);
    await refused(member, 'project', 'update', { where: { id: ids.p }, data: { note: 'mine now' } }, 403);
    // The project admin: everything in the project, its members included; not other projects, not global configuration.
    expect((await pa.post('/api/model/repositoryCase/delete', { where: { id: caseId } })).status).to.equal(200);
    expect((await pa.post('/api/model/testRun/update', { where: { id: ids.run }, data: { isCompleted: true } })).status).to.equal(200);
    await create(pa, 'projectAssignment', { user: connect(users.nobody.id), project: connect(ids.p) }); // project admins see every user
    expect((await pa.post('/api/model/project/update', { where: { id: ids.p }, data: { note: 'managed' } })).status).to.equal(200);
    await refused(pa, 'project', 'update', { where: { id: ids.created }, data: { note: 'not mine' } }, 404);
    await refused(pa, 'status', 'create', { data: { name: 'Mine', systemName: 'mine' } }, 403);
    await refused(pa, 'project', 'delete', { where: { id: ids.p } }, 403);
  });

  it('tags (global) are created by anyone with the Tags permission somewhere; not by viewers', async () => {
    const member = await login('member');
    const viewer = await login('viewer');
    await create(member, 'tag', { name: 'from-member' });
    await refused(viewer, 'tag', 'create', { data: { name: 'from-viewer' } }, 403);
    await refused(member, 'group', 'create', { data: { name: 'My group' } }, 403);
  });

  it('users see their own group memberships only; access NONE sees nothing at all', async () => {
    const grouped = await login('grouped');
    const memberships = (await grouped.post('/api/model/groupAssignment/findMany', {})).body.data as { userId: number }[];
    expect(memberships.map((m) => m.userId)).to.deep.equal([users.grouped.id]);
    const none = await login('none');
    for (const entity of ['project', 'status', 'tag', 'role', 'group', 'user']) {
      expect((await none.post(`/api/model/${entity}/count`, {})).body.data, entity).to.equal(0);
    }
  });
});
