import { expect } from 'chai';
import type { Knex } from 'knex';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { caseDailyStatistics, caseStatistics, crossRunFlips, type Execution, refreshStatistics, touchedNothing } from '../../projections/statistics';
import { createMigratedDatabase, type TestDatabase } from '../support/database';

/**
 * The executions the statistics count (projections/statistics.ts, docs/analytics.md), read from
 * rows written straight into the read model's tables: a run case's time is its latest result's,
 * its duration its last result's (by attempt, then time, then id) unless the run case has an
 * elapsed time, and it is a retry flip when a success comes after a failure in that order.
 * Then random runs against the same definition written with window functions.
 */
describe('statistics: the executions read from the read model', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  const PASSED = 1;
  const FAILED = 2;
  const SKIPPED = 3;
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 2, 10, minute)).toISOString();
  let nextResult = 1;

  before(async () => {
    db = await createMigratedDatabase('stats_executions');
    knex = createKnex(db.url, 2);
    await migrateReadModel(knex);
    const now = at(0);
    await knex('statuses').insert([
      { id: PASSED, name: 'Passed', system_name: 'passed', is_success: true, is_failure: false, created_at: now, updated_at: now, revision: 0 },
      { id: FAILED, name: 'Failed', system_name: 'failed', is_success: false, is_failure: true, created_at: now, updated_at: now, revision: 0 },
      { id: SKIPPED, name: 'Skipped', system_name: 'skipped', is_success: false, is_failure: false, created_at: now, updated_at: now, revision: 0 },
    ]);
    await knex('test_runs').insert([1, 2, 3].map((id) => ({ id, name: `run ${id}`, project_id: 7, branch: 'main', created_at: now, updated_at: now, revision: 0 })));
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  type Result = { status: number; minute: number | null; attempt: number; durationMs: number | null; deleted?: boolean };
  async function runCase(id: number, caseId: number, runId: number, status: number, results: Result[], elapsedMs: number | null = null): Promise<void> {
    const now = at(0);
    await knex('test_run_cases').insert({ id, test_run_id: runId, repository_case_id: caseId, status_id: status, elapsed_ms: elapsedMs, created_at: now, updated_at: now, revision: -1 });
    for (const r of results) {
      await knex('test_run_results').insert({
        id: nextResult++, test_run_id: runId, test_run_case_id: id, status_id: r.status, attempt: r.attempt, duration_ms: r.durationMs,
        executed_at: r.minute === null ? null : at(r.minute), is_deleted: r.deleted ?? false, created_at: at(30), updated_at: now, revision: -1,
      });
    }
  }

  async function refresh(runCaseIds: number[]): Promise<void> {
    const touched = touchedNothing();
    for (const id of runCaseIds) touched.runCases.add(id);
    await knex.transaction((trx) => refreshStatistics(trx, touched));
  }

  const daily = (caseId: number) => knex('case_daily_statistics').where({ repository_case_id: caseId }).first();

  it('orders a run case\'s results by attempt before time: a pass on the later attempt is a retry flip, whenever it ran, and gives the duration', async () => {
    // The retry ran "earlier" by its clock; the attempt decides.
    await runCase(101, 11, 1, PASSED, [{ status: FAILED, minute: 20, attempt: 0, durationMs: 40 }, { status: PASSED, minute: 10, attempt: 1, durationMs: 7 }]);
    // A failure after a pass is no retry flip; the last attempt's duration still counts.
    await runCase(102, 12, 1, FAILED, [{ status: PASSED, minute: 1, attempt: 0, durationMs: 3 }, { status: FAILED, minute: 2, attempt: 1, durationMs: 9 }]);
    // One attempt, two results: time decides, and a deleted result counts for nothing.
    await runCase(103, 13, 1, PASSED, [
      { status: FAILED, minute: 1, attempt: 0, durationMs: 5 }, { status: PASSED, minute: 2, attempt: 0, durationMs: null }, { status: PASSED, minute: 9, attempt: 3, durationMs: 1, deleted: true },
    ]);
    // Only deleted results: no execution. A run case's elapsed time wins over its results' durations.
    await runCase(104, 14, 1, PASSED, [{ status: PASSED, minute: 1, attempt: 0, durationMs: 5, deleted: true }]);
    await runCase(105, 15, 1, PASSED, [{ status: PASSED, minute: null, attempt: 0, durationMs: 5 }], 1234);
    await refresh([101, 102, 103, 104, 105]);

    expect(await daily(11)).to.include({ executions: 1, passed: 1, retry_flips: 1 });
    expect(Number((await daily(11)).duration_ms)).to.equal(7);
    expect(await daily(12)).to.include({ executions: 1, failed: 1, retry_flips: 0 });
    expect(Number((await daily(12)).duration_ms)).to.equal(9);
    expect(await daily(13)).to.include({ executions: 1, passed: 1, retry_flips: 1 });
    expect(Number((await daily(13)).duration_ms)).to.equal(0); // its last result has no duration
    expect(await daily(14)).to.equal(undefined);
    const fifteen = await knex('case_statistics').where({ repository_case_id: 15, all_configurations: true }).first();
    expect(fifteen).to.include({ executions: 1, mean_duration_ms: 1234 });
    // A result without executedAt counts at the time it was recorded.
    expect(new Date(fifteen.last_seen_at).toISOString()).to.equal(at(30));
  });

  it('comes out as the definition, written with window functions, on random run cases', async () => {
    // mulberry32: the same run cases every time.
    let seed = 20261203;
    const random = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) % n;
    };
    const caseIds = Array.from({ length: 40 }, (_, i) => 1000 + i);
    await knex('repository_case_versions').insert(caseIds.flatMap((caseId) => [1, 2].map((version) => ({
      repository_case_id: caseId, version, title: 't', snapshot: '{}', created_at: at(version === 1 ? 0 : 1 + random(20)),
    }))));
    const runCaseIds: number[] = [];
    let id = 2000;
    for (const caseId of caseIds) {
      for (let n = random(4); n > 0; n--) {
        const results = Array.from({ length: random(5) }, (): Result => ({
          status: 1 + random(3), minute: random(6) === 0 ? null : random(25), attempt: random(3), durationMs: random(4) === 0 ? null : random(500), deleted: random(8) === 0,
        }));
        runCaseIds.push(++id);
        await runCase(id, caseId, 1 + random(3), 1 + random(3), results, random(5) === 0 ? random(900) : null);
      }
    }
    await refresh(runCaseIds);

    const { rows } = await knex.raw(`
      SELECT rc.id AS run_case_id, rc.repository_case_id AS case_id, r.project_id, r.config_id, r.branch, rc.status_id,
        coalesce(s.is_success, false) AS success, coalesce(s.is_failure, false) AS failure, x.executed_at,
        coalesce(rc.elapsed_ms, x.duration_ms) AS duration_ms, x.retry_flip,
        (SELECT max(v.version) FROM repository_case_versions v WHERE v.repository_case_id = rc.repository_case_id AND v.created_at <= x.executed_at) AS case_version
      FROM test_run_cases rc
      JOIN test_runs r ON r.id = rc.test_run_id
      LEFT JOIN statuses s ON s.id = rc.status_id
      JOIN LATERAL (
        SELECT max(y.at) AS executed_at, (array_agg(y.duration_ms ORDER BY y.attempt DESC, y.at DESC, y.id DESC))[1] AS duration_ms,
          coalesce(bool_or(y.success AND y.failed_before), false) AS retry_flip
        FROM (
          SELECT res.id, res.attempt, res.duration_ms, coalesce(res.executed_at, res.created_at) AS at, rs.is_success AS success,
            coalesce(bool_or(rs.is_failure) OVER (ORDER BY res.attempt, coalesce(res.executed_at, res.created_at), res.id
              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS failed_before
          FROM test_run_results res JOIN statuses rs ON rs.id = res.status_id
          WHERE res.test_run_case_id = rc.id AND NOT res.is_deleted
        ) y
      ) x ON x.executed_at IS NOT NULL
      WHERE rc.repository_case_id = ANY(?::integer[])`, [caseIds]);
    const executions = rows.map((r: Record<string, never>): Execution => ({
      runCaseId: r.run_case_id, caseId: r.case_id, projectId: r.project_id, configId: r.config_id, branch: r.branch, statusId: r.status_id,
      outcome: r.success ? 'pass' : r.failure ? 'fail' : 'other', executedAt: new Date(r.executed_at), durationMs: r.duration_ms, retryFlip: r.retry_flip, caseVersion: r.case_version,
    }));
    expect(executions.length).to.be.greaterThan(20);
    expect(executions.some((e: Execution) => e.retryFlip)).to.equal(true);
    const flipped = crossRunFlips(executions);
    const expectedDaily = caseDailyStatistics(executions, flipped).map((r) => ({ ...r, duration_ms: String(r.duration_ms) }));
    const byCase = new Map<number, Execution[]>();
    for (const e of executions as Execution[]) byCase.set(e.caseId, [...(byCase.get(e.caseId) ?? []), e]);
    const expectedCases = [...byCase.values()].flatMap((list) => caseStatistics(list, flipped));

    const sortKey = (r: Record<string, unknown>) => `${r.repository_case_id}|${r.day ?? ''}|${r.config_id}|${r.branch ?? ''}|${r.all_configurations ?? ''}`;
    const sorted = <T extends Record<string, unknown>>(list: T[]) => [...list].sort((a, b) => sortKey(a).localeCompare(sortKey(b)));
    const actualDaily = (await knex('case_daily_statistics').whereIn('repository_case_id', caseIds).select('*'))
      .map(({ id: _, day, ...r }) => ({ ...r, day: new Date(day).toISOString() }));
    expect(sorted(actualDaily)).to.deep.equal(sorted(expectedDaily));
    const actualCases = (await knex('case_statistics').whereIn('repository_case_id', caseIds).select('*'))
      .map(({ id: _, first_seen_at, last_seen_at, ...r }) => ({ ...r, first_seen_at: new Date(first_seen_at).toISOString(), last_seen_at: new Date(last_seen_at).toISOString() }));
    expect(sorted(actualCases)).to.deep.equal(sorted(expectedCases));
  });
});
