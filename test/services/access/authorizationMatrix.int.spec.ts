import { expect } from 'chai';
import { ENTITIES, type EntityDef, type EntityName, writtenAs } from '../../../contracts/entities';
import type { AccessLevel } from '../../../contracts/events';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { sampleCreate, sampleUpdate } from '../../support/entityFixtures';
import { HttpClient, newToken, signIn } from '../../support/server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PostgresSearchEngine } from '../../../infra/search/postgres';
import { buildApp } from '../../../services/api/app';
import { DEFAULT_SEARCH_SETTINGS } from '../../../services/shared/search';
import { searchDocument } from '../../infra/search/documents';

/**
 * The authorization matrix: every model operation on every entity (and the custom routes) for
 * each kind of caller, asserting the status code and, for every refused write, that no event was
 * appended. The expectations are written out per caller below, independent of the policy's code.
 * Slow: some 3,000 requests to an in-process app: 10 callers × 41 entities × 3 reads, then a create, an update and a delete of a fresh row each, every refusal checked against the log's head
 */
type Persona = 'anonymous' | 'expiredToken' | 'revokedToken' | 'deactivated' | 'none' | 'assigned' | 'unassigned' | 'groupMember' | 'projectAdmin' | 'admin';
const PERSONAS: Persona[] = ['anonymous', 'expiredToken', 'revokedToken', 'deactivated', 'none', 'assigned', 'unassigned', 'groupMember', 'projectAdmin', 'admin'];
const UNAUTHENTICATED: ReadonlySet<Persona> = new Set(['anonymous', 'expiredToken', 'revokedToken', 'deactivated']);
/** Personas whose role in project A is Tester (the default role): add/edit in these areas, never delete or close. */
const TESTERS: ReadonlySet<Persona> = new Set(['assigned', 'groupMember']);
/** Project entities a Tester adds and edits (TestCaseRepository, TestRuns, TestRunResults, Sessions, SessionResults, Milestones, Documentation). */
const TESTER_WRITES: ReadonlySet<EntityName> = new Set([
  'repositoryFolder', 'repositoryCase', 'testRun', 'testRunCase', 'testRunResult', 'session', 'sessionResult', 'milestone', 'attachment', 'comment',
]);
const READS = ['findMany', 'count', 'groupBy'] as const;

type Op = 'create' | 'update' | 'delete';

/** The status a write must get: the matrix itself. */
function expected(persona: Persona, entity: EntityDef, op: Op): number {
  if (UNAUTHENTICATED.has(persona)) return 401;
  const ok = op === 'create' ? 201 : 200;
  if (writtenAs(entity) !== 'aggregate') return 400; // read-only entities: nobody writes them directly
  if (persona === 'admin') return ok;
  if (persona === 'none') return 403;
  if (entity.name === 'project') {
    if (op === 'create') return persona === 'projectAdmin' ? ok : 403;
    if (op === 'delete') return 403;
    return persona === 'projectAdmin' ? ok : persona === 'unassigned' ? 404 : 403;
  }
  if (entity.projectPath === undefined) {
    if (entity.name !== 'tag' || persona === 'unassigned') return 403;
    return op === 'delete' && persona !== 'projectAdmin' ? 403 : ok;
  }
  // A row of project A, or one that would be.
  if (persona === 'unassigned') return 404;
  if (persona === 'projectAdmin') return ok;
  // A new member is a user outside the project, whom a Tester cannot see: as if they did not exist.
  if (TESTERS.has(persona) && op === 'create' && (entity.name === 'projectAssignment' || entity.name === 'userProjectPermission')) return 404;
  if (!TESTERS.has(persona) || !TESTER_WRITES.has(entity.name)) return 403;
  return op === 'delete' ? 403 : ok;
}

