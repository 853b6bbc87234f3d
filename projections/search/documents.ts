import type { Knex } from 'knex';
import type { DocumentKey, DocumentWrites, SearchDocument, SearchType } from '../../services/shared/search';

/**
 * Search documents built from the read model's rows (never from event data): the indexer loads the
 * documents its events touched, the rebuild scans every row. One SQL statement per type and call,
 * whatever the number of rows. A row that is missing, soft-deleted, or whose parent is (the
 * project, a case's folder or one above it, a failure's run or run case, a comment's parent) has no
 * document: `loadDocuments` answers it as a removal, `scanDocuments` leaves it out of its documents.
 *
 * Documents per type (every SearchDocument field is present; what a type has not is null or []):
 * - repository_cases: title, description, content = steps and expected results in order, custom
 *   field values (field name, value as text: option names for dropdowns), tags, folder path
 *   ("A / B / C"), template, workflow state, project, creator, created/updated.
 * - test_runs: name, note, tags, state, configuration, branch, creator; executedAt = completion.
 * - sessions: name, note, content = mission, tags, template, state, configuration, creator.
 * - milestones: name, note, creator. projects: name, note, creator (projectId: its own id).
 * - comments: their own documents: content, caseId/runId of the parent, title = the parent's
 *   title (case title, run, session or milestone name) or "Comment" for a project comment.
 * - failures: one per test run result whose status is a failure (see FAILURE_STATUS): title = the
 *   message's first line (or the failure type, or the case title), description = case title — run
 *   name, content = the start of the stack trace (else the message), failure type, status,
 *   configuration and branch of the run, runId, caseId, executedAt, creator = who executed it.
 * shared_steps and issues have no entity in this service: no documents.
 */

/** The types this service has documents for, in the order a rebuild scans them. */
export const INDEXED_TYPES = ['projects', 'repository_cases', 'test_runs', 'sessions', 'milestones', 'comments', 'failures'] as const satisfies readonly SearchType[];
export type IndexedType = (typeof INDEXED_TYPES)[number];
export const isIndexedType = (type: string): type is IndexedType => (INDEXED_TYPES as readonly string[]).includes(type);

/** Characters of a failure's stack trace kept in its document. */
export const STACK_TRACE_CHARS = 4000;

/**
 * Which results are failures, from the status's flags (services/entities/seed.ts): a status marked
 * `isFailure` (failed, error), or one neither a success nor completed (blocked, retest, untested: the
 * test did not get through). A success (passed) and a completed non-failure (skipped) are not.
 * `s` is the status row.
 */
export const FAILURE_STATUS = '(NOT s.is_success AND (s.is_failure OR NOT s.is_completed))';

/** The table each type's rows live in (alias `x` in the statements below). */
export const TABLE_OF: Record<IndexedType, string> = {
  projects: 'projects', repository_cases: 'repository_cases', test_runs: 'test_runs', sessions: 'sessions',
  milestones: 'milestones', comments: 'comments', failures: 'test_run_results',
};

const TAGS = (join: string, key: string) =>
  `ARRAY(SELECT t.name FROM ${join} j JOIN tags t ON t.id = j.tag_id WHERE j.${key} = x.id AND NOT t.is_deleted ORDER BY t.name)`;

/** A custom field value as text: strings as they are, option ids as the option's name, lists joined. */
const OPTION_NAME = (value: string) =>
  `(CASE WHEN f.type IN ('DROPDOWN', 'MULTI_SELECT') AND jsonb_typeof(${value}) = 'number'
     THEN (SELECT o.name FROM field_options o WHERE o.id::numeric = (${value} #>> '{}')::numeric) END)`;
const FIELD_TEXT = `CASE jsonb_typeof(v.value)
  WHEN 'array' THEN (SELECT string_agg(COALESCE(${OPTION_NAME('e')}, e #>> '{}'), ', ') FROM jsonb_array_elements(v.value) e)
  ELSE COALESCE(${OPTION_NAME('v.value')}, v.value #>> '{}') END`;

/**
 * When a statement reads, in microseconds since the epoch (a `text` column): its snapshot is taken
 * as it starts, so a later statement reads what an earlier one read or newer. The engines keep, of
 * two writes of one document, the one read later (DocumentWrites.readAt).
 */
const READ_AT = `(extract(epoch from statement_timestamp()) * 1000000)::bigint::text`;

