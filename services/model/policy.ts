import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type EntityName, writtenAs } from '../../contracts/entities';
import type { AuthenticatedUser } from '../shared/context';
import { type Area, administeredProjectIds, type ProjectAccess, permits, permitsAnywhere, resolveProjectAccess } from '../access/projectAccess';
import { HttpError, notFound } from '../shared/errors';
import type { EntityWrite } from '../entities/entity.handlers';
import type { Where } from './args';
import { applyScope, type ReadOptions, sqlContext } from './query';
import { authorizeTagChange } from './tagAccess';

/**
 * Row-level security: the one place that decides what a caller may see and change through the
 * model API. Every read passes the caller's scope to the query engine, which applies it to every
 * row it touches (top level, includes, relation filters, counts, aggregates); every write is
 * checked here before its command runs: `checkWriteAccess` (may this caller write this entity at
 * all), then `checkVisible` (every row named is visible, else 404), then `authorizeWrite` (the
 * caller's role in the row's project permits it, else 403).
 *
 * Who reaches which project, and with which permissions, is services/access/projectAccess.ts.
 * Reads: administrators see everything; others the projects they reach and everything in them,
 * plus the global configuration (statuses, workflows, templates, fields, tags, roles, groups);
 * integrations only administrators; users themselves and those they share a project with; group
 * memberships their own. Access level NONE sees nothing at all.
 */
export interface Policy {
  readonly user: AuthenticatedUser;
  readonly access: ProjectAccess;
  /** For the query engine: undefined scope for administrators (no restriction). */
  readonly read: ReadOptions;
  /** Throws 403 unless the caller may create / change / delete rows of the entity at all. */
  checkWriteAccess(entity: EntityDef, operation: WriteOperation): void;
}

export type WriteOperation = 'create' | 'update' | 'delete';

/** Global entities some non-administrators write: tags, with the Tags permission in any project. */
const GLOBAL_WRITES: Partial<Record<EntityName, Area>> = { tag: 'Tags' };
/** Project entities only the project's admins write (members and access). */
const PROJECT_ADMINISTRATION: ReadonlySet<EntityName> = new Set(['projectAssignment', 'userProjectPermission', 'groupProjectPermission']);
/** The application area whose permissions govern writes of each project entity. */
const AREA: Partial<Record<EntityName, Area>> = {
  repositoryFolder: 'TestCaseRepository', repositoryCase: 'TestCaseRepository',
  testRun: 'TestRuns', testRunCase: 'TestRuns', testRunResult: 'TestRunResults',
  session: 'Sessions', sessionResult: 'SessionResults', milestone: 'Milestones',
  attachment: 'Documentation', comment: 'Documentation',
};

/**
 * Records that close, and the area whose canClose governs them: once completed, such a record, and
 * the rows under it along their project path (a completed run's run cases and results, a completed
 * session's results), change only with that permission.
 */
const CLOSABLE: Partial<Record<EntityName, Area>> = { testRun: 'TestRuns', session: 'Sessions', milestone: 'Milestones' };

const forbidden = (message: string, details: Record<string, unknown>) => new HttpError(403, 'forbidden', message, details);
const NOTHING: Where = { kind: 'in', field: 'id', negated: false, values: [], insensitive: false };

export async function policyFor(knex: Knex, user: AuthenticatedUser): Promise<Policy> {
  const access = await resolveProjectAccess(knex, user);
  if (access.all) return { user, access, read: {}, checkWriteAccess: () => undefined };
  const projectIds = [...access.projects.keys()];
  const administers = administeredProjectIds(access).length > 0;
  const scopes = new Map<EntityName, Where | undefined>();
  const scope = (entity: EntityDef): Where | undefined => {
    if (!scopes.has(entity.name)) scopes.set(entity.name, user.access === 'NONE' ? NOTHING : scopeOf(entity, user, projectIds, administers));
    return scopes.get(entity.name);
  };
  return {
    user,
    access,
    read: { scope },
    checkWriteAccess(entity, operation) {
      const refuse = () => forbidden(`You may not ${operation} ${entity.name} rows`, { entity: entity.name, operation });
      if (writtenAs(entity) !== 'aggregate') return; // nobody writes it directly: its command answers 400 read-only-entity
      if (user.access === 'NONE') throw refuse();
      if (entity.name === 'project') {
        // Project administrators create projects (and administer what they create); only administrators delete them.
        if (operation === 'create' && user.access !== 'PROJECTADMIN') throw refuse();
        if (operation === 'delete') throw refuse();
        return;
      }
      if (entity.projectPath === undefined) {
        const area = GLOBAL_WRITES[entity.name];
        if (!area || !permitsAnywhere(access, area, operation === 'delete' ? 'canDelete' : 'canAddEdit')) throw refuse();
      }
    },
  };
}

