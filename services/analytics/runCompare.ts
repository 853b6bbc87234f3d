import type { Knex } from 'knex';
import { ENTITIES } from '../../contracts/entities';
import type { ReadOptions } from '../model/query';
import { isRowVisible } from '../model/query';
import { HttpError, notFound } from '../shared/errors';
import { parseId, invalidArgument, queryParameters } from '../shared/validate';

/**
 * GET /api/runs/compare: two runs of a project, case by case (a run case is a repository case in
 * that run): which cases fail now that did not (new failures), fail no more (fixed), fail in both,
 * are new or gone, changed status otherwise, and whose duration moved past a threshold. What a
 * status means comes from the status itself (`isFailure`, `isSuccess`), so a project's own statuses
 * count as their flags say. A quarantined case (services/quarantine/) is reported apart, in
 * `quarantined`, whatever its statuses. A run case's status is the one it shows (for an import: the worst of
 * its results not retried); its duration the sum of its results' durations, retries left out.
 */

export const CATEGORIES = ['newFailures', 'fixed', 'stillFailing', 'newTests', 'removedTests', 'otherChanges', 'quarantined', 'durationChanges'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface CompareQuery {
  head: number;
  /** A run, or the latest finished run of the head's project on a branch (completed, or filled by result imports none of which is still running). */
  base: { runId: number } | { branch: string };
  /** A duration change counts when it is at least this many percent of the base's duration… */
  durationPercent: number;
  /** …and at least this many milliseconds. */
  durationMinMs: number;
  /** The most cases listed per category (the counts are always whole). */
  limit: number;
}

export const DEFAULTS = { durationPercent: 50, durationMinMs: 1000, limit: 500, maxLimit: 5000 } as const;


const PARAMETERS = ['base', 'head', 'baseBranch', 'durationPercent', 'durationMinMs', 'limit'];

function positiveInt(path: string, raw: string, max: number): number {
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > max) throw invalidArgument(path, `must be an integer from 1 to ${max}`);
  return Number(raw);
}

export function parseCompareQuery(query: Record<string, unknown>): CompareQuery {
  const given = queryParameters(query, PARAMETERS);
  if (given.head === undefined) throw invalidArgument('head', 'is required: the id of the run to compare');
  // Each parameter's own shape before how they go together.
  const head = parseId('head', given.head);
  const baseRun = given.base === undefined ? undefined : parseId('base', given.base);
  if ((given.base === undefined) === (given.baseBranch === undefined)) throw invalidArgument('base', 'give exactly one of base (a run id) and baseBranch (the latest finished run of the head\'s project on that branch)');
  // eslint-disable-next-line no-control-regex
  if (given.baseBranch !== undefined && (given.baseBranch.length > 255 || /[\u0000-\u001f\u007f]/.test(given.baseBranch))) throw invalidArgument('baseBranch', 'must be a branch name of at most 255 characters, without control characters');
  const percent = given.durationPercent === undefined ? DEFAULTS.durationPercent : positiveInt('durationPercent', given.durationPercent, 100_000);
  const minMs = given.durationMinMs === undefined ? DEFAULTS.durationMinMs : (/^0$/.test(given.durationMinMs) ? 0 : positiveInt('durationMinMs', given.durationMinMs, 86_400_000));
  const limit = given.limit === undefined ? DEFAULTS.limit : positiveInt('limit', given.limit, DEFAULTS.maxLimit);
  return {
    head,
    base: baseRun !== undefined ? { runId: baseRun } : { branch: given.baseBranch },
    durationPercent: percent, durationMinMs: minMs, limit,
  };
}

interface RunSide { testRunCaseId: number; status: { id: number; name: string; systemName: string } | null; durationMs: number | null }
export interface ComparedCase {
  repositoryCaseId: number; title: string; className: string | null; base: RunSide | null; head: RunSide | null;
  /** Set while the case is quarantined (services/quarantine/): it is then in `quarantined`, not among the failures. */
  quarantine: { reason: string; since: string } | null;
}
export interface Comparison {
  base: { id: number; name: string; branch: string | null; commit: string | null; completedAt: string | null };
  head: { id: number; name: string; branch: string | null; commit: string | null; completedAt: string | null };
  thresholds: { durationPercent: number; durationMinMs: number };
  summary: Record<Category | 'unchanged', number>;
  categories: Record<Category, { count: number; truncated: boolean; cases: ComparedCase[] }>;
}

