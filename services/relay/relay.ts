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
const MAX_BACKOFF_MS = 10_000;

async function readCheckpoint(knex: Knex, name: string): Promise<bigint> {
  await knex.raw('INSERT INTO relay_checkpoints (name, position) VALUES (?, 0) ON CONFLICT (name) DO NOTHING', [name]);
  const row = await knex('relay_checkpoints').where({ name }).first('position');
  return BigInt(row.position);
}

/**
 * The relay: follows the event store's global log from its own checkpoint and publishes every
 * event to Kafka, keyed by stream id (so each stream stays in order on one partition). The
 * producer is idempotent with acks=all; the checkpoint moves only after the broker acknowledged a
 * batch. Killed at any moment, it publishes again from the checkpoint: consumers may see an event
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
        const position = batch[batch.length - 1].position;
        await deps.knex('relay_checkpoints').where({ name }).update({ position, updated_at: deps.knex.fn.now() });
        status.position = position;
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

  const running = (async () => {
    await producer.connect();
    const after = await readCheckpoint(deps.knex, name);
    status.position = after.toString();
    log.info({ after: status.position }, 'relay started');
    if (stopping) return;
    subscription = deps.store.subscribeToAll({ after: after.toString() });
    for await (const batch of inBatches(subscription, BATCH)) {
      if (stopping) break;
      await publish(batch);
    }
  })().catch((error) => {
    status.state = 'stopped';
    status.lastError = error instanceof Error ? error.message : String(error);
    if (!stopping) log.error({ err: error }, 'relay stopped');
  });

  return {
    status: () => ({ ...status }),
    async stop() {
      stopping = true;
      (wake as (() => void) | null)?.();
      await subscription?.close();
      await running;
      await producer.disconnect().catch(() => undefined);
      status.state = 'stopped';
    },
  };
}
