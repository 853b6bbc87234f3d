import type { Logger } from 'pino';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import type { SearchReindexEvent, SearchTypeName } from '../../contracts/events';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { ConcurrencyError, DomainError } from '../shared/errors';
import { DEFAULT_RETRY_BUDGET_MS, describeError, isTransient, type RetryBudget, retryBudget, RetryBudgetSpent } from '../shared/faults';
import { Pauses } from '../shared/pauses';
import { DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchEngine, type SearchType } from '../shared/search';
import type { ReindexWorker } from './searchAdmin.deps';
import {
  currentType, isFinished, type ReindexCommand, reindexDecider, type ReindexJobState, type ReindexRequest, reindexJobStream,
} from './reindex.decider';

/**
 * The worker that runs reindex jobs (docs/search.md, "Reindex"), in the API process. Every
 * `pollMs`, and when woken (a job requested or resumed here), it looks in the `searchReindex` read
 * model for jobs to run: running ones (a worker that died left them so) and queued ones that are
 * due. It runs them one after the other while holding the search build lock (an advisory lock
 * per engine's indices, projections/search/rebuild.ts): one job at a time across processes, and
 * never beside `npm run rebuild -- search`. Each job's events are appended at the expected
 * revision: a pause or cancel recorded meanwhile makes the next append conflict, and the job
 * stops there (after the batch in flight).
 *
 * A full job builds the version after every existing one side by side, type by type in keyset
 * batches, one SearchReindexProgressed per acknowledged batch (the cursor); then checks the
 * version holds every document it wrote, writes the indexer checkpoints captured at its start,
 * switches the aliases and drops the older versions. A partial job writes its scope's documents
 * again into the live version (and removes those of rows that have none). Resumed, a job goes on
 * after its last recorded cursor: a batch written again because its progress was lost is the same
 * upserts by id.
 */

/** What the job does to the engine and the read model: projections/search/rebuild.ts searchBuilder(), given by the composition root. */
export interface SearchBuilder {
  /** The types that have documents, in the order a full reindex writes them. */
  readonly types: readonly SearchType[];
  /** Where the read model is now: the checkpoints a new version starts the indexer from. */
  captureCheckpoints(): Promise<Record<string, string>>;
  nextVersion(engine: SearchEngine): Promise<{ version: number; live: number | null }>;
  /** Documents of a type (of some projects). */
  count(type: SearchType, projectIds: readonly number[] | null): Promise<number>;
  /** Writes the documents of the keyset page after `afterId`: the last row scanned (null: none), whether it was the last page, documents written. */
  writeBatch(
    engine: SearchEngine, version: number, type: SearchType, afterId: number, limit: number, scope: { projectIds: readonly number[] | null; removals: boolean },
  ): Promise<{ lastId: number | null; last: boolean; documents: number }>;
  /** Checkpoints written, refreshed, aliases switched, older versions dropped: answers those. */
  makeLive(engine: SearchEngine, version: number, checkpoints: Record<string, string>): Promise<number[]>;
  /** The search build lock, or null when another build holds it. */
  tryLock(engine: SearchEngine): Promise<{ release(): Promise<void> } | null>;
}

export interface ReindexSettings {
  /** How often the worker looks for due jobs and for jobs a dead worker left running. */
  pollMs: number;
  /** How long a job may meet transient faults (engine or database away) in a row before it fails (RETRY_BUDGET_MS). */
  retryBudgetMs: number;
  /** The first pause after a transient fault (doubling up to maxRetryMs). */
  firstRetryMs?: number;
  maxRetryMs?: number;
  /** A job's batch size when its request gives none (SEARCH_BULK_SIZE). */
  defaultBatchSize: number;
}

export const DEFAULT_REINDEX_SETTINGS: ReindexSettings = {
  pollMs: 5000, retryBudgetMs: DEFAULT_RETRY_BUDGET_MS, firstRetryMs: 500, maxRetryMs: 30_000, defaultBatchSize: DEFAULT_SEARCH_SETTINGS.bulkSize,
};

export interface ReindexDeps extends CommandDeps {
  logger: Logger;
  /** The engine in use now (throws SearchUnavailable while none answers). */
  engine(): SearchEngine;
  builder: SearchBuilder;
  reindex: ReindexSettings;
}

/** The id category of reindex jobs (IdAllocator). */
export const REINDEX_ID_CATEGORY = 'searchReindexJob';

/** The index name prefix an engine writes under: what a job records as its `target`. */
export const targetOf = (engine: SearchEngine): string => engine.aliasOf('projects').slice(0, -'projects'.length);