/** Per type: the columns and joins of its documents; `live` is true when the row has a document; `read_at` when it was read. */
const SELECTS: Record<Exclude<IndexedType, 'repository_cases'>, string> = {
  projects: `
    SELECT x.id, ${READ_AT} AS read_at, x.id AS project_id, x.name AS project, x.name AS title, x.note AS description, NULL AS content,
      u.name AS creator, x.created_at, x.updated_at, NOT x.is_deleted AS live
    FROM projects x LEFT JOIN users u ON u.id = x.created_by_id`,
  test_runs: `
    SELECT x.id, ${READ_AT} AS read_at, x.project_id, p.name AS project, x.name AS title, x.note AS description, NULL AS content,
      ${TAGS('test_run_tags', 'test_run_id')} AS tags, w.name AS state, cf.name AS configuration, x.branch, u.name AS creator,
      x.created_at, x.updated_at, x.completed_at AS executed_at, NOT x.is_deleted AND NOT p.is_deleted AS live
    FROM test_runs x
    JOIN projects p ON p.id = x.project_id
    LEFT JOIN workflows w ON w.id = x.state_id
    LEFT JOIN configurations cf ON cf.id = x.config_id
    LEFT JOIN users u ON u.id = x.created_by_id`,
  sessions: `
    SELECT x.id, ${READ_AT} AS read_at, x.project_id, p.name AS project, x.name AS title, x.note AS description, x.mission AS content,
      ${TAGS('session_tags', 'session_id')} AS tags, tm.name AS template, w.name AS state, cf.name AS configuration, u.name AS creator,
      x.created_at, x.updated_at, x.completed_at AS executed_at, NOT x.is_deleted AND NOT p.is_deleted AS live
    FROM sessions x
    JOIN projects p ON p.id = x.project_id
    LEFT JOIN templates tm ON tm.id = x.template_id
    LEFT JOIN workflows w ON w.id = x.state_id
    LEFT JOIN configurations cf ON cf.id = x.config_id
    LEFT JOIN users u ON u.id = x.created_by_id`,
  milestones: `
    SELECT x.id, ${READ_AT} AS read_at, x.project_id, p.name AS project, x.name AS title, x.note AS description, NULL AS content, u.name AS creator,
      x.created_at, x.updated_at, x.completed_at AS executed_at, NOT x.is_deleted AND NOT p.is_deleted AS live
    FROM milestones x
    JOIN projects p ON p.id = x.project_id
    LEFT JOIN users u ON u.id = x.created_by_id`,
  comments: `
    SELECT x.id, ${READ_AT} AS read_at, x.project_id, p.name AS project, COALESCE(c.title, r.name, se.name, m.name, 'Comment') AS title, NULL AS description,
      x.content, u.name AS creator, x.repository_case_id AS case_id, x.test_run_id AS run_id, x.created_at, x.updated_at,
      NOT x.is_deleted AND NOT p.is_deleted AND NOT COALESCE(c.is_deleted, false) AND NOT COALESCE(r.is_deleted, false)
        AND NOT COALESCE(se.is_deleted, false) AND NOT COALESCE(m.is_deleted, false) AS live
    FROM comments x
    JOIN projects p ON p.id = x.project_id
    LEFT JOIN repository_cases c ON c.id = x.repository_case_id
    LEFT JOIN test_runs r ON r.id = x.test_run_id
    LEFT JOIN sessions se ON se.id = x.session_id
    LEFT JOIN milestones m ON m.id = x.milestone_id
    LEFT JOIN users u ON u.id = x.created_by_id`,
  failures: `
    SELECT x.id, ${READ_AT} AS read_at, r.project_id, p.name AS project,
      COALESCE(NULLIF(btrim(split_part(x.message, E'\\n', 1)), ''), NULLIF(x.failure_type, ''), c.title) AS title,
      concat_ws(' — ', c.title, r.name) AS description,
      COALESCE(left(x.stack_trace, ${STACK_TRACE_CHARS}), x.message) AS content,
      x.failure_type, s.name AS status, cf.name AS configuration, r.branch, u.name AS creator,
      x.test_run_id AS run_id, rc.repository_case_id AS case_id, x.created_at, x.updated_at, x.executed_at,
      NOT x.is_deleted AND NOT rc.is_deleted AND NOT r.is_deleted AND NOT p.is_deleted AND ${FAILURE_STATUS} AS live
    FROM test_run_results x
    JOIN test_run_cases rc ON rc.id = x.test_run_case_id
    JOIN test_runs r ON r.id = x.test_run_id
    JOIN projects p ON p.id = r.project_id
    JOIN statuses s ON s.id = x.status_id
    LEFT JOIN repository_cases c ON c.id = rc.repository_case_id
    LEFT JOIN configurations cf ON cf.id = r.config_id
    LEFT JOIN users u ON u.id = x.executed_by_id`,
};

