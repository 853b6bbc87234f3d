import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import type { ImportedResult, TestamentEvent, TestResultsImported } from '../../contracts/events';
import { createKnex } from '../../infra/postgres/database';
import { importsProjection } from '../../projections/imports';
import { migrateReadModel } from '../../projections/migrations';
import { readModelProjection } from '../../projections/readModel';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { ADOPTED_KEYS, CASE_KEYS, CASE_V2_KEYS, columns, FOLDER_KEYS, RESULT_KEYS, RESULT_V2_KEYS, RUN_CASE_KEYS, SHOWN_KEYS, SUITE_OUTPUT_KEYS, SUITE_PROPERTY_KEYS } from '../support/columns';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { at, envelopes, twice } from './envelopes';

const JOB = 'importJob-9';
/** A chunk as v1 wrote it (before identities, retries and the shown status): the last result shows. */
const v1 = (data: object) => data as unknown as TestResultsImported['data'];
const result = (resultId: number, testRunCaseId: number, statusId: number, attempt: number): Omit<ImportedResult, 'retried'> => ({
  resultId, testRunCaseId, statusId, durationMs: 10 * resultId, executedAt: at(30 + resultId), message: statusId === 3 ? 'boom' : null,
  failureType: null, stackTrace: null, systemOut: 'out', systemErr: null, file: 'a.py', line: resultId, properties: [{ name: 'k', value: 'v' }], attempt,
});
const EVENTS: [string, TestamentEvent][] = [
  [JOB, { type: 'ImportRequested', data: {
    jobId: 9, projectId: 1, endpoint: 'test-results', format: 'junit', testRunName: 'Nightly', testRunId: null, stateId: null, parentFolderId: null,
    configId: null, milestoneId: null, tagIds: [], templateId: null, requestedAt: at(20),
  } }],
  [JOB, { type: 'ImportFileStored', data: { jobId: 9, index: 0, fileName: 'a.xml', storedAs: 'ab'.repeat(32), sizeBytes: 99, sha256: 'ab'.repeat(32) } }],
  [JOB, { type: 'ImportParsed', data: { jobId: 9, format: 'junit', cases: 3, suites: 1, warnings: [{ file: 'a.xml', message: 'w' }], warningCount: 1, parsedAt: at(21) } }],
  [JOB, { type: 'ImportTestRunPlanned', data: { jobId: 9, testRunId: 42, created: true } }],
  [JOB, { type: 'TestResultsImported', data: v1({
    jobId: 9, chunk: 0, projectId: 1, testRunId: 42, caseSource: 'JUNIT', caseTemplateId: null, caseStateId: null,
    folders: columns(FOLDER_KEYS, [{ folderId: 11, parentId: null, name: 'suite' }]),
    cases: columns(CASE_KEYS, [{ caseId: 100, folderId: 11, title: 'a', className: 'A' }, { caseId: 101, folderId: 11, title: 'b', className: 'A' }]),
    runCases: columns(RUN_CASE_KEYS, [{ testRunCaseId: 500, repositoryCaseId: 100, order: 0 }, { testRunCaseId: 501, repositoryCaseId: 101, order: 1 }]),
    results: columns(RESULT_KEYS, [result(1, 500, 3, 1), result(2, 501, 2, 1)]), processedCases: 2, importedAt: at(22),
  }) }],
  // The third case of the file is case a again: its second attempt, and its run case now shows passed.
  [JOB, { type: 'TestResultsImported', data: v1({
    jobId: 9, chunk: 1, projectId: 1, testRunId: 42, caseSource: 'JUNIT', caseTemplateId: null, caseStateId: null,
    folders: columns(FOLDER_KEYS, []), cases: columns(CASE_KEYS, []), runCases: columns(RUN_CASE_KEYS, []),
    results: columns(RESULT_KEYS, [result(3, 500, 2, 2)]), processedCases: 3, importedAt: at(23),
  }) }],
  [JOB, { type: 'ImportCompleted', data: { jobId: 9, testRunId: 42, counts: { results: 3, newCases: 2, newFolders: 1, newRunCases: 2, passed: 2, failed: 1, error: 0, skipped: 0 }, completedAt: at(24) } }],
];

