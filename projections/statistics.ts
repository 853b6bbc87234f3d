import type { Knex } from 'knex';
import { insertRecords } from './runtime/rowBatch';

/**
 * The analytics read models (docs/analytics.md), recomputed by the read model's projection at the
 * end of each batch, in its transaction, for what the batch touched: the cases whose executions
 * changed (their case and daily statistics), the runs (their run statistics) and the projects'
 * days those fall on. Computed from the read model's own rows, so every way a result arrives (a
 * result import's chunks, the model API, the external-tool migration) counts the same.
 *
 * An **execution** is a run case with at least one result (not deleted, in a run not deleted): its
 * outcome is its run case's status (pass: a success status, fail: a failure status, other: any
 * other), at the time of its latest result. A **flip** is an execution whose pass/fail outcome
 * differs from the previous pass/fail execution of the same case on the same configuration and
 * branch, the case unchanged in between (same case version at both); a **retry flip** is an
 * execution with a passed result after a failed one within the run (a test that passed on retry).
 * A change of a status's success or failure flag counts from the next recomputation of a case on.
 */

/** What a batch touched: runs changed as a whole, run cases and results by id; case versions added per project and day. */
export interface Touched {
  runs: Set<number>;
  /** Runs whose own statistics alone are recomputed. */
  runTotals: Set<number>;
  runCases: Set<number>;
  results: Set<number>;
  /** `<projectId>|<day>` → the case versions added that day: first versions (created) and later ones (changed). */
  caseVersions: Map<string, { projectId: number; day: string; created: number; changed: number }>;
  /**
   * External-tool migration jobs that ended (completed, failed or cancelled): every run and run
   * case the job wrote in bulk. Those rows are counted once, when their job ends, not chunk by
   * chunk (a case's results arrive in many chunks: each would recompute its whole history).
   */
  jobs: Set<number>;
  /**
   * Cases created in the batch (a result import's new cases): no statistics row of theirs can
   * exist before it, so theirs are not deleted first (for 100,000 imported cases the deletes cost
   * PostgreSQL 1.3 s of the read model's transactions).
   */
  freshCases: Set<number>;
  /**
   * Per run, the run cases a result import's chunks created in the batch. A run touched by nothing
   * else (no other run case, result or change of its own) has those added to its totals instead of
   * all its run cases counted again: counted again each batch, a run of 100,000 cases imported in
   * 26 batches cost PostgreSQL 1.4 s, and the cost grew with the square of the run's size.
   */
  importedRunCases: Map<number, Set<number>>;
}

export const touchedNothing = (): Touched => ({
  runs: new Set(), runTotals: new Set(), runCases: new Set(), results: new Set(), caseVersions: new Map(), jobs: new Set(), freshCases: new Set(),
  importedRunCases: new Map(),
});

/** Counts a case version added in the batch (its project, when, and its number). */
export function countCaseVersion(touched: Touched, projectId: number, at: string | Date, version: number, times = 1): void {
  const day = dayOf(new Date(at));
  const key = `${projectId}|${day}`;
  let counts = touched.caseVersions.get(key);
  if (!counts) touched.caseVersions.set(key, (counts = { projectId, day, created: 0, changed: 0 }));
  if (version === 1) counts.created += times;
  else counts.changed += times;
}

/** The executions of a case's statistics window (flakiness, last statuses). */
export const RECENT_EXECUTIONS = 20;
/** The statuses kept newest first in `lastStatusIds`. */
export const LAST_STATUSES = 10;

export interface Execution {
  runCaseId: number;
  caseId: number;
  projectId: number;
  configId: number | null;
  branch: string | null;
  statusId: number | null;
  outcome: 'pass' | 'fail' | 'other';
  executedAt: Date;
  durationMs: number | null;
  retryFlip: boolean;
  caseVersion: number | null;
}

type Row = Record<string, unknown>;

const dayOf = (at: Date) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate())).toISOString();
const round = (n: number, digits = 4) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