describe('authorization matrix: every model operation and route, for every kind of caller', function () {
  this.timeout(600_000);
  let app: TestApp;
  let admin: HttpClient;
  const clients = {} as Record<Persona, HttpClient>;
  const userIds = {} as Record<Persona, number>;
  /** One row of each entity in project A (or global), created by the administrator. */
  const rows = new Map<EntityName, number>();
  let serial = 0;
  const PASSWORD = 'matrix-password-1';

  /**
   * Sample data for a create; for an entity unique over several references (a member of a
   * project, a case in a run) a fresh row of the one reference off its project path, so that
   * every create is new.
   */
  const sample = async (name: EntityName): Promise<Record<string, unknown>> => {
    const entity = ENTITIES[name];
    const fresh = new Map<EntityName, number>();
    const relation = Object.entries(entity.relations).find(([relationName, r]) =>
      r.kind === 'one' && entity.uniqueTogether?.includes(r.scalar!) && r.target !== 'project' && relationName !== entity.projectPath?.[0]);
    if (relation) fresh.set(relation[1].target, await adminCreate(relation[1].target));
    return sampleCreate(entity, (t) => fresh.get(t) ?? rows.get(t), ++serial)!;
  };
  const adminCreate = async (name: EntityName, data?: Record<string, unknown>): Promise<number> => {
    const body = data ?? await sample(name);
    const res = await admin.post(`/api/model/${name}/create`, { data: body });
    expect(res.status, `${name}: ${JSON.stringify(res.body)}`).to.equal(201);
    return res.body.data.id as number;
  };
  const tokenFor = async (email: string, expiresAt?: string) => {
    const session = await signIn(app.url, email, PASSWORD);
    return { session, ...(await newToken(session, 'matrix', expiresAt)) };
  };
  /** Calls and checks the status; a refusal must append nothing and carry the error shape. */
  const check = async (persona: Persona, method: string, path: string, body: unknown, status: number) => {
    const before = (await app.deps.store.headPosition()).toString();
    const res = await clients[persona].request(method, path, body);
    expect(res.status, `${persona} ${method} ${path} ${JSON.stringify(body)} → ${JSON.stringify(res.body)}`).to.equal(status);
    if (status >= 400) {
      expect(Object.keys(res.body), `${persona} ${path}: error shape`).to.have.members(['error', 'code', 'details']);
      expect((await app.deps.store.headPosition()).toString(), `${persona} ${method} ${path}: a refusal appends nothing`).to.equal(before);
    }
    return res;
  };

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('matrix');
    await seedDefaults(app.deps, meta);
    const levels: Record<Persona, AccessLevel> = {
      anonymous: 'USER', expiredToken: 'USER', revokedToken: 'USER', deactivated: 'USER', none: 'NONE', assigned: 'USER',
      unassigned: 'USER', groupMember: 'USER', projectAdmin: 'PROJECTADMIN', admin: 'ADMIN',
    };
    for (const p of PERSONAS) {
      userIds[p] = await registerUser(app.deps, { email: `${p}@example.com`, name: p, password: PASSWORD, access: levels[p] }, meta);
    }
    const adminToken = await tokenFor('admin@example.com');
    admin = new HttpClient(app.url, adminToken.token);
    // Project A and one row of every entity, in dependency order.
    const order = (Object.keys(ENTITIES) as EntityName[]).filter((n) => writtenAs(ENTITIES[n]) === 'aggregate');
    rows.set('project', await adminCreate('project', { name: 'A' }));
    for (let pass = 0; pass < 4 && rows.size < order.length; pass++) {
      for (const name of order) {
        if (rows.has(name) || !sampleCreate(ENTITIES[name], (t) => rows.get(t), 0)) continue;
        rows.set(name, await adminCreate(name));
      }
    }
    expect([...rows.keys()]).to.have.members(order);
    const project = rows.get('project')!;
    const connect = (id: number) => ({ connect: { id } });
    for (const p of ['assigned', 'projectAdmin', 'deactivated', 'expiredToken', 'revokedToken'] as Persona[]) {
      await adminCreate('projectAssignment', { user: connect(userIds[p]), project: connect(project) });
    }
    const group = await adminCreate('group', { name: 'Matrix testers' });
    await adminCreate('groupAssignment', { user: connect(userIds.groupMember), group: connect(group) });
    await adminCreate('groupProjectPermission', { group: connect(group), project: connect(project), accessType: 'GLOBAL_ROLE' });

    clients.anonymous = new HttpClient(app.url);
    clients.admin = admin;
    for (const p of ['none', 'assigned', 'unassigned', 'groupMember', 'projectAdmin', 'deactivated'] as Persona[]) {
      clients[p] = new HttpClient(app.url, (await tokenFor(`${p}@example.com`)).token);
    }
    const expiring = await tokenFor('expiredToken@example.com', new Date(app.clock.now.getTime() + 60_000).toISOString());
    clients.expiredToken = new HttpClient(app.url, expiring.token);
    const revoked = await tokenFor('revokedToken@example.com');
    expect((await revoked.session.request('DELETE', `/api/tokens/${revoked.id}`)).status).to.equal(204);
    clients.revokedToken = new HttpClient(app.url, revoked.token);
    expect((await admin.post('/api/model/user/update', { where: { id: userIds.deactivated }, data: { isActive: false } })).status).to.equal(200);
    app.clock.advance(120_000); // the expiring token is now expired
  });
  after(() => app.stop());

  it('reads: 401 without valid authentication, 200 (filtered) for everyone else', async () => {
    for (const persona of PERSONAS) {
      for (const name of Object.keys(ENTITIES) as EntityName[]) {
        for (const op of READS) {
          const body = op === 'groupBy' ? { by: ['id'], _count: { _all: true } } : {};
          await check(persona, 'POST', `/api/model/${name}/${op}`, body, UNAUTHENTICATED.has(persona) ? 401 : 200);
        }
      }
    }
  });

  it('writes: create, update and delete of every entity get the status of the matrix and append nothing when refused', async () => {
    for (const persona of PERSONAS) {
      for (const name of Object.keys(ENTITIES) as EntityName[]) {
        const entity = ENTITIES[name];
        const aggregate = writtenAs(entity) === 'aggregate';
        // create
        const data = aggregate ? await sample(name) : {};
        await check(persona, 'POST', `/api/model/${name}/create`, { data }, expected(persona, entity, 'create'));
        // update: a harmless change of the shared row (or nothing, for a read-only entity)
        // (entities with no plain field to change — memberships, permissions' keys — are changed by create and delete)
        const id = rows.get(name) ?? 1;
        const change = aggregate ? sampleUpdate(entity, ++serial) : {};
        if (!aggregate || Object.keys(change).length > 0) {
          await check(persona, 'POST', `/api/model/${name}/update`, { where: { id }, data: change }, expected(persona, entity, 'update'));
        }
        // delete: a fresh row of the administrator's, so later callers still find the shared one
        const victim = aggregate && name !== 'project' ? await adminCreate(name) : name === 'project' ? await adminCreate('project', { name: `Doomed ${++serial}` }) : id;
        const deleteStatus = expected(persona, entity, 'delete');
        // A fresh project is not one the persona reaches: an update or delete of it is a 404 for them, unless they see every project.
        const status = name === 'project' && deleteStatus === 200 && persona !== 'admin' ? 404 : deleteStatus;
        await check(persona, 'POST', `/api/model/${name}/delete`, { where: { id: victim } }, status);
      }
    }
  });

  it('bulk writes follow the same rules and refuse as a whole', async () => {
    for (const persona of PERSONAS) {
      const entity = ENTITIES.repositoryCase;
      const create = expected(persona, entity, 'create');
      const items = [1, 2].map(() => sampleCreate(entity, (t) => rows.get(t), ++serial));
      await check(persona, 'POST', '/api/model/repositoryCase/createMany', { data: items }, create === 201 ? 201 : create);
      const update = expected(persona, entity, 'update');
      // Bulk updates match only visible rows: a caller who sees none changes none (200, count 0).
      await check(persona, 'POST', '/api/model/repositoryCase/updateMany', { where: { id: rows.get('repositoryCase') }, data: { description: `bulk ${persona}` } },
        update === 404 ? 200 : update);
      const del = expected(persona, entity, 'delete');
      const victim = await adminCreate('repositoryCase');
      await check(persona, 'POST', '/api/model/repositoryCase/deleteMany', { where: { id: victim } }, del === 404 ? 200 : del);
    }
  });

  it('custom routes: public ones open to all, identity ones to every authenticated caller, administration to administrators (and project admins for the audit trail)', async () => {
    const authenticated = (ok: number) => (p: Persona) => (UNAUTHENTICATED.has(p) ? 401 : ok);
    const adminOnly = (ok: number) => (p: Persona) => (UNAUTHENTICATED.has(p) ? 401 : p === 'admin' ? ok : 403);
    const routes: [string, string, (p: Persona) => number][] = [
      ['GET', '/healthz', () => 200],
      ['GET', '/api/docs', () => 200],
      ['GET', '/api/docs?category=users', () => 200],
      ['GET', '/api/auth/me', authenticated(200)],
      ['GET', '/api/tokens', authenticated(200)],
      ['GET', '/api/admin/tokens', adminOnly(200)],
      ['DELETE', '/api/admin/tokens/999999', adminOnly(404)],
      ['GET', '/api/audit', (p) => (UNAUTHENTICATED.has(p) ? 401 : p === 'admin' || p === 'projectAdmin' ? 200 : 403)],
      // Files: access level NONE is refused before anything else (403).
      ['GET', '/api/files/0000000000000000000000000000000000000000000000000000000000000000', (p) => (p === 'none' ? 403 : authenticated(404)(p))],
      ['GET', '/api/files/usage', (p) => (p === 'none' ? 403 : authenticated(200)(p))],
      ['GET', '/api/no-such-route', authenticated(404)],
      ['POST', '/api/tokens', authenticated(400)], // no name: the body is checked once the caller is known
      ['DELETE', '/api/tokens/999999', authenticated(404)],
      ['POST', '/api/files/upload', (p) => (p === 'none' ? 403 : authenticated(415)(p))], // not multipart
      ['POST', '/api/auth/logout', authenticated(204)], // bearer callers have no session: nothing to end
    ];
    for (const persona of PERSONAS) {
      for (const [method, path, status] of routes) await check(persona, method, path, undefined, status(persona));
    }
  });

  it('search and facets: 401 without valid authentication; otherwise 200 with documents of readable projects only (hits, totals, facets), a filter by an unreadable project empty', async () => {
    // The same database and callers, through an app with search (as another replica would be).
    const engine = new PostgresSearchEngine(app.deps.knex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: 'matrix_' });
    const a = String(rows.get('project')!);
    const b = String(await adminCreate('project', { name: 'Search B' }));
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    await engine.write(1, {
      upsert: [
        searchDocument('repository_cases', 'ca', { projectId: a, project: 'A', title: 'matrixword in A', tags: ['tag-a'], state: 'State A' }),
        searchDocument('repository_cases', 'cb', { projectId: b, project: 'Search B', title: 'matrixword in B', tags: ['tag-b'], state: 'State B' }),
      ],
      remove: [],
    });
    const server = await new Promise<Server>((resolve) => {
      const s = buildApp({ ...app.appDeps, search: { engine: () => engine } }).listen(0, '127.0.0.1', () => resolve(s));
    });
    const searchUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    /** The projects each caller reads: administrators both, project A's members A, the others none. */
    const sees = (p: Persona): string[] => (p === 'admin' ? [a, b] : ['projectAdmin', 'assigned', 'groupMember'].includes(p) ? [a] : []);
    try {
      for (const persona of PERSONAS) {
        const client = new HttpClient(searchUrl, clients[persona].bearer);
        const calls: [string, string, unknown, string[]][] = [
          ['GET', '/api/search?q=matrixword', undefined, sees(persona)],
          ['POST', '/api/search', { query: { match: { title: 'matrixword' } } }, sees(persona)],
          ['POST', '/api/search', { query: { term: { projectId: b } } }, sees(persona).filter((p) => p === b)],
          ['GET', `/api/search?q=matrixword&project=${b}`, undefined, sees(persona).filter((p) => p === b)],
          ['POST', '/api/search', { filters: { projectId: b } }, sees(persona).filter((p) => p === b)],
        ];
        for (const [method, path, body, projects] of calls) {
          const res = await client.request(method, path, body);
          const label = `${persona} ${method} ${path} ${JSON.stringify(body ?? null)} → ${JSON.stringify(res.body)}`;
          if (UNAUTHENTICATED.has(persona)) {
            expect(res.status, label).to.equal(401);
            expect(Object.keys(res.body), label).to.have.members(['error', 'code', 'details']);
            continue;
          }
          expect(res.status, label).to.equal(200);
          expect(res.body.hits.map((h: { projectId: string }) => h.projectId), label).to.have.members(projects);
          expect(res.body.total, label).to.equal(projects.length);
        }
        for (const [path, projects] of [['/api/search/facets', sees(persona)], [`/api/search/facets?project=${b}`, sees(persona).filter((p) => p === b)]] as const) {
          const res = await client.request('GET', path);
          const label = `${persona} GET ${path} → ${JSON.stringify(res.body)}`;
          if (UNAUTHENTICATED.has(persona)) {
            expect(res.status, label).to.equal(401);
            continue;
          }
          expect(res.status, label).to.equal(200);
          expect(res.body.facets, label).to.deep.equal({
            tags: Object.fromEntries(projects.map((p) => [p === a ? 'tag-a' : 'tag-b', 1])),
            folders: {}, templates: {},
            states: Object.fromEntries(projects.map((p) => [p === a ? 'State A' : 'State B', 1])),
          });
        }
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
    }
  });
});
