import { expect } from 'chai';
import type { ImportJobEvent } from '../../../contracts/events';
import { type ChunkData, type ImportJobCommand, importJobDecider, importJobStream, type ImportOptions } from '../../../services/imports/importJob.decider';
import { ADOPTED_KEYS, CASE_V2_KEYS, columns, FOLDER_KEYS, RESULT_V2_KEYS, RUN_CASE_KEYS, SHOWN_KEYS, SUITE_OUTPUT_KEYS, SUITE_PROPERTY_KEYS } from '../../support/columns';
import { given } from '../../support/given';

const NOW = '2026-03-01T10:00:00.000Z';
const options: ImportOptions = {
  projectId: 7, endpoint: 'junit', format: 'junit', testRunName: 'Nightly', testRunId: null, stateId: null, parentFolderId: null,
  configId: null, milestoneId: null, tagIds: [], templateId: null,
};
const file = { index: 0, fileName: 'a.xml', storedAs: 'ab'.repeat(32), sizeBytes: 10, sha256: 'ab'.repeat(32) };
const requested: ImportJobEvent[] = [
  { type: 'ImportRequested', data: { jobId: 9, ...options, requestedAt: NOW } },
  { type: 'ImportFileStored', data: { jobId: 9, ...file } },
];
const parsed: ImportJobEvent = { type: 'ImportParsed', data: { jobId: 9, format: 'junit', cases: 3, suites: 1, warnings: [], warningCount: 0, parsedAt: NOW } };
const planned: ImportJobEvent = { type: 'ImportTestRunPlanned', data: { jobId: 9, testRunId: 42, created: true } };
const result = (resultId: number, statusId: number) => ({
  resultId, testRunCaseId: 500 + resultId, statusId, durationMs: 1, executedAt: null, message: null, failureType: null, stackTrace: null,
  systemOut: null, systemErr: null, file: null, line: null, properties: [], attempt: 1, retried: false,
});
const chunkData = (processedCases: number, results = [result(processedCases, 2)]): ChunkData => ({
  projectId: 7, testRunId: 42, caseSource: 'JUNIT', caseTemplateId: null, caseStateId: null,
  folders: columns(FOLDER_KEYS, []), cases: columns(CASE_V2_KEYS, []), runCases: columns(RUN_CASE_KEYS, []), results: columns(RESULT_V2_KEYS, results),
  processedCases, importedAt: NOW, scopes: [], adopted: columns(ADOPTED_KEYS, []), shown: columns(SHOWN_KEYS, []), suiteOutputs: columns(SUITE_OUTPUT_KEYS, []), suiteProperties: columns(SUITE_PROPERTY_KEYS, []),
});
const chunk0: ImportJobEvent = { type: 'TestResultsImported', data: { jobId: 9, chunk: 0, ...chunkData(2, [result(1, 2), result(2, 3)]) } };
const append = (chunk: number, data: ChunkData): ImportJobCommand => ({ type: 'AppendChunk', chunk, data });
const job = (...past: ImportJobEvent[]) => given(importJobDecider, past);

