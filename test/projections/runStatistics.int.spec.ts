import { expect } from 'chai';
import type { Knex } from 'knex';
import type { ImportedResult, TestamentEvent, TestResultsImported } from '../../contracts/events';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { readModelProjection } from '../../projections/readModel';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { countPendingStatistics } from '../../projections/statisticsQueue';
import { ADOPTED_KEYS, CASE_V2_KEYS, columns, FOLDER_KEYS, RESULT_V2_KEYS, RUN_CASE_KEYS, SHOWN_KEYS, SUITE_OUTPUT_KEYS, SUITE_PROPERTY_KEYS } from '../support/columns';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { at, envelopes } from './envelopes';

const JOB = 'importJob-10';
const PASSED = 2;
const FAILED = 3;
const SKIPPED = 4;

const result = (resultId: number, testRunCaseId: number, statusId: number, attempt = 1, retried = false): ImportedResult => ({
  resultId, testRunCaseId, statusId, durationMs: 10 * resultId, executedAt: at(30), message: null, failureType: null, stackTrace: null,
  systemOut: null, systemErr: null, file: null, line: null, properties: [], attempt, retried,
});

/** Chunk n of a run (42 unless given): new cases (and run cases) by id, and results. */
function chunk(n: number, runCases: number[], results: ImportedResult[], testRunId = 42): TestamentEvent {
  return {
    type: 'TestResultsImported',
    data: {
      jobId: 10, chunk: n, projectId: 1, testRunId, caseSource: 'JUNIT', caseTemplateId: null, caseStateId: null,
      folders: columns(FOLDER_KEYS, n === 0 ? [{ folderId: 12, parentId: null, name: 'Suite' }] : []),
      cases: columns(CASE_V2_KEYS, runCases.map((id) => ({ caseId: id, folderId: 12, title: `t${id}`, className: 'S', identityKey: null, scope: null }))),
      scopes: [],
      runCases: columns(RUN_CASE_KEYS, runCases.map((id, order) => ({ testRunCaseId: id, repositoryCaseId: id, order }))),
      results: columns(RESULT_V2_KEYS, results),
      adopted: columns(ADOPTED_KEYS, []), shown: columns(SHOWN_KEYS, []), suiteOutputs: columns(SUITE_OUTPUT_KEYS, []), suiteProperties: columns(SUITE_PROPERTY_KEYS, []),
      processedCases: n + 1, importedAt: at(22 + n),
    } as unknown as TestResultsImported['data'],
  };
}

/**
 * A run's statistics while an import's chunks arrive (projections/statistics.ts): the run cases a
 * chunk creates are added to the run's totals, and a chunk that changes an older run case (a later
 * result of a case imported before) has the run counted whole. After every batch, the row is what
 * counting the run's run cases whole gives.
 */