/**
 * A repository case's document: its steps, tags and custom fields read case by case (index scans,
 * whatever the statistics of tables a bulk import has just filled), its folder's path walked once
 * per folder of the page, not once per case.
 */
const CASES_WITH = (where: string) => `
  WITH x AS MATERIALIZED (SELECT * FROM repository_cases x WHERE ${where}),
  folder_paths AS (
    WITH RECURSIVE up AS (
      SELECT f.id AS start, f.parent_id, f.name, f.is_deleted, 0 AS depth FROM repository_folders f WHERE f.id IN (SELECT folder_id FROM x)
      UNION ALL
      SELECT up.start, f.parent_id, f.name, f.is_deleted, up.depth + 1 FROM repository_folders f JOIN up ON f.id = up.parent_id WHERE up.depth < 100
    ) SELECT start, string_agg(up.name, ' / ' ORDER BY up.depth DESC) AS path, bool_or(up.is_deleted) AS deleted FROM up GROUP BY start)
  SELECT x.id, ${READ_AT} AS read_at, x.project_id, p.name AS project, x.title, x.description,
    (SELECT string_agg(concat_ws(E'\\n', st.step, st.expected_result), E'\\n' ORDER BY st.sort_order, st.id) FROM steps st WHERE st.repository_case_id = x.id) AS content,
    ${TAGS('repository_case_tags', 'repository_case_id')} AS tags,
    fp.path AS folder, tm.name AS template, w.name AS state, u.name AS creator,
    (SELECT COALESCE(json_agg(json_build_object('name', f.display_name, 'value', ${FIELD_TEXT}) ORDER BY f.display_name, v.id), '[]')
      FROM case_field_values v JOIN case_fields f ON f.id = v.field_id AND NOT f.is_deleted
      WHERE v.repository_case_id = x.id AND v.value IS NOT NULL AND v.value <> 'null'::jsonb) AS custom_fields,
    x.created_at, x.updated_at,
    NOT x.is_deleted AND NOT p.is_deleted AND NOT COALESCE(fp.deleted, false) AS live
  FROM x
  JOIN projects p ON p.id = x.project_id
  LEFT JOIN folder_paths fp ON fp.start = x.folder_id
  LEFT JOIN templates tm ON tm.id = x.template_id
  LEFT JOIN workflows w ON w.id = x.state_id
  LEFT JOIN users u ON u.id = x.created_by_id`;

/**
 * The statement of a type's documents for the rows `where` selects (on alias `x`), in id order
 * when `page` is given (a keyset page: `ORDER BY x.id LIMIT ?`, its binding last).
 */
function statementOf(type: IndexedType, where: string, page = false): string {
  const limit = page ? ' ORDER BY x.id LIMIT ?' : '';
  if (type === 'repository_cases') return `${CASES_WITH(where + limit)}${page ? ' ORDER BY x.id' : ''}`;
  return `${SELECTS[type]} WHERE ${where}${limit}`;
}

type Row = Record<string, unknown>;

/** READ_AT of a statement that found no rows (only removals): any time after its read will do, ids are never used again. */
async function readNow(knex: Knex | Knex.Transaction): Promise<string> {
  const { rows } = await knex.raw(`SELECT ${READ_AT} AS read_at`);
  return (rows as { read_at: string }[])[0].read_at;
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export function documentOf(type: IndexedType, row: Row): SearchDocument {
  return {
    type,
    id: String(row.id),
    projectId: String(row.project_id),
    project: String(row.project ?? ''),
    title: String(row.title ?? ''),
    description: str(row.description),
    content: str(row.content),
    tags: (row.tags as string[] | undefined) ?? [],
    folder: str(row.folder),
    template: str(row.template),
    state: str(row.state),
    status: str(row.status),
    creator: str(row.creator),
    configuration: str(row.configuration),
    branch: str(row.branch),
    failureType: str(row.failure_type),
    runId: str(row.run_id),
    caseId: str(row.case_id),
    customFields: ((row.custom_fields as { name: string; value: unknown }[] | undefined) ?? [])
      .filter((f) => f.value !== null && f.value !== undefined && f.value !== '')
      .map((f) => ({ name: f.name, value: String(f.value) })),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at),
    executedAt: iso(row.executed_at),
  };
}

