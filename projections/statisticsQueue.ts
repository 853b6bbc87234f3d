import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type pg from 'pg';
import type { Logger } from 'pino';
import { listenOn } from '../infra/postgres/listen';
import { describeError, isTransient, retryBudget } from '../services/shared/faults';
import type { ProjectionStatus } from './runtime/projector';
import { refreshStatistics, type Touched, touchedNothing } from './statistics';

/**
 * The statistics (projections/statistics.ts) of the live read model are counted after the batch
 * that touched them, not in its transaction: the batch writes what it touched to
 * `statistics_pending`, and a worker (one per process that runs the projector; their passes never
 * overlap) counts everything waiting in one pass and deletes it in the same transaction. A large
 * result import's batches thus commit without waiting for the statistics of what they wrote, and
 * its cases are counted once per pass instead of once per batch.
 *
 * Readers are never shown statistics behind what they can read: a model API read of a statistics
 * entity first waits until what was waiting when it arrived has been counted
 * (services/model/statisticsCounted.ts),
 * as a command waits for its own writes. A rebuild counts in its own transaction, as before.
 *
 * A pass runs in a REPEATABLE READ transaction: the rows it counts and the pending rows it takes
 * are of one snapshot, so a run case a later batch wrote is never counted in a run's full recount
 * and again when that batch's row is counted (run totals are added to, not only recounted).
 */

/** Touched, as JSON. */
interface QueuedTouched {
  runs: number[]; runTotals: number[]; runCases: number[]; results: number[]; jobs: number[]; freshCases: number[];
  caseVersions: { projectId: number; day: string; created: number; changed: number }[];
  importedRunCases: [number, number[]][];
}

function isNothing(t: Touched): boolean {
  return t.runs.size + t.runTotals.size + t.runCases.size + t.results.size + t.jobs.size + t.caseVersions.size + t.importedRunCases.size === 0;
}

/** Queues what a batch touched, in the batch's transaction (nothing when it touched nothing counted). */
export async function queueStatistics(trx: Knex.Transaction, touched: Touched): Promise<void> {
  if (isNothing(touched)) return;
  const queued: QueuedTouched = {
    runs: [...touched.runs], runTotals: [...touched.runTotals], runCases: [...touched.runCases], results: [...touched.results],
    jobs: [...touched.jobs], freshCases: [...touched.freshCases], caseVersions: [...touched.caseVersions.values()],
    importedRunCases: [...touched.importedRunCases].map(([run, ids]) => [run, [...ids]]),
  };
  await trx.raw('INSERT INTO statistics_pending (touched) VALUES (?::jsonb)', [JSON.stringify(queued)]);
  // Wakes this process's worker once the batch commits; others poll (STATISTICS_POLL_MS).
  (trx as unknown as { executionPromise?: Promise<unknown> }).executionPromise?.then(wakeWorkers, () => undefined);
}

/** What several batches touched, as one. */
export function mergeTouched(list: readonly QueuedTouched[]): Touched {
  const t = touchedNothing();
  for (const q of list) {
    for (const key of ['runs', 'runTotals', 'runCases', 'results', 'jobs', 'freshCases'] as const) for (const id of q[key]) t[key].add(id);
    for (const v of q.caseVersions) {
      const key = `${v.projectId}|${v.day}`;
      const counts = t.caseVersions.get(key);
      if (counts) {
        counts.created += v.created;
        counts.changed += v.changed;
      } else t.caseVersions.set(key, { ...v });
    }
    for (const [run, ids] of q.importedRunCases) {
      const set = t.importedRunCases.get(run);
      if (set) for (const id of ids) set.add(id);
      else t.importedRunCases.set(run, new Set(ids));
    }
  }
  return t;
}

/**
 * Counts everything waiting (not failed) in one transaction, and deletes it there; answers how
 * many rows it counted. Two passes at once (two processes) meet on the pending rows' locks: the
 * later one fails with a serialization failure (transient) and is tried again. A failure is
 * thrown as a CountingFailed naming the rows of the pass.
 */