describe('ImportJob decider (the result import saga\'s stream)', () => {
  it('names its stream importJob-<id>', () => expect(importJobStream(9)).to.equal('importJob-9'));

  it('a request records the options and every stored file, once', () => {
    job().when({ type: 'Request', jobId: 9, options, files: [file], now: NOW }).then(requested);
    job(...requested).when({ type: 'Request', jobId: 9, options, files: [file], now: NOW }).thenFailsWith('import-job-exists');
    job().when({ type: 'Request', jobId: 9, options, files: [], now: NOW }).thenFailsWith('import-files-required');
  });

  it('steps come in order: parsed, run planned, chunks, completed', () => {
    job().when({ type: 'RecordParsed', format: 'junit', cases: 3, suites: 1, warnings: [], warningCount: 0, now: NOW }).thenFailsWith('import-job-not-found');
    job(...requested).when({ type: 'PlanTestRun', testRunId: 42, created: true }).thenFailsWith('import-job-out-of-order');
    job(...requested, parsed).when(append(0, chunkData(1))).thenFailsWith('import-job-out-of-order');
    job(...requested, parsed).when({ type: 'PlanTestRun', testRunId: 42, created: true }).then([planned]);
    job(...requested, parsed, planned).when(append(0, chunkData(2, [result(1, 2), result(2, 3)]))).then([chunk0]);
  });

  it('a resumed saga repeating a step changes nothing; a different one is refused', () => {
    job(...requested, parsed).when({ type: 'RecordParsed', format: 'junit', cases: 3, suites: 1, warnings: [], warningCount: 0, now: NOW }).thenNothing();
    job(...requested, parsed, planned).when({ type: 'PlanTestRun', testRunId: 42, created: true }).thenNothing();
    job(...requested, parsed, planned).when({ type: 'PlanTestRun', testRunId: 43, created: true }).thenFailsWith('import-run-planned');
    job(...requested, parsed, planned, chunk0).when(append(0, chunkData(2))).thenNothing();
  });

  it('a chunk must be the next one, move past the cases already in, stay within the total, and write to the planned run', () => {
    job(...requested, parsed, planned).when(append(1, chunkData(1))).thenFailsWith('import-chunk-out-of-order');
    job(...requested, parsed, planned, chunk0).when(append(1, chunkData(2))).thenFailsWith('import-chunk-out-of-order');
    job(...requested, parsed, planned, chunk0).when(append(1, chunkData(4))).thenFailsWith('import-chunk-out-of-order');
    job(...requested, parsed, planned).when(append(0, { ...chunkData(1), testRunId: 43 })).thenFailsWith('import-run-planned');
    const ragged = chunkData(1);
    ragged.results.statusId.push(2);
    job(...requested, parsed, planned).when(append(0, ragged)).thenFailsWith('import-chunk-malformed');
  });

  it('completes only with every case in, once; counts come from the chunks', () => {
    const counts = { results: 3, newCases: 0, newFolders: 0, newRunCases: 0, passed: 2, failed: 1, error: 0, skipped: 0 };
    job(...requested, parsed, planned, chunk0).when({ type: 'Complete', counts, now: NOW }).thenFailsWith('import-incomplete');
    const chunk1: ImportJobEvent = { type: 'TestResultsImported', data: { jobId: 9, chunk: 1, ...chunkData(3, [result(3, 2)]) } };
    const completed: ImportJobEvent = { type: 'ImportCompleted', data: { jobId: 9, testRunId: 42, counts, completedAt: NOW } };
    job(...requested, parsed, planned, chunk0, chunk1).when({ type: 'Complete', counts, now: NOW }).then([completed]);
    job(...requested, parsed, planned, chunk0, chunk1, completed).when({ type: 'Complete', counts, now: NOW }).thenNothing();
    job(...requested, parsed, planned, chunk0, chunk1, completed).when(append(2, chunkData(3))).thenFailsWith('import-job-finished');
    const state = [...requested, parsed, planned, chunk0, chunk1].reduce(importJobDecider.evolve, importJobDecider.initialState);
    expect(state.byStatus).to.deep.equal({ 2: 2, 3: 1 });
    expect(state.counts.results).to.equal(3);
  });

  it('counts each run case once, by the status it shows: retried attempts and earlier attempts apart, `shown` overriding (issue 36)', () => {
    const retried = (resultId: number, runCase: number, statusId: number) => ({ ...result(resultId, statusId), testRunCaseId: runCase, retried: true });
    const again = (resultId: number, runCase: number, statusId: number) => ({ ...result(resultId, statusId), testRunCaseId: runCase });
    // Run case 600: two retried failures (3), then a pass (2). Run case 601: a pass, then a failure (worse, shown by the next chunk's `shown`).
    const first: ImportJobEvent = { type: 'TestResultsImported', data: { jobId: 9, chunk: 0, ...chunkData(2, [retried(1, 600, 3), retried(2, 600, 3), again(3, 600, 2), again(4, 601, 3)]) } };
    const secondData = chunkData(3, [again(5, 601, 2)]);
    secondData.shown = columns(SHOWN_KEYS, [{ testRunCaseId: 601, statusId: 3 }]);
    const second: ImportJobEvent = { type: 'TestResultsImported', data: { jobId: 9, chunk: 1, ...secondData } };
    const state = [...requested, parsed, planned, first, second].reduce(importJobDecider.evolve, importJobDecider.initialState);
    expect(state.byStatus).to.deep.equal({ 2: 1, 3: 1 });
    expect(state.counts.results).to.equal(5);
    // A run case with retried attempts only shows nothing, and is not counted.
    const onlyRetried: ImportJobEvent = { type: 'TestResultsImported', data: { jobId: 9, chunk: 0, ...chunkData(1, [retried(1, 700, 3)]) } };
    expect([...requested, parsed, planned, onlyRetried].reduce(importJobDecider.evolve, importJobDecider.initialState).byStatus).to.deep.equal({});
  });

  it('fails once, from any unfinished step; a finished job stays as it is', () => {
    const fail: ImportJobCommand = { type: 'Fail', code: 'doctype-refused', error: 'no', details: {}, now: NOW };
    const failed: ImportJobEvent = { type: 'ImportFailed', data: { jobId: 9, code: 'doctype-refused', error: 'no', details: {}, failedAt: NOW } };
    job(...requested).when(fail).then([failed]);
    job(...requested, parsed, planned, chunk0).when(fail).then([failed]);
    job(...requested, failed).when(fail).thenNothing();
    job().when(fail).thenFailsWith('import-job-not-found');
  });
});