/** A job stops here for now: paused, cancelled, finished or taken by another worker (the stream says which). */
class Halt extends Error {
  constructor(readonly reason: 'paused' | 'cancelled' | 'finished' | 'taken' | 'stopping') {
    super(`reindex job halted: ${reason}`);
  }
}

const transient = (err: unknown) => err instanceof SearchUnavailable || isTransient(err);

export class ReindexSaga implements ReindexWorker {
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> | null = null;
  private again = false;
  private readonly pauses = new Pauses();
  /** Full jobs cancelled while no worker ran them: their versions are dropped at the next round. */
  private readonly cancelledVersions = new Set<number>();

  constructor(private readonly deps: ReindexDeps) {}

  get defaultBatchSize(): number {
    return this.deps.reindex.defaultBatchSize;
  }

  /** Starts looking for jobs: at once (jobs a stopped process left unfinished go on), then every pollMs. */
  start(): void {
    this.wake();
  }

  /** Looks for jobs now (a job was requested or resumed), or right after the round under way. */
  wake(): void {
    if (this.stopping) return;
    if (this.round) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.round = this.runRound()
      .catch((err) => this.deps.logger.error({ err }, 'reindex worker round failed; tried again at the next'))
      .finally(() => {
        this.round = null;
        if (this.stopping) return;
        if (this.again) {
          this.again = false;
          this.wake();
        } else {
          this.timer = setTimeout(() => this.wake(), this.deps.reindex.pollMs);
          this.timer.unref?.();
        }
      });
  }

  /** A full job was cancelled while paused or queued: its version (if it has one) is dropped at the next round. */
  cancelled(jobId: number): void {
    this.cancelledVersions.add(jobId);
    this.wake();
  }

  /** Stops taking up jobs; a job in flight stops after its batch and goes on at the next start (or in another process). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.pauses.close();
    await this.round;
  }

  private async runRound(): Promise<void> {
    const { knex } = this.deps;
    const now = this.deps.clock();
    const due: { job_id: number }[] = await knex('search_reindex_jobs')
      .whereIn('state', ['queued', 'running']).andWhere((q) => q.whereNull('run_at').orWhere('run_at', '<=', now))
      .orderByRaw(`state = 'running' DESC`).orderBy('job_id').select('job_id');
    const unrepeated: { job_id: number }[] = await knex('search_reindex_jobs as j')
      .where('j.state', 'completed').whereNotNull('j.repeat_every_minutes')
      .whereNotExists(knex('search_reindex_jobs as n').whereRaw('n.repeat_of = j.job_id'))
      .select('j.job_id');
    if (due.length === 0 && unrepeated.length === 0 && this.cancelledVersions.size === 0) return;
    let engine: SearchEngine;
    try {
      engine = this.deps.engine();
    } catch (err) {
      if (err instanceof SearchUnavailable) return; // the jobs wait for the engine
      throw err;
    }
    const lock = await this.deps.builder.tryLock(engine);
    if (!lock) return; // another process runs a job, or a rebuild builds a version
    try {
      for (const jobId of [...this.cancelledVersions]) {
        this.cancelledVersions.delete(jobId);
        await this.dropCancelledVersion(jobId, engine);
      }
      for (const { job_id: jobId } of unrepeated) await this.requestNext(await ReindexStream.load(this.deps, jobId));
      for (const { job_id: jobId } of due) {
        if (this.stopping) return;
        await this.runJob(jobId);
      }
    } finally {
      await lock.release();
    }
  }

  /** Runs one job as far as it goes now: to its end, a pause, a cancel, a stop, or (transient faults past the budget) its failure. */
  private async runJob(jobId: number): Promise<void> {
    const job = await ReindexStream.load(this.deps, jobId);
    const { status } = job.state;
    if (status !== 'queued' && status !== 'running') return;
    if (status === 'queued' && job.state.request!.runAt !== null && Date.parse(job.state.request!.runAt) > this.deps.clock().getTime()) return;
    const budget = retryBudget({
      firstMs: this.deps.reindex.firstRetryMs ?? 500, maxMs: this.deps.reindex.maxRetryMs ?? 30_000, budgetMs: this.deps.reindex.retryBudgetMs,
    });
    let engine: SearchEngine | null = null;
    try {
      if (status === 'running') this.deps.logger.info({ jobId, version: job.state.version }, 'resuming reindex job');
      engine = await this.retrying(budget, () => (job.state.status === 'queued' ? this.begin(job) : this.engineFor(job)));
      await this.build(job, engine, budget);
    } catch (err) {
      if (err instanceof Halt) {
        if (err.reason === 'cancelled' && engine) await this.dropUnfinished(job, engine);
        if (err.reason === 'taken') this.deps.logger.warn({ jobId }, 'reindex job is being run by another worker');
        return;
      }
      const failure = err instanceof RetryBudgetSpent
        ? new DomainError('reindex-interrupted-too-long', `The engine or the database was away for longer than the retry budget: ${err.message}`, { lastError: describeError(err.lastError) })
        : err;
      if (!(failure instanceof DomainError)) this.deps.logger.error({ err, jobId, correlationId: job.metadata.correlationId }, 'reindex job failed');
      await this.fail(job, failure, engine);
    }
  }