const RUN_COLUMNS = ['id', 'name', 'branch', 'commit_sha', 'completed_at', 'project_id', 'is_deleted'];
type RunRow = { id: number; name: string; branch: string | null; commit_sha: string | null; completed_at: Date | null; project_id: number; is_deleted: boolean };
const describeRun = (r: RunRow) => ({ id: r.id, name: r.name, branch: r.branch, commit: r.commit_sha, completedAt: r.completed_at?.toISOString() ?? null });

async function visibleRun(knex: Knex, id: number, read: ReadOptions, path: string): Promise<RunRow> {
  const row = (await isRowVisible(knex, ENTITIES.testRun, id, read)) ? ((await knex('test_runs').where({ id }).first(RUN_COLUMNS)) as RunRow | undefined) : undefined;
  if (!row || row.is_deleted) throw notFound(`Test run ${id} does not exist`, { path, id });
  return row;
}

/** One side of the comparison per case: its run case, the status it shows (else its latest result's), its duration. */
const side = (alias: string) => `
  SELECT rc.id AS run_case_id, rc.repository_case_id AS case_id,
         COALESCE(rc.status_id, (SELECT r.status_id FROM test_run_results r WHERE r.test_run_case_id = rc.id AND NOT r.is_deleted AND NOT r.retried ORDER BY r.id DESC LIMIT 1)) AS status_id,
         (SELECT CAST(sum(r.duration_ms) AS bigint) FROM test_run_results r WHERE r.test_run_case_id = rc.id AND NOT r.is_deleted AND NOT r.retried) AS duration_ms
  FROM test_run_cases rc WHERE rc.test_run_id = :${alias} AND NOT rc.is_deleted`;

