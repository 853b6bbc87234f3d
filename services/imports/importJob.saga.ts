import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import type {
  CaseSource, ImportCounts, ImportedColumns, ImportedFolder, ImportedResult, ImportJobEvent, ImportWarning,
} from '../../contracts/events';
import { createEntity, updateEntity } from '../entities/entity.handlers';
import type { FileStore } from '../files/fileStore';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { ConcurrencyError, DomainError, HttpError } from '../shared/errors';
import { parserFor } from './formats';
import { type ImportFormat, type Outcome, type ParsedCase, ResultFileError } from './formats/parsedResult';
import { type ChunkData, type ImportJobCommand, type ImportJobState, importJobDecider, importJobStream } from './importJob.decider';

/**
 * The saga that runs an import job: parse every file once (counting, warning, failing on bad
 * content before anything is written), plan the test run, then parse again and append the results
 * in chunks, each chunk one `TestResultsImported` on the job's stream at the expected revision, so
 * the chunk and the job's progress are one write. Killed at any point, the job resumes where its
 * stream says (`resumeUnfinished` at start-up): no chunk twice, none missing. Interrupted by the
 * database or the event store while the process lives, it resumes the same way by itself, with
 * backoff, until it completes or fails on its content.
 */

export interface ImportSettings {
  /** Cases per chunk event. */
  chunkSize: number;
  /** system-out, system-err and stack traces are cut at this many characters. */
  maxOutputChars: number;
  /** How long the final wait for the read model may take. */
  finalizeTimeoutMs: number;
}

export const DEFAULT_IMPORT_SETTINGS: ImportSettings = { chunkSize: 500, maxOutputChars: 64 * 1024, finalizeTimeoutMs: 10 * 60_000 };

export interface ImportDeps extends CommandDeps {
  files: FileStore;
  logger: Logger;
  imports: ImportSettings;
}

/** What a job tells whoever listens (the SSE stream of the request that started it). */
export type JobSignal =
  | { kind: 'progress'; progress: number; status: string }
  | { kind: 'warning'; warning: ImportWarning }
  | { kind: 'complete'; testRunId: number }
  | { kind: 'error'; code: string; error: string; details: Record<string, unknown> };

/** How long start-up waits for the `imports` read model before resuming the jobs it lists. */
const RESUME_WAIT_MS = 60_000;
/** An interrupted job is taken up again after 1 s, doubling up to a minute. */
const RESUME_FIRST_MS = 1000;
const RESUME_MAX_MS = 60_000;

/** How many warnings a job keeps on its stream (all are counted). */
export const KEPT_WARNINGS = 100;

const OUTCOMES: readonly Outcome[] = ['passed', 'failed', 'error', 'skipped'];
const sourceOf = (format: ImportFormat) => format.toUpperCase() as CaseSource;

export class ImportSaga {
  private readonly running = new Map<number, Promise<void>>();
  /** Jobs interrupted in this process: how often in a row, and the timer that takes each up again. */
  private readonly interruptions = new Map<number, { attempts: number; timer: NodeJS.Timeout }>();
  private readonly signals = new EventEmitter();
  private stopping = false;

  constructor(private readonly deps: ImportDeps) {
    this.signals.setMaxListeners(0);
  }

  /** Listen to a job's signals; returns the unsubscribe function. */
  listen(jobId: number, listener: (signal: JobSignal) => void): () => void {
    this.signals.on(String(jobId), listener);
    return () => this.signals.off(String(jobId), listener);
  }

  /** Runs (or resumes) a job; a job already running in this process is joined, not started twice. */
  run(jobId: number): Promise<void> {
    let running = this.running.get(jobId);
    if (!running) {
      running = this.execute(jobId)
        .then(() => void this.interruptions.delete(jobId), (err) => {
          if (!(err instanceof DomainError || err instanceof ResultFileError)) this.resumeLater(jobId);
          throw err;
        })
        .finally(() => this.running.delete(jobId));
      this.running.set(jobId, running);
    }
    return running;
  }