  /** Takes a queued job up: the version it writes, the checkpoints it starts the indexer from (full), its totals. */
  private async begin(job: ReindexStream): Promise<SearchEngine> {
    const engine = this.deps.engine();
    const request = job.state.request!;
    let version: number;
    let replacesVersion: number | null;
    let checkpoints: Record<string, string> = {};
    if (request.mode === 'full') {
      checkpoints = await this.deps.builder.captureCheckpoints();
      ({ version, live: replacesVersion } = await this.deps.builder.nextVersion(engine));
      // A version another unfinished full job holds (one whose indices were deleted meanwhile) is not taken again.
      const held = await this.deps.knex('search_reindex_jobs').where({ mode: 'full', target: targetOf(engine) }).whereIn('state', ['running', 'paused'])
        .whereNot('job_id', job.state.jobId).max('version as max').first();
      version = Math.max(version, (held?.max ?? 0) + 1);
    } else {
      const live = await engine.liveVersion();
      if (live === null) throw new DomainError('search-index-missing', 'There is no live search version to reindex into yet (the indexer builds the first one); run a full reindex');
      version = live;
      replacesVersion = null;
    }
    const types = this.deps.builder.types.filter((t) => request.types === null || request.types.includes(t as SearchTypeName)) as SearchTypeName[];
    const totals: Partial<Record<SearchTypeName, number>> = {};
    for (const type of types) totals[type] = await this.deps.builder.count(type, request.projectIds);
    await job.apply({
      type: 'Start', engine: engine.engine, target: targetOf(engine), version, replacesVersion, checkpoints, totals, now: this.deps.clock().toISOString(),
    });
    if (request.mode === 'full') await engine.ensureVersion(version);
    return engine;
  }

  /**
   * The engine a started job writes to, checked: the same kind and index prefix as at its start,
   * and the version it writes still there (full) or still live (partial). Otherwise the job fails
   * rather than write to the wrong place.
   */
  private async engineFor(job: ReindexStream): Promise<SearchEngine> {
    const engine = this.deps.engine();
    const s = job.state;
    const changed = (why: string) => new DomainError('search-engine-changed', `The search engine changed while the job ran: ${why}; request the reindex again`, {
      engine: s.engine, target: s.target, version: s.version, now: { engine: engine.engine, target: targetOf(engine) },
    });
    if (engine.engine !== s.engine || targetOf(engine) !== s.target) throw changed(`${s.engine} ${s.target} is now ${engine.engine} ${targetOf(engine)}`);
    if (s.request!.mode === 'full') {
      if (!(await engine.versions()).includes(s.version!)) {
        if (Object.keys(s.progress).length > 0) throw changed(`version ${s.version} is not in the engine`);
        await engine.ensureVersion(s.version!); // started, nothing written yet: made again
      }
    } else if ((await engine.liveVersion()) !== s.version) {
      throw new DomainError('search-version-replaced', `Version ${s.version} is no longer live (a full reindex or rebuild replaced it, with every document); nothing left to do`, { version: s.version });
    }
    return engine;
  }

