import type { Knex } from 'knex';
import { ENTITIES, type EntityName } from '../../contracts/entities';
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
    if (!['type', 'externalId'].includes(key)) throw badRequest('invalid-argument', `A lookup by externalId takes type and externalId; "${key}" is not one of them`, { path: key });
  }
  const types = Object.keys(EXTERNAL_LOOKUP_TYPES);
  const type = body.type as ExternalLookupType;
  if (!types.includes(type)) throw badRequest('invalid-argument', `type must be one of ${types.join(', ')} for a lookup by externalId`, { path: 'type', allowed: types });
  const raw = body.externalId;
  const externalId = typeof raw === 'number' && Number.isSafeInteger(raw) ? String(raw) : typeof raw === 'string' ? raw.trim() : '';
  if (externalId === '' || externalId.length > 200) throw badRequest('invalid-argument', 'externalId must be the source id or key (a non-empty string or an integer)', { path: 'externalId' });
  const def = EXTERNAL_LOOKUP_TYPES[type];
  const entity = ENTITIES[def.entity];
  const rows: Array<{ job_id: number; source_id: string; source_key: string | null; source_created_by: string | null; source_created_at: string | null; entity_id: number; mapped: boolean }> =
    await knex('external_import_rows as p')
      .join(`${entity.table} as t`, 't.id', 'p.entity_id')
      .where('p.dataset', def.dataset).whereNotNull('p.entity_id').andWhere('p.rolled_back', false)
      .andWhere((w) => w.where('p.source_id', externalId).orWhere('p.source_key', externalId))
      .andWhere('t.is_deleted', false)
      .orderBy('p.job_id', 'desc').limit(20)
      .select('p.job_id', 'p.source_id', 'p.source_key', 'p.source_created_by', 'p.source_created_at', 'p.entity_id', 'p.mapped');
  const seen = await visibleIds(knex, policy, entity, rows.map((r) => r.entity_id));
  const visible = rows.filter((r) => seen.has(r.entity_id));
  const ids = [...new Set(visible.map((r) => r.entity_id))];
  if (ids.length === 0) throw new HttpError(404, 'not-found', `No ${type} was imported with the id or key "${externalId}"`, { type, externalId });
  if (ids.length > 1) throw new HttpError(409, 'ambiguous-external-id', `${ids.length} ${type}s were imported with the id or key "${externalId}"; give an id instead`, { type, externalId, ids });
  const found = visible[0];
  return {
    id: found.entity_id, type, externalId,
    source: { tool: 'testmo', jobId: found.job_id, sourceId: found.source_id, key: found.source_key, createdBy: found.source_created_by, createdAt: found.source_created_at, mapped: found.mapped },
  };
}