/**
 * Marks the flips: per case, configuration and branch, in time order, each pass or fail execution
 * against the previous one. Returns, per execution (by run case id), whether it flipped.
 */
export function crossRunFlips(executions: readonly Execution[]): Set<number> {
  const flipped = new Set<number>();
  const last = new Map<string, Execution>();
  for (const e of [...executions].sort(byTime)) {
    if (e.outcome === 'other') continue;
    const key = `${e.caseId}|${e.configId}|${e.branch}`;
    const previous = last.get(key);
    if (previous && previous.outcome !== e.outcome && previous.caseVersion === e.caseVersion) flipped.add(e.runCaseId);
    last.set(key, e);
  }
  return flipped;
}

const byTime = (a: Execution, b: Execution) => a.executedAt.getTime() - b.executedAt.getTime() || a.runCaseId - b.runCaseId;

/** The case statistics of one case's executions: one row per configuration (null included) and one over all of them. */
export function caseStatistics(executions: readonly Execution[], flipped: ReadonlySet<number>): Row[] {
  const groups = new Map<string, { configId: number | null; all: boolean; executions: Execution[] }>();
  for (const e of executions) {
    for (const [key, configId, all] of [[`c${e.configId}`, e.configId, false], ['all', null, true]] as const) {
      let group = groups.get(key);
      if (!group) groups.set(key, (group = { configId, all, executions: [] }));
      group.executions.push(e);
    }
  }
  return [...groups.values()].map(({ configId, all, executions: list }) => {
    const sorted = [...list].sort(byTime);
    const passed = sorted.filter((e) => e.outcome === 'pass').length;
    const failed = sorted.filter((e) => e.outcome === 'fail').length;
    const durations = sorted.map((e) => e.durationMs).filter((d): d is number => d !== null).sort((a, b) => a - b);
    const recent = sorted.slice(-RECENT_EXECUTIONS);
    const flips = recent.reduce((n, e) => n + (flipped.has(e.runCaseId) ? 1 : 0) + (e.retryFlip ? 1 : 0), 0);
    return {
      repository_case_id: sorted[0].caseId,
      project_id: sorted[sorted.length - 1].projectId,
      config_id: configId,
      all_configurations: all,
      executions: sorted.length,
      passed,
      failed,
      pass_rate: passed + failed === 0 ? null : round(passed / (passed + failed)),
      first_seen_at: sorted[0].executedAt.toISOString(),
      last_seen_at: sorted[sorted.length - 1].executedAt.toISOString(),
      mean_duration_ms: durations.length === 0 ? null : round(durations.reduce((a, b) => a + b, 0) / durations.length, 2),
      p95_duration_ms: durations.length === 0 ? null : percentile(durations, 0.95),
      last_status_ids: sorted.slice(-LAST_STATUSES).reverse().map((e) => e.statusId).filter((s): s is number => s !== null),
      recent_executions: recent.length,
      flips,
      flakiness: round(flips / recent.length),
    };
  });
}

/** The daily statistics of executions: one row per case, day (UTC), configuration and branch. */
export function caseDailyStatistics(executions: readonly Execution[], flipped: ReadonlySet<number>): Row[] {
  const days = new Map<string, Row & { executions: number; passed: number; failed: number; other: number; flips: number; retry_flips: number; duration_ms: number }>();
  for (const e of executions) {
    const day = dayOf(e.executedAt);
    const key = `${e.caseId}|${day}|${e.configId}|${e.branch}`;
    let row = days.get(key);
    if (!row) {
      days.set(key, (row = {
        repository_case_id: e.caseId, project_id: e.projectId, day, config_id: e.configId, branch: e.branch,
        executions: 0, passed: 0, failed: 0, other: 0, flips: 0, retry_flips: 0, duration_ms: 0,
      }));
    }
    row.executions++;
    if (e.outcome === 'pass') row.passed++;
    else if (e.outcome === 'fail') row.failed++;
    else row.other++;
    if (flipped.has(e.runCaseId)) row.flips++;
    if (e.retryFlip) row.retry_flips++;
    row.duration_ms += e.durationMs ?? 0;
  }
  return [...days.values()];
}