  /** After an interruption (database, event store): the job is run again from its stream, with backoff. */
  private resumeLater(jobId: number): void {
    if (this.stopping) return;
    const attempts = (this.interruptions.get(jobId)?.attempts ?? 0) + 1;
    const delay = Math.min(RESUME_MAX_MS, RESUME_FIRST_MS * 2 ** (attempts - 1));
    this.deps.logger.warn({ jobId, attempt: attempts, resumeInMs: delay }, 'import job interrupted; resuming it');
    const timer = setTimeout(() => {
      if (!this.stopping) void this.run(jobId).catch(() => undefined);
    }, delay);
    this.interruptions.set(jobId, { attempts, timer });
  }

  /** Every job the read model lists as queued or running: resumed one after the other, in the background. */
  async resumeUnfinished(): Promise<number[]> {
    // The jobs come from the `imports` read model, so it should hold the whole log first. On the
    // direct transport that is its checkpoint reaching the head; on Kafka the checkpoints are per
    // partition and no single one reaches the head, so the wait is bounded: after it, the jobs
    // the read model has are resumed (one requested in the last moments before a stop may wait
    // for the next start), and that is logged.
    try {
      await this.deps.watcher.waitFor({ position: await this.deps.store.headPosition(), streamId: 'importJob-resume' }, RESUME_WAIT_MS);
    } catch (err) {
      this.deps.logger.warn({ err }, 'the imports read model did not reach the head of the log in time; resuming the unfinished jobs it lists');
    }
    const rows: { job_id: number }[] = await this.deps.knex('import_jobs').whereIn('state', ['queued', 'running']).orderBy('job_id').select('job_id');
    const ids = rows.map((r) => r.job_id);
    void (async () => {
      for (const id of ids) {
        if (this.stopping) return;
        await this.run(id).catch((err) => this.deps.logger.error({ err, jobId: id }, 'import job could not resume'));
      }
    })();
    return ids;
  }

