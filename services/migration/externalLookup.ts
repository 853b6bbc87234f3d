import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type EntityName } from '../../contracts/entities';
import { type Policy, visibleIds } from '../model/policy';
import { badRequest, HttpError } from '../shared/errors';

/**
 * Old ids keep resolving after a migration: POST /api/lookup `{ type, externalId }` finds the row an
 * external import created (or matched) for a source row, by the source id (`1001`) or its key
 * (`C1001`), from the provenance the import recorded (`external_import_rows`). Seen exactly as the
 * model API shows rows (services/model/policy.ts): a row of a project the caller cannot see, a
 * user they may not see, anything for access NONE, is not found. Rows a rollback deleted, or
 * deleted since, are not found.
 */

/** Lookup type → the export's dataset and the entity its rows became. */
export const EXTERNAL_LOOKUP_TYPES = {
  project: { dataset: 'projects', entity: 'project' },
  milestone: { dataset: 'milestones', entity: 'milestone' },
  folder: { dataset: 'repository_folders', entity: 'repositoryFolder' },
  case: { dataset: 'repository_cases', entity: 'repositoryCase' },
  testRun: { dataset: 'runs', entity: 'testRun' },
  runCase: { dataset: 'run_tests', entity: 'testRunCase' },
  result: { dataset: 'run_results', entity: 'testRunResult' },
  session: { dataset: 'sessions', entity: 'session' },
  sessionResult: { dataset: 'session_results', entity: 'sessionResult' },
  user: { dataset: 'users', entity: 'user' },
  tag: { dataset: 'tags', entity: 'tag' },
  state: { dataset: 'states', entity: 'workflow' },
  status: { dataset: 'statuses', entity: 'status' },
  template: { dataset: 'templates', entity: 'template' },
  config: { dataset: 'configs', entity: 'configuration' },
  group: { dataset: 'groups', entity: 'group' },
  role: { dataset: 'roles', entity: 'role' },
  milestoneType: { dataset: 'milestone_types', entity: 'milestoneType' },
} as const satisfies Record<string, { dataset: string; entity: EntityName }>;
export type ExternalLookupType = keyof typeof EXTERNAL_LOOKUP_TYPES;

export async function lookupExternal(knex: Knex, policy: Pick<Policy, 'read'>, body: Record<string, unknown>) {
  for (const key of Object.keys(body)) {
    if (!['type', 'externalId', 'jobId', 'projectId'].includes(key)) {
      throw badRequest('invalid-argument', `A lookup by externalId takes type, externalId, jobId and projectId; "${key}" is not one of them`, { path: key });
    }
  }
  const types = Object.keys(EXTERNAL_LOOKUP_TYPES);
  const type = body.type as ExternalLookupType;
  if (!types.includes(type)) throw badRequest('invalid-argument', `type must be one of ${types.join(', ')} for a lookup by externalId`, { path: 'type', allowed: types });
  const raw = body.externalId;
  const externalId = typeof raw === 'number' && Number.isSafeInteger(raw) ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  if (externalId === '' || externalId.length > 200) throw badRequest('invalid-argument', 'externalId must be the source id or key (a non-empty string or an integer)', { path: 'externalId' });
  const jobId = optionalId(body, 'jobId');
  const projectId = optionalId(body, 'projectId');
  const def = EXTERNAL_LOOKUP_TYPES[type];
  const entity = ENTITIES[def.entity];
  if (projectId !== null && !entity.projectPath) {
    throw badRequest('invalid-argument', `A ${type} belongs to no project: projectId narrows only the lookup of rows that do`, { path: 'projectId', type });
  }
  const query = knex('external_import_rows as p')
    .join(`${entity.table} as t`, 't.id', 'p.entity_id')
    // A rolled-back job's rows are found no more, the rows it matched to existing entities neither.
    .join('external_import_jobs as j', 'j.job_id', 'p.job_id')
    .where('p.dataset', def.dataset).whereNotNull('p.entity_id').andWhere('p.rolled_back', false)
    .whereNotIn('j.phase', ['rollingBack', 'rolledBack'])
    .andWhere((w) => w.where('p.source_id', externalId).orWhere('p.source_key', externalId))
    .andWhere('t.is_deleted', false);
  if (jobId !== null) query.andWhere('p.job_id', jobId);
  if (projectId !== null) query.andWhere(projectColumn(query, entity), projectId);
  const rows: Array<{ job_id: number; source_id: string; source_key: string | null; source_created_by: string | null; source_created_at: string | null; entity_id: number; mapped: boolean }> =
    await query.orderBy('p.job_id', 'desc').limit(20)
      .select('p.job_id', 'p.source_id', 'p.source_key', 'p.source_created_by', 'p.source_created_at', 'p.entity_id', 'p.mapped');
  const seen = await visibleIds(knex, policy, entity, rows.map((r) => r.entity_id));
  const visible = rows.filter((r) => seen.has(r.entity_id));
  const ids = [...new Set(visible.map((r) => r.entity_id))];
  if (ids.length === 0) throw new HttpError(404, 'not-found', `No ${type} was imported with the id or key "${externalId}"`, { type, externalId });
  if (ids.length > 1) {
    const jobs = [...new Set(visible.map((r) => r.job_id))];
    throw new HttpError(409, 'ambiguous-external-id', `${ids.length} ${type}s were imported with the id or key "${externalId}"; narrow it with jobId or projectId, or give an id instead`,
      { type, externalId, ids, jobIds: jobs });
  }
  const found = visible[0];
  return {
    id: found.entity_id, type, externalId,
    source: { tool: 'testmo', jobId: found.job_id, sourceId: found.source_id, key: found.source_key, createdBy: found.source_created_by, createdAt: found.source_created_at, mapped: found.mapped },
  };
}

/** An optional positive integer parameter of the lookup (null: not given). */
function optionalId(body: Record<string, unknown>, key: 'jobId' | 'projectId'): number | null {
  const raw = body[key];
  if (raw === undefined || raw === null) return null;
  const n = typeof raw === 'string' && /^[1-9][0-9]{0,9}$/.test(raw.trim()) ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > 2_147_483_647) {
    throw badRequest('invalid-argument', `${key} must be a positive integer`, { path: key });
  }
  return n;
}

/** The column that holds the row's project: the row itself for a project, else joined along the entity's path to its project. */
function projectColumn(query: Knex.QueryBuilder, entity: EntityDef): string {
  let alias = 't';
  let current = entity;
  const path = entity.projectPath ?? [];
  if (path.length === 0) return 't.id';
  for (const [i, relation] of path.entries()) {
    const def = current.relations[relation];
    if (i === path.length - 1) return `${alias}.${def.foreignKey}`;
    const target = ENTITIES[def.target];
    const next = `pp${i}`;
    query.join(`${target.table} as ${next}`, `${next}.id`, `${alias}.${def.foreignKey}`);
    [alias, current] = [next, target];
  }
  return `${alias}.id`;
}