/** A throw-away database with the read model's tables and the statuses passed (2) and failed (3). */
async function readModelWithStatuses(label: string): Promise<{ db: TestDatabase; knex: Knex }> {
  const db = await createMigratedDatabase(label);
  const knex = createKnex(db.url);
  await migrateReadModel(knex);
  await knex('statuses').insert([
    { id: 2, name: 'Passed', system_name: 'passed', is_completed: true, created_at: at(1), updated_at: at(1), revision: 0 },
    { id: 3, name: 'Failed', system_name: 'failed', is_completed: true, created_at: at(1), updated_at: at(1), revision: 0 },
  ]);
  return { db, knex };
}

/** The read model and the import jobs' model from an import job's stream; every event delivered again changes nothing (the checkpoint). */
describe('import job projections (PostgreSQL)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  before(async () => ({ db, knex } = await readModelWithStatuses('imports_projection')));
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  /** Every event twice in one batch (both chunks applied together), then each again alone, through the checkpoint as the projector delivers them. */
  const applyTwice = async (events: EventEnvelope[]) => {
    for (const projection of [readModelProjection, importsProjection]) {
      await applyBatch(knex, projection, twice(events));
      for (const e of events) await applyBatch(knex, projection, [e]);
    }
  };

  it('inserts folders, cases (version 1 each), run cases and results, and shows the latest result on each run case', async () => {
    await applyTwice(envelopes(EVENTS));
    expect(await knex('repository_folders').select('id', 'name', 'project_id', 'import_job_id', 'revision')).to.deep.equal([
      { id: 11, name: 'suite', project_id: 1, import_job_id: 9, revision: '-1' },
    ]);
    const cases = await knex('repository_cases').orderBy('id').select('id', 'title', 'class_name', 'source', 'automated', 'created_by_id', 'import_job_id', 'current_version');
    expect(cases).to.deep.equal([
      { id: 100, title: 'a', class_name: 'A', source: 'JUNIT', automated: true, created_by_id: 1, import_job_id: 9, current_version: 1 },
      { id: 101, title: 'b', class_name: 'A', source: 'JUNIT', automated: true, created_by_id: 1, import_job_id: 9, current_version: 1 },
    ]);
    expect(await knex('repository_case_versions').orderBy('repository_case_id').select('repository_case_id', 'version')).to.deep.equal([
      { repository_case_id: 100, version: 1 }, { repository_case_id: 101, version: 1 },
    ]);
    const runCases = await knex('test_run_cases').orderBy('id').select('id', 'status_id', 'is_completed', 'elapsed_ms', 'sort_order');
    expect(runCases).to.deep.equal([
      { id: 500, status_id: 2, is_completed: true, elapsed_ms: 30, sort_order: 0 },
      { id: 501, status_id: 2, is_completed: true, elapsed_ms: 20, sort_order: 1 },
    ]);
    const results = await knex('test_run_results').orderBy('id').select('id', 'test_run_case_id', 'status_id', 'attempt', 'message', 'line', 'properties', 'executed_by_id', 'executed_at');
    expect(results.map((r) => [r.id, r.test_run_case_id, r.status_id, r.attempt, r.message, r.line])).to.deep.equal([
      [1, 500, 3, 1, 'boom', 1], [2, 501, 2, 1, null, 2], [3, 500, 2, 2, null, 3],
    ]);
    expect(results[0].properties).to.deep.equal([{ name: 'k', value: 'v' }]);
    expect(results[0].executed_at.toISOString()).to.equal(at(31));
  });

  it('keeps the job: state, files, totals, progress, warnings, counts', async () => {
    const job = await knex('import_jobs').where({ job_id: 9 }).first();
    expect(job).to.include({ state: 'completed', project_id: 1, test_run_id: 42, format: 'junit', total_cases: 3, processed_cases: 3, chunks: 2, warning_count: 1, created_by_id: 1, via: 'api' });
    expect(job.files).to.deep.equal([{ index: 0, name: 'a.xml', sizeBytes: 99, sha256: 'ab'.repeat(32) }]);
    expect(job.counts).to.include({ results: 3, failed: 1 });
    expect(job.warnings).to.deep.equal([{ file: 'a.xml', message: 'w' }]);
  });
});