const CHUNK = 2000;

/** A result's place among its run case's results: attempt, then time (to the microsecond), then id (unique: no two results tie). */
const RESULT_ORDER = 'res.attempt::bigint, (extract(epoch FROM coalesce(res.executed_at, res.created_at)) * 1000000)::bigint, res.id::bigint';

/**
 * The executions of these cases (at most CHUNK: the caller pages), from the read model (see the
 * header). Each case's run cases are found through the index by case, one probe per case (the
 * `OFFSET 0` keeps the planner from flattening the lateral read: on tables an import has just
 * filled it scanned every run case once per call instead, a cost that grew with the import).
 * Per run case, from its results in their order (RESULT_ORDER): the time of the latest, the
 * duration of the last, and whether a success comes after a failure (the first failure is
 * before the last success).
 */
async function loadExecutions(trx: Knex.Transaction, caseIds: number[]): Promise<Execution[]> {
  const { rows } = await trx.raw(`
      SELECT rc.id AS run_case_id, rc.repository_case_id AS case_id, r.project_id, r.config_id, r.branch, rc.status_id,
        coalesce(s.is_success, false) AS success, coalesce(s.is_failure, false) AS failure,
        x.executed_at, coalesce(rc.elapsed_ms, x.duration_ms) AS duration_ms, x.retry_flip,
        (SELECT max(v.version) FROM repository_case_versions v WHERE v.repository_case_id = rc.repository_case_id AND v.created_at <= x.executed_at) AS case_version
      FROM unnest(?::integer[]) AS k(case_id)
      CROSS JOIN LATERAL (SELECT * FROM test_run_cases c WHERE c.repository_case_id = k.case_id AND NOT c.is_deleted OFFSET 0) rc
      JOIN test_runs r ON r.id = rc.test_run_id AND NOT r.is_deleted
      LEFT JOIN statuses s ON s.id = rc.status_id
      JOIN LATERAL (
        SELECT max(coalesce(res.executed_at, res.created_at)) AS executed_at,
          (max(ARRAY[${RESULT_ORDER}, res.duration_ms::bigint]))[4]::integer AS duration_ms,
          coalesce(min(ARRAY[${RESULT_ORDER}]) FILTER (WHERE rs.is_failure) < max(ARRAY[${RESULT_ORDER}]) FILTER (WHERE rs.is_success), false) AS retry_flip
        FROM test_run_results res JOIN statuses rs ON rs.id = res.status_id
        WHERE res.test_run_case_id = rc.id AND NOT res.is_deleted
      ) x ON x.executed_at IS NOT NULL`, [caseIds]);
  type Found = {
    run_case_id: number; case_id: number; project_id: number; config_id: number | null; branch: string | null; status_id: number | null;
    success: boolean; failure: boolean; executed_at: string | Date; duration_ms: number | null; retry_flip: boolean; case_version: number | null;
  };
  return (rows as Found[]).map((r): Execution => ({
    runCaseId: r.run_case_id, caseId: r.case_id, projectId: r.project_id, configId: r.config_id, branch: r.branch, statusId: r.status_id,
    outcome: r.success ? 'pass' : r.failure ? 'fail' : 'other', executedAt: new Date(r.executed_at), durationMs: r.duration_ms,
    retryFlip: r.retry_flip, caseVersion: r.case_version,
  }));
}


const CASE_TYPES = {
  repository_case_id: 'integer', project_id: 'integer', config_id: 'integer', all_configurations: 'boolean', executions: 'integer', passed: 'integer',
  failed: 'integer', pass_rate: 'double precision', first_seen_at: 'timestamptz', last_seen_at: 'timestamptz', mean_duration_ms: 'double precision',
  p95_duration_ms: 'double precision', last_status_ids: 'integer[]', recent_executions: 'integer', flips: 'integer', flakiness: 'double precision',
};
const DAILY_TYPES = {
  repository_case_id: 'integer', project_id: 'integer', day: 'timestamptz', config_id: 'integer', branch: 'text', executions: 'integer', passed: 'integer',
  failed: 'integer', other: 'integer', flips: 'integer', retry_flips: 'integer', duration_ms: 'bigint',
};