export async function compareRuns(knex: Knex, q: CompareQuery, read: ReadOptions): Promise<Comparison> {
  const head = await visibleRun(knex, q.head, read, 'head');
  let base: RunRow;
  if ('runId' in q.base) {
    base = await visibleRun(knex, q.base.runId, read, 'base');
    if (base.project_id !== head.project_id) {
      throw new HttpError(400, 'runs-in-different-projects', `Runs ${base.id} and ${head.id} belong to different projects: their cases cannot be compared`, { base: base.id, head: head.id });
    }
  } else {
    // Finished: completed, or filled by result imports of which none is still queued or running (a CI run is never completed by hand).
    const { rows: candidates } = (await knex.raw(`
      SELECT r.id FROM test_runs r
      LEFT JOIN LATERAL (
        SELECT max(finished_at) AS finished, count(*) FILTER (WHERE state IN ('queued', 'running')) AS busy, count(*) FILTER (WHERE state = 'completed') AS done
        FROM import_jobs j WHERE j.test_run_id = r.id) j ON true
      WHERE r.project_id = ? AND r.branch = ? AND NOT r.is_deleted AND r.id <> ? AND (r.is_completed OR (j.done > 0 AND j.busy = 0))
      ORDER BY COALESCE(r.completed_at, j.finished) DESC NULLS LAST, r.id DESC LIMIT 1`, [head.project_id, q.base.branch, head.id])) as { rows: { id: number }[] };
    if (candidates.length === 0) throw notFound(`No finished run on branch "${q.base.branch}" in the head's project to compare with`, { path: 'baseBranch', branch: q.base.branch });
    base = await visibleRun(knex, candidates[0].id, read, 'baseBranch');
  }
  const { rows } = await knex.raw(`
    WITH b AS (${side('base')}), h AS (${side('head')}),
    j AS (
      SELECT COALESCE(b.case_id, h.case_id) AS case_id,
             b.run_case_id AS b_run_case, b.status_id AS b_status, b.duration_ms AS b_duration,
             h.run_case_id AS h_run_case, h.status_id AS h_status, h.duration_ms AS h_duration,
             COALESCE(bs.is_failure, false) AS b_fail, COALESCE(hs.is_failure, false) AS h_fail, COALESCE(hs.is_success, false) AS h_pass,
             q.reason AS q_reason, q.quarantined_since AS q_since
      FROM b FULL JOIN h ON b.case_id = h.case_id
      LEFT JOIN statuses bs ON bs.id = b.status_id LEFT JOIN statuses hs ON hs.id = h.status_id
      LEFT JOIN case_quarantines q ON q.repository_case_id = COALESCE(b.case_id, h.case_id) AND q.is_quarantined
    ),
    classified AS (
      SELECT j.*, CASE
        WHEN q_reason IS NOT NULL THEN 'quarantined'
        WHEN b_run_case IS NULL THEN 'newTests'
        WHEN h_run_case IS NULL THEN 'removedTests'
        WHEN h_fail AND NOT b_fail THEN 'newFailures'
        WHEN h_fail AND b_fail THEN 'stillFailing'
        WHEN b_fail AND h_pass THEN 'fixed'
        WHEN b_status IS DISTINCT FROM h_status THEN 'otherChanges'
        ELSE 'unchanged' END AS category
      FROM j
      UNION ALL
      SELECT j.*, 'durationChanges' FROM j
      WHERE b_duration IS NOT NULL AND h_duration IS NOT NULL
        AND abs(h_duration - b_duration) >= :minMs AND abs(h_duration - b_duration) * 100 >= :percent * b_duration
    ),
    ranked AS (SELECT c.*, count(*) OVER (PARTITION BY category) AS total, row_number() OVER (PARTITION BY category ORDER BY case_id) AS n FROM classified c)
    SELECT ranked.*, rc.title, rc.class_name FROM ranked JOIN repository_cases rc ON rc.id = ranked.case_id
    WHERE (category <> 'unchanged' AND n <= :limit) OR (category = 'unchanged' AND n = 1)
    ORDER BY category, case_id`, { base: base.id, head: head.id, minMs: q.durationMinMs, percent: q.durationPercent, limit: q.limit });
  const statuses = new Map(((await knex('statuses').select('id', 'name', 'system_name')) as { id: number; name: string; system_name: string }[])
    .map((s) => [s.id, { id: s.id, name: s.name, systemName: s.system_name }]));
  const summary = Object.fromEntries([...CATEGORIES, 'unchanged'].map((c) => [c, 0])) as Comparison['summary'];
  const categories = Object.fromEntries(CATEGORIES.map((c) => [c, { count: 0, truncated: false, cases: [] as ComparedCase[] }])) as Comparison['categories'];
  const sideOf = (runCase: number | null, status: number | null, duration: string | null): RunSide | null =>
    runCase === null ? null : { testRunCaseId: runCase, status: status === null ? null : statuses.get(status) ?? null, durationMs: duration === null ? null : Number(duration) };
  for (const r of rows as Array<Record<string, unknown>>) {
    const category = r.category as Category | 'unchanged';
    summary[category] = Number(r.total);
    if (category === 'unchanged') continue;
    const entry = categories[category];
    entry.count = Number(r.total);
    entry.truncated = entry.count > q.limit;
    entry.cases.push({
      repositoryCaseId: r.case_id as number, title: r.title as string, className: (r.class_name as string | null) ?? null,
      base: sideOf(r.b_run_case as number | null, r.b_status as number | null, r.b_duration as string | null),
      head: sideOf(r.h_run_case as number | null, r.h_status as number | null, r.h_duration as string | null),
      quarantine: r.q_reason === null ? null : { reason: r.q_reason as string, since: (r.q_since as Date).toISOString() },
    });
  }
  return { base: describeRun(base), head: describeRun(head), thresholds: { durationPercent: q.durationPercent, durationMinMs: q.durationMinMs }, summary, categories };
}
