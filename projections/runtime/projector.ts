import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import type { EventStore, Subscription } from '../../services/shared/eventStore';
import { RetryBudgetSpent, budgetOf, describeError, isTransient, type RetryBudget, type RetryPolicy } from '../../services/shared/faults';
import { Pauses } from '../../services/shared/pauses';
import { applyBatch } from './applyBatch';
import { inBatches } from './batches';
import { readCheckpoints } from './checkpoints';
import type { Projection } from './projection';

export interface ProjectionStatus {
  name: string;
  position: string;
  /**
   * running; failing: retrying transient failures (a database or event store away) within its
   * budget; failed: stopped for good (an event it cannot apply, an error that is not transient, or
   * a budget spent), until the process is restarted; stopped: ended by stop().
   */
  state: 'running' | 'failing' | 'failed' | 'stopped';
  lastError: string | null;
  /** When failed: the id its error-level log line carries (the culprit event's correlation id, when an event is the cause). */
  correlationId?: string;
}

export interface Projector {
  status(): ProjectionStatus[];
  stop(): Promise<void>;
}

const BATCH_SIZE = 1000;
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/**
 * The direct transport: each projection follows the event store's global log from its own
 * checkpoint, and never skips an event (the read model would silently diverge).
 *
 * Failures (services/shared/faults.ts): a transient one (the database or the event store away) is
 * retried with backoff (0.5 s doubling to 30 s) from the last position applied, the projection
 * reported `failing`, for at most the retry budget (RETRY_BUDGET_MS) from the first failure of the
 * run. Any other error while applying a batch is narrowed down event by event: the events before
 * the culprit land, the culprit is recorded once in projection_failures, and the projection stops
 * there (`failed`, logged once at error level). A budget spent, or a read of the store that fails
 * for good, also ends in `failed`. A failed projection stays stopped until the process restarts
 * (after the cause is fixed; `npm run rebuild` resolves the recorded failures); the others go on.
 * `onFailed` is told each time a projection fails.
 */
export function startProjector(deps: {
  store: EventStore; knex: Knex; projections: readonly Projection[]; logger: Logger; retry?: RetryPolicy; onFailed?: (status: ProjectionStatus) => void;
}): Projector {
  const { store, knex, logger } = deps;
  const states = new Map<string, ProjectionStatus>();
  const subscriptions = new Set<Subscription>();
  let stopping = false;
  const pauses = new Pauses();

  async function recordFailure(projection: Projection, event: EventEnvelope, error: unknown): Promise<void> {
    const known = await knex('projection_failures').where({ projection: projection.name, event_id: event.id }).first();
    if (!known) {
      await knex('projection_failures').insert({ projection: projection.name, position: event.position, event_id: event.id, event_type: event.type, reason: describeError(error) });
    }
  }

  const databaseAnswers = () => knex.raw('SELECT 1').then(() => true, () => false);

  /** Stops the projection for good: reported `failed`, logged once. */
  function fail(projection: Projection, error: unknown, event?: EventEnvelope): void {
    const status = states.get(projection.name)!;
    status.state = 'failed';
    status.lastError = describeError(error);
    status.correlationId = event?.metadata.correlationId ?? randomUUID();
    logger.error({
      err: error, projection: projection.name, position: status.position, correlationId: status.correlationId,
      ...(event && { eventPosition: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId }),
    }, event ? 'projection cannot apply an event; stopped at it until restarted' : 'projection failed; stopped until restarted');
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

  /** Applies a batch; false when the projection failed on it (or is stopping). */
  async function applyEvents(projection: Projection, budget: RetryBudget, events: EventEnvelope[]): Promise<boolean> {
    const status = states.get(projection.name)!;
    const applied = (position: bigint) => {
      status.position = position.toString();
      status.state = 'running';
      status.lastError = null;
      budget.reset();
    };
    retrying: while (!stopping) {
      try {
        applied(await applyBatch(knex, projection, events));
        return true;
      } catch (batchError) {
        if (isTransient(batchError)) {
          if (await pauseOrGiveUp(projection, budget, batchError, 'the database is away; applying the batch again after a pause')) continue;
          return false;
        }
      }
      // Apply one by one: everything before the culprit lands, the culprit is recorded.
      for (const event of events) {
        if (BigInt(event.position) <= BigInt(status.position)) continue;
        try {
          applied(await applyBatch(knex, projection, [event]));
        } catch (error) {
          // A database that does not answer is not this event's fault: nothing to record, applied again.
          if (isTransient(error) || !(await databaseAnswers())) {
            if (await pauseOrGiveUp(projection, budget, error, 'the database is away; applying again after a pause')) continue retrying;
            return false;
          }
          try {
            await recordFailure(projection, event, error);
          } catch (recordError) {
            if (isTransient(recordError)) {
              if (await pauseOrGiveUp(projection, budget, recordError, 'cannot record the failure; trying the event again after a pause')) continue retrying;
              return false;
            }
            logger.error({ err: recordError, projection: projection.name }, 'cannot record projection failure');
          }
          fail(projection, error, event);
          return false;
        }
      }
      return true;
    }
    return false;
  }

  /**
   * Follows the log from the projection's position. A read that fails transiently (the database
   * restarted or cut the connection) is retried within the budget: once the event store answers
   * again the projection follows on from the last position applied.
   */
  async function run(projection: Projection): Promise<void> {
    const status = states.get(projection.name)!;
    const budget = budgetOf(deps.retry, { firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
    while (!stopping) {
      const subscription = store.subscribeToAll({ after: status.position, shallow: projection.shallow });
      subscriptions.add(subscription);
      let readError: unknown;
      try {
        for await (const batch of inBatches(subscription, BATCH_SIZE)) {
          if (stopping || !(await applyEvents(projection, budget, batch))) return;
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
