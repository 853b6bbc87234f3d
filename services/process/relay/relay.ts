import { randomUUID } from 'node:crypto';
import type { EventEnvelope } from '../../../contracts/envelope';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { encodeEvent, type Kafka } from '../../../infra/kafka';
import { inBatches } from '../../../projections/runtime/batches';
import type { EventStore, Subscription } from '../../shared/eventStore';
import { RetryBudgetSpent, budgetOf, describeError, isTransient, type RetryPolicy } from '../../shared/faults';

/**
 * running; retrying: a transient failure (broker or database away) is being retried within the
 * budget; failed: stopped for good (an error that is not transient, or the budget spent) until the
 * process restarts; stopped: ended by stop().
 */
export interface RelayStatus {
  state: 'running' | 'retrying' | 'failed' | 'stopped';
  position: string;
  lastError: string | null;
  published: number;
  /** When failed: the id its error-level log line carries. */
  correlationId?: string;
}

export interface Relay {
  status(): RelayStatus;
  stop(): Promise<void>;
}

const BATCH = 500;
/** The checkpoint is written at most this often (and at stop): a crash republishes at most that much. */
const CHECKPOINT_INTERVAL_MS = 250;
/**
 * After a send, what arrives within this long goes in the next one (Kafka's linger.ms; kafkajs has
 * none): under a steady stream of single-event appends the relay sent one produce request per event
 * or two, and its socket writes took more CPU than anything else in it (bench/README.md).
 */
const LINGER_MS = 10;
const FIRST_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 10_000;

async function readCheckpoint(knex: Knex, name: string): Promise<bigint> {
  await knex.raw('INSERT INTO relay_checkpoints (name, position) VALUES (?, 0) ON CONFLICT (name) DO NOTHING', [name]);
  const row = await knex('relay_checkpoints').where({ name }).first('position');
  return BigInt(row.position);
}

/**
 * The relay: follows the event store's global log from its own checkpoint and publishes every
 * event to Kafka, keyed by stream id (so each stream stays in order on one partition). The
 * producer is idempotent with acks=all; the checkpoint moves only to positions the broker
 * acknowledged (written every 250 ms and at stop, not per batch). Killed at any moment, it publishes again from the checkpoint: consumers may see an event
 * twice, never miss one (they recognise repeats by position, see kafkaProjector.ts).
 *
 * Failures (services/shared/faults.ts): a broker away (at start-up or while publishing) and a
 * database or event store away are transient: reported `retrying`, retried with backoff (0.2 s
 * doubling to 10 s) from the last acknowledged position, for at most the retry budget
 * (RETRY_BUDGET_MS) from the first failure of the run. Anything else (the broker refusing a
 * message: the batch is then sent one by one up to that event; a programming error), or the
 * budget spent, ends in `failed`: logged once at error level, the checkpoint saved, nothing
 * skipped (the relay never publishes out of order), and `onFailed` told; it stays stopped until
 * the process restarts.
 */