/**
 * Recomputes the statistics of what `touched` names (see the header): the case and daily case
 * statistics of every case with a touched execution, whole; the touched runs'; and the project
 * days by difference (what the cases' daily rows counted before and count now, and the case
 * versions added), so a busy day is never counted again from the start. With `deferred`, the
 * project days' differences are added to it instead, for one write at the end of a rebuild.
 */
export async function refreshStatistics(trx: Knex.Transaction, touched: Touched, deferred?: ProjectDays): Promise<void> {
  const days = deferred ?? new ProjectDays();
  const executions = touched.runs.size + touched.runTotals.size + touched.runCases.size + touched.results.size + touched.jobs.size + touched.importedRunCases.size;
  if (executions > 0) await refreshExecutions(trx, touched, days);
  for (const v of touched.caseVersions.values()) {
    const row = days.of(v.projectId, v.day);
    row.cases_created += v.created;
    row.cases_changed += v.changed;
  }
  if (!deferred) await days.write(trx);
}

/** Differences to the project days' counts, added up (in a batch, or across a rebuild's batches) and written at once. */
export class ProjectDays {
  private readonly days = new Map<string, ProjectDay>();

  of(projectId: number, at: string | Date): ProjectDay {
    const day = new Date(at).toISOString();
    const key = `${projectId}|${day}`;
    let row = this.days.get(key);
    if (!row) this.days.set(key, (row = { project_id: projectId, day, executions: 0, passed: 0, failed: 0, other: 0, cases_created: 0, cases_changed: 0 }));
    return row;
  }

  /** A copy of the counts so far (a rebuild puts it back when a page fails). */
  copy(): ProjectDays {
    const copy = new ProjectDays();
    for (const [key, row] of this.days) copy.days.set(key, { ...row });
    return copy;
  }

  async write(trx: Knex.Transaction): Promise<void> {
    const changed = [...this.days.values()].filter((r) => DAY_COUNTS.some((k) => r[k] !== 0));
    this.days.clear();
    for (let i = 0; i < changed.length; i += DAYS_PER_STATEMENT) await addProjectDays(trx, changed.slice(i, i + DAYS_PER_STATEMENT));
  }
}

const DAYS_PER_STATEMENT = 5000;

/**
 * The case, daily case and run statistics of the executions touched: results and run cases lead
 * to their run cases, runs and cases; a run changed as a whole (its configuration, branch,
 * deletion) to every case it ran; an ended migration job to every run and case it wrote. A run
 * case deleted with no result left was no execution: its run's totals change, its case's
 * statistics do not (a rollback deletes the results first, then their run cases). Cases are
 * recomputed CHUNK at a time (a job's may be many); each project day gets what its cases' daily
 * rows count now less what they counted before.
 */
