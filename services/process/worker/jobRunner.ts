import type { Logger } from 'pino';
import { describeError } from '../../shared/faults';
import { newLeaseOwner, type JobLeases } from '../../shared/jobLeases';

/**
 * The worker role's runner of background jobs (result imports, the external-tool migration): any
 * number of workers poll the same jobs, and a job runs where its lease was taken (JobLeases), so
 * it runs once however many workers there are. The lease is renewed every third of its TTL while
 * the job runs; a worker that dies stops renewing, and another takes the job over once the lease
 * has expired. A job must therefore be resumable: it may be started again where another worker
 * left it, or after it finished.
 */

/** One kind of job the runner takes. */
export interface JobKind {
  /** The lease namespace, e.g. 'externalImport', 'resultImport'. */
  kind: string;
  /** Jobs that should run now (unfinished per the read model), oldest first. */
  candidates(): Promise<number[]>;
  /**
   * Runs the job to its end (or until signal aborts: lease lost or the runner stops; its reason is
   * a JobAborted). Must be resumable: another worker may have run part of it, or all of it since
   * candidates() listed it (answer at once then). An error is logged; failing the job is run's own
   * business.
   */
  run(jobId: number, signal: AbortSignal): Promise<void>;
}

export interface JobRunnerOptions {
  /** Who takes the leases; default `<host>:<pid>:<random>` (newLeaseOwner). */
  owner?: string;
  leases: JobLeases;
  kinds: JobKind[];
  /** Jobs running at once in this runner, all kinds together. */
  concurrency: number;
  /** Pause between polls for candidates (wake() polls at once). */
  pollMs: number;
  /** How long a lease lasts unless renewed; renewed every third of it. */
  leaseTtlMs: number;
  logger: Logger;
  /** After a job threw, this runner leaves it for firstMs, doubling per failure up to maxMs (default 5 s, 5 min). */
  errorBackoff?: { firstMs: number; maxMs: number };
}

/** Why a job's signal aborted. */
export class JobAborted extends Error {
  constructor(readonly code: 'job-lease-lost' | 'job-runner-stopping', message: string) {
    super(message);
    this.name = 'JobAborted';
  }
}

export interface RunningJobStatus {
  kind: string;
  jobId: number;
  startedAt: string;
  /** When the last renewal that succeeded was sent. */
  renewedAt: string;
  /** The lease was lost (taken by another, or not renewed in time): the job was told to stop. */
  aborted: boolean;
}

export interface JobRunnerStatus {
  owner: string;
  state: 'running' | 'stopping' | 'stopped';
  running: RunningJobStatus[];
  /** Jobs that threw, left alone by this runner until `until`. */
  backingOff: { kind: string; jobId: number; failures: number; until: string }[];
  /** The last failure of a poll (candidates or acquire), null once one succeeds. */
  lastError: string | null;
}

export interface JobRunner {
  status(): JobRunnerStatus;
  /** Polls now (a job was just requested). */
  wake(): void;
  /** Stops polling, aborts every job, waits for them to settle and releases their leases. */
  stop(): Promise<void>;
}

export const ERROR_BACKOFF_DEFAULTS = { firstMs: 5_000, maxMs: 300_000 } as const;

interface RunningJob {
  kind: string;
  jobId: number;
  startedAt: Date;
  /** When the last successful renewal (or the acquire) was sent: the lease lasts at least ttl from then. */
  renewedAt: number;
  controller: AbortController;
  renewTimer: NodeJS.Timeout;
  /** The renewal in flight (it never rejects), awaited before the release so that it cannot land after it. */
  renewal: Promise<void> | null;
  ended: boolean;
  done: Promise<void>;
}

interface Backoff { failures: number; until: number }

const keyOf = (kind: string, jobId: number) => `${kind}\u0000${jobId}`;

/** The next delay after `failures` failures in a row: firstMs, doubling, capped at maxMs. */
export function backoffDelay(failures: number, backoff: { firstMs: number; maxMs: number }): number {
  return Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.min(failures - 1, 30));
}

/** Candidates of all kinds, taken in turn (first of each, then second of each...): one busy kind does not starve the others. */
export function interleave<T>(lists: T[][]): T[] {
  const out: T[] = [];
  for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) out.push(l[i]);
  return out;
}

