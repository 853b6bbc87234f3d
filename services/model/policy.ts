import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type EntityName } from '../../contracts/entities';
import type { AuthenticatedUser } from '../shared/context';
import { HttpError, notFound } from '../shared/errors';
import type { EntityWrite } from '../entities/entity.handlers';
import type { Where } from './args';
import { applyScope, type ReadOptions, sqlContext } from './query';

/**
 * Row-level security: the one place that decides what a caller may see and change through the
 * model API. Every read passes the caller's scope to the query engine, which applies it to every
 * row it touches (top level, includes, relation filters, counts, aggregates); every write is
 * checked here before its command runs.
 *
 * The rules of this release: administrators see and change everything. Other users see the
 * projects they are assigned to and everything that belongs to those projects, plus the global
 * configuration (statuses, workflows, templates, fields, tags, ...), which only administrators
 * change; they may write within their projects. The identity issue refines this with roles,
 * groups and per-area permissions.
 */
export interface Policy {
  readonly user: AuthenticatedUser;
  /** For the query engine: undefined for administrators (no restriction). */
  readonly read: ReadOptions;
  /** Throws 403 unless the caller may create / change / delete rows of the entity at all. */
  checkWriteAccess(entity: EntityDef, operation: 'create' | 'update' | 'delete'): void;
}

/** Entities only administrators write, even inside a project the caller belongs to. */
const ADMINISTRATIVE: ReadonlySet<EntityName> = new Set(['project', 'projectAssignment']);

export async function policyFor(knex: Knex, user: AuthenticatedUser): Promise<Policy> {
  if (user.access === 'ADMIN') {
    return { user, read: {}, checkWriteAccess: () => undefined };
  }
  const projectIds = (await knex('project_assignments').where({ user_id: user.id }).pluck('project_id')) as number[];
  const scopes = new Map<EntityName, Where | undefined>();
  const scope = (entity: EntityDef): Where | undefined => {
    if (!scopes.has(entity.name)) scopes.set(entity.name, scopeOf(entity, user, projectIds));
    return scopes.get(entity.name);
  };
  return {
    user,
    read: { scope },
    checkWriteAccess(entity, operation) {
      const global = entity.projectPath === undefined;
      const administrative = ADMINISTRATIVE.has(entity.name) && !(entity.name === 'project' && operation === 'update');
      if (global || administrative || user.access === 'NONE') {
        throw new HttpError(403, 'forbidden', `Only administrators may ${operation} ${entity.name} rows`, { entity: entity.name, operation });
      }
    },
  };
}

/** "Belongs to one of these projects", along the entity's path of to-one relations. */
function inProjects(entity: EntityDef, projectIds: number[]): Where {
  if (entity.name === 'project') return { kind: 'in', field: 'id', negated: false, values: projectIds, insensitive: false };
  if (entity.fields.projectId) return { kind: 'in', field: 'projectId', negated: false, values: projectIds, insensitive: false };
  const hop = entity.projectPath![0];
  return { kind: 'relation', relation: hop, quantifier: 'is', where: inProjects(ENTITIES[entity.relations[hop].target], projectIds) };
}

function scopeOf(entity: EntityDef, user: AuthenticatedUser, projectIds: number[]): Where | undefined {
  if (entity.name === 'user') {
    // Yourself, and the people you share a project with.
    return {
      kind: 'or',
      items: [
        { kind: 'compare', field: 'id', op: 'equals', value: user.id, insensitive: false },
        { kind: 'relation', relation: 'projectAssignments', quantifier: 'some', where: inProjects(ENTITIES.projectAssignment, projectIds) },
      ],
    };
  }
  if (entity.projectPath === undefined) return undefined; // global configuration: everyone reads it
  return inProjects(entity, projectIds);
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
    const unique = [...new Set(ids)];
    if (unique.length === 0) continue;
    const entity = ENTITIES[name];
    const sql = sqlContext(knex, policy.read);
    const alias = sql.nextAlias();
    const query = knex({ [alias]: entity.table }).whereIn(`${alias}.id`, unique).select(`${alias}.id`);
    applyScope(sql, query, entity, alias);
    const seen = new Set((await query).map((r: { id: number }) => r.id));
    const missing = unique.filter((id) => !seen.has(id));
    if (missing.length > 0) {
      throw notFound(`No ${name} with id ${missing.join(', ')}`, { path, missing });
    }
  }
}