  private async build(job: ReindexStream, first: SearchEngine, budget: RetryBudget): Promise<void> {
    let engine = first;
    const request = job.state.request!;
    const version = job.state.version!;
    for (let type = currentType(job.state); type !== null; type = currentType(job.state)) {
      if (this.stopping) throw new Halt('stopping');
      const at = job.state.progress[type]?.afterId ?? 0;
      const batch = await this.retrying(budget, async () => {
        if (this.deps.engine() !== engine || request.mode === 'partial') engine = await this.engineFor(job);
        return this.deps.builder.writeBatch(engine, version, type, at, request.batchSize, { projectIds: request.projectIds, removals: request.mode === 'partial' });
      });
      const typeDone = batch.last || batch.lastId === null;
      await this.retrying(budget, () => job.apply({ type: 'Progress', reindexType: type, afterId: batch.lastId ?? at, documents: batch.documents, typeDone, now: this.deps.clock().toISOString() }));
    }
    if (this.stopping) throw new Halt('stopping');
    let dropped: number[] = [];
    if (request.mode === 'full') {
      dropped = await this.retrying(budget, async () => {
        engine = await this.engineFor(job);
        if ((await engine.liveVersion()) !== version) await this.verify(job, engine);
        return this.deps.builder.makeLive(engine, version, job.state.checkpoints);
      });
    }
    const completed = await this.retrying(budget, () => job.apply({ type: 'Complete', switched: request.mode === 'full', droppedVersions: dropped, now: this.deps.clock().toISOString() }));
    this.deps.logger.info({ jobId: job.state.jobId, mode: request.mode, version, dropped }, 'reindex job completed');
    if (completed) await readYourWrites(this.deps, completed).catch((err) => this.deps.logger.warn({ err }, 'the reindex job\'s completion is not in the read model yet'));
    if (request.repeatEveryMinutes !== null) await this.requestNext(job).catch((err) => this.deps.logger.warn({ err, jobId: job.state.jobId }, 'cannot request the next run yet; the next round does'));
  }

  /** Every document the job wrote is in its version, once: the version's count per type is what the job wrote. */
  private async verify(job: ReindexStream, engine: SearchEngine): Promise<void> {
    const version = job.state.version!;
    await engine.refresh(version);
    for (const type of job.state.types) {
      const written = job.state.progress[type]?.documents ?? 0;
      const found = await engine.count(version, type);
      if (found !== written) {
        throw new DomainError('reindex-verification-failed', `Version ${version} holds ${found} ${type} documents, the job wrote ${written}; the version is dropped, the live one kept`, { type, found, written, version });
      }
    }
  }

  /** A repeating job completed: the next run, at completion plus the interval (once: the read model shows it has one). */
  private async requestNext(job: ReindexStream): Promise<void> {
    const { request, jobId } = job.state;
    if (!request || request.repeatEveryMinutes === null || job.state.status !== 'completed') return;
    const next = await this.deps.ids.next(REINDEX_ID_CATEGORY, job.metadata);
    const now = this.deps.clock().getTime();
    const runAt = new Date(Math.max(job.completedAt + request.repeatEveryMinutes * 60_000, now + 1000)).toISOString();
    const { position } = await this.deps.store.append(reindexJobStream(next), reindexDecider.decide(
      { type: 'Request', jobId: next, request: { ...request, runAt, repeatOf: jobId }, now: new Date(now).toISOString() }, reindexDecider.initialState,
    ), { expectedRevision: 'no-stream', metadata: job.metadata });
    this.deps.logger.info({ jobId, next, runAt }, 'next run of a repeating reindex requested');
    await readYourWrites(this.deps, { position, streamId: reindexJobStream(next) });
  }

  /**
   * Runs `work` until it succeeds; a transient fault (engine or database away) is tried again after
   * a pause within the job's retry budget, which a success renews. A pause ends early on stop.
   */
  private async retrying<T>(budget: RetryBudget, work: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        const result = await work();
        budget.reset();
        return result;
      } catch (err) {
        if (!transient(err)) throw err;
        if (this.stopping) throw new Halt('stopping');
        const pause = budget.next();
        if (pause === null) throw new RetryBudgetSpent(err, budget);
        this.deps.logger.warn({ err, pauseMs: pause, failures: budget.failures }, 'reindex job interrupted (engine or database away); trying again');
        await this.pauses.sleep(pause);
      }
    }
  }

  /** Fails the job once, saying why; a full job's unfinished version is dropped. If even that cannot be written, the next round tries the job again. */
  private async fail(job: ReindexStream, err: unknown, engine: SearchEngine | null): Promise<void> {
    const { code, message, details } = err instanceof DomainError ? err
      : new DomainError('reindex-failed', `The reindex failed: ${describeError(err)}`, { correlationId: job.metadata.correlationId });
    try {
      const failed = await job.apply({ type: 'Fail', code, error: message.slice(0, 2000), details, now: this.deps.clock().toISOString() });
      this.deps.logger.warn({ jobId: job.state.jobId, code, error: message }, 'reindex job failed');
      // The job's own engine (the one it started on, even if another is in use now).
      if (engine) await this.dropUnfinished(job, engine);
      if (failed) await readYourWrites(this.deps, failed).catch(() => undefined);
    } catch (error) {
      if (error instanceof Halt) return;
      this.deps.logger.error({ err: error, jobId: job.state.jobId }, 'the reindex job could not be failed either; taken up again at the next round');
    }
  }

  /** A full job that will not complete: its version goes (never the live one). */
  private async dropUnfinished(job: ReindexStream, engine: SearchEngine): Promise<void> {
    const { version, request, started } = job.state;
    if (request?.mode !== 'full' || !started || version === null) return;
    try {
      if ((await engine.liveVersion()) === version || !(await engine.versions()).includes(version)) return;
      await engine.dropVersion(version);
      this.deps.logger.info({ jobId: job.state.jobId, version }, 'the unfinished version of a stopped full reindex dropped');
    } catch (err) {
      this.deps.logger.warn({ err, jobId: job.state.jobId, version }, 'cannot drop the unfinished version of a stopped full reindex; the next full reindex drops it');
    }
  }

  /** A full job cancelled while no worker ran it: its version is dropped, unless a later job writes that version number. */
  private async dropCancelledVersion(jobId: number, engine: SearchEngine): Promise<void> {
    const job = await ReindexStream.load(this.deps, jobId);
    if (job.state.status !== 'cancelled' || job.state.version === null || job.state.target !== targetOf(engine)) return;
    const reused = await this.deps.knex('search_reindex_jobs').where({ mode: 'full', version: job.state.version }).andWhere('job_id', '>', jobId).first('job_id');
    if (!reused) await this.dropUnfinished(job, engine);
  }
}