/**
 * Polls at once and then every pollMs (sooner on wake() and when a job ends) until stopped; its
 * timers keep the process alive meanwhile. A poll asks every kind for its candidates and takes the
 * leases it can, up to `concurrency` jobs running here. When a job ends, however it ends, its lease
 * is released.
 */
export function startJobRunner(opts: JobRunnerOptions): JobRunner {
  const owner = opts.owner ?? newLeaseOwner();
  const { leases, kinds, concurrency, pollMs, leaseTtlMs } = opts;
  if (!(concurrency >= 1 && pollMs >= 0 && leaseTtlMs > 0)) throw new RangeError(`job runner needs concurrency ≥ 1, pollMs ≥ 0 and leaseTtlMs > 0 (got ${concurrency}, ${pollMs}, ${leaseTtlMs})`);
  if (new Set(kinds.map((k) => k.kind)).size !== kinds.length) throw new RangeError('job kinds must have distinct names');
  const errorBackoff = opts.errorBackoff ?? ERROR_BACKOFF_DEFAULTS;
  const renewEveryMs = Math.max(1, Math.floor(leaseTtlMs / 3));
  const log = opts.logger.child({ jobRunner: owner });
  const running = new Map<string, RunningJob>();
  const backingOff = new Map<string, Backoff>();
  let state: JobRunnerStatus['state'] = 'running';
  let lastError: string | null = null;
  let timer: NodeJS.Timeout | null = null;
  let polling: Promise<void> | null = null;
  let pollAgain = false;

  const schedule = (ms: number) => {
    if (state !== 'running') return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      polling = poll().finally(() => {
        polling = null;
        if (pollAgain) {
          pollAgain = false;
          schedule(0);
        } else {
          schedule(pollMs);
        }
      });
    }, ms);
  };

  const wake = () => {
    if (state !== 'running') return;
    if (polling) pollAgain = true;
    else schedule(0);
  };

  async function poll(): Promise<void> {
    if (running.size >= concurrency) return;
    try {
      // One kind whose read model cannot be read does not hold up the others.
      const listed = await Promise.allSettled(kinds.map(async (k) => (await k.candidates()).map((jobId) => ({ kind: k, jobId }))));
      const lists = listed.map((l) => (l.status === 'fulfilled' ? l.value : []));
      forgetBackoffsOfFinishedJobs(lists.flat().map((c) => keyOf(c.kind.kind, c.jobId)));
      for (const { kind, jobId } of interleave(lists)) {
        if (state !== 'running' || running.size >= concurrency) break;
        const key = keyOf(kind.kind, jobId);
        if (running.has(key) || (backingOff.get(key)?.until ?? 0) > Date.now()) continue;
        const sentAt = Date.now();
        if (!(await leases.acquire(kind.kind, jobId, owner, leaseTtlMs))) continue;
        // stop() came while the lease was being taken: give it back instead of starting.
        if (state !== 'running') {
          await leases.release(kind.kind, jobId, owner);
          break;
        }
        start(kind, jobId, sentAt);
      }
      const failed = listed.find((l) => l.status === 'rejected');
      if (failed) throw failed.reason;
      if (lastError !== null) log.info('job runner polls again');
      lastError = null;
    } catch (err) {
      // The database away: logged once per run of failures, and the next poll tries again.
      if (lastError === null) log.warn({ err }, 'job runner cannot poll for jobs; retrying every poll');
      lastError = describeError(err);
    }
  }

  /** Entries of jobs no longer listed (finished, or failed by their saga) are dropped, so the map stays as small as the failing jobs. */
  function forgetBackoffsOfFinishedJobs(listed: string[]): void {
    const still = new Set(listed);
    for (const [key, b] of backingOff) if (!still.has(key) && b.until <= Date.now()) backingOff.delete(key);
  }

  function start(kind: JobKind, jobId: number, acquiredAt: number): void {
    const key = keyOf(kind.kind, jobId);
    const controller = new AbortController();
    const job: RunningJob = {
      kind: kind.kind, jobId, startedAt: new Date(), renewedAt: acquiredAt, controller, renewal: null, ended: false,
      renewTimer: setInterval(() => renewOrGiveUp(job), renewEveryMs),
      done: Promise.resolve(),
    };
    running.set(key, job);
    log.info({ kind: kind.kind, jobId }, 'job started');
    job.done = (async () => {
      try {
        await kind.run(jobId, controller.signal);
        backingOff.delete(key);
        log.info({ kind: kind.kind, jobId, aborted: controller.signal.aborted }, controller.signal.aborted ? 'job stopped' : 'job finished');
      } catch (err) {
        if (controller.signal.aborted) {
          log.info({ kind: kind.kind, jobId, reason: (controller.signal.reason as JobAborted).code, err }, 'job stopped');
        } else {
          const failures = (backingOff.get(key)?.failures ?? 0) + 1;
          const delayMs = backoffDelay(failures, errorBackoff);
          backingOff.set(key, { failures, until: Date.now() + delayMs });
          log.error({ kind: kind.kind, jobId, err, failures, retryAfterMs: delayMs }, 'job failed; this runner leaves it alone for a while');
        }
      } finally {
        job.ended = true;
        clearInterval(job.renewTimer);
        if (job.renewal) {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([job.renewal, new Promise((r) => (timer = setTimeout(r, leaseTtlMs)))]);
          clearTimeout(timer);
        }
        // Only deletes the lease if it is still ours: one taken over by another worker stays theirs.
        await leases.release(kind.kind, jobId, owner).catch((err) => log.warn({ kind: kind.kind, jobId, err }, 'cannot release a job lease; it expires'));
        running.delete(key);
        wake();
      }
    })();
  }

  /** The lease may expire before the next tick: stop the job now rather than let another worker run it too. */
  const expiresBeforeNextTick = (job: RunningJob) => Date.now() + renewEveryMs >= job.renewedAt + leaseTtlMs;

  function renewOrGiveUp(job: RunningJob): void {
    if (job.controller.signal.aborted || job.ended) return;
    // A renewal that hangs (a connection that no longer answers) counts as failing.
    if (job.renewal) {
      if (expiresBeforeNextTick(job)) lose(job, 'the job lease could not be renewed before it expires: the renewal does not answer');
      return;
    }
    job.renewal = renew(job).finally(() => (job.renewal = null));
  }

  async function renew(job: RunningJob): Promise<void> {
    const sentAt = Date.now();
    try {
      if (await leases.renew(job.kind, job.jobId, owner, leaseTtlMs)) {
        job.renewedAt = sentAt;
      } else {
        lose(job, 'the job lease was taken by another worker');
      }
    } catch (err) {
      if (expiresBeforeNextTick(job)) lose(job, `the job lease could not be renewed before it expires: ${describeError(err)}`);
      else log.warn({ kind: job.kind, jobId: job.jobId, err }, 'cannot renew a job lease; trying again');
    }
  }

  function lose(job: RunningJob, message: string): void {
    if (job.controller.signal.aborted || job.ended) return;
    log.warn({ kind: job.kind, jobId: job.jobId }, `${message}; stopping the job here`);
    job.controller.abort(new JobAborted('job-lease-lost', message));
  }

  schedule(0);
  return {
    status: () => ({
      owner,
      state,
      running: [...running.values()].map((j) => ({
        kind: j.kind, jobId: j.jobId, startedAt: j.startedAt.toISOString(), renewedAt: new Date(j.renewedAt).toISOString(), aborted: j.controller.signal.aborted,
      })),
      backingOff: [...backingOff].map(([key, b]) => {
        const [kind, jobId] = key.split('\u0000');
        return { kind, jobId: Number(jobId), failures: b.failures, until: new Date(b.until).toISOString() };
      }),
      lastError,
    }),
    wake,
    async stop() {
      if (state !== 'running') {
        while (running.size > 0) await Promise.allSettled([...running.values()].map((j) => j.done));
        return;
      }
      state = 'stopping';
      if (timer) clearTimeout(timer);
      await polling;
      const jobs = [...running.values()];
      for (const j of jobs) if (!j.controller.signal.aborted) j.controller.abort(new JobAborted('job-runner-stopping', 'the job runner is stopping'));
      await Promise.allSettled(jobs.map((j) => j.done));
      state = 'stopped';
    },
  };
}