async function refreshExecutions(trx: Knex.Transaction, touched: Touched, days: ProjectDays): Promise<void> {
  const jobs = [...touched.jobs];
  const imported = [...touched.importedRunCases.values()].flatMap((ids) => [...ids]);
  const { rows: [found] } = await trx.raw(`
    WITH rc AS (
      SELECT test_run_id, repository_case_id,
        NOT c.is_deleted OR EXISTS (SELECT 1 FROM test_run_results x WHERE x.test_run_case_id = c.id AND NOT x.is_deleted) AS counts,
        NOT c.id = ANY(?::integer[]) AS recount
        FROM test_run_cases c WHERE c.id = ANY(?::integer[])
      UNION SELECT rc.test_run_id, rc.repository_case_id, true, true FROM test_run_results r JOIN test_run_cases rc ON rc.id = r.test_run_case_id WHERE r.id = ANY(?::integer[])
      UNION SELECT test_run_id, repository_case_id, true, true FROM test_run_cases WHERE test_run_id = ANY(?::integer[])
      UNION SELECT test_run_id, repository_case_id, true, true FROM test_run_cases WHERE external_import_job_id = ANY(?::integer[])
    )
    SELECT coalesce((SELECT array_agg(DISTINCT repository_case_id) FROM rc WHERE counts), '{}') AS cases,
      coalesce((SELECT array_agg(DISTINCT test_run_id) FROM rc WHERE recount), '{}') AS runs,
      coalesce((SELECT array_agg(id) FROM test_runs WHERE external_import_job_id = ANY(?::integer[])), '{}') AS job_runs`,
  [imported, [...touched.runCases, ...imported], [...touched.results], [...touched.runs], jobs, jobs]);
  const allCases = found.cases as number[];
  const runIds = new Set([...touched.runs, ...touched.runTotals, ...(found.runs as number[]), ...(found.job_runs as number[])]);

  for (let i = 0; i < allCases.length; i += CHUNK) {
    const caseIds = allCases.slice(i, i + CHUNK);
    const executions = await loadExecutions(trx, caseIds);
    const flipped = crossRunFlips(executions);
    const byCase = new Map<number, Execution[]>();
    for (const e of executions) {
      const list = byCase.get(e.caseId);
      if (list) list.push(e);
      else byCase.set(e.caseId, [e]);
    }
    const counted = caseIds.filter((id) => !touched.freshCases.has(id));
    const { rows: before } = counted.length === 0 ? { rows: [] } : await trx.raw(`DELETE FROM case_daily_statistics WHERE repository_case_id = ANY(?::integer[])
      RETURNING project_id, day, executions, passed, failed, other`, [counted]);
    if (counted.length > 0) await trx.raw('DELETE FROM case_statistics WHERE repository_case_id = ANY(?::integer[])', [counted]);
    const daily = caseDailyStatistics(executions, flipped);
    await insertRecords(trx, 'case_statistics', CASE_TYPES, [...byCase.values()].flatMap((list) => caseStatistics(list, flipped)));
    await insertRecords(trx, 'case_daily_statistics', DAILY_TYPES, daily);
    // Each project day by difference: executions counted now less those counted before.
    for (const [rows, sign] of [[before as Row[], -1], [daily, 1]] as const) {
      for (const r of rows) {
        const row = days.of(r.project_id as number, r.day as string);
        for (const k of ['executions', 'passed', 'failed', 'other'] as const) row[k] += sign * Number(r[k]);
      }
    }
  }
  const added = [...touched.importedRunCases].filter(([runId, ids]) => ids.size > 0 && !runIds.has(runId));
  if (added.length > 0) for (const runId of await addToRuns(trx, added)) runIds.add(runId);
  await refreshRuns(trx, [...runIds]);
}

interface ProjectDay { project_id: number; day: string; executions: number; passed: number; failed: number; other: number; cases_created: number; cases_changed: number }
const DAY_COUNTS = ['executions', 'passed', 'failed', 'other', 'cases_created', 'cases_changed'] as const;

/** Run statistics: each run's run cases counted by outcome, with its milestone, configuration and branch. */
async function refreshRuns(trx: Knex.Transaction, runIds: number[]): Promise<void> {
  if (runIds.length === 0) return;
  await trx.raw('DELETE FROM test_run_statistics WHERE test_run_id = ANY(?::integer[])', [runIds]);
  await trx.raw(`
    INSERT INTO test_run_statistics (test_run_id, project_id, milestone_id, config_id, branch, day, is_completed, total, executed, passed, failed, other, untested, duration_ms, pass_rate)
    SELECT r.id, r.project_id, r.milestone_id, r.config_id, r.branch, date_trunc('day', coalesce(r.completed_at, r.created_at), 'UTC'), r.is_completed,
      count(rc.id), count(rc.status_id), count(*) FILTER (WHERE s.is_success), count(*) FILTER (WHERE s.is_failure),
      count(*) FILTER (WHERE rc.status_id IS NOT NULL AND NOT s.is_success AND NOT s.is_failure), count(rc.id) - count(rc.status_id),
      coalesce(sum(rc.elapsed_ms), 0),
      round((count(*) FILTER (WHERE s.is_success))::numeric / nullif(count(*) FILTER (WHERE s.is_success OR s.is_failure), 0), 4)
    FROM test_runs r
    LEFT JOIN test_run_cases rc ON rc.test_run_id = r.id AND NOT rc.is_deleted
    LEFT JOIN statuses s ON s.id = rc.status_id
    WHERE r.id = ANY(?::integer[]) AND NOT r.is_deleted
    GROUP BY r.id`, [runIds]);
}

