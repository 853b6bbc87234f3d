import type { Knex } from 'knex';
import { resolveProjectAccess } from '../access/projectAccess';
import type { AuthenticatedUser } from '../shared/context';
import { badRequest, HttpError } from '../shared/errors';

/**
 * Old ids keep resolving after a migration: POST /api/lookup `{ type, externalId }` finds the row an
 * external import created (or matched) for a source row, by the source id (`1001`) or its key
 * (`C1001`), from the provenance the import recorded (`external_import_rows`). Seen through the
 * caller's permissions like every lookup: a row in a project the caller cannot see is not found.
 * Rows a rollback deleted, or deleted since, are not found.
 */

/** Lookup type → the export's dataset and the table its rows became. */
export const EXTERNAL_LOOKUP_TYPES = {
  project: { dataset: 'projects', table: 'projects', project: 'id' },
  milestone: { dataset: 'milestones', table: 'milestones', project: 'project_id' },
  folder: { dataset: 'repository_folders', table: 'repository_folders', project: 'project_id' },
  case: { dataset: 'repository_cases', table: 'repository_cases', project: 'project_id' },
  testRun: { dataset: 'runs', table: 'test_runs', project: 'project_id' },
  runCase: { dataset: 'run_tests', table: 'test_run_cases', project: null },
  result: { dataset: 'run_results', table: 'test_run_results', project: null },
  session: { dataset: 'sessions', table: 'sessions', project: 'project_id' },
  sessionResult: { dataset: 'session_results', table: 'session_results', project: null },
  user: { dataset: 'users', table: 'users', project: null },
  tag: { dataset: 'tags', table: 'tags', project: null },
  state: { dataset: 'states', table: 'workflows', project: null },
  status: { dataset: 'statuses', table: 'statuses', project: null },
  template: { dataset: 'templates', table: 'templates', project: null },
  config: { dataset: 'configs', table: 'configurations', project: null },
  group: { dataset: 'groups', table: 'groups', project: null },
  role: { dataset: 'roles', table: 'roles', project: null },
  milestoneType: { dataset: 'milestone_types', table: 'milestone_types', project: null },
} as const;
export type ExternalLookupType = keyof typeof EXTERNAL_LOOKUP_TYPES;

/** The project a run case, result or session result is in (through its run or session). */
const PROJECT_THROUGH: Partial<Record<ExternalLookupType, string>> = {
  runCase: 'SELECT r.project_id FROM test_run_cases c JOIN test_runs r ON r.id = c.test_run_id WHERE c.id = ?',
  result: 'SELECT r.project_id FROM test_run_results x JOIN test_runs r ON r.id = x.test_run_id WHERE x.id = ?',
  sessionResult: 'SELECT s.project_id FROM session_results x JOIN sessions s ON s.id = x.session_id WHERE x.id = ?',
};

export async function lookupExternal(knex: Knex, user: AuthenticatedUser, body: Record<string, unknown>) {
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
  const rows: Array<{ job_id: number; source_id: string; source_key: string | null; source_created_by: string | null; source_created_at: string | null; entity_id: number; mapped: boolean }> =
    await knex('external_import_rows as p')
      .join(`${def.table} as t`, 't.id', 'p.entity_id')
      .where('p.dataset', def.dataset).whereNotNull('p.entity_id').andWhere('p.rolled_back', false)
      .andWhere((w) => w.where('p.source_id', externalId).orWhere('p.source_key', externalId))
      .andWhere('t.is_deleted', false)
      .orderBy('p.job_id', 'desc').limit(20)
      .select('p.job_id', 'p.source_id', 'p.source_key', 'p.source_created_by', 'p.source_created_at', 'p.entity_id', 'p.mapped');
  const access = await resolveProjectAccess(knex, user);
  const visible: typeof rows = [];
  for (const row of rows) {
    if (access.all) {
      visible.push(row);
      continue;
    }
    const projectId = def.project === 'id' ? row.entity_id
      : def.project ? (await knex(def.table).where({ id: row.entity_id }).first(def.project))?.[def.project]
        : PROJECT_THROUGH[type] ? (await knex.raw(PROJECT_THROUGH[type]!, [row.entity_id])).rows[0]?.project_id : null;
    if (projectId === null || projectId === undefined || access.projects.has(projectId)) visible.push(row);
  }
  const ids = [...new Set(visible.map((r) => r.entity_id))];
  if (ids.length === 0) throw new HttpError(404, 'not-found', `No ${type} was imported with the id or key "${externalId}"`, { type, externalId });
  if (ids.length > 1) throw new HttpError(409, 'ambiguous-external-id', `${ids.length} ${type}s were imported with the id or key "${externalId}"; give an id instead`, { type, externalId, ids });
  const found = visible[0];
  return {
    id: found.entity_id, type, externalId,
    source: { tool: 'testmo', jobId: found.job_id, sourceId: found.source_id, key: found.source_key, createdBy: found.source_created_by, createdAt: found.source_created_at, mapped: found.mapped },
  };
}