export async function countPendingStatistics(knex: Knex, onCounted?: (lastId: string) => void): Promise<number> {
  let ids: string[] = [];
  try {
    return await knex.transaction(async (trx) => {
      const { rows } = await trx.raw('SELECT id, touched FROM statistics_pending WHERE failed_at IS NULL ORDER BY id FOR UPDATE');
      ids = rows.map((r: { id: string }) => String(r.id));
      if (rows.length === 0) return 0;
      await refreshStatistics(trx, mergeTouched(rows.map((r: { touched: QueuedTouched }) => r.touched)));
      await trx.raw('DELETE FROM statistics_pending WHERE id = ANY(?::bigint[])', [ids]);
      return rows.length;
    }, { isolationLevel: 'repeatable read' }).then((counted) => {
      if (counted > 0) onCounted?.(ids[ids.length - 1]);
      return counted;
    });
  } catch (error) {
    throw new CountingFailed(error, ids);
  }
}

/** A pass that failed, with the pending rows it was counting (none when it failed before reading them). */
export class CountingFailed extends Error {
  constructor(override readonly cause: unknown, readonly pendingIds: readonly string[]) {
    super(describeError(cause));
    this.name = 'CountingFailed';
  }
}

/** Marks the rows of a failed pass as failed (an error that is not transient: it would fail the same way again). */
async function failPending(knex: Knex, ids: readonly string[], error: string, correlationId: string): Promise<number> {
  const { rowCount } = await knex.raw('UPDATE statistics_pending SET failed_at = now(), error = ?, correlation_id = ? WHERE id = ANY(?::bigint[])',
    [error.slice(0, 2000), correlationId, [...ids]]);
  return rowCount ?? 0;
}

/** How often a worker looks for rows another process queued. */
export const STATISTICS_POLL_MS = 200;
/** Batches that keep coming are counted once none has come for this long... */
export const STATISTICS_QUIET_MS = 1_000;
/** ...or once the oldest has waited this long, or at once when a reader asks. */
export const STATISTICS_MAX_WAIT_MS = 20_000;
/** The channel on which a reader of statistics asks the workers to count what waits. */
export const STATISTICS_WANTED = 'statistics_wanted';
const workers = new Set<() => void>();
function wakeWorkers(): void {
  for (const wake of workers) wake();
}

export interface StatisticsWorker {
  /** The worker as a projection's status: `readModel.statistics`; its position is the last waiting row it counted (statistics_pending.id). */
  status(): ProjectionStatus;
  stop(): Promise<void>;
}

export const STATISTICS_WORKER = 'readModel.statistics';

/**
 * Counts what waits, as soon as a batch of this process commits, or within STATISTICS_POLL_MS of
 * another's. A transient failure (the database away) is retried within `budgetMs`, then the worker
 * fails (until restart). An error that is not transient fails the rows of its pass, once: they
 * are kept with the error and a correlation id (logged), no longer waited for by readers, and the
 * worker goes on with what comes after; a rebuild of the read model counts everything again. One
 * that comes before any row was read (the database dropped), or while marking the rows, fails the
 * worker (`onFailed`).
 */
