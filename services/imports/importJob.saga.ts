import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import type {
  AdoptedCase, CaseSource, ImportCounts, ImportedCase, ImportedColumns, ImportedFolder, ImportedResult, ImportedSuiteOutput, ImportedSuiteProperty, ImportJobEvent,
  ImportWarning, ShownStatus,
} from '../../contracts/events';
import { createEntity, deleteEntity, updateEntity } from '../entities/entity.handlers';
import { caseKey, type IdentityParts, identityScope } from '../repository/caseIdentity';
import type { FileStore } from '../files/fileStore';
import type { StoredFiles } from '../files/storedFiles';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { ConcurrencyError, ContractViolation, DomainError, EventParked, ReadModelWaitFailed } from '../shared/errors';
import { DEFAULT_RETRY_BUDGET_MS, describeError, isTransient, type RetryBudget, retryBudget, RetryBudgetSpent } from '../shared/faults';
import { parserFor } from './formats';
import { boundedWarning, type ImportFormat, type Outcome, type ParsedCase, ResultFileError, type SuiteOutput, type SuiteProperties } from './formats/parsedResult';
import { type ChunkData, type ImportJobCommand, type ImportJobState, importJobDecider, importJobStream } from './importJob.decider';
import { INT32_MAX, INT32_MIN, LIMITS, SUITE_PROPERTY_LIMITS, codePoints, cutText, isStorableTime, longerThan } from '../../contracts/limits';

/**
 * The saga that runs an import job: parse every file once (counting, warning, failing on bad
 * content before anything is written), plan the test run, then parse again and append the results
 * in chunks, each chunk one `TestResultsImported` on the job's stream at the expected revision, so
 * the chunk and the job's progress are one write. It runs in the worker role
 * (services/process/worker: `resultImportKind`), where a job is taken with a lease: killed at any
 * point, or its lease lost, the job is taken up again (by any worker) where its stream says, no
 * chunk twice, none missing. Interrupted by the database or the event store, it goes on by itself
 * with backoff, within the retry budget, and then fails.
 */

export interface ImportSettings {
  /** Cases per chunk event. */
  chunkSize: number;
  /** system-out, system-err and stack traces are cut at this many characters. */
  maxOutputChars: number;
  /** How long the final wait for the read model may take. */
  finalizeTimeoutMs: number;
  /** How long a job interrupted by the database or event store is taken up again by its worker (from its first interruption in that process) before it fails (RETRY_BUDGET_MS). */
  retryBudgetMs?: number;
}

export const DEFAULT_IMPORT_SETTINGS: ImportSettings = {
  chunkSize: 500, maxOutputChars: 64 * 1024, finalizeTimeoutMs: 10 * 60_000, retryBudgetMs: DEFAULT_RETRY_BUDGET_MS,
};

export interface ImportDeps extends CommandDeps {
  files: FileStore;
  /** The jobs' files as stored files: those of a failed job are deleted. */
  storedFiles: StoredFiles;
  logger: Logger;
  imports: ImportSettings;
}

/** The lease namespace of result-import jobs (the worker's job kind; the routes ask who holds a job). */
export const RESULT_IMPORT_KIND = 'resultImport';

/** How many unfinished jobs one look at the read model lists (oldest first: the rest come as these end). */
const CANDIDATES = 100;
/** How many ended jobs a saga remembers (not to offer them again while the read model lags). */
const ENDED_KEPT = 10_000;
/** An interrupted job is taken up again after 1 s, doubling up to a minute (within the retry budget). */
const RESUME_FIRST_MS = 1000;
const RESUME_MAX_MS = 60_000;

/** How many warnings a job keeps on its stream (all are counted). */
export const KEPT_WARNINGS = 100;

const OUTCOMES: readonly Outcome[] = ['passed', 'failed', 'error', 'skipped'];
const sourceOf = (format: ImportFormat) => format.toUpperCase() as CaseSource;

export class ImportSaga {
  /**
   * Jobs interrupted (database, event store) in this process, and their retry budget from the first
   * interruption. Per process: a job taken over by another worker starts a new budget there, so a
   * job bounced between workers by a long outage may retry longer than the budget, but never for ever
   * (each worker fails it once its own budget is spent).
   */
  private readonly interruptions = new Map<number, RetryBudget>();
  /**
   * Jobs this process saw end (completed or failed: for good) that the read model may still list
   * as unfinished while it catches up (or while its projector is down): not offered again, or a
   * worker would take them up, find them ended and take them again, round and round. Ended is for
   * good, so the set only forgets the oldest, past ENDED_KEPT.
   */
  private readonly ended = new Set<number>();

  constructor(private readonly deps: ImportDeps) {}

  /** Jobs with work for a worker: queued or running in the `imports` read model, oldest first (the job's stream decides). */
  async candidates(): Promise<number[]> {
    const rows: { job_id: number }[] = await this.deps.knex('import_jobs').whereIn('state', ['queued', 'running'])
      .orderBy('job_id').limit(CANDIDATES).select('job_id');
    const ids = rows.map((r) => r.job_id);
    // A job no longer listed ended (here or elsewhere): its interruptions are forgotten.
    const listed = new Set(ids);
    if (ids.length < CANDIDATES) for (const jobId of this.interruptions.keys()) if (!listed.has(jobId)) this.interruptions.delete(jobId);
    return ids.filter((jobId) => !this.ended.has(jobId));
  }