/**
 * The per-project check of a write, once every row it names is known to be visible: the caller's
 * grant must permit the action in the entity's area (closing or reopening a row, on create as on
 * update, needs canClose; members and access need a project admin), and canClose besides for a
 * write that changes a completed run, session or milestone or a row under a completed run or
 * session (closedRecordsTouched), in every project the row is in before the change (`id`: update,
 * delete) and after it (`write`: the project of every row it references, along every relation,
 * nested children's references and links included). A write naming rows of two projects is
 * refused in the project the caller lacks the permission in (403); with the permission in both,
 * the command refuses it (a row does not move between projects, nor reference another project's
 * rows). Every write path of the model API (create, update, delete, their bulk forms, upsert,
 * nested children, which are part of their parent's write) comes here.
 */
export async function authorizeWrite(knex: Knex, policy: Policy, entity: EntityDef, operation: WriteOperation, target: { id?: number; write?: EntityWrite }): Promise<void> {
  if (entity.name === 'tag' && operation !== 'create' && target.id !== undefined) await authorizeTagChange(knex, policy.access, operation, target.id, target.write);
  if (policy.access.all || entity.projectPath === undefined || writtenAs(entity) !== 'aggregate') return;
  const projects = new Set<number>();
  if (target.id !== undefined) {
    const before = await projectOfRow(knex, entity, target.id);
    if (before !== null) projects.add(before);
  }
  if (entity.name !== 'project' && target.write) for (const projectId of await projectsReferenced(knex, entity, target.write)) projects.add(projectId);
  const closing = await changesCompletion(knex, entity, operation, target);
  const closed = await closedRecordsTouched(knex, entity, operation, target);
  // None: the command itself refuses a row without its project.
  for (const projectId of projects) authorizeInProject(policy, entity, operation, projectId, closing, closed);
}

function authorizeInProject(
  policy: Policy, entity: EntityDef, operation: WriteOperation, projectId: number, closing: boolean, closed: { entity: EntityName; id: number; area: Area }[],
): void {
  const grant = policy.access.projects.get(projectId);
  const refuse = (why: string, more: Record<string, unknown> = {}) =>
    forbidden(`You may not ${operation} ${entity.name} rows in project ${projectId}: ${why}`, { entity: entity.name, operation, projectId, ...more });
  if (!grant) throw refuse('no access');
  if (entity.name === 'project' || PROJECT_ADMINISTRATION.has(entity.name)) {
    if (!grant.projectAdmin) throw refuse('only its project admins may');
    return;
  }
  const area = AREA[entity.name];
  if (!area) throw refuse('only administrators may');
  for (const record of closed) {
    if (!permits(grant, record.area, 'canClose')) {
      throw refuse(`${record.entity} ${record.id} is completed, and the role has no canClose on ${record.area}`, { completed: { entity: record.entity, id: record.id } });
    }
  }
  const action = operation === 'delete' ? 'canDelete' : closing ? 'canClose' : 'canAddEdit';
  if (!permits(grant, area, action)) throw refuse(`the role has no ${action} on ${area}`);
}

const sameTime = (a: unknown, b: unknown) => (a == null ? null : new Date(a as string).getTime()) === (b == null ? null : new Date(b as string).getTime());

/**
 * Whether a write closes or reopens its row: a row created completed (`isCompleted: true`, or a
 * `completedAt`), or an update giving `isCompleted` or `completedAt` a value other than the row's.
 */
