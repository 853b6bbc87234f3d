import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import type { EventStore, Subscription } from '../../services/shared/eventStore';
import { LIVE_RETRY_MAX_MS, RetryBudgetSpent, budgetOf, describeError, isTransient, type RetryBudget, type RetryPolicy } from '../../services/shared/faults';
import { Pauses } from '../../services/shared/pauses';
import { applyBatch } from './applyBatch';
import { applyIsolating, ParkedStreams, parkingOf, triesError } from './parking';
import { inBatches } from './batches';
import { readCheckpoints } from './checkpoints';
import type { Projection } from './projection';

export interface ProjectionStatus {
  name: string;
  position: string;
  /**
   * running (events it cannot apply are parked, and it goes on: /readyz then says `degraded`);
   * failing: retrying transient failures (a database or event store away) within its budget;
   * failed: stopped for good (a budget spent, a read of the store that fails for good, a bug in the
   * loop: never an event), until the process is restarted; stopped: ended by stop().
   */
  state: 'running' | 'failing' | 'failed' | 'stopped';
  lastError: string | null;
  /** When failed: the id its error-level log line carries. */
  correlationId?: string;
}

export interface Projector {
  status(): ProjectionStatus[];
  stop(): Promise<void>;
}

const BATCH_SIZE = 1000;
/**
 * Under a steady stream of writes a projection reads and applies at most one batch per this
 * period: it waits out the rest of it before reading on, so what arrives meanwhile is applied in
 * one batch (one read, one transaction) instead of many small ones.
 * Measured (bench/README.md, "The live projector"): at ~650 events/s on the direct transport,
 * p50 lag 424 → 229 ms and p99 759 → 542 ms (medians of three rounds).
 */
const LIVE_PERIOD_MS = 50;
/** ...after a batch of at least this many events: fewer is a quiet log, or writes that each wait for their own (a command's few events), applied at once. */
const LIVE_BATCH_MIN = 20;
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = LIVE_RETRY_MAX_MS;

/**
 * The direct transport: each projection follows the event store's global log from its own
 * checkpoint, and never skips an event silently.
 *
 * Failures (services/shared/faults.ts): a transient one (the database or the event store away) is
 * retried with backoff (0.5 s doubling to 30 s) from the last position applied, the projection
 * reported `failing`, for at most the retry budget (RETRY_BUDGET_MS) from the first failure of the
 * run. Any other error while applying a batch is narrowed down by halving the batch: the event at
 * fault is tried MAX_TRIES times, then parked with the later events of its stream
 * (projections/runtime/parking.ts), logged once at error level with its correlation id, and
 * `onParked` told; every other event is applied. A budget spent, or a read of the store that fails
 * for good, ends in `failed`: stopped until the process restarts; the others go on. `onFailed` is
 * told each time a projection fails.
 */
