import type {
  ImportCounts, ImportFileStored, ImportFormatName, ImportJobEvent, ImportRequested, ImportWarning, TestResultsImported,
} from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';
import { Map as PersistentMap } from 'immutable';

/**
 * A result import job: an event-sourced process on its own stream `importJob-<jobId>`.
 * requested (with its stored files) → parsed → test run planned → chunks of results → completed,
 * or failed at any step. Pure: the saga (importJob.saga.ts) does the I/O and hands the decider
 * what it found; the decider keeps the order of steps and makes repeats and races harmless.
 */

export const importJobStream = (jobId: number) => `importJob-${jobId}`;

export type ImportOptions = Omit<ImportRequested['data'], 'jobId' | 'requestedAt'>;
export type StoredFile = Omit<ImportFileStored['data'], 'jobId'>;
export type ChunkData = Omit<TestResultsImported['data'], 'jobId' | 'chunk'>;

export interface ImportJobState {
  status: 'none' | 'requested' | 'parsed' | 'running' | 'completed' | 'failed';
  jobId: number;
  options: ImportOptions | null;
  files: StoredFile[];
  format: ImportFormatName | null;
  totalCases: number;
  warnings: ImportWarning[];
  warningCount: number;
  testRunId: number | null;
  /** Whether the job creates its run (else it appends to the one given). */
  createsRun: boolean;
  chunks: number;
  /** The files' cases consumed by the chunks so far, in file order: a resumed job starts after them. */
  processedCases: number;
  /** The files' suite outputs in the chunks so far, in file order: a resumed job skips as many. */
  processedOutputs: number;
  /** The suite properties the chunks kept so far (each distinct pair once, in file order): a resumed job skips as many. */
  processedSuiteProperties: number;
  counts: Omit<ImportCounts, 'passed' | 'failed' | 'error' | 'skipped'>;
  /**
   * Run cases the job gave a result per the status they show after it (their final result: the
   * worst not retried), for the outcome counts of the completion: each test once, attempts apart.
   */
  byStatus: Record<string, number>;
  /**
   * The status each run case the job gave a result shows (none while it has retried attempts only):
   * what byStatus counts. A persistent map: each chunk's state shares the earlier one's entries, so
   * a chunk costs its own rows, not a copy of every run case so far (a copied Map cost the import
   * of 100,000 cases 5 s of the worker's thread).
   */
  finalStatus: PersistentMap<number, number>;
}

export const initialImportJobState: ImportJobState = {
  status: 'none', jobId: 0, options: null, files: [], format: null, totalCases: 0, warnings: [], warningCount: 0,
  testRunId: null, createsRun: false, chunks: 0, processedCases: 0, processedOutputs: 0, processedSuiteProperties: 0,
  counts: { results: 0, newCases: 0, newFolders: 0, newRunCases: 0 }, byStatus: {}, finalStatus: PersistentMap(),
};

export type ImportJobCommand =
  | { type: 'Request'; jobId: number; options: ImportOptions; files: StoredFile[]; now: string }
  | { type: 'RecordParsed'; format: ImportFormatName; cases: number; suites: number; warnings: ImportWarning[]; warningCount: number; now: string }
  | { type: 'PlanTestRun'; testRunId: number; created: boolean }
  | { type: 'AppendChunk'; chunk: number; data: ChunkData }
  | { type: 'Complete'; counts: ImportCounts; now: string }
  | { type: 'Fail'; code: string; error: string; details: Record<string, unknown>; now: string };

const finished = (s: ImportJobState) => s.status === 'completed' || s.status === 'failed';