  /**
   * Runs (or resumes) a job to its end, or until `signal` aborts (the lease lost, the worker
   * stopping): then it stops at the next chunk, and whoever takes the job next resumes it from its
   * stream. A job another worker ended since candidates() returns at once. Interrupted by the
   * database or the event store, or by read models that lag (interrupts()), the job is run again from its stream here, after 1 s doubling up
   * to a minute, until the retry budget (counted from its first interruption in this process) is
   * spent: then it fails with `import-interrupted-too-long`.
   */
  async run(jobId: number, signal: AbortSignal): Promise<void> {
    for (let attempt = 0; !signal.aborted; attempt++) {
      try {
        if (await this.execute(jobId, signal, attempt === 0)) this.endedHere(jobId);
        this.interruptions.delete(jobId);
        return;
      } catch (err) {
        if (err instanceof DomainError && err.code === 'import-job-taken') {
          this.deps.logger.warn({ jobId }, 'import job appended to by another worker; leaving it to them');
          return;
        }
        if (!interrupts(err)) throw err;
        let budget = this.interruptions.get(jobId);
        if (!budget) {
          budget = retryBudget({ firstMs: RESUME_FIRST_MS, maxMs: RESUME_MAX_MS, budgetMs: this.deps.imports.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS });
          this.interruptions.set(jobId, budget);
        }
        const delay = budget.next();
        if (delay === null) {
          const spent = new RetryBudgetSpent(err, budget);
          this.deps.logger.error({ err: spent, jobId }, 'import job interrupted for longer than its retry budget; failing it');
          // If even that cannot be written, the worker takes the job up again later, and it is failed then.
          await this.failForGood(jobId, spent);
          this.interruptions.delete(jobId);
          this.endedHere(jobId);
          return;
        }
        this.deps.logger.warn({ err, jobId, attempt: budget.failures, resumeInMs: delay }, 'import job interrupted; resuming it');
        await sleep(delay, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  private endedHere(jobId: number): void {
    this.ended.add(jobId);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.values().next().value!);
  }

  /** A job whose interruptions outlasted the budget: failed once, with its empty run removed. */
  private async failForGood(jobId: number, spent: RetryBudgetSpent): Promise<void> {
    const job = await JobStream.load(this.deps, jobId);
    const tooLong = new DomainError('import-interrupted-too-long',
      `The import was interrupted by the database or event store for longer than its retry budget: ${spent.message}`, { lastError: describeError(spent.lastError) });
    await this.fail(job, tooLong.code, tooLong.message, tooLong.details);
  }

  /** Runs the job from where its stream says; answers whether it ended (completed or failed), not stopped. */
  private async execute(jobId: number, signal: AbortSignal, first: boolean): Promise<boolean> {
    const job = await JobStream.load(this.deps, jobId);
    if (job.state.status === 'none') throw new DomainError('import-job-not-found', `No import job ${jobId}`);
    if (job.state.status === 'completed' || job.state.status === 'failed') return true; // ended (by another worker, or before a restart)
    if (first && job.state.status !== 'requested') {
      this.deps.logger.info({ jobId, status: job.state.status, processedCases: job.state.processedCases }, 'resuming an unfinished import job');
    }
    try {
      await withProjectLock(this.deps.knex, job.state.options!.projectId, signal, async () => {
        if (job.state.status === 'requested') await this.parse(job, signal);
        if (job.state.status === 'parsed') await this.planRun(job);
        if (job.state.status === 'running') await this.appendChunks(job, signal);
      });
      if (job.state.status !== 'running') return false;
      const outcome = await job.apply({ type: 'Complete', counts: await this.countsOf(job.state), now: this.deps.clock().toISOString() });
      if (outcome) await readYourWrites({ ...this.deps, writeTimeoutMs: this.deps.imports.finalizeTimeoutMs }, outcome).catch(parkedIsTheAnswers);
      return true;
    } catch (err) {
      if (err instanceof Stopped) return false;
      if (err instanceof DomainError && err.code === 'import-job-taken') throw err; // another worker runs it
      // Infrastructure (database, event store) or read models that lag: the job stays unfinished; run() takes it up again.
      if (interrupts(err)) throw err;
      // Anything else fails the same way every time: the job fails once, saying what.
      const { code, message, details } = failureOf(err);
      if (!(err instanceof ResultFileError || err instanceof DomainError)) {
        this.deps.logger.error({ err, jobId, correlationId: job.metadata.correlationId }, 'import job failed');
      }
      await this.fail(job, code, message, details);
      return true;
    }
  }

  /** Fails the job (once), deletes its files and removes the run it made if no result reached it. */
  private async fail(job: JobStream, code: string, message: string, details: Record<string, unknown>): Promise<void> {
    const jobId = job.state.jobId;
    const failed = await job.apply({ type: 'Fail', code, error: message, details, now: this.deps.clock().toISOString() });
    if (failed) await readYourWrites(this.deps, failed);
    // A refused import keeps nothing of what was sent; if this fails, the file sweep deletes them.
    await this.deps.storedFiles.removeImportFiles(jobId, 'import-failed', job.metadata)
      .catch((err) => this.deps.logger.warn({ err, jobId }, 'cannot delete the files of a failed import job yet; the file sweep will'));
    const { createsRun, testRunId } = job.state;
    if (failed && createsRun && testRunId !== null && job.state.counts.results === 0) {
      const [created] = await this.deps.store.readStream(`testRun-${testRunId}`, { maxCount: 1 });
      if (created) await deleteEntity(this.deps, 'testRun', testRunId, job.metadata).catch((err) => {
        if (!(err instanceof DomainError)) throw err; // deleted already
      });
    }
  }

  /** First pass: every file read through, counted and checked; warnings kept. Writes nothing but ImportParsed. */
  private async parse(job: JobStream, signal: AbortSignal): Promise<void> {
    const { options } = job.state;
    const format = options!.format === 'auto' ? null : options!.format;
    if (!format) throw new DomainError('import-format-unknown', 'The job has no detected format');
    const warnings: ImportWarning[] = [];
    let warningCount = 0;
    let cases = 0;
    const suites = new Set<string>();
    const onWarning = (warning: ImportWarning) => {
      warningCount++;
      if (warnings.length < KEPT_WARNINGS) warnings.push(boundedWarning(warning)); // whatever a parser quoted, within ImportParsed's bounds
    };
    const at = { file: '' };
    let previousPath: readonly string[] = [];
    const kept = new SuitePropertiesKept();
    const onSuiteProperties = (given: SuiteProperties) => kept.add(given, at.file, onWarning);
    for await (const parsed of this.cases(job, format, at, onWarning, undefined, onSuiteProperties)) {
      if (signal.aborted) throw new Stopped();
      cases++;
      // Cases come suite by suite: a path is joined once, not once per case.
      if (!samePath(parsed.suitePath, previousPath)) suites.add(parsed.suitePath.join('\u0000'));
      previousPath = parsed.suitePath;
      for (const warning of limitWarnings(parsed, at.file)) onWarning(warning);
    }
    if (cases === 0) throw new ResultFileError('no-tests', 'The files hold no test cases', {});
    kept.warnDropped(onWarning);
    await this.statusesFor(); // a missing status fails the job before anything is written
    await job.apply({ type: 'RecordParsed', format, cases, suites: suites.size, warnings, warningCount, now: this.deps.clock().toISOString() });
  }

  /** The run the job writes to: the one given (still there, same project), or a new one with a planned id. */
  private async planRun(job: JobStream): Promise<void> {
    const options = job.state.options!;
    if (options.testRunId !== null) {
      await job.apply({ type: 'PlanTestRun', testRunId: options.testRunId, created: false });
      return;
    }
    const [testRunId] = await this.deps.ids.nextMany('testRun', 1, job.metadata);
    await job.apply({ type: 'PlanTestRun', testRunId, created: true });
  }

  private async ensureRun(job: JobStream): Promise<void> {
    const { options, testRunId, createsRun, format } = job.state;
    if (!createsRun) {
      const run = await this.deps.knex('test_runs').where({ id: testRunId, project_id: options!.projectId, is_deleted: false }).first('id');
      if (!run) throw new DomainError('test-run-not-found', `Test run ${testRunId} does not exist in project ${options!.projectId}`, { path: 'testRunId', id: testRunId });
      // State, configuration, milestone and tags given with an existing run are set on it (tags added); the same again changes nothing.
      const connect: Record<string, number> = {};
      if (options!.stateId !== null) connect.state = options!.stateId;
      if (options!.configId !== null) connect.configuration = options!.configId;
      if (options!.milestoneId !== null) connect.milestone = options!.milestoneId;
      if (Object.keys(connect).length > 0 || options!.tagIds.length > 0) {
        await updateEntity(this.deps, 'testRun', testRunId!, { data: {}, connect, links: { tags: { connect: options!.tagIds } } }, job.metadata);
      }
      return;
    }
    const [existing] = await this.deps.store.readStream(`testRun-${testRunId}`, { maxCount: 1 });
    if (existing) return; // created before the process stopped
    const connect: Record<string, number | null> = { project: options!.projectId };
    if (options!.stateId !== null) connect.state = options!.stateId;
    else connect.state = await this.defaultRunState();
    if (options!.configId !== null) connect.configuration = options!.configId;
    if (options!.milestoneId !== null) connect.milestone = options!.milestoneId;
    await createEntity(this.deps, 'testRun', {
      data: {
        name: options!.testRunName!, testRunType: sourceOf(format!),
        // Where the run came from (v1 requests have no CI context).
        branch: options!.branch ?? null, commit: options!.commit ?? null, buildUrl: options!.buildUrl ?? null,
        ciJobId: options!.ciJobId ?? null, ciAttempt: options!.attempt ?? null,
      },
      connect,
      links: { tags: { set: options!.tagIds } },
    }, job.metadata, testRunId!);
  }

  /** Second pass: the cases (and suite outputs) after those already appended, in chunks. */
  private async appendChunks(job: JobStream, signal: AbortSignal): Promise<void> {
    await this.ensureRun(job);
    // What earlier chunks (of this process or one that died) wrote must be in the read model before it is looked up.
    await job.caughtUp();
    const builder = new ChunkBuilder(this.deps, job, await this.statusesFor(), await this.caseDefaults(job));
    const total = job.state.totalCases;
    let index = 0;
    /** The cases of the next chunk, and the file of each (the same string for a file's cases). */
    let pending: ParsedCase[] = [];
    let pendingFiles: string[] = [];
    let outputs: SuiteOutput[] = [];
    let outputsSeen = 0;
    /** The suite properties kept for the run (the same, in the same order, as the first pass and any earlier run of this pass). */
    const keptProperties = new SuitePropertiesKept();
    let properties: ImportedColumns<ImportedSuiteProperty> = { name: [], value: [] };
    let propertiesSeen = 0;
    const onSuiteProperties = (given: SuiteProperties) => {
      for (const { name, value } of keptProperties.add(given, at.file)) {
        propertiesSeen++;
        if (propertiesSeen <= job.state.processedSuiteProperties) continue;
        properties.name.push(name);
        properties.value.push(value);
      }
    };
    /** The files' cases in the chunks built so far. */
    let processed = job.state.processedCases;
    const onSuiteOutput = (output: SuiteOutput) => {
      outputsSeen++;
      if (outputsSeen > job.state.processedOutputs) outputs.push(output);
    };
    // The next chunk is built while the previous one is appended; appends stay one at a time, in order.
    let appending: Promise<void> | null = null;
    const flush = async () => {
      if (signal.aborted) {
        // Stopped at a chunk's edge, the one being appended in or out: the next worker resumes from the stream.
        await appending?.catch(() => undefined);
        throw new Stopped();
      }
      const chunks = await builder.build(pending, outputs, processed, index, properties);
      // Only what a refused chunk's error names is kept while it is appended: the parsed cases go (an import makes garbage enough).
      const named = { files: pendingFiles, names: pending.map((parsed) => parsed.name) };
      processed = pending.length > 0 ? index : processed;
      pending = [];
      pendingFiles = [];
      outputs = [];
      properties = { name: [], value: [] };
      if (appending) await appending;
      appending = (async () => {
        for (const data of chunks) {
          const chunk = job.state.chunks;
          await job.apply({ type: 'AppendChunk', chunk, data }).catch((err) => {
            throw err instanceof ContractViolation ? new ChunkRefused(err, chunk, data.results.resultId.length > 0 ? named : { files: [], names: [] }) : err;
          });
        }
      })();
      appending.catch(() => undefined); // awaited at the next flush or at the end
    };
    const at = { file: '' };
    for await (const parsed of this.cases(job, job.state.format!, at, () => undefined, onSuiteOutput, onSuiteProperties)) {
      index++;
      if (index <= job.state.processedCases) continue;
      pending.push(parsed);
      pendingFiles.push(at.file);
      if (pending.length >= this.deps.imports.chunkSize || outputs.length >= this.deps.imports.chunkSize) await flush();
    }
    if (pending.length > 0 || outputs.length > 0 || properties.name.length > 0) await flush();
    if (appending) await appending;
    if (job.state.processedCases !== total) {
      throw new DomainError('import-files-changed', `The stored files now hold ${index} cases, not ${total}`, { expected: total, found: index });
    }
  }

  /** Every case of every file of the job, in order; `at.file` names the file of the case just yielded. */
  private async *cases(
    job: JobStream, format: ImportFormat, at: { file: string }, onWarning: (w: ImportWarning) => void, onSuiteOutput?: (output: SuiteOutput) => void,
    onSuiteProperties?: (properties: SuiteProperties) => void,
  ): AsyncGenerator<ParsedCase> {
    const parse = parserFor(format);
    for (const file of job.state.files) {
      const opened = await this.deps.files.open(file.storedAs);
      if (!opened) throw new DomainError('import-file-missing', `The stored file ${file.fileName} is gone`, { file: file.fileName });
      at.file = file.fileName; // the file of the cases yielded next (no object per case: an import makes garbage enough)
      try {
        yield* parse(opened.content, { fileName: file.fileName, maxOutputChars: this.deps.imports.maxOutputChars, onWarning, onSuiteOutput, onSuiteProperties });
      } finally {
        opened.content.destroy();
      }
    }
  }

  /** Status per outcome, by exact systemName or alias (never a substring), enabled, in the automation scope. */
  private async statusesFor(): Promise<Record<Outcome, number>> {
    const rows: { id: number; system_name: string; aliases: string[] }[] = await this.deps.knex('statuses')
      .where({ is_deleted: false, is_enabled: true }).whereRaw(`'AUTOMATION' = ANY(scopes)`).orderBy('sort_order').orderBy('id')
      .select('id', 'system_name', 'aliases');
    const found = {} as Record<Outcome, number>;
    for (const outcome of OUTCOMES) {
      const row = rows.find((r) => r.system_name === outcome) ?? rows.find((r) => (r.aliases ?? []).includes(outcome));
      if (!row) throw new DomainError('import-status-missing', `No enabled automation status has the system name or alias "${outcome}"`, { outcome });
      found[outcome] = row.id;
    }
    return found;
  }

  /** New cases' template (the one given, else the default) and state (the first enabled DONE workflow of scope CASES). */
  private async caseDefaults(job: JobStream): Promise<{ templateId: number | null; stateId: number | null }> {
    const templateId = job.state.options!.templateId
      ?? (await this.deps.knex('templates').where({ is_deleted: false, is_enabled: true }).orderBy([{ column: 'is_default', order: 'desc' }, 'id']).first('id'))?.id ?? null;
    const state = await this.deps.knex('workflows').where({ scope: 'CASES', workflow_type: 'DONE', is_enabled: true, is_deleted: false })
      .orderBy('sort_order').orderBy('id').first('id');
    return { templateId, stateId: state?.id ?? null };
  }

  /** A new run's state when none is given: the default RUNS workflow, else the first enabled NOT_STARTED... in order. */
  private async defaultRunState(): Promise<number | null> {
    const row = await this.deps.knex('workflows').where({ scope: 'RUNS', is_enabled: true, is_deleted: false })
      .orderBy([{ column: 'is_default', order: 'desc' }, 'sort_order', 'id']).first('id');
    return row?.id ?? null;
  }

  private async countsOf(s: ImportJobState): Promise<ImportCounts> {
    const statuses = await this.statusesFor();
    const counts: ImportCounts = { ...s.counts, passed: 0, failed: 0, error: 0, skipped: 0 };
    for (const outcome of OUTCOMES) counts[outcome] = s.byStatus[statuses[outcome]] ?? 0;
    return counts;
  }
}

class Stopped extends Error {}

function samePath(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Raised while appending a chunk the event contract refused: which files and cases it held. */
class ChunkRefused extends Error {
  constructor(readonly violation: ContractViolation, readonly chunk: number, readonly items: { files: string[]; names: string[] }) {
    super(violation.message);
    this.name = 'ChunkRefused';
  }
}

/**
 * What interrupts a job rather than failing it: the database or the event store away, or a write
 * of the job recorded that the read models did not apply within WRITE_TIMEOUT_MS (a busy or
 * restarting projector, a broker away): run again from the stream, what was recorded is not
 * repeated (ensureRun finds its run; chunks go on from the stream).
 */
function interrupts(err: unknown): boolean {
  return isTransient(err) || (err instanceof ReadModelWaitFailed && err.code === 'read-model-lagging');
}

/** The code, message and details a job fails with, for an error that is not transient. */
/**
 * A read model that parked the job's events (it cannot apply them) holds the rest of the job's
 * stream parked behind them: the job goes on and ends as it would, its results recorded, and its
 * answer says which read models do not show them (imports.routes.ts, jobAnswer). Not a failure of the job.
 */
function parkedIsTheAnswers(err: unknown): void {
  if (!(err instanceof EventParked)) throw err;
}

function failureOf(err: unknown): { code: string; message: string; details: Record<string, unknown> } {
  if (err instanceof ResultFileError || err instanceof DomainError) return err;
  if (err instanceof ChunkRefused) {
    const errors = Array.isArray(err.violation.errors) ? (err.violation.errors as { instancePath?: string; message?: string }[]) : [];
    const files = [...new Set(err.items.files)];
    // A result column's index is its case's place in the chunk.
    const cases = errors.flatMap((e) => {
      const m = /^\/results\/[A-Za-z]+\/(\d+)/.exec(e.instancePath ?? '');
      const at = m ? Number(m[1]) : -1;
      return at >= 0 && at < err.items.names.length
        ? [{ file: err.items.files[at], case: err.items.names[at].slice(0, 200), problem: `${e.instancePath} ${e.message ?? ''}`.trim() }] : [];
    }).slice(0, 10);
    return new DomainError('import-content-refused',
      `Chunk ${err.chunk} of the import holds content the event contract refuses (${files.join(', ')}): ${errors.slice(0, 3).map((e) => `${e.instancePath} ${e.message}`).join('; ')}`,
      { chunk: err.chunk, files, cases, violations: errors.slice(0, 10).map((e) => ({ path: e.instancePath, message: e.message })) });
  }
  if (err instanceof ContractViolation) {
    return new DomainError('import-content-refused', `The import made a ${err.eventType} event its contract refuses: ${err.message}`, { eventType: err.eventType });
  }
  return new DomainError('import-internal-error', `The import failed on an unexpected error: ${describeError(err)} (logged with the correlation id)`);
}

/** The job's stream, folded, with its revision: each command is decided and appended at that revision. */
class JobStream {
  private constructor(
    private readonly deps: ImportDeps,
    public state: ImportJobState,
    private revision: bigint | null,
    /** The requester's metadata, as the saga's own events carry it (via 'import'). */
    readonly metadata: EventMetadata,
    private lastPosition: string | null,
  ) {}

  static async load(deps: ImportDeps, jobId: number): Promise<JobStream> {
    const events = await deps.store.readStream(importJobStream(jobId));
    let state = importJobDecider.initialState;
    for (const e of events) state = importJobDecider.evolve(state, { type: e.type, data: e.data } as ImportJobEvent);
    const first: EventEnvelope | undefined = events[0];
    const last: EventEnvelope | undefined = events[events.length - 1];
    const metadata: EventMetadata = first
      ? { ...first.metadata, actor: { ...first.metadata.actor, via: 'import' }, causationId: first.id }
      : { actor: { userId: null, via: 'system' }, correlationId: `import-${jobId}`, causationId: null };
    return new JobStream(deps, state, last ? BigInt(last.revision) : null, metadata, last?.position ?? null);
  }

  /** Decides and appends; a concurrent writer (another worker) makes this one stop. Answers the write for read-your-writes. */
  async apply(cmd: ImportJobCommand): Promise<{ position: string; streamId: string } | null> {
    const events = importJobDecider.decide(cmd, this.state);
    if (events.length === 0) return null;
    const streamId = importJobStream(this.state.jobId);
    try {
      const result = await this.deps.store.append(streamId, events, { expectedRevision: this.revision ?? 'no-stream', metadata: this.metadata });
      for (const e of events) this.state = importJobDecider.evolve(this.state, e);
      this.revision = result.nextRevision;
      this.lastPosition = result.position;
      return { position: result.position, streamId };
    } catch (err) {
      if (err instanceof ConcurrencyError) throw new DomainError('import-job-taken', `Import job ${this.state.jobId} is being run by another worker`, { jobId: this.state.jobId });
      throw err;
    }
  }

  async caughtUp(): Promise<void> {
    if (this.lastPosition === null) return;
    await readYourWrites({ ...this.deps, writeTimeoutMs: this.deps.imports.finalizeTimeoutMs }, { position: this.lastPosition, streamId: importJobStream(this.state.jobId) })
      .catch(parkedIsTheAnswers);
  }
}

/**
 * One job at a time per project, across processes (a PostgreSQL advisory lock on a connection of
 * its own): two imports must not both create the same new case. A job waiting for the lock tries
 * again every LOCK_RETRY_MS, so that a worker stopping (or losing the job's lease) stops waiting.
 */
async function withProjectLock<T>(knex: Knex, projectId: number, signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  const LOCK_SPACE = 0x7e57; // "test": the advisory lock namespace of result imports
  const connection = await knex.client.acquireConnection();
  try {
    while (!(await connection.query('SELECT pg_try_advisory_lock($1, $2) AS locked', [LOCK_SPACE, projectId])).rows[0].locked) {
      await sleep(LOCK_RETRY_MS, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) throw new Stopped();
    }
    try {
      return await work();
    } finally {
      await connection.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_SPACE, projectId]);
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/** How often a job waiting for its project's lock tries again. */
const LOCK_RETRY_MS = 200;

/** One event holds at most this many rows of a kind (the contract's `maxItems`): a deeper suite tree is split across folder-only chunks. */
export const MAX_ROWS_PER_EVENT = 5000;

/** How a result weighs in its run case's status: a failure is never hidden by a later pass or skip. */
const RANK: Record<Outcome, number> = { passed: 0, skipped: 1, failed: 2, error: 2 };

interface RunCaseState {
  id: number;
  attempts: number;
  /** The worst result not retried so far: its rank (NO_RANK: none yet) and status; and the last result's status not retried. */
  worstRank: number;
  worstStatus: number | null;
  last: number | null;
}

/** A run case without a result that counts yet: any result outranks it. */
const NO_RANK = -2;

/**
 * Turns parsed cases into chunks: folders for their suites, repository cases found by identity
 * (services/repository/caseIdentity.ts: its key or an alias; else a case made before identities
 * existed, with the same source, title and class, which the test adopts), run cases (or new), and
 * one result each, with ids reserved in blocks. Remembers what this process created, which the
 * read model may not have yet; the run's run cases are read once (the job holds the project's
 * lock, and the run is written by this job).
 */
class ChunkBuilder {
  private readonly folders = new Map<string, number>();
  /** Folders this job made: nothing in the read model can be under them yet, so they are not looked up. */
  private readonly madeFolders = new Set<number>();
  private readonly cases = new Map<string, number>();
  /** Legacy cases adopted by this job (the read model may not show it yet). */
  private readonly adoptedCases = new Set<number>();
  /** Every run case of the run (by repository case), with its results so far: read once, then kept up to date here. */
  private runCases: Map<number, RunCaseState> | null = null;
  private order = 0;
  private readonly idPools = new Map<string, { next: number; to: number }>();

  constructor(
    private readonly deps: ImportDeps,
    private readonly job: JobStream,
    private readonly statuses: Record<Outcome, number>,
    private readonly defaults: { templateId: number | null; stateId: number | null },
  ) {}

  /** Ids of a kind, from blocks reserved ten chunks at a time (one append per block, not per chunk). */
  private async ids(category: string, count: number): Promise<number[]> {
    if (count === 0) return [];
    let pool = this.idPools.get(category);
    if (!pool || pool.to - pool.next + 1 < count) {
      const size = Math.max(count, 10 * this.deps.imports.chunkSize);
      const reserved = await this.deps.ids.nextMany(category, size, this.job.metadata);
      pool = { next: reserved[0], to: reserved[reserved.length - 1] };
      this.idPools.set(category, pool);
    }
    const from = pool.next;
    pool.next += count;
    return Array.from({ length: count }, (_, i) => from + i);
  }

  /** The run's run cases, their attempts and shown status (the run's own, or from a job that stopped before): at the first chunk. */
  private async loadRunCases(testRunId: number): Promise<Map<number, RunCaseState>> {
    const { rows } = await this.deps.knex.raw(
      `SELECT rc.id, rc.repository_case_id, rc.status_id, count(r.id)::int AS attempts
       FROM test_run_cases rc LEFT JOIN test_run_results r ON r.test_run_case_id = rc.id AND NOT r.is_deleted
       WHERE rc.test_run_id = ? AND NOT rc.is_deleted GROUP BY rc.id`, [testRunId]);
    const rankOf = new Map<number, number>();
    for (const outcome of OUTCOMES) rankOf.set(this.statuses[outcome], Math.max(rankOf.get(this.statuses[outcome]) ?? 0, RANK[outcome]));
    const map = new Map<number, RunCaseState>();
    for (const r of rows as { id: number; repository_case_id: number; status_id: number | null; attempts: number }[]) {
      // A status set by hand (not one of the four) weighs least: the next imported result shows.
      const worstRank = r.status_id === null ? NO_RANK : rankOf.get(r.status_id) ?? -1;
      map.set(r.repository_case_id, { id: r.id, attempts: r.attempts, worstRank, worstStatus: r.status_id, last: r.status_id });
    }
    const order = await this.deps.knex('test_run_cases').where({ test_run_id: testRunId }).max('sort_order as max').first();
    this.order = ((order?.max as number | null) ?? -1) + 1;
    return map;
  }

  /** The folder of each suite path of the items, made where missing (under parentFolderId, or at the project's top). */
  private async foldersFor(
    items: readonly { suitePath: readonly string[] }[], pathKey: (path: readonly string[]) => string, folders: ImportedColumns<ImportedFolder>,
  ): Promise<Map<string, number | null>> {
    const { knex } = this.deps;
    const s = this.job.state;
    const folderOf = new Map<string, number | null>();
    for (const parsed of items) {
      const path = pathKey(parsed.suitePath);
      if (folderOf.has(path)) continue;
      let parentId: number | null = s.options!.parentFolderId;
      for (const name of parsed.suitePath.map((p) => cut(p, FOLDER_NAME_MAX) || '(unnamed)')) {
        const key = `${parentId ?? 0}\u0000${name}`;
        let id = this.folders.get(key);
        if (id === undefined) {
          const row = parentId !== null && this.madeFolders.has(parentId) ? undefined
            // md5(name): the index repository_folders_by_name (projections/migrations/026_digest_keys.ts).
            : await knex('repository_folders').where({ project_id: s.options!.projectId, name, is_deleted: false }).whereRaw('md5(name) = md5(?)', [name])
              .where((q) => (parentId === null ? q.whereNull('parent_id') : q.where('parent_id', parentId))).orderBy('id').first('id');
          if (row) id = row.id as number;
          else {
            [id] = await this.ids('repositoryFolder', 1);
            this.madeFolders.add(id);
            folders.folderId.push(id);
            folders.parentId.push(parentId);
            folders.name.push(name);
          }
          this.folders.set(key, id);
        }
        parentId = id;
      }
      folderOf.set(path, parentId);
    }
    return folderOf;
  }

  /**
   * What the project holds that a lookup could find, asked once per job (the job holds the
   * project's lock, and cases made by hand have no key): a first import into a project makes no
   * lookup per chunk at all.
   */
  private lookups: { keyed: boolean; legacy: boolean } | null = null;

  /** Cases already there for these identities: by key or alias, then (for keys still unknown) a case from before identities by title and class. */
  private async findCases(
    unknown: readonly number[], items: readonly ParsedCase[], keys: readonly string[], scopes: readonly (string | null)[], source: CaseSource,
  ) {
    const { knex } = this.deps;
    const projectId = this.job.state.options!.projectId;
    const adopted: ImportedColumns<AdoptedCase> = { caseId: [], identityKey: [], identityScope: [] };
    if (unknown.length === 0) return adopted;
    this.lookups ??= (await knex.raw(
      `SELECT EXISTS (SELECT 1 FROM repository_cases WHERE project_id = ? AND source = ? AND identity_key IS NOT NULL AND NOT is_deleted)
           OR EXISTS (SELECT 1 FROM repository_case_aliases WHERE project_id = ? AND source = ?) AS keyed,
         EXISTS (SELECT 1 FROM repository_cases WHERE project_id = ? AND source = ? AND identity_key IS NULL AND NOT is_deleted) AS legacy`,
      [projectId, source, projectId, source, projectId, source])).rows[0] as { keyed: boolean; legacy: boolean };
    if (!this.lookups.keyed && !this.lookups.legacy) return adopted;
    if (this.lookups.keyed) {
      // One index probe per key (repository_cases_by_identity, repository_case_aliases' primary key).
      const { rows } = await knex.raw(
        `SELECT x.k, coalesce(
           (SELECT c.id FROM repository_cases c WHERE c.project_id = ? AND c.source = ? AND c.identity_key = x.k AND NOT c.is_deleted ORDER BY c.id LIMIT 1),
           (SELECT a.repository_case_id FROM repository_case_aliases a JOIN repository_cases c ON c.id = a.repository_case_id AND NOT c.is_deleted
             WHERE a.project_id = ? AND a.source = ? AND a.identity_key = x.k)) AS id
         FROM unnest(?::text[]) AS x(k)`,
        [projectId, source, projectId, source, unknown.map((i) => keys[i])],
      );
      for (const r of rows as { k: string; id: number | null }[]) if (r.id !== null) this.cases.set(r.k, r.id);
    }
    const rest = unknown.filter((i) => !this.cases.has(keys[i]));
    if (rest.length === 0 || !this.lookups.legacy) return adopted;
    // Cases imported before identities existed: found by title and class, each adopted by the first test that matches it
    // (md5(title): the index repository_cases_identity, projections/migrations/026_digest_keys.ts).
    const { rows: legacy } = await knex.raw(
      `SELECT x.i, array(SELECT c.id FROM repository_cases c
           WHERE c.project_id = ? AND c.source = ? AND md5(c.title) = md5(x.t) AND c.title = x.t AND c.class_name IS NOT DISTINCT FROM x.c
             AND c.identity_key IS NULL AND NOT c.is_deleted ORDER BY c.id LIMIT 50) AS ids
       FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(t, c, i)`,
      [projectId, source, rest.map((i) => titleOf(items[i].name)), rest.map((i) => cutOrNull(items[i].className, CLASS_NAME_MAX)) as string[]],
    );
    for (const r of legacy as { i: string; ids: number[] }[]) {
      const i = rest[Number(r.i) - 1];
      const id = r.ids.find((candidate) => !this.adoptedCases.has(candidate));
      if (id === undefined || this.cases.has(keys[i])) continue;
      this.adoptedCases.add(id);
      this.cases.set(keys[i], id);
      adopted.caseId.push(id);
      adopted.identityKey.push(keys[i]);
      adopted.identityScope.push(scopes[i]);
    }
    return adopted;
  }

  /** The chunk events for these items: folder-only ones first when their folders do not fit in one, then the chunk with the results. */
  /**
   * `items` are the files' cases after `processedBefore`, the last of them number `lastIndex`.
   * An import makes garbage enough: a case gets no wrapper object here, its key and scope are kept
   * in arrays beside it (what lives across a chunk's awaits reaches the old generation).
   */
  async build(
    items: readonly ParsedCase[], suiteOutputs: readonly SuiteOutput[], processedBefore: number, lastIndex: number,
    suiteProperties: ImportedColumns<ImportedSuiteProperty> = { name: [], value: [] },
  ): Promise<ChunkData[]> {
    const s = this.job.state;
    const projectId = s.options!.projectId;
    const testRunId = s.testRunId!;
    const source = sourceOf(s.format!);

    const folders: ImportedColumns<ImportedFolder> = { folderId: [], parentId: [], name: [] };
    // Cases come suite by suite: a suite path is joined into a key once per run of cases, not per case.
    let lastPath: readonly string[] | null = null;
    let lastKey = '';
    const pathKey = (path: readonly string[]) => {
      if (lastPath === null || !samePath(path, lastPath)) {
        lastPath = path;
        lastKey = path.join('\u0000');
      }
      return lastKey;
    };
    const folderOf = await this.foldersFor(suiteOutputs.length === 0 ? items : [...items, ...suiteOutputs], pathKey, folders);

    // Repository cases: found (this job's, then the read model's), adopted, or new.
    // Cases of a chunk mostly share their suites and class: each scope is hashed once (by suite, then class, then variant).
    const scopeCache = new Map<string, Map<string | null, Map<string | null, string>>>();
    const scopeOf = (p: IdentityParts) => {
      const suite = pathKey(p.suitePath);
      let byClass = scopeCache.get(suite);
      if (!byClass) scopeCache.set(suite, (byClass = new Map()));
      let byVariant = byClass.get(p.className);
      if (!byVariant) byClass.set(p.className, (byVariant = new Map()));
      let scope = byVariant.get(p.variant);
      if (scope === undefined) byVariant.set(p.variant, (scope = identityScope(p)));
      return scope;
    };
    const scopes = new Array<string | null>(items.length);
    const keys = new Array<string>(items.length);
    for (let i = 0; i < items.length; i++) {
      scopes[i] = items[i].externalId !== null ? null : scopeOf(items[i]);
      keys[i] = caseKey(items[i], scopes[i]);
    }
    /** The chunk's scopes, each once: new cases name theirs by index. */
    const chunkScopes: string[] = [];
    const scopeIndexes = new Map<string, number>();
    const scopeIndex = (scope: string) => {
      let index = scopeIndexes.get(scope);
      if (index === undefined) scopeIndexes.set(scope, (index = chunkScopes.push(scope) - 1));
      return index;
    };
    // The chunk's cases this job has not met yet, each key once (by its first case's place in the chunk).
    const unknown: number[] = [];
    const unknownKeys = new Set<string>();
    for (let i = 0; i < items.length; i++) {
      if (this.cases.has(keys[i]) || unknownKeys.has(keys[i])) continue;
      unknownKeys.add(keys[i]);
      unknown.push(i);
    }
    const adopted = await this.findCases(unknown, items, keys, scopes, source);
    const creating = unknown.filter((i) => !this.cases.has(keys[i]));
    const caseIds = await this.ids('repositoryCase', creating.length);
    creating.forEach((i, n) => this.cases.set(keys[i], caseIds[n]));
    const cases: ImportedColumns<ImportedCase> = {
      caseId: caseIds, folderId: creating.map((i) => folderOf.get(pathKey(items[i].suitePath)) ?? null),
      title: creating.map((i) => titleOf(items[i].name)), className: creating.map((i) => cutOrNull(items[i].className, CLASS_NAME_MAX)),
      identityKey: creating.map((i) => keys[i]), scope: creating.map((i) => (scopes[i] === null ? null : scopeIndex(scopes[i]!))),
    };

    // Run cases: the run's (read once), or new.
    this.runCases ??= await this.loadRunCases(testRunId);
    const runCases = this.runCases;
    const adding = new Set<number>();
    for (const key of keys) {
      const caseId = this.cases.get(key)!;
      if (!runCases.has(caseId)) adding.add(caseId);
    }
    const addRunCases = [...adding];
    const runCaseIds = await this.ids('testRunCase', addRunCases.length);
    addRunCases.forEach((caseId, i) => runCases.set(caseId, { id: runCaseIds[i], attempts: 0, worstRank: NO_RANK, worstStatus: null, last: null }));
    const newRunCases = { testRunCaseId: runCaseIds, repositoryCaseId: addRunCases, order: addRunCases.map(() => this.order++) };

    // One result per parsed case; a test met again in the same run is its next attempt.
    const resultIds = await this.ids('testRunResult', items.length);
    const results: ImportedColumns<ImportedResult> = {
      resultId: resultIds, testRunCaseId: [], statusId: [], durationMs: [], executedAt: [], message: [], failureType: [], stackTrace: [],
      systemOut: [], systemErr: [], file: [], line: [], properties: [], attempt: [], retried: [],
    };
    const touched = new Set<RunCaseState>();
    for (let i = 0; i < items.length; i++) {
      const parsed = items[i];
      const runCase = runCases.get(this.cases.get(keys[i])!)!;
      const statusId = this.statuses[parsed.outcome];
      runCase.attempts++;
      // A retried attempt never decides what the case shows (the read model's last result is its last one not retried).
      if (!parsed.retried) runCase.last = statusId;
      if (!parsed.retried && RANK[parsed.outcome] >= runCase.worstRank) {
        runCase.worstRank = RANK[parsed.outcome];
        runCase.worstStatus = statusId;
      }
      touched.add(runCase);
      results.testRunCaseId.push(runCase.id);
      results.statusId.push(statusId);
      results.durationMs.push(int32OrNull(parsed.durationMs));
      results.executedAt.push(parsed.executedAt !== null && isStorableTime(parsed.executedAt) ? parsed.executedAt : null);
      results.message.push(cutOrNull(parsed.message, LIMITS.text));
      results.failureType.push(cutOrNull(parsed.failureType, LIMITS.name));
      results.stackTrace.push(cutOrNull(parsed.stackTrace, LIMITS.text));
      results.systemOut.push(cutOrNull(parsed.systemOut, LIMITS.text));
      results.systemErr.push(cutOrNull(parsed.systemErr, LIMITS.text));
      results.file.push(cutOrNull(parsed.file, LIMITS.name));
      results.line.push(int32OrNull(parsed.line));
      results.properties.push(propertiesOf(parsed));
      results.attempt.push(runCase.attempts);
      results.retried.push(parsed.retried);
    }
    const shown: ImportedColumns<ShownStatus> = { testRunCaseId: [], statusId: [] };
    for (const runCase of touched) {
      // Only where it is not the last result's (which the read model shows by default): most chunks carry none.
      const status = runCase.worstStatus ?? runCase.last;
      if (status === runCase.last || status === null) continue; // null: only retried attempts so far, which show nothing
      shown.testRunCaseId.push(runCase.id);
      shown.statusId.push(status);
    }
    const outputs: ImportedColumns<ImportedSuiteOutput> = { folderId: [], suite: [], systemOut: [], systemErr: [] };
    for (const o of suiteOutputs) {
      outputs.folderId.push(folderOf.get(pathKey(o.suitePath)) ?? null);
      outputs.suite.push(cut(o.suitePath.join(' › '), LIMITS.caseTitle));
      outputs.systemOut.push(cutOrNull(o.systemOut, LIMITS.text));
      outputs.systemErr.push(cutOrNull(o.systemErr, LIMITS.text));
    }

    const base = {
      projectId, testRunId, caseSource: source, caseTemplateId: this.defaults.templateId, caseStateId: this.defaults.stateId,
      importedAt: this.deps.clock().toISOString(),
    };
    const empty = <T>(columns: ImportedColumns<T>) => Object.fromEntries(Object.keys(columns).map((k) => [k, []])) as unknown as ImportedColumns<T>;
    const chunks: ChunkData[] = [];
    // Folders beyond one event's share go first, in order (a parent before its children), in chunks that move no case on.
    while (folders.folderId.length > MAX_ROWS_PER_EVENT) {
      const part = { folderId: folders.folderId.splice(0, MAX_ROWS_PER_EVENT), parentId: folders.parentId.splice(0, MAX_ROWS_PER_EVENT), name: folders.name.splice(0, MAX_ROWS_PER_EVENT) };
      chunks.push({
        ...base, folders: part, cases: empty(cases), scopes: [], runCases: empty(newRunCases), results: empty(results), adopted: empty(adopted),
        shown: empty(shown), suiteOutputs: empty(outputs), suiteProperties: empty(suiteProperties), processedCases: processedBefore,
      });
    }
    chunks.push({
      ...base, folders, cases, scopes: chunkScopes, runCases: newRunCases, results, adopted, shown, suiteOutputs: outputs, suiteProperties,
      processedCases: items.length > 0 ? lastIndex : processedBefore,
    });
    return chunks;
  }
}

/**
 * Limits of the event contract (TestResultsImported; contracts/limits.ts) a real file may exceed:
 * names cut, with a warning at parse time; other text cut (docs/imports.md, "Limits").
 */
const TITLE_MAX = LIMITS.caseTitle;
const CLASS_NAME_MAX = LIMITS.caseTitle;
const FOLDER_NAME_MAX = LIMITS.name;
const PROPERTY_NAME_MAX = LIMITS.name;
/** The result property that keeps a name cut to fit the case's title (or class). */
export const FULL_NAME_PROPERTY = 'testament.fullName';
export const FULL_CLASS_NAME_PROPERTY = 'testament.fullClassName';
/** What a test without a name is called (parsers number theirs; this is the last resort). */
const UNNAMED = '(unnamed test)';

/** Cuts a text to at most `max` characters (code points, as the contracts count), ending in "…". */
const cut = cutText;

const cutOrNull = (text: string | null, max: number) => (text === null ? null : cut(text, max));
/** A number the read model's integer column holds, else none (a duration past 24 days, a line past 2^31: a file's nonsense). */
const int32OrNull = (n: number | null) => (n !== null && n >= INT32_MIN && n <= INT32_MAX ? n : null);
const titleOf = (name: string) => cut(name.trim() === '' ? UNNAMED : name, TITLE_MAX);

/** A result's properties: the file's (names cut to fit), and the full name and class where the case's had to be cut. */
function propertiesOf(parsed: ParsedCase): Array<{ name: string; value: string }> {
  const fits = !longerThan(parsed.name, TITLE_MAX) && (parsed.className === null || !longerThan(parsed.className, CLASS_NAME_MAX))
    && parsed.properties.length <= LIMITS.items - 2 && parsed.properties.every((p) => !longerThan(p.name, PROPERTY_NAME_MAX) && !longerThan(p.value, LIMITS.text));
  if (fits) return parsed.properties; // the parser's own array: most cases
  // The first properties, room left for the two full names; each name and value cut to fit.
  const properties = parsed.properties.slice(0, LIMITS.items - 2).map((p) => ({ name: cut(p.name, PROPERTY_NAME_MAX), value: cut(p.value, LIMITS.text) }));
  if (longerThan(parsed.name, TITLE_MAX)) properties.push({ name: FULL_NAME_PROPERTY, value: cut(parsed.name, LIMITS.text) });
  if (parsed.className !== null && longerThan(parsed.className, CLASS_NAME_MAX)) properties.push({ name: FULL_CLASS_NAME_PROPERTY, value: cut(parsed.className, LIMITS.text) });
  return properties;
}

/**
 * Bounds of the suite properties an import keeps on its run (docs/imports.md, "Suite properties"):
 * each distinct (name, value) pair once, at most SUITE_PROPERTY_VALUES distinct values of a name
 * (the first met), at most SUITE_PROPERTIES_MAX pairs in all (one event's rows); a name cut to
 * LIMITS.name (with a warning), a value to LIMITS.caseTitle.
 */
const SUITE_PROPERTY_VALUES = SUITE_PROPERTY_LIMITS.valuesPerName;
const SUITE_PROPERTIES_MAX = Math.min(SUITE_PROPERTY_LIMITS.pairs, MAX_ROWS_PER_EVENT);
const SUITE_PROPERTY_VALUE_MAX = LIMITS.caseTitle;

/** The suite properties of an import's files, kept within the bounds above, in file order: both passes keep the same. */
class SuitePropertiesKept {
  private readonly values = new Map<string, Set<string>>();
  private count = 0;
  private dropped = 0;
  /** The file of the first pair not kept. */
  private droppedIn = '';
  private readonly cutNames = new Set<string>();

  /** The pairs of a suite not kept before; a name cut to fit is warned about once (when `onWarning` is given). */
  add(given: SuiteProperties, file: string, onWarning?: (w: ImportWarning) => void): ImportedSuiteProperty[] {
    const added: ImportedSuiteProperty[] = [];
    for (const property of given.properties) {
      const name = cut(property.name, PROPERTY_NAME_MAX);
      if (name !== property.name && !this.cutNames.has(name)) {
        this.cutNames.add(name);
        onWarning?.({ file, message: `a property of suite ${cut(given.suitePath.join(' › '), LIMITS.name)} has a name of ${codePoints(property.name)} characters; the run keeps its first ${PROPERTY_NAME_MAX - 1}` });
      }
      const value = cut(property.value, SUITE_PROPERTY_VALUE_MAX);
      let values = this.values.get(name);
      if (values?.has(value)) continue;
      if (this.count >= SUITE_PROPERTIES_MAX || (values !== undefined && values.size >= SUITE_PROPERTY_VALUES)) {
        if (this.dropped++ === 0) this.droppedIn = file;
        continue;
      }
      if (!values) this.values.set(name, (values = new Set()));
      values.add(value);
      this.count++;
      added.push({ name, value });
    }
    return added;
  }

  warnDropped(onWarning: (w: ImportWarning) => void): void {
    if (this.dropped === 0) return;
    onWarning({ file: this.droppedIn, message: `${this.dropped} suite propert${this.dropped === 1 ? 'y was' : 'ies were'} not kept on the run: it keeps at most ${SUITE_PROPERTY_VALUES} values of a name and ${SUITE_PROPERTIES_MAX} in all` });
  }
}

/** What of a case the event contract would refuse, as warnings (told at parse time; the chunk cuts the same). */
export function limitWarnings(parsed: ParsedCase, file: string): ImportWarning[] {
  const warnings: ImportWarning[] = [];
  const caseName = cut(parsed.name, 200);
  if (longerThan(parsed.name, TITLE_MAX)) {
    warnings.push({ file, case: caseName, message: `the name has ${codePoints(parsed.name)} characters; the case's title keeps the first ${TITLE_MAX - 1} and the result property ${FULL_NAME_PROPERTY} the whole name` });
  }
  if (parsed.className !== null && longerThan(parsed.className, CLASS_NAME_MAX)) {
    warnings.push({ file, case: caseName, message: `the class name has ${codePoints(parsed.className)} characters; the case keeps the first ${CLASS_NAME_MAX - 1} and the result property ${FULL_CLASS_NAME_PROPERTY} the whole` });
  }
  const longSuite = parsed.suitePath.find((name) => longerThan(name, FOLDER_NAME_MAX));
  if (longSuite !== undefined) warnings.push({ file, case: caseName, message: `a suite name has ${codePoints(longSuite)} characters; its folder's name keeps the first ${FOLDER_NAME_MAX - 1}` });
  if (parsed.name.trim() === '') warnings.push({ file, message: `a test case without a name is imported as "${UNNAMED}"` });
  for (const property of parsed.properties) {
    if (longerThan(property.name, PROPERTY_NAME_MAX))
      warnings.push({ file, case: caseName, message: `a property has a name of ${codePoints(property.name)} characters; the result keeps its first ${PROPERTY_NAME_MAX - 1}` });
  }
  return warnings;
}