describe('statistics: a run\'s totals as an import\'s chunks arrive', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createMigratedDatabase('run_statistics');
    knex = createKnex(db.url, 2);
    await migrateReadModel(knex);
    await knex('statuses').insert([
      { id: PASSED, name: 'Passed', system_name: 'passed', is_completed: true, is_success: true, is_failure: false, created_at: at(1), updated_at: at(1), revision: 0 },
      { id: FAILED, name: 'Failed', system_name: 'failed', is_completed: true, is_success: false, is_failure: true, created_at: at(1), updated_at: at(1), revision: 0 },
      { id: SKIPPED, name: 'Skipped', system_name: 'skipped', is_completed: true, is_success: false, is_failure: false, created_at: at(1), updated_at: at(1), revision: 0 },
    ]);
    await knex('test_runs').insert({ id: 42, name: 'Nightly', project_id: 1, branch: 'main', created_at: at(20), updated_at: at(20), revision: 0 });
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const COLUMNS = ['total', 'executed', 'passed', 'failed', 'other', 'untested', 'duration_ms', 'pass_rate'];
  const row = async (runId = 42) => knex('test_run_statistics').where({ test_run_id: runId }).first(COLUMNS);
  const countedWhole = async (runId = 42) => (await knex.raw(`
    SELECT count(rc.id)::int AS total, count(rc.status_id)::int AS executed, (count(*) FILTER (WHERE s.is_success))::int AS passed,
      (count(*) FILTER (WHERE s.is_failure))::int AS failed, (count(*) FILTER (WHERE rc.status_id IS NOT NULL AND NOT s.is_success AND NOT s.is_failure))::int AS other,
      (count(rc.id) - count(rc.status_id))::int AS untested, coalesce(sum(rc.elapsed_ms), 0) AS duration_ms,
      round((count(*) FILTER (WHERE s.is_success))::numeric / nullif(count(*) FILTER (WHERE s.is_success OR s.is_failure), 0), 4)::float8 AS pass_rate
    FROM test_run_cases rc LEFT JOIN statuses s ON s.id = rc.status_id WHERE rc.test_run_id = ? AND NOT rc.is_deleted`, [runId])).rows[0];

  it('adds new run cases to the totals and counts the run whole when an older run case changes, equal to a count after every batch', async () => {
    const events = envelopes([
      [JOB, chunk(0, [500, 501], [result(1, 500, PASSED), result(2, 501, FAILED)])],
      [JOB, chunk(1, [502, 503], [result(3, 502, PASSED), result(4, 503, SKIPPED)])],
      // 501 again (a rerun in a later chunk): now passed, so the run is counted whole.
      [JOB, chunk(2, [], [result(5, 501, PASSED, 2)])],
      // 504 created and retried within the batch; 505 failed.
      [JOB, chunk(3, [504, 505], [result(6, 504, FAILED, 1, true), result(7, 505, FAILED)])],
      [JOB, chunk(4, [506], [result(8, 504, PASSED, 2), result(9, 506, PASSED)])],
      [JOB, chunk(5, [507, 508], [result(10, 507, PASSED)])],
    ]);
    const batches = [[0], [1], [2], [3, 4], [5]];
    const seen: unknown[] = [];
    for (const batch of batches) {
      await applyBatch(knex, readModelProjection, batch.map((i) => events[i]));
      expect(await countPendingStatistics(knex), 'segments counted').to.be.greaterThan(0);
      const [counted, kept] = [await countedWhole(), await row()];
      expect(kept, `after chunks ${batch.join(', ')}`).to.deep.equal(counted);
      seen.push(kept);
    }
    expect(seen.at(-1)).to.deep.include({ total: 9, executed: 8, passed: 6, failed: 1, other: 1, untested: 1 });
  });

  it('counts the run whole while a status is marked both success and failure, so its pass rate stays what a count gives', async () => {
    await knex('statuses').insert({ id: 5, name: 'Odd', system_name: 'odd', is_completed: true, is_success: true, is_failure: true, created_at: at(1), updated_at: at(1), revision: 0 });
    const events = envelopes([
      [JOB, chunk(6, [600], [result(20, 600, 5)])],
      [JOB, chunk(7, [601, 602], [result(21, 601, 5), result(22, 602, FAILED)])],
    ], 9007199254750001n);
    for (const event of events) {
      await applyBatch(knex, readModelProjection, [event]);
      await countPendingStatistics(knex);
      expect(await row()).to.deep.equal(await countedWhole());
    }
    expect((await row()).pass_rate).to.equal(0.8); // 8 passed of 10 passed or failed (two of them both)
  });

  it('counts several batches in one pass (a worker behind) as it counts them one by one: a run case a later batch wrote is counted once', async () => {
    await knex('test_runs').insert({ id: 43, name: 'Merged', project_id: 1, branch: 'main', created_at: at(20), updated_at: at(20), revision: 0 });
    const events = envelopes([
      [JOB, chunk(10, [700, 701], [result(30, 700, PASSED), result(31, 701, FAILED)], 43)],
      [JOB, chunk(11, [702], [result(32, 702, PASSED)], 43)],
      [JOB, chunk(12, [], [result(33, 701, PASSED, 2)], 43)],
      [JOB, chunk(13, [703, 704], [result(34, 703, FAILED)], 43)],
    ], 9007199254760001n);
    // The first batch counted alone (the run then has its row); the next three wait and are counted in one pass.
    await applyBatch(knex, readModelProjection, [events[0]]);
    expect(await countPendingStatistics(knex)).to.equal(1);
    for (const event of events.slice(1)) await applyBatch(knex, readModelProjection, [event]);
    expect(await row(43), 'nothing counted before the pass').to.deep.include({ total: 2 });
    expect(await countPendingStatistics(knex)).to.equal(3);
    expect(await row(43)).to.deep.equal(await countedWhole(43));
    expect(await row(43)).to.deep.include({ total: 5, executed: 4, passed: 3, failed: 1, untested: 1 });
    expect(await countPendingStatistics(knex), 'nothing left').to.equal(0);
  });
});