export function decide(cmd: ImportJobCommand, s: ImportJobState): ImportJobEvent[] {
  switch (cmd.type) {
    case 'Request':
      if (s.status !== 'none') throw new DomainError('import-job-exists', `Import job ${cmd.jobId} exists`);
      if (cmd.files.length === 0) throw new DomainError('import-files-required', 'An import needs at least one file');
      return [
        { type: 'ImportRequested', data: { jobId: cmd.jobId, ...cmd.options, requestedAt: cmd.now } },
        ...cmd.files.map((file): ImportJobEvent => ({ type: 'ImportFileStored', data: { jobId: cmd.jobId, ...file } })),
      ];
    case 'RecordParsed':
      if (s.status === 'parsed' || s.status === 'running' || finished(s)) return [];
      requireStatus(s, 'requested');
      return [{ type: 'ImportParsed', data: { jobId: s.jobId, format: cmd.format, cases: cmd.cases, suites: cmd.suites, warnings: cmd.warnings, warningCount: cmd.warningCount, parsedAt: cmd.now } }];
    case 'PlanTestRun':
      if (s.testRunId !== null) {
        if (s.testRunId !== cmd.testRunId) throw new DomainError('import-run-planned', `Import job ${s.jobId} writes to test run ${s.testRunId}`);
        return [];
      }
      requireStatus(s, 'parsed');
      return [{ type: 'ImportTestRunPlanned', data: { jobId: s.jobId, testRunId: cmd.testRunId, created: cmd.created } }];
    case 'AppendChunk':
      requireStatus(s, 'running');
      if (cmd.chunk < s.chunks) return []; // appended before (a resumed job repeating itself)
      if (cmd.chunk > s.chunks) throw new DomainError('import-chunk-out-of-order', `Chunk ${cmd.chunk} of job ${s.jobId} comes after chunk ${s.chunks - 1}`);
      if (cmd.data.testRunId !== s.testRunId) throw new DomainError('import-run-planned', `Import job ${s.jobId} writes to test run ${s.testRunId}`);
      for (const table of ['folders', 'cases', 'runCases', 'results', 'adopted', 'shown', 'suiteOutputs', 'suiteProperties'] as const) {
        const lengths = new Set(Object.values(cmd.data[table]).map((column) => (column as unknown[]).length));
        if (lengths.size > 1) throw new DomainError('import-chunk-malformed', `The ${table} columns of chunk ${cmd.chunk} differ in length`, { table });
      }
      if (cmd.data.cases.scope.some((i) => i !== null && (i >= cmd.data.scopes.length)))
        throw new DomainError('import-chunk-malformed', `A case of chunk ${cmd.chunk} names a scope the chunk does not have`, { table: 'cases' });
      // A chunk moves past cases, or (holding no result) carries folders, suite output or suite properties that did not fit before.
      if (cmd.data.results.resultId.length > 0
        ? cmd.data.processedCases <= s.processedCases || cmd.data.processedCases > s.totalCases
        : cmd.data.processedCases !== s.processedCases
          || cmd.data.folders.folderId.length + cmd.data.suiteOutputs.folderId.length + cmd.data.suiteProperties.name.length === 0)
        throw new DomainError('import-chunk-out-of-order', `Chunk ${cmd.chunk} of job ${s.jobId} does not move past case ${s.processedCases}`);
      return [{ type: 'TestResultsImported', data: { jobId: s.jobId, chunk: cmd.chunk, ...cmd.data } }];
    case 'Complete':
      if (s.status === 'completed') return [];
      requireStatus(s, 'running');
      if (s.processedCases !== s.totalCases)
        throw new DomainError('import-incomplete', `Import job ${s.jobId} has ${s.processedCases} of ${s.totalCases} cases`);
      return [{ type: 'ImportCompleted', data: { jobId: s.jobId, testRunId: s.testRunId!, counts: cmd.counts, completedAt: cmd.now } }];
    case 'Fail':
      if (finished(s)) return [];
      if (s.status === 'none') throw new DomainError('import-job-not-found', 'No such import job');
      return [{ type: 'ImportFailed', data: { jobId: s.jobId, code: cmd.code, error: cmd.error, details: cmd.details, failedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

function requireStatus(s: ImportJobState, status: ImportJobState['status']): void {
  if (s.status === 'none') throw new DomainError('import-job-not-found', 'No such import job');
  if (finished(s)) throw new DomainError('import-job-finished', `Import job ${s.jobId} is ${s.status}`);
  if (s.status !== status) throw new DomainError('import-job-out-of-order', `Import job ${s.jobId} is ${s.status}, not ${status}`);
}

export function evolve(s: ImportJobState, e: ImportJobEvent): ImportJobState {
  switch (e.type) {
    case 'ImportRequested': {
      const { jobId, requestedAt: _r, ...options } = e.data;
      return { ...s, status: 'requested', jobId, options };
    }
    case 'ImportFileStored': {
      const { jobId: _j, ...file } = e.data;
      return { ...s, files: [...s.files, file] };
    }
    case 'ImportParsed':
      return { ...s, status: 'parsed', format: e.data.format, totalCases: e.data.cases, warnings: e.data.warnings, warningCount: e.data.warningCount };
    case 'ImportTestRunPlanned':
      return { ...s, status: 'running', testRunId: e.data.testRunId, createsRun: e.data.created };
    case 'TestResultsImported': {
      // Tests by their final result, as the read model shows them (projections/readModel.ts): a run case's last
      // result not retried, unless the chunk's `shown` says otherwise; an attempt the file says was retried counts in `results` only.
      const byStatus = { ...s.byStatus };
      const finalStatus = s.finalStatus.withMutations((shownNow) => {
        const show = (runCaseId: number, statusId: number) => {
          const before = shownNow.get(runCaseId);
          if (before === statusId) return;
          if (before !== undefined) byStatus[before] -= 1;
          byStatus[statusId] = (byStatus[statusId] ?? 0) + 1;
          shownNow.set(runCaseId, statusId);
        };
        const r = e.data.results;
        r.statusId.forEach((statusId, i) => {
          if (!r.retried?.[i]) show(r.testRunCaseId[i], statusId);
        });
        e.data.shown?.testRunCaseId.forEach((runCaseId, i) => show(runCaseId, e.data.shown.statusId[i]));
      });
      return {
        ...s,
        chunks: e.data.chunk + 1,
        processedCases: e.data.processedCases,
        processedOutputs: s.processedOutputs + (e.data.suiteOutputs?.folderId.length ?? 0),
        processedSuiteProperties: s.processedSuiteProperties + (e.data.suiteProperties?.name.length ?? 0),
        byStatus,
        finalStatus,
        counts: {
          results: s.counts.results + e.data.results.resultId.length,
          newCases: s.counts.newCases + e.data.cases.caseId.length,
          newFolders: s.counts.newFolders + e.data.folders.folderId.length,
          newRunCases: s.counts.newRunCases + e.data.runCases.testRunCaseId.length,
        },
      };
    }
    case 'ImportCompleted':
      return { ...s, status: 'completed' };
    case 'ImportFailed':
      return { ...s, status: 'failed' };
    default:
      return assertNever(e);
  }
}

export const importJobDecider = { initialState: initialImportJobState, decide, evolve };