async function changesCompletion(knex: Knex, entity: EntityDef, operation: WriteOperation, target: { id?: number; write?: EntityWrite }): Promise<boolean> {
  const data = target.write?.data;
  if (operation === 'delete' || !data || entity.fields.isCompleted === undefined) return false;
  const hasTime = entity.fields.completedAt !== undefined;
  if (operation === 'create' || target.id === undefined) return data.isCompleted === true || (hasTime && data.completedAt != null);
  if (data.isCompleted === undefined && (!hasTime || data.completedAt === undefined)) return false;
  const row = await knex(entity.table).where('id', target.id).first({ isCompleted: 'is_completed', ...(hasTime && { completedAt: 'completed_at' }) });
  if (!row) return false; // the command answers the missing row
  return (data.isCompleted !== undefined && data.isCompleted !== row.isCompleted) || (hasTime && data.completedAt !== undefined && !sameTime(data.completedAt, row.completedAt));
}

/**
 * The completed records (CLOSABLE) a write changes: the row itself, when it is one (update,
 * delete), and the run or session it is under along the first hop of its project path, as it is
 * now and as the write would put it (a run case or result of a completed run, a session result of
 * a completed session). Read from the read model, as the rest of the write's checks.
 */
async function closedRecordsTouched(knex: Knex, entity: EntityDef, operation: WriteOperation, target: { id?: number; write?: EntityWrite }): Promise<{ entity: EntityName; id: number; area: Area }[]> {
  const candidates: { entity: EntityName; id: number }[] = [];
  if (target.id !== undefined && operation !== 'create' && CLOSABLE[entity.name]) candidates.push({ entity: entity.name, id: target.id });
  const hop = entity.projectPath?.[0];
  const parent = hop === undefined ? undefined : entity.relations[hop];
  if (hop !== undefined && parent && CLOSABLE[parent.target]) {
    if (target.id !== undefined && operation !== 'create') {
      const row = await knex(entity.table).where('id', target.id).first({ parentId: parent.foreignKey });
      if (row?.parentId != null) candidates.push({ entity: parent.target, id: row.parentId });
    }
    const after = target.write?.connect[hop];
    if (after != null) candidates.push({ entity: parent.target, id: after });
  }
  const closed: { entity: EntityName; id: number; area: Area }[] = [];
  for (const c of candidates) {
    if (closed.some((d) => d.entity === c.entity && d.id === c.id)) continue;
    const row = await knex(ENTITIES[c.entity].table).where('id', c.id).first('is_completed');
    if (row?.is_completed === true) closed.push({ ...c, area: CLOSABLE[c.entity]! });
  }
  return closed;
}

/** The project of an existing row, along its project path (one statement). */
async function projectOfRow(knex: Knex, entity: EntityDef, id: number): Promise<number | null> {
  if (entity.name === 'project') return id;
  const path = entity.projectPath!;
  let current = entity;
  const query = knex({ t0: entity.table }).where('t0.id', id).first();
  let column = '';
  for (const [i, hop] of path.entries()) {
    const relation = current.relations[hop];
    column = `t${i}.${relation.foreignKey}`;
    if (relation.target === 'project') break;
    query.leftJoin({ [`t${i + 1}`]: ENTITIES[relation.target].table }, `t${i + 1}.id`, column);
    current = ENTITIES[relation.target];
  }
  const row = await query.select({ projectId: column });
  return row?.projectId ?? null;
}

/**
 * The projects of the rows a write references that belong to one: `connect` targets, linked
 * rows, nested children's references. Global configuration (statuses, tags, users) has none.
 */
async function projectsReferenced(knex: Knex, entity: EntityDef, write: EntityWrite): Promise<number[]> {
  const projects = new Set<number>();
  for (const { entity: name, ids } of targetsOf(entity, write)) {
    const target = ENTITIES[name];
    if (target.projectPath === undefined) continue;
    for (const id of new Set(ids)) {
      const projectId = await projectOfRow(knex, target, id);
      if (projectId !== null) projects.add(projectId);
    }
  }
  return [...projects];
}

