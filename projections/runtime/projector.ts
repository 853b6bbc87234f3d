import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import type { EventStore, Subscription } from '../../services/shared/eventStore';
import { applyBatch } from './applyBatch';
import { inBatches } from './batches';
import { readCheckpoints } from './checkpoints';
import type { Projection } from './projection';

export interface ProjectionStatus {
  name: string;
  position: string;
  state: 'running' | 'failing' | 'stopped';
  lastError: string | null;
}

export interface Projector {
  status(): ProjectionStatus[];
  stop(): Promise<void>;
}

const BATCH_SIZE = 1000;
const MAX_BACKOFF_MS = 30_000;

/**
 * The direct transport: each projection follows the event store's global log from its own
 * checkpoint. A batch that cannot be applied is retried event by event to find the culprit; that
 * event is recorded in projection_failures, reported by /readyz and the logs, and retried with
 * backoff: the read model never skips an event, it stops and says so.
 */
export function startProjector(deps: { store: EventStore; knex: Knex; projections: readonly Projection[]; logger: Logger }): Projector {
  const { store, knex, logger } = deps;
  const states = new Map<string, ProjectionStatus>();
  const subscriptions = new Set<Subscription>();
  let stopping = false;
  let wakeSleepers: (() => void)[] = [];

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wakeSleepers.push(() => {
        clearTimeout(t);
        resolve();
      });
    });

  async function recordFailure(projection: Projection, event: EventEnvelope, error: unknown): Promise<void> {
    const reason = error instanceof Error ? error.message : String(error);
    logger.error({ projection: projection.name, position: event.position, eventId: event.id, type: event.type, err: error }, 'projection cannot apply event');
    const known = await knex('projection_failures').where({ projection: projection.name, event_id: event.id }).first();
    if (!known) {
      await knex('projection_failures').insert({ projection: projection.name, position: event.position, event_id: event.id, event_type: event.type, reason });
    }
  }

  const databaseAnswers = () => knex.raw('SELECT 1').then(() => true, () => false);

  async function applyWithRetry(projection: Projection, events: EventEnvelope[]): Promise<void> {
    const status = states.get(projection.name)!;
    for (let backoff = 500; !stopping; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
      try {
        status.position = (await applyBatch(knex, projection, events)).toString();
        status.state = 'running';
        status.lastError = null;
        return;
      } catch (batchError) {
        // Apply one by one: everything before the culprit lands, the culprit is recorded.
        for (const event of events) {
          try {
            status.position = (await applyBatch(knex, projection, [event])).toString();
          } catch (error) {
            status.state = 'failing';
            status.lastError = error instanceof Error ? error.message : String(error);
            // A database that does not answer is not this event's fault: nothing to record, retried as it is.
            if (await databaseAnswers()) {
              await recordFailure(projection, event, error).catch((e) => logger.error({ err: e }, 'cannot record projection failure'));
            } else {
              logger.error({ err: error, projection: projection.name, position: status.position }, 'the database does not answer; applying again after a pause');
            }
            break;
          }
        }
        if (status.state !== 'failing') status.lastError = batchError instanceof Error ? batchError.message : String(batchError);
        events = events.filter((e) => BigInt(e.position) > BigInt(status.position));
        if (events.length === 0) {
          status.state = 'running';
          return;
        }
        await sleep(backoff);
      }
    }
  }

  /**
   * Follows the log from the projection's position. A read that fails (the database restarted or
   * cut the connection) does not stop the projection: it is reported failing, and once the event
   * store answers again it follows on from the last position applied.
   */
  async function run(projection: Projection): Promise<void> {
    const status = states.get(projection.name)!;
    for (let backoff = 500; !stopping; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
      const subscription = store.subscribeToAll({ after: status.position, shallow: projection.shallow });
      subscriptions.add(subscription);
      try {
        for await (const batch of inBatches(subscription, BATCH_SIZE)) {
          if (stopping) break;
          await applyWithRetry(projection, batch);
          backoff = 500;
        }
        return;
      } catch (error) {
        if (stopping) return;
        status.state = 'failing';
        status.lastError = error instanceof Error ? error.message : String(error);
        logger.error({ err: error, projection: projection.name, position: status.position, backoffMs: backoff }, 'cannot read the event store; following it again');
      } finally {
        subscriptions.delete(subscription);
        await subscription.close();
      }
      await sleep(backoff);
      if (stopping) return;
      // Running again as soon as the store answers, not only when the next event comes.
      if (await store.headPosition().then(() => true, () => false)) {
        status.state = 'running';
        status.lastError = null;
      }
    }
  }

  const started = (async () => {
    const checkpoints = await readCheckpoints(knex);
    return Promise.all(
      deps.projections.map((projection) => {
        const after = checkpoints.get(projection.name) ?? 0n;
        states.set(projection.name, { name: projection.name, position: after.toString(), state: 'running', lastError: null });
        return run(projection).catch((error) => {
          const status = states.get(projection.name)!;
          status.state = 'stopped';
          status.lastError = error instanceof Error ? error.message : String(error);
          if (!stopping) logger.error({ err: error, projection: projection.name }, 'projection stopped');
        });
      }),
    );
  })();

  return {
    status: () => [...states.values()].map((s) => ({ ...s })),
    async stop() {
      stopping = true;
      wakeSleepers.forEach((w) => w());
      wakeSleepers = [];
      await Promise.all([...subscriptions].map((s) => s.close()));
      await started.catch(() => undefined);
    },
  };
}