/**
 * The documents of these rows as they are now: those that exist and are live to index, the others
 * (missing, deleted, under a deleted parent, a result that is no failure) to remove. Both in the
 * order of `ids` (the indexer's: the log's), so that what the engine refuses of one batch is
 * recorded in that order too (the error log lists the newest first).
 */
export async function loadDocuments(knex: Knex | Knex.Transaction, type: IndexedType, ids: readonly string[]): Promise<DocumentWrites & { upsert: SearchDocument[]; remove: DocumentKey[] }> {
  if (ids.length === 0) return { upsert: [], remove: [] };
  const order = new Map([...new Set(ids)].map((id, i) => [id, i]));
  const numeric = [...order.keys()].filter((id) => /^\d+$/.test(id) && Number(id) <= 2_147_483_647).map(Number);
  const { rows } = await knex.raw(statementOf(type, 'x.id = ANY(?::integer[])'), [numeric]);
  const all = rows as Row[];
  const live = all.filter((row) => row.live).sort((a, b) => order.get(String(a.id))! - order.get(String(b.id))!);
  const liveIds = new Set(live.map((row) => String(row.id)));
  const upsert = live.map((row) => documentOf(type, row));
  const remove = [...order.keys()].filter((id) => !liveIds.has(id)).map((id) => ({ type, id }));
  return { upsert, remove, readAt: all.length > 0 ? String(all[0].read_at) : await readNow(knex) };
}

/** The column holding a type's project in SELECTS (a project is its own). */
const PROJECT_OF: Record<IndexedType, string> = {
  projects: 'x.id', repository_cases: 'x.project_id', test_runs: 'x.project_id', sessions: 'x.project_id',
  milestones: 'x.project_id', comments: 'x.project_id', failures: 'r.project_id',
};

const inProjects = (type: IndexedType, projectIds: readonly number[] | null) =>
  projectIds === null ? { sql: '', bindings: [] as Knex.RawBinding[] } : { sql: ` AND ${PROJECT_OF[type]} = ANY(?::integer[])`, bindings: [[...projectIds]] as Knex.RawBinding[] };

/**
 * A page of the live documents of a type, by id after `afterId` (keyset): the rebuild's and the
 * reindex's scan, of some projects only when `projectIds` is given. `lastId` is the last row
 * scanned (null: none left); `removed` the rows of the page that have no document (deleted, under
 * something deleted, a result that is no failure), for a reindex that writes into a live version.
 */
export async function scanDocuments(
  knex: Knex | Knex.Transaction, type: IndexedType, afterId: number, limit: number, projectIds: readonly number[] | null = null,
): Promise<{ documents: SearchDocument[]; removed: DocumentKey[]; scanned: number; lastId: number | null; readAt: string | undefined }> {
  const scope = inProjects(type, projectIds);
  const { rows } = await knex.raw(`SELECT * FROM (${statementOf(type, `x.id > ?${scope.sql}`, true)}) page ORDER BY id`, [afterId, ...scope.bindings, limit]);
  const all = rows as Row[];
  return {
    documents: all.filter((r) => r.live).map((r) => documentOf(type, r)),
    removed: all.filter((r) => !r.live).map((r) => ({ type, id: String(r.id) })),
    scanned: all.length,
    lastId: all.length === 0 ? null : Number(all[all.length - 1].id),
    readAt: all.length === 0 ? undefined : String(all[0].read_at),
  };
}

/** How many documents a type has (of some projects only when `projectIds` is given): a reindex's totals. */
export async function countDocuments(knex: Knex | Knex.Transaction, type: IndexedType, projectIds: readonly number[] | null = null): Promise<number> {
  const scope = inProjects(type, projectIds);
  const { rows } = await knex.raw(`SELECT count(*)::integer AS n FROM (${statementOf(type, `true${scope.sql}`)}) page WHERE live`, scope.bindings);
  return (rows as { n: number }[])[0].n;
}