/** "Belongs to one of these projects", along the entity's path of to-one relations. */
function inProjects(entity: EntityDef, projectIds: number[]): Where {
  if (entity.name === 'project') return { kind: 'in', field: 'id', negated: false, values: projectIds, insensitive: false };
  if (entity.fields.projectId) return { kind: 'in', field: 'projectId', negated: false, values: projectIds, insensitive: false };
  const hop = entity.projectPath![0];
  return { kind: 'relation', relation: hop, quantifier: 'is', where: inProjects(ENTITIES[entity.relations[hop].target], projectIds) };
}

function scopeOf(entity: EntityDef, user: AuthenticatedUser, projectIds: number[], administers: boolean): Where | undefined {
  const self = (field: string): Where => ({ kind: 'compare', field, op: 'equals', value: user.id, insensitive: false });
  switch (entity.name) {
    case 'user':
      // Project admins see everyone (to add them as members); others themselves and the people they share a project with.
      if (administers) return undefined;
      return { kind: 'or', items: [self('id'), { kind: 'relation', relation: 'projectAssignments', quantifier: 'some', where: inProjects(ENTITIES.projectAssignment, projectIds) }] };
    case 'groupAssignment':
      return self('userId');
    case 'integration':
      return NOTHING; // their settings are administrators' business
    default:
      if (entity.projectPath === undefined) return undefined; // global configuration: everyone reads it
      return inProjects(entity, projectIds);
  }
}

/** The rows a write names besides itself: `connect` targets, linked rows, children's references. */
export function targetsOf(entity: EntityDef, write: EntityWrite): { entity: EntityName; ids: number[]; path: string }[] {
  const targets: { entity: EntityName; ids: number[]; path: string }[] = [];
  for (const [relation, id] of Object.entries(write.connect)) {
    if (id !== null) targets.push({ entity: entity.relations[relation].target, ids: [id], path: `data.${relation}` });
  }
  for (const [relation, links] of Object.entries(write.links ?? {})) {
    targets.push({ entity: entity.relations[relation].target, ids: [...(links.set ?? []), ...(links.connect ?? [])], path: `data.${relation}` });
  }
  for (const [relation, children] of Object.entries(write.children ?? {})) {
    const child = ENTITIES[entity.relations[relation].target];
    for (const [i, input] of (children.create ?? []).entries()) {
      for (const [childRelation, id] of Object.entries(input.connect)) {
        if (id !== null) targets.push({ entity: child.relations[childRelation].target, ids: [id], path: `data.${relation}.create[${i}].${childRelation}` });
      }
    }
  }
  return targets;
}

/**
 * Every row a write names (the row itself, `connect` targets, linked rows) must be one the caller
 * can see; one that is not is a 404, exactly as if it did not exist, so nothing leaks.
 */
export async function checkVisible(knex: Knex, policy: Policy, targets: { entity: EntityName; ids: number[]; path: string }[]): Promise<void> {
  if (!policy.read.scope) return;
  for (const { entity: name, ids, path } of targets) {
    const seen = await visibleIds(knex, policy, ENTITIES[name], ids);
    const missing = [...new Set(ids)].filter((id) => !seen.has(id));
    if (missing.length > 0) {
      throw notFound(`No ${name} with id ${missing.join(', ')}`, { path, missing });
    }
  }
}

/**
 * Which of these rows of the entity the caller sees, by the read scope every model read applies
 * (for routes that find rows themselves: lookups by name or by a migrated row's source id).
 * Administrators see every row given.
 */
export async function visibleIds(knex: Knex, policy: Pick<Policy, 'read'>, entity: EntityDef, ids: readonly number[]): Promise<Set<number>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0 || !policy.read.scope) return new Set(unique);
  const sql = sqlContext(knex, policy.read);
  const alias = sql.nextAlias();
  const query = knex({ [alias]: entity.table }).whereIn(`${alias}.id`, unique).select(`${alias}.id`);
  applyScope(sql, query, entity, alias);
  return new Set((await query).map((r: { id: number }) => r.id));
}