export function startRelay(deps: {
  store: EventStore; knex: Knex; kafka: Kafka; topic: string; logger: Logger; name?: string; retry?: RetryPolicy; onFailed?: (status: RelayStatus) => void;
}): Relay {
  const name = deps.name ?? deps.topic;
  const log = deps.logger.child({ role: 'relay', topic: deps.topic });
  const newProducer = () => deps.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  let producer = newProducer();
  const status: RelayStatus = { state: 'running', position: '0', lastError: null, published: 0 };
  const budget = budgetOf(deps.retry, { firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
  let subscription: Subscription | null = null;
  let stopping = false;
  let started = false;
  let wake: (() => void) | null = null;

  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(t);
      resolve();
    };
  });

  /** Stops for good: reported failed, logged once (with the event the broker refused, if one), `onFailed` told. */
  function fail(error: unknown, event?: EventEnvelope): void {
    status.state = 'failed';
    status.lastError = describeError(error);
    status.correlationId = randomUUID();
    log.error({
      err: error, position: status.position, correlationId: status.correlationId,
      ...(event && { eventPosition: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId }),
    }, 'relay failed; stopped until restarted');
    deps.onFailed?.({ ...status });
  }

  /** After a transient failure: reported retrying, then a pause; false (and the relay failed) when the budget is spent or it stops meanwhile. */
  async function pauseOrGiveUp(error: unknown, message: string): Promise<boolean> {
    status.state = 'retrying';
    status.lastError = describeError(error);
    const pause = budget.next();
    if (pause === null) {
      fail(new RetryBudgetSpent(error, budget));
      return false;
    }
    log.warn({ err: error, position: status.position, backoffMs: pause, failures: budget.failures }, message);
    await sleep(pause);
    return !stopping;
  }

  /** Publishes a batch (the same one again after a transient failure); false when the relay failed or stops. */
  async function publish(batch: EventEnvelope[]): Promise<boolean> {
    while (!stopping) {
      try {
        await producer.send({ topic: deps.topic, acks: -1, messages: batch.map(encodeEvent) });
        status.position = batch[batch.length - 1].position;
        status.published += batch.length;
        status.state = 'running';
        status.lastError = null;
        budget.reset();
        return true;
      } catch (error) {
        if (stopping) return false;
        if (!isTransient(error)) {
          if (batch.length === 1) {
            fail(error, batch[0]);
            return false;
          }
          // Narrowed down one by one, so what comes before the event the broker refuses is
          // published. Part of the batch may have landed, and the idempotent producer's sequence
          // numbers are not to be trusted after it (the broker answers "out of order sequence"): a
          // new producer (and producer id) starts them afresh. A repeat is possible, and recognised by consumers.
          await producer.disconnect().catch(() => undefined);
          producer = newProducer();
          try {
            await producer.connect();
          } catch (reconnectError) {
            started = false; // connected again (and the checkpoint read again) by the loop
            throw reconnectError;
          }
          for (const event of batch) if (!(await publish([event]))) return false;
          return true;
        }
        if (!(await pauseOrGiveUp(error, 'cannot publish; retrying the same batch'))) return false;
      }
    }
    return false;
  }

  let saved = '0';
  const saveCheckpoint = async () => {
    const position = status.position;
    if (position === saved) return;
    await deps.knex('relay_checkpoints').where({ name }).update({ position, updated_at: deps.knex.fn.now() });
    saved = position;
  };
  const checkpointer = setInterval(() => void saveCheckpoint().catch((err) => log.warn({ err }, 'cannot save the relay checkpoint')), CHECKPOINT_INTERVAL_MS);

  /** Publishes from the last acknowledged position until stopped or failed; throws when the event store cannot be read. */
  async function follow(): Promise<void> {
    // Stopped while starting: a subscription opened now would outlive stop(), which closes only the one it finds.
    if (stopping) return;
    const following = deps.store.subscribeToAll({ after: status.position });
    subscription = following;
    try {
      for await (const batch of inBatches(following, BATCH)) {
        const sent = performance.now();
        if (stopping || !(await publish(batch))) break;
        const rest = LINGER_MS - (performance.now() - sent);
        if (batch.length < BATCH && rest > 0) await sleep(rest);
        if (stopping) break;
      }
    } finally {
      subscription = null;
      await following.close();
    }
  }

  async function start(): Promise<void> {
    await producer.connect();
    const after = await readCheckpoint(deps.knex, name);
    status.position = after.toString();
    saved = status.position;
    started = true;
    status.state = 'running';
    status.lastError = null;
    budget.reset();
    log.info({ after: status.position }, 'relay started');
  }

  // Neither a broker away at start-up nor a read of the event store that fails (the database
  // restarted or cut the connection) stops the relay while its budget lasts: it says so (state
  // `retrying`), and follows on from the last position the broker acknowledged.
  const running = (async () => {
    while (!stopping) {
      let error: unknown;
      try {
        if (!started) await start();
        await follow();
        return;
      } catch (e) {
        if (stopping) return;
        error = e;
      }
      if (!isTransient(error)) return fail(error);
      if (!(await pauseOrGiveUp(error, started ? 'cannot read the event store; following it again' : 'cannot start; trying again'))) return;
      if (started && (await deps.store.headPosition().then(() => true, () => false))) {
        status.state = 'running';
        status.lastError = null;
        budget.reset();
      }
    }
  })().catch((error) => {
    // A bug in the loop itself: it ends, and says so.
    if (!stopping) fail(error);
  });

  return {
    status: () => ({ ...status }),
    async stop() {
      stopping = true;
      (wake as (() => void) | null)?.();
      await subscription?.close();
      await running;
      clearInterval(checkpointer);
      await saveCheckpoint().catch((err) => log.warn({ err }, 'cannot save the relay checkpoint'));
      await producer.disconnect().catch(() => undefined);
      if (status.state !== 'failed') status.state = 'stopped';
    },
  };
}