  /** Stops taking up jobs; jobs in flight stop at their next chunk and resume on the next start. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const { timer } of this.interruptions.values()) clearTimeout(timer);
    await Promise.allSettled([...this.running.values()]);
  }

  private emit(jobId: number, signal: JobSignal): void {
    this.signals.emit(String(jobId), signal);
  }

  private async execute(jobId: number): Promise<void> {
    const job = await JobStream.load(this.deps, jobId);
    if (job.state.status === 'none') throw new DomainError('import-job-not-found', `No import job ${jobId}`);
    const say = (progress: number, status: string) => this.emit(jobId, { kind: 'progress', progress, status });
    try {
      if (job.state.status === 'completed') return this.emit(jobId, { kind: 'complete', testRunId: job.state.testRunId! });
      if (job.state.status === 'failed') return; // its error was told when it failed
      await withProjectLock(this.deps.knex, job.state.options!.projectId, async () => {
        if (job.state.status === 'requested') await this.parse(job, say);
        if (job.state.status === 'parsed') await this.planRun(job);
        if (job.state.status === 'running') await this.appendChunks(job, say);
      });
      if (job.state.status !== 'running') return;
      say(95, 'Finalizing import...');
      const outcome = await job.apply({ type: 'Complete', counts: await this.countsOf(job.state), now: this.deps.clock().toISOString() });
      if (outcome) await readYourWrites({ ...this.deps, writeTimeoutMs: this.deps.imports.finalizeTimeoutMs }, outcome);
      say(100, 'Import completed successfully');
      this.emit(jobId, { kind: 'complete', testRunId: job.state.testRunId! });
    } catch (err) {
      if (err instanceof Stopped) return;
      const known = err instanceof ResultFileError || err instanceof DomainError;
      if (!known) {
        // Infrastructure (database, event store): the job stays unfinished; run() takes it up again.
        this.deps.logger.error({ err, jobId, correlationId: job.metadata.correlationId }, 'import job interrupted');
        const interrupted = new HttpError(503, 'import-interrupted',
          'The import was interrupted; it goes on by itself once the database answers again (GET /api/imports/{jobId} shows it)', { jobId });
        this.emit(jobId, { kind: 'error', code: interrupted.code, error: interrupted.message, details: interrupted.details });
        throw err;
      }
      const { code, message, details } = err as ResultFileError | DomainError;
      const failed = await job.apply({ type: 'Fail', code, error: message, details, now: this.deps.clock().toISOString() });
      if (failed) await readYourWrites(this.deps, failed);
      this.emit(jobId, { kind: 'error', code, error: message, details: { ...details, jobId } });
    }
  }

  /** First pass: every file read through, counted and checked; warnings told and kept. Writes nothing but ImportParsed. */
  private async parse(job: JobStream, say: (p: number, s: string) => void): Promise<void> {
    const { options } = job.state;
    const format = options!.format === 'auto' ? null : options!.format;
    if (!format) throw new DomainError('import-format-unknown', 'The job has no detected format');
    say(10, `Parsing ${format.toUpperCase()} results...`);
    const warnings: ImportWarning[] = [];
    let warningCount = 0;
    let cases = 0;
    const suites = new Set<string>();
    for await (const parsed of this.cases(job, format, (warning) => {
      warningCount++;
      if (warnings.length < KEPT_WARNINGS) warnings.push(warning);
      this.emit(job.state.jobId, { kind: 'warning', warning });
    })) {
      cases++;
      suites.add(parsed.suitePath.join('\u0000'));
    }
    if (cases === 0) throw new ResultFileError('no-tests', 'The files hold no test cases', {});
    await this.statusesFor(); // a missing status fails the job before anything is written
    await job.apply({ type: 'RecordParsed', format, cases, suites: suites.size, warnings, warningCount, now: this.deps.clock().toISOString() });
    say(20, `Parsed ${cases} test case(s) in ${suites.size} suite(s)${warningCount ? ` with ${warningCount} warning(s)` : ''}`);
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

  /** Second pass: the cases after those already appended, in chunks. */
  private async appendChunks(job: JobStream, say: (p: number, s: string) => void): Promise<void> {
    say(25, 'Creating test run...');
    await this.ensureRun(job);
    // What earlier chunks (of this process or one that died) wrote must be in the read model before it is looked up.
    await job.caughtUp();
    const builder = new ChunkBuilder(this.deps, job, await this.statusesFor(), await this.caseDefaults(job));
    const total = job.state.totalCases;
    let index = 0;
    let pending: { parsed: ParsedCase; index: number }[] = [];
    // The next chunk is built while the previous one is appended; appends stay one at a time, in order.
    let appending: Promise<void> | null = null;
    const flush = async () => {
      if (this.stopping) throw new Stopped();
      const data = await builder.build(pending);
      pending = [];
      if (appending) await appending;
      appending = job.apply({ type: 'AppendChunk', chunk: job.state.chunks, data }).then(() => {
        say(25 + Math.floor((70 * job.state.processedCases) / total), `Imported ${job.state.processedCases} of ${total} test cases...`);
      });
      appending.catch(() => undefined); // awaited at the next flush or at the end
    };
    for await (const parsed of this.cases(job, job.state.format!, () => undefined)) {
      index++;
      if (index <= job.state.processedCases) continue;
      pending.push({ parsed, index });
      if (pending.length >= this.deps.imports.chunkSize) await flush();
    }
    if (pending.length > 0) await flush();
    if (appending) await appending;
    if (job.state.processedCases !== total) {
      throw new DomainError('import-files-changed', `The stored files now hold ${index} cases, not ${total}`, { expected: total, found: index });
    }
  }

  /** Every case of every file of the job, in order. */
  private async *cases(job: JobStream, format: ImportFormat, onWarning: (w: ImportWarning) => void): AsyncGenerator<ParsedCase> {
    const parse = parserFor(format);
    for (const file of job.state.files) {
      const opened = await this.deps.files.open(file.storedAs);
      if (!opened) throw new DomainError('import-file-missing', `The stored file ${file.fileName} is gone`, { file: file.fileName });
      try {
        yield* parse(opened.content, { fileName: file.fileName, maxOutputChars: this.deps.imports.maxOutputChars, onWarning });
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
    await readYourWrites({ ...this.deps, writeTimeoutMs: this.deps.imports.finalizeTimeoutMs }, { position: this.lastPosition, streamId: importJobStream(this.state.jobId) });
  }
}

/**
 * One job at a time per project, across processes (a PostgreSQL advisory lock on a connection of
 * its own): two imports must not both create the same new case.
 */
async function withProjectLock<T>(knex: Knex, projectId: number, work: () => Promise<T>): Promise<T> {
  const LOCK_SPACE = 0x7e57; // "test": the advisory lock namespace of result imports
  const connection = await knex.client.acquireConnection();
  try {
    await connection.query('SELECT pg_advisory_lock($1, $2)', [LOCK_SPACE, projectId]);
    try {
      return await work();
    } finally {
      await connection.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_SPACE, projectId]);
    }
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/**
 * Turns parsed cases into a chunk: folders for their suites, repository cases found by project,
 * source, name and class (or new), run cases (or new), and one result each, with ids reserved in
 * blocks. Remembers what this process created, which the read model may not have yet; the run's
 * run cases are read once (the job holds the project's lock, and the run is written by this job).
 */
class ChunkBuilder {
  private readonly folders = new Map<string, number>();
  private readonly cases = new Map<string, number>();
  /** Every run case of the run (by repository case), with its results so far: read once, then kept up to date here. */
  private runCases: Map<number, { id: number; attempts: number }> | null = null;
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

  /** The run's run cases and their attempts (the run's own, or from a job that stopped before): one statement, at the first chunk. */
  private async loadRunCases(testRunId: number): Promise<Map<number, { id: number; attempts: number }>> {
    const { rows } = await this.deps.knex.raw(
      `SELECT rc.id, rc.repository_case_id, count(r.id)::int AS attempts
       FROM test_run_cases rc LEFT JOIN test_run_results r ON r.test_run_case_id = rc.id AND NOT r.is_deleted
       WHERE rc.test_run_id = ? AND NOT rc.is_deleted GROUP BY rc.id`, [testRunId]);
    const map = new Map<number, { id: number; attempts: number }>();
    for (const r of rows as { id: number; repository_case_id: number; attempts: number }[]) map.set(r.repository_case_id, { id: r.id, attempts: r.attempts });
    const order = await this.deps.knex('test_run_cases').where({ test_run_id: testRunId }).max('sort_order as max').first();
    this.order = ((order?.max as number | null) ?? -1) + 1;
    return map;
  }

  async build(items: { parsed: ParsedCase; index: number }[]): Promise<ChunkData> {
    const { knex } = this.deps;
    const s = this.job.state;
    const projectId = s.options!.projectId;
    const testRunId = s.testRunId!;
    const source = sourceOf(s.format!);

    // Folders: one per suite path, under parentFolderId (or at the project's top).
    const folders: ImportedColumns<ImportedFolder> = { folderId: [], parentId: [], name: [] };
    const folderOf = new Map<string, number | null>();
    for (const { parsed } of items) {
      const path = parsed.suitePath.join('\u0000');
      if (folderOf.has(path)) continue;
      let parentId: number | null = s.options!.parentFolderId;
      for (const name of parsed.suitePath.map((p) => p.slice(0, 255) || '(unnamed)')) {
        const key = `${parentId ?? 0}\u0000${name}`;
        let id = this.folders.get(key);
        if (id === undefined) {
          const row = await knex('repository_folders').where({ project_id: projectId, name, is_deleted: false })
            .where((q) => (parentId === null ? q.whereNull('parent_id') : q.where('parent_id', parentId))).orderBy('id').first('id');
          if (row) id = row.id as number;
          else {
            [id] = await this.ids('repositoryFolder', 1);
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

    // Repository cases: found (this job's, then the read model's), or new.
    const keyOf = (p: ParsedCase) => `${p.name}\u0000${p.className ?? '\u0001'}`;
    const unknown = [...new Map(items.filter(({ parsed }) => !this.cases.has(keyOf(parsed))).map(({ parsed }) => [keyOf(parsed), parsed])).values()];
    if (unknown.length > 0) {
      // One index probe per name (repository_cases_identity), whatever the size of the project.
      const { rows } = await knex.raw(
        `SELECT x.t, x.c, (SELECT c.id FROM repository_cases c
           WHERE c.project_id = ? AND c.source = ? AND c.title = x.t AND c.class_name IS NOT DISTINCT FROM x.c AND NOT c.is_deleted
           ORDER BY c.id LIMIT 1) AS id
         FROM unnest(?::text[], ?::text[]) AS x(t, c)`,
        [projectId, source, unknown.map((p) => p.name), unknown.map((p) => p.className) as string[]],
      );
      for (const r of rows as { id: number | null; t: string; c: string | null }[]) if (r.id !== null) this.cases.set(`${r.t}\u0000${r.c ?? '\u0001'}`, r.id);
    }
    const creating = unknown.filter((p) => !this.cases.has(keyOf(p)));
    const caseIds = await this.ids('repositoryCase', creating.length);
    creating.forEach((p, i) => this.cases.set(keyOf(p), caseIds[i]));
    const cases = {
      caseId: caseIds, folderId: creating.map((p) => folderOf.get(p.suitePath.join('\u0000')) ?? null),
      title: creating.map((p) => p.name), className: creating.map((p) => p.className),
    };

    // Run cases: the run's (read once), or new.
    this.runCases ??= await this.loadRunCases(testRunId);
    const runCases = this.runCases;
    const addRunCases = [...new Set(items.map(({ parsed }) => this.cases.get(keyOf(parsed))!))].filter((id) => !runCases.has(id));
    const runCaseIds = await this.ids('testRunCase', addRunCases.length);
    addRunCases.forEach((caseId, i) => runCases.set(caseId, { id: runCaseIds[i], attempts: 0 }));
    const newRunCases = { testRunCaseId: runCaseIds, repositoryCaseId: addRunCases, order: addRunCases.map(() => this.order++) };

    // One result per parsed case; a case met again in the same run is its next attempt.
    const resultIds = await this.ids('testRunResult', items.length);
    const results: ImportedColumns<ImportedResult> = {
      resultId: resultIds, testRunCaseId: [], statusId: [], durationMs: [], executedAt: [], message: [], failureType: [], stackTrace: [],
      systemOut: [], systemErr: [], file: [], line: [], properties: [], attempt: [],
    };
    for (const { parsed } of items) {
      const runCase = runCases.get(this.cases.get(keyOf(parsed))!)!;
      runCase.attempts++;
      results.testRunCaseId.push(runCase.id);
      results.statusId.push(this.statuses[parsed.outcome]);
      results.durationMs.push(parsed.durationMs);
      results.executedAt.push(parsed.executedAt);
      results.message.push(parsed.message);
      results.failureType.push(parsed.failureType);
      results.stackTrace.push(parsed.stackTrace);
      results.systemOut.push(parsed.systemOut);
      results.systemErr.push(parsed.systemErr);
      results.file.push(parsed.file);
      results.line.push(parsed.line);
      results.properties.push(parsed.properties);
      results.attempt.push(runCase.attempts);
    }
    return {
      projectId, testRunId, caseSource: source, caseTemplateId: this.defaults.templateId, caseStateId: this.defaults.stateId,
      folders, cases, runCases: newRunCases, results, processedCases: items[items.length - 1].index, importedAt: this.deps.clock().toISOString(),
    };
  }
}
