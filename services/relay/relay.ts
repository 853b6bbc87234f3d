import type { EventEnvelope } from '../../contracts/envelope';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { encodeEvent, type Kafka } from '../../infra/kafka';
import { inBatches } from '../../projections/runtime/batches';
import type { EventStore, Subscription } from '../shared/eventStore';

export interface RelayStatus { state: 'running' | 'retrying' | 'stopped'; position: string; lastError: string | null; published: number }

export interface Relay {
  status(): RelayStatus;
  stop(): Promise<void>;
}

const BATCH = 500;
/** The checkpoint is written at most this often (and at stop): a crash republishes at most that much. */
const CHECKPOINT_INTERVAL_MS = 250;
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
 */
export function startRelay(deps: { store: EventStore; knex: Knex; kafka: Kafka; topic: string; logger: Logger; name?: string }): Relay {
  const name = deps.name ?? deps.topic;
  const log = deps.logger.child({ role: 'relay', topic: deps.topic });
  const producer = deps.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  const status: RelayStatus = { state: 'running', position: '0', lastError: null, published: 0 };
  let subscription: Subscription | null = null;
  let stopping = false;
  let wake: (() => void) | null = null;

  const sleep = (ms: number) => new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(t);
      resolve();
    };
  });

  async function publish(batch: EventEnvelope[]): Promise<void> {
    for (let backoff = 200; !stopping; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
      try {
        await producer.send({ topic: deps.topic, acks: -1, messages: batch.map(encodeEvent) });
        status.position = batch[batch.length - 1].position;
        status.published += batch.length;
        status.state = 'running';
        status.lastError = null;
        return;
      } catch (error) {
        status.state = 'retrying';
        status.lastError = error instanceof Error ? error.message : String(error);
        log.warn({ err: error, backoffMs: backoff }, 'cannot publish; retrying the same batch');
        await sleep(backoff);
      }
    }
  }

  let saved = '0';
  const saveCheckpoint = async () => {
    const position = status.position;
    if (position === saved) return;
    await deps.knex('relay_checkpoints').where({ name }).update({ position, updated_at: deps.knex.fn.now() });
    saved = position;
  };
  const checkpointer = setInterval(() => void saveCheckpoint().catch((err) => log.warn({ err }, 'cannot save the relay checkpoint')), CHECKPOINT_INTERVAL_MS);

  /** Publishes from the last acknowledged position until stopped; throws when the event store cannot be read. */
  async function follow(): Promise<void> {
    const following = deps.store.subscribeToAll({ after: status.position });
    subscription = following;
    try {
      for await (const batch of inBatches(following, BATCH)) {
        if (stopping) break;
        await publish(batch);
      }
    } finally {
      subscription = null;
      await following.close();
    }
  }

  let started = false;
  async function start(): Promise<void> {
    await producer.connect();
    const after = await readCheckpoint(deps.knex, name);
    status.position = after.toString();
    saved = status.position;
    started = true;
    status.state = 'running';
    status.lastError = null;
    log.info({ after: status.position }, 'relay started');
  }

  // Neither a broker away at start-up nor a read of the event store that fails (the database
  // restarted or cut the connection) stops the relay: it says so (state `retrying`), and follows
  // on from the last position the broker acknowledged.
  const running = (async () => {
    for (let backoff = 500; !stopping; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
      const published = status.published;
      try {
        if (!started) await start();
        await follow();
        return;
      } catch (error) {
        if (stopping) return;
        if (status.published > published) backoff = 500;
        status.state = 'retrying';
        status.lastError = error instanceof Error ? error.message : String(error);
        log.error({ err: error, position: status.position, backoffMs: backoff }, started ? 'cannot read the event store; following it again' : 'cannot start; trying again');
      }
      await sleep(backoff);
      if (!stopping && started && (await deps.store.headPosition().then(() => true, () => false))) {
        status.state = 'running';
        status.lastError = null;
      }
    }
  })();

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
      status.state = 'stopped';
    },
  };
}