/** A job's stream: its state, and appends at the expected revision. */
class ReindexStream {
  private constructor(
    private readonly deps: ReindexDeps,
    public state: ReindexJobState,
    private revision: bigint | null,
    /** The requester as actor (via 'system'): the worker's events say whose job they are. */
    readonly metadata: EventMetadata,
    /** When the job completed (ms), if it did. */
    public completedAt: number,
  ) {}

  static async load(deps: ReindexDeps, jobId: number): Promise<ReindexStream> {
    const events = await deps.store.readStream(reindexJobStream(jobId));
    let state = reindexDecider.initialState;
    let completedAt = 0;
    for (const e of events) {
      state = reindexDecider.evolve(state, { type: e.type, data: e.data } as SearchReindexEvent);
      if (e.type === 'SearchReindexCompleted') completedAt = Date.parse((e.data as { completedAt: string }).completedAt);
    }
    const first: EventEnvelope | undefined = events[0];
    const last: EventEnvelope | undefined = events[events.length - 1];
    const metadata: EventMetadata = first
      ? { actor: { userId: first.metadata.actor.userId, via: 'system' }, correlationId: first.metadata.correlationId, causationId: first.id }
      : { actor: { userId: null, via: 'system' }, correlationId: `searchReindex-${jobId}`, causationId: null };
    return new ReindexStream(deps, state, last ? BigInt(last.revision) : null, metadata, completedAt);
  }

  /**
   * Decides and appends at the expected revision. Another writer in between (a pause, resume or
   * cancel from the API; another worker) makes this one read the stream again: paused, cancelled
   * or finished halts the job; a job still running whose cursor moved is another worker's.
   */
  async apply(cmd: ReindexCommand): Promise<{ position: string; streamId: string } | null> {
    for (;;) {
      const events = reindexDecider.decide(cmd, this.state);
      if (events.length === 0) return null;
      const streamId = reindexJobStream(this.state.jobId);
      try {
        const result = await this.deps.store.append(streamId, events, { expectedRevision: this.revision ?? 'no-stream', metadata: this.metadata });
        for (const e of events) {
          this.state = reindexDecider.evolve(this.state, e);
          if (e.type === 'SearchReindexCompleted') this.completedAt = Date.parse(e.data.completedAt);
        }
        this.revision = result.nextRevision;
        return { position: result.position, streamId };
      } catch (err) {
        if (!(err instanceof ConcurrencyError)) throw err;
        const before = this.state;
        const now = await ReindexStream.load(this.deps, this.state.jobId);
        this.state = now.state;
        this.revision = now.revision;
        if (cmd.type === 'Fail' && !isFinished(now.state)) continue;
        if (now.state.status === 'paused') throw new Halt('paused');
        if (now.state.status === 'cancelled') throw new Halt('cancelled');
        if (isFinished(now.state)) throw new Halt('finished');
        if (JSON.stringify(now.state.progress) !== JSON.stringify(before.progress) || now.state.status !== before.status) throw new Halt('taken');
      }
    }
  }
}

export type { ReindexRequest };