/**
 * Adds run cases created in the batch to their runs' totals (see Touched.importedRunCases);
 * answers the runs that have no statistics row yet, to be counted whole.
 */
async function addToRuns(trx: Knex.Transaction, runs: [number, Set<number>][]): Promise<number[]> {
  // A pass rate is passed over run cases passed or failed: a status marked both would be counted
  // twice in passed + failed, so with one such status every run is counted whole.
  const { rows: [both] } = await trx.raw('SELECT EXISTS (SELECT 1 FROM statuses WHERE is_success AND is_failure) AS found');
  if (both.found) return runs.map(([runId]) => runId);
  const { rows } = await trx.raw(`
    UPDATE test_run_statistics t SET total = t.total + d.total, executed = t.executed + d.executed, passed = t.passed + d.passed,
      failed = t.failed + d.failed, other = t.other + d.other, untested = t.untested + d.untested, duration_ms = t.duration_ms + d.duration_ms,
      pass_rate = round((t.passed + d.passed)::numeric / nullif(t.passed + d.passed + t.failed + d.failed, 0), 4)
    FROM (
      SELECT rc.test_run_id, count(rc.id) AS total, count(rc.status_id) AS executed, count(*) FILTER (WHERE s.is_success) AS passed,
        count(*) FILTER (WHERE s.is_failure) AS failed, count(*) FILTER (WHERE rc.status_id IS NOT NULL AND NOT s.is_success AND NOT s.is_failure) AS other,
        count(rc.id) - count(rc.status_id) AS untested, coalesce(sum(rc.elapsed_ms), 0) AS duration_ms
      FROM test_run_cases rc LEFT JOIN statuses s ON s.id = rc.status_id
      WHERE rc.id = ANY(?::integer[]) AND NOT rc.is_deleted
      GROUP BY rc.test_run_id
    ) d
    WHERE t.test_run_id = d.test_run_id
    RETURNING t.test_run_id`, [runs.flatMap(([, ids]) => [...ids])]);
  const updated = new Set((rows as { test_run_id: number }[]).map((r) => r.test_run_id));
  return runs.map(([runId]) => runId).filter((runId) => !updated.has(runId));
}

/** Adds the differences to the project days (a day counting nothing any more is removed: only one that lost counts can). */
async function addProjectDays(trx: Knex.Transaction, days: ProjectDay[]): Promise<void> {
  if (days.length === 0) return;
  const lost = days.filter((d) => DAY_COUNTS.some((k) => d[k] < 0));
  const columns = ['project_id', 'day', ...DAY_COUNTS];
  await trx.raw(`
    INSERT INTO project_daily_statistics (${columns.join(', ')})
    SELECT ${columns.join(', ')} FROM json_to_recordset(?::json) AS x(project_id integer, day timestamptz, ${DAY_COUNTS.map((k) => `${k} integer`).join(', ')})
    ON CONFLICT (project_id, day) DO UPDATE SET ${DAY_COUNTS.map((k) => `${k} = project_daily_statistics.${k} + EXCLUDED.${k}`).join(', ')}`, [JSON.stringify(days)]);
  if (lost.length === 0) return;
  await trx.raw(`DELETE FROM project_daily_statistics p USING unnest(?::integer[], ?::timestamptz[]) AS x(project_id, day)
    WHERE p.project_id = x.project_id AND p.day = x.day AND ${DAY_COUNTS.map((k) => `p.${k} = 0`).join(' AND ')}`, [lost.map((d) => d.project_id), lost.map((d) => d.day)]);
}