export function startStatisticsWorker(deps: {
  knex: Knex; logger: Logger; budgetMs: number; onFailed?: (status: ProjectionStatus) => void;
  /** The database's URL, for the connection that hears readers ask (without it: readers wait up to maxWaitMs). */
  databaseUrl?: string;
  pollMs?: number; quietMs?: number; maxWaitMs?: number;
}): StatisticsWorker {
  const log = deps.logger.child({ role: STATISTICS_WORKER });
  const state: ProjectionStatus = { name: STATISTICS_WORKER, position: '0', state: 'running', lastError: null };
  let stopping = false;
  let wake: (() => void) | null = null;
  let again = false;
  let lastHead: string | null = null;
  let headSince = 0;
  let wanted = false;
  const quietMs = deps.quietMs ?? STATISTICS_QUIET_MS;
  const maxWaitMs = deps.maxWaitMs ?? STATISTICS_MAX_WAIT_MS;
  // Readers waiting for the statistics say so (statisticsCounted: NOTIFY statistics_wanted).
  let listener: pg.Client | null = null;
  const listen = async () => {
    if (listener || !deps.databaseUrl) return;
    try {
      listener = await listenOn(deps.databaseUrl, STATISTICS_WANTED, {
        onNotification: () => {
          wanted = true;
          wakeUp();
        },
        onLost: (client) => {
          if (listener === client) listener = null;
          void client.end().catch(() => undefined);
        },
      });
    } catch (error) {
      // Readers still get their statistics within maxWaitMs; the next pass tries again.
      log.warn({ err: error }, 'statistics worker: cannot LISTEN for readers; counting on its own schedule');
    }
  };
  const wakeUp = () => {
    again = true;
    wake?.();
  };
  workers.add(wakeUp);
  const budget = retryBudget({ firstMs: 200, maxMs: 5_000, budgetMs: deps.budgetMs });
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      wake = null;
      resolve();
    }, ms);
    wake = () => {
      clearTimeout(timer);
      wake = null;
      resolve();
    };
  });

  const loop = (async () => {
    while (!stopping) {
      again = false;
      try {
        await listen();
        // While batches keep coming (a result import), they are counted once they pause, unless a
        // reader asks for them or the oldest has waited long enough.
        const { rows: [head] } = await deps.knex.raw(`SELECT max(id)::text AS id, extract(epoch FROM now() - min(queued_at)) * 1000 AS age
          FROM statistics_pending WHERE failed_at IS NULL`);
        // Nothing waits: no pass. (A pass here would also count a batch committed after this read
        // at once, without its pause.)
        if (head.id === null) {
          lastHead = null;
          wanted = false;
          if (!again) await pause(deps.pollMs ?? STATISTICS_POLL_MS);
          continue;
        }
        // Quiet: the newest waiting row is the one seen quietMs ago (an early wake-up is no pause).
        if (head.id !== lastHead) [lastHead, headSince] = [head.id, Date.now()];
        const quietFor = Date.now() - headSince;
        if (!wanted && head.age < maxWaitMs && quietFor < quietMs) {
          await pause(quietMs - quietFor);
          continue;
        }
        lastHead = null;
        wanted = false;
        const counted = await countPendingStatistics(deps.knex, (lastId) => void (state.position = lastId));
        budget.reset();
        if (state.state === 'failing') Object.assign(state, { state: 'running', lastError: null });
        if (counted > 0 || again) continue;
        await pause(deps.pollMs ?? STATISTICS_POLL_MS);
      } catch (error) {
        if (stopping) break;
        if (isTransient(error)) {
          const wait = budget.next();
          if (wait === null) {
            const correlationId = randomUUID();
            log.error({ err: error, correlationId }, 'statistics worker: the database stayed away longer than its budget; stopped until restarted');
            Object.assign(state, { state: 'failed', lastError: describeError(error), correlationId });
            deps.onFailed?.({ ...state });
            return;
          }
          Object.assign(state, { state: 'failing', lastError: describeError(error) });
          await pause(wait);
          continue;
        }
        const correlationId = randomUUID();
        const ids = error instanceof CountingFailed ? error.pendingIds : [];
        const giveUp = (reason: unknown) => {
          log.error({ err: reason, correlationId }, 'statistics worker: failed; stopped until restarted');
          Object.assign(state, { state: 'failed', lastError: describeError(reason), correlationId });
          deps.onFailed?.({ ...state });
        };
        // Failed before it read the rows waiting (the database dropped, the table gone): no row is to blame.
        if (ids.length === 0) return giveUp(error);
        log.error({ err: error, correlationId, rows: ids.length }, 'statistics worker: counting failed; the rows waiting are kept as failed, and not counted');
        try {
          const failed = await failPending(deps.knex, ids, describeError(error), correlationId);
          Object.assign(state, { lastError: `${failed} waiting row(s) failed: ${describeError(error)}`, correlationId });
        } catch (markError) {
          return giveUp(markError);
        }
      }
    }
  })();

  return {
    status: () => ({ ...state }),
    async stop() {
      stopping = true;
      workers.delete(wakeUp);
      wake?.();
      await loop;
      await listener?.end().catch(() => undefined);
      listener = null;
      if (state.state !== 'failed') state.state = 'stopped';
    },
  };
}