export function startProjector(deps: {
  store: EventStore; knex: Knex; projections: readonly Projection[]; logger: Logger; retry?: RetryPolicy; onFailed?: (status: ProjectionStatus) => void;
  /** Told after an event was parked (committed). */
  onParked?: (projection: string, event: EventEnvelope) => void;
}): Projector {
  const { store, knex, logger } = deps;
  const states = new Map<string, ProjectionStatus>();
  const subscriptions = new Set<Subscription>();
  let stopping = false;
  const pauses = new Pauses();

  const databaseAnswers = () => knex.raw('SELECT 1').then(() => true, () => false);

  /** Stops the projection for good: reported `failed`, logged once. */
  function fail(projection: Projection, error: unknown): void {
    const status = states.get(projection.name)!;
    status.state = 'failed';
    status.lastError = describeError(error);
    status.correlationId = randomUUID();
    logger.error({ err: error, projection: projection.name, position: status.position, correlationId: status.correlationId }, 'projection failed; stopped until restarted');
    deps.onFailed?.({ ...status });
  }

  /**
   * After a transient failure: reported failing, then a pause; false (and the projection failed)
   * when the budget is spent or the projector stops meanwhile.
   */
  async function pauseOrGiveUp(projection: Projection, budget: RetryBudget, error: unknown, message: string): Promise<boolean> {
    const status = states.get(projection.name)!;
    status.state = 'failing';
    status.lastError = describeError(error);
    const pause = budget.next();
    if (pause === null) {
      fail(projection, new RetryBudgetSpent(error, budget));
      return false;
    }
    logger.warn({ err: error, projection: projection.name, position: status.position, backoffMs: pause, failures: budget.failures }, message);
    await pauses.sleep(pause);
    return !stopping;
  }

  /**
   * Applies a batch; an event that fails for a reason that is not transient is parked after its
   * tries (projections/runtime/parking.ts) and the rest applied. False when the projection failed
   * (a budget spent) or is stopping.
   */
  async function applyEvents(projection: Projection, budget: RetryBudget, events: EventEnvelope[], streams: ParkedStreams): Promise<boolean> {
    const status = states.get(projection.name)!;
    const applied = (position: bigint) => {
      if (position > BigInt(status.position)) status.position = position.toString();
      status.state = 'running';
      status.lastError = null;
      budget.reset();
    };
    return applyIsolating(events, {
      attempt: async (batch) => applied(await applyBatch(knex, projection, batch, projection.name, { streams })),
      // A database that does not answer is not the event's fault: nothing parked, applied again.
      transient: async (error) => stopping || isTransient(error) || !(await databaseAnswers()),
      pauseAfter: async (error) => !stopping && pauseOrGiveUp(projection, budget, error, 'the database is away; applying the batch again after a pause'),
      pause: async (ms) => (await pauses.sleep(ms), !stopping),
      park: async (event, tries) => {
        applied(await applyBatch(knex, projection, [], projection.name, {
          streams, park: [parkingOf(event, 'failed', triesError(tries), tries)], through: BigInt(event.position),
        }));
        streams.add(projection.name, event.streamId, event.position);
        logger.error({
          err: tries.error, projection: projection.name, correlationId: event.metadata.correlationId, attempts: tries.attempts,
          eventPosition: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId,
        }, 'projection cannot apply an event: parked it (and the later events of its stream) and went on');
        deps.onParked?.(projection.name, event);
      },
    });
  }

  /**
   * Follows the log from the projection's position. A read that fails transiently (the database
   * restarted or cut the connection) is retried within the budget: once the event store answers
   * again the projection follows on from the last position applied.
   */
  async function run(projection: Projection): Promise<void> {
    const status = states.get(projection.name)!;
    const budget = budgetOf(deps.retry, { firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
    const streams = new ParkedStreams(projection.name);
    while (!stopping) {
      const subscription = store.subscribeToAll({ after: status.position, shallow: projection.shallow });
      subscriptions.add(subscription);
      let readError: unknown;
      try {
        for await (const batch of inBatches(subscription, BATCH_SIZE)) {
          const started = performance.now();
          if (stopping || !(await applyEvents(projection, budget, batch, streams))) return;
          const rest = LIVE_PERIOD_MS - (performance.now() - started);
          if (batch.length >= LIVE_BATCH_MIN && batch.length < BATCH_SIZE && rest > 0) await pauses.sleep(rest);
        }
        return;
      } catch (error) {
        if (stopping) return;
        readError = error;
      } finally {
        subscriptions.delete(subscription);
        await subscription.close();
      }
      if (!isTransient(readError)) return fail(projection, readError);
      if (!(await pauseOrGiveUp(projection, budget, readError, 'cannot read the event store; following it again after a pause'))) return;
      // Running again as soon as the store answers, not only when the next event comes.
      if (await store.headPosition().then(() => true, () => false)) {
        status.state = 'running';
        status.lastError = null;
        budget.reset();
      }
    }
  }

  /** The checkpoints, read within the budget (the database may be starting with us). */
  async function readPositions(): Promise<Map<string, bigint> | null> {
    const budget = budgetOf(deps.retry, { firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
    while (!stopping) {
      try {
        return await readCheckpoints(knex);
      } catch (error) {
        if (!isTransient(error)) {
          deps.projections.forEach((p) => fail(p, error));
          return null;
        }
        for (const p of deps.projections) Object.assign(states.get(p.name)!, { state: 'failing', lastError: describeError(error) });
        const pause = budget.next();
        if (pause === null) {
          deps.projections.forEach((p) => fail(p, new RetryBudgetSpent(error, budget)));
          return null;
        }
        logger.warn({ err: error, backoffMs: pause }, 'cannot read the checkpoints; trying again after a pause');
        await pauses.sleep(pause);
      }
    }
    return null;
  }

  for (const projection of deps.projections) states.set(projection.name, { name: projection.name, position: '0', state: 'running', lastError: null });
  const started = (async () => {
    const checkpoints = await readPositions();
    if (!checkpoints) return;
    return Promise.all(
      deps.projections.map((projection) => {
        states.get(projection.name)!.position = (checkpoints.get(projection.name) ?? 0n).toString();
        return run(projection).catch((error) => {
          // A bug in the loop itself: it ends, and says so.
          if (!stopping) fail(projection, error);
        });
      }),
    );
  })();

  return {
    status: () => [...states.values()].map((s) => ({ ...s })),
    async stop() {
      stopping = true;
      pauses.close();
      await Promise.all([...subscriptions].map((s) => s.close()));
      await started.catch(() => undefined);
      for (const status of states.values()) if (status.state !== 'failed') status.state = 'stopped';
    },
  };
}