/** v2 chunks: identities, adopted cases, retried results, the status a run case shows, suite output; and a renamed case's alias. */
describe('import chunks v2 and case aliases (readModel projection, PostgreSQL)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  const JOB2 = 'importJob-10';
  const KEY = (c: string) => c.repeat(22);
  const v2result = (resultId: number, testRunCaseId: number, statusId: number, attempt: number, retried = false): ImportedResult => ({
    ...result(resultId, testRunCaseId, statusId, attempt), retried,
  });
  const chunk = (n: number, data: Partial<TestResultsImported['data']>): TestamentEvent => ({
    type: 'TestResultsImported',
    data: {
      jobId: 10, chunk: n, projectId: 1, testRunId: 42, caseSource: 'JUNIT', caseTemplateId: null, caseStateId: null,
      folders: columns(FOLDER_KEYS, []), cases: columns(CASE_V2_KEYS, []), runCases: columns(RUN_CASE_KEYS, []), results: columns(RESULT_V2_KEYS, []),
      scopes: [], adopted: columns(ADOPTED_KEYS, []), shown: columns(SHOWN_KEYS, []), suiteOutputs: columns(SUITE_OUTPUT_KEYS, []), suiteProperties: columns(SUITE_PROPERTY_KEYS, []),
      processedCases: n + 1, importedAt: at(22 + n), ...data,
    },
  });
  const EVENTS_V2: [string, TestamentEvent][] = [
    // A case from before identities (no key), adopted by this chunk's second test.
    ['repositoryCase-300', { type: 'RepositoryCaseCreated', data: { caseId: 300, projectId: 1, title: 'old', createdAt: at(10) } as never }],
    [JOB2, chunk(0, {
      folders: columns(FOLDER_KEYS, [{ folderId: 12, parentId: null, name: 'Suite' }]),
      cases: columns(CASE_V2_KEYS, [{ caseId: 200, folderId: 12, title: 'flaky', className: 'S', identityKey: KEY('a'), scope: 0 }]),
      scopes: [KEY('s')],
      runCases: columns(RUN_CASE_KEYS, [{ testRunCaseId: 600, repositoryCaseId: 200, order: 0 }, { testRunCaseId: 601, repositoryCaseId: 300, order: 1 }]),
      // 600: a retried failure, then a pass: shows passed (its last result). 601: failed, then passed in the next chunk.
      results: columns(RESULT_V2_KEYS, [v2result(10, 600, 3, 1, true), v2result(11, 600, 2, 2), v2result(12, 601, 3, 1)]),
      adopted: columns(ADOPTED_KEYS, [{ caseId: 300, identityKey: KEY('b'), identityScope: KEY('s') }]),
      suiteOutputs: columns(SUITE_OUTPUT_KEYS, [{ folderId: 12, suite: 'Suite', systemOut: 'started', systemErr: null }]),
    })],
    [JOB2, chunk(1, { results: columns(RESULT_V2_KEYS, [v2result(13, 601, 2, 2)]), shown: columns(SHOWN_KEYS, [{ testRunCaseId: 601, statusId: 3 }]) })],
    ['caseIdentity-200', { type: 'RepositoryCaseAliasAdded', data: { caseId: 200, projectId: 1, source: 'JUNIT', alias: KEY('a'), aliasTitle: 'flaky', identityKey: KEY('c'), addedAt: at(40) } }],
  ];

  before(async () => ({ db, knex } = await readModelWithStatuses('imports_v2')));
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('shows the worst result not retried, keeps identities, adoptions, retries, suite output and aliases; every event twice changes nothing', async () => {
    const events = envelopes(EVENTS_V2);
    await applyBatch(knex, readModelProjection, twice(events));
    for (const e of events) await applyBatch(knex, readModelProjection, [e]);
    expect(await knex('test_run_cases').orderBy('id').select('id', 'status_id')).to.deep.equal([{ id: 600, status_id: 2 }, { id: 601, status_id: 3 }]);
    expect(await knex('test_run_results').orderBy('id').pluck('retried')).to.deep.equal([true, false, false, false]);
    expect(await knex('repository_cases').orderBy('id').select('id', 'identity_key', 'identity_scope')).to.deep.equal([
      { id: 200, identity_key: KEY('c'), identity_scope: KEY('s') }, { id: 300, identity_key: KEY('b'), identity_scope: KEY('s') },
    ]);
    expect(await knex('repository_case_aliases').select('identity_key', 'repository_case_id', 'title')).to.deep.equal([{ identity_key: KEY('a'), repository_case_id: 200, title: 'flaky' }]);
    expect(await knex('test_run_suite_outputs').select('test_run_id', 'folder_id', 'suite', 'system_out')).to.deep.equal([{ test_run_id: 42, folder_id: 12, suite: 'Suite', system_out: 'started' }]);
  });
});
