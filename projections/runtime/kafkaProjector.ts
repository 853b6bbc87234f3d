import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import type { ContractValidator } from '../../contracts/validator';
import { decodeValue, headerText, type ConsumerRunConfig, type Kafka, type KafkaMessage } from '../../infra/kafka';
import { applyBatch } from './applyBatch';
import { advanceCheckpoint } from './checkpoints';
import { OffsetCommitter } from './offsetCommitter';
import type { Projection } from './projection';
import type { ProjectionStatus, Projector } from './projector';

const APPLY_ATTEMPTS = 3;
const PARKED_REASON = 'stream parked after an earlier failure';
const OFFSET_COMMIT_INTERVAL_MS = 1000;
const PARTITIONS_IN_PARALLEL = 3;
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = 30_000;

export interface KafkaProjectorHooks {
  /** Called after a batch's read-model transaction committed and before its offset is resolved and committed (tests). */
  afterApply?(projection: string, partition: number, lastOffset: string): Promise<void>;
}

export const kafkaCheckpointKey = (projection: string, partition: number) => `${projection}#${partition}`;
export const consumerGroupOf = (topic: string, projection: string) => `${topic}.projection.${projection}`;

interface Failure { position: string | null; eventId: string | null; eventType: string | null; streamId: string | null; partition: number; offset: string; reason: string }

/**
 * The Kafka transport: one consumer group per projection. Each message's envelope and data are
 * checked against the contracts; a partition's batch is applied in one transaction with that
 * partition's checkpoint (`<projection>#<partition>`, the last global position applied), so a
 * message delivered again — by Kafka after a crash before the offset commit, or by the relay
 * after its own restart — is recognised by its position and changes nothing.
 *
 * Failure policy: a message that is not a valid event (malformed JSON, contract violation) is
 * recorded in projection_failures and skipped. An event that cannot be applied is retried
 * (3 attempts); then it is recorded, skipped, and its stream is parked: later events of that
 * stream are recorded and skipped too (applying them out of order would corrupt the row), while
 * every other stream goes on. Parked streams and failures are reported by /readyz and the logs.
 *
 * A consumer is never left stopped: one kafkajs gives up on is started again with backoff, and
 * its projection reported as failing until it has joined its group again.
 */
export function startKafkaProjector(deps: {
  kafka: Kafka; knex: Knex; topic: string; projections: readonly Projection[]; contracts: ContractValidator; logger: Logger; hooks?: KafkaProjectorHooks;
}): Projector {
  const states = new Map<string, ProjectionStatus & { partitions: Record<number, string>; parkedStreams: number }>();
  const consumers = deps.projections.map((projection) => {
    const log = deps.logger.child({ role: 'projector', projection: projection.name, transport: 'kafka' });
    const status = { name: projection.name, position: '0', state: 'running' as ProjectionStatus['state'], lastError: null as string | null, partitions: {} as Record<number, string>, parkedStreams: 0 };
    states.set(projection.name, status);
    const parked = new Set<string>();
    const offsets = new OffsetCommitter(
      (batch) => consumer.commitOffsets(batch.map(({ partition, offset }) => ({ topic: deps.topic, partition, offset }))),
      (err) => log.debug({ err }, 'offset commit failed; retried on the next tick'),
    );
    const committer = setInterval(() => void offsets.flush(), OFFSET_COMMIT_INTERVAL_MS);
    const consumer = deps.kafka.consumer({ groupId: consumerGroupOf(deps.topic, projection.name), allowAutoTopicCreation: false });

    async function record(f: Failure): Promise<void> {
      log.error({ ...f }, 'event skipped by the projection');
      const known = await deps.knex('projection_failures')
        .where({ projection: projection.name, kafka_partition: f.partition, kafka_offset: f.offset }).first('id');
      if (!known) {
        await deps.knex('projection_failures').insert({
          projection: projection.name, position: f.position ?? '0', event_id: f.eventId, event_type: f.eventType,
          stream_id: f.streamId, kafka_partition: f.partition, kafka_offset: f.offset, reason: f.reason,
        });
      }
    }

    function decode(message: KafkaMessage, partition: number): { event: EventEnvelope } | { failure: Failure } {
      const base = {
        position: headerText(message.headers, 'position'), eventId: headerText(message.headers, 'event-id'),
        eventType: headerText(message.headers, 'event-type'), streamId: message.key?.toString() ?? null, partition, offset: message.offset,
      };
      try {
        const event = deps.contracts.checkEnvelope(decodeValue(message));
        if (message.key?.toString() !== event.streamId) throw new Error(`key ${message.key?.toString()} is not the stream ${event.streamId}`);
        return { event };
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        return { failure: { ...base, position: base.position && /^\d+$/.test(base.position) ? base.position : null, reason: `invalid message: ${reason}` } };
      }
    }

    async function applyWithRetry(events: EventEnvelope[], key: string): Promise<bigint> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await applyBatch(deps.knex, projection, events, key);
        } catch (error) {
          if (attempt >= APPLY_ATTEMPTS) throw error;
          await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
        }
      }
    }

    /**
     * Streams parked by an unresolved failure of this projection, whichever consumer recorded it:
     * a rebalance may just have handed this partition over, and a rebuild may have resolved it.
     */
    async function refreshParked(messages: KafkaMessage[]): Promise<void> {
      const streams = [...new Set(messages.flatMap((m) => (m.key ? [m.key.toString()] : [])))];
      const rows: { stream_id: string }[] = await deps.knex('projection_failures')
        .where({ projection: projection.name }).whereNull('resolved_at').whereIn('stream_id', streams)
        .andWhere('reason', '<>', PARKED_REASON).andWhereNot('reason', 'like', 'invalid message:%')
        .distinct('stream_id');
      const inDatabase = new Set(rows.map((r) => r.stream_id));
      for (const stream of streams) {
        if (inDatabase.has(stream)) parked.add(stream);
        else parked.delete(stream);
      }
      status.parkedStreams = parked.size;
    }

    async function handle(partition: number, messages: KafkaMessage[], heartbeat: () => Promise<void>): Promise<void> {
      const key = kafkaCheckpointKey(projection.name, partition);
      await refreshParked(messages);
      const offsetOf = new Map<EventEnvelope, string>();
      const events: EventEnvelope[] = [];
      const decodedPositions: bigint[] = [];
      let applied = -1n;
      for (const message of messages) {
        const decoded = decode(message, partition);
        if (!('failure' in decoded)) decodedPositions.push(BigInt(decoded.event.position));
        if ('failure' in decoded) await record(decoded.failure);
        else if (parked.has(decoded.event.streamId)) {
          const e = decoded.event;
          await record({ position: e.position, eventId: e.id, eventType: e.type, streamId: e.streamId, partition, offset: message.offset, reason: PARKED_REASON });
        } else {
          events.push(decoded.event);
          offsetOf.set(decoded.event, message.offset);
        }
      }
      try {
        if (events.length > 0) applied = await applyWithRetry(events, key);
      } catch {
        // Find the culprit: apply one by one; a failing event parks its stream.
        for (const event of events) {
          if (parked.has(event.streamId)) {
            await record({ position: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId, partition, offset: offsetOf.get(event)!, reason: PARKED_REASON });
            continue;
          }
          try {
            await applyWithRetry([event], key);
          } catch (error) {
            // A database that does not answer is not this event's fault: fail the batch, Kafka retries it.
            await deps.knex.raw('SELECT 1');
            parked.add(event.streamId);
            status.parkedStreams = parked.size;
            status.lastError = error instanceof Error ? error.message : String(error);
            await record({ position: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId, partition, offset: offsetOf.get(event)!, reason: status.lastError });
          }
          await heartbeat();
        }
      }
      // Parked events are behind us too: the checkpoint covers the last valid event seen (never a
      // position taken from a message that was not a valid event).
      const lastValid = decodedPositions.length > 0 ? decodedPositions[decodedPositions.length - 1] : 0n;
      const checkpoint = applied >= lastValid ? applied : await advanceCheckpoint(deps.knex, key, lastValid);
      status.partitions[partition] = checkpoint.toString();
    }

    const runConfig: ConsumerRunConfig = {
      // The read model's own checkpoints recognise redeliveries, so no offset commit has to
      // succeed for correctness: they are committed on a timer, off the batch path.
      autoCommit: false,
      eachBatchAutoResolve: false,
      // Partitions are independent (a stream lives on one): several are applied at once.
      partitionsConsumedConcurrently: PARTITIONS_IN_PARALLEL,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0) return;
        await handle(batch.partition, batch.messages, heartbeat);
        const lastOffset = batch.messages[batch.messages.length - 1].offset;
        await deps.hooks?.afterApply?.(projection.name, batch.partition, lastOffset);
        // Moves this consumer's fetch position; the group's offset follows within OFFSET_COMMIT_INTERVAL_MS.
        resolveOffset(lastOffset);
        offsets.note(batch.partition, (BigInt(lastOffset) + 1n).toString());
      },
    };

    // kafkajs restarts a consumer after a retriable error itself; after any other (a broker away
    // at start-up, an error it does not know, a bug) it gives up. We never do: the consumer is
    // started again with backoff, and reported as failing meanwhile.
    const supervisor = { stopping: false, timer: undefined as NodeJS.Timeout | undefined, crashesInARow: 0, subscribed: false, starting: Promise.resolve() };
    const start = async () => {
      try {
        await consumer.connect();
        if (!supervisor.subscribed) {
          await consumer.subscribe({ topics: [deps.topic], fromBeginning: true });
          supervisor.subscribed = true;
        }
        await consumer.run(runConfig);
      } catch (error) {
        startAgainLater(error);
      }
    };
    const startAgainLater = (error: unknown) => {
      status.state = 'failing';
      status.lastError = error instanceof Error ? error.message : String(error);
      if (supervisor.stopping || supervisor.timer) return;
      const delay = Math.min(RESTART_MAX_MS, RESTART_FIRST_MS * 2 ** supervisor.crashesInARow++);
      log.error({ err: error, restartInMs: delay }, 'kafka consumer stopped; starting it again');
      supervisor.timer = setTimeout(() => {
        supervisor.timer = undefined;
        if (!supervisor.stopping) supervisor.starting = start();
      }, delay);
    };
    supervisor.starting = start();

    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      supervisor.crashesInARow = 0;
      status.state = 'running';
      log.info({ memberId: e.payload.memberId, partitions: e.payload.memberAssignment[deps.topic] ?? [] }, 'joined the consumer group');
      // After a rebalance, only offsets of partitions still ours are worth committing.
      offsets.keepOnly(e.payload.memberAssignment[deps.topic] ?? []);
    });
    consumer.on(consumer.events.CRASH, (e) => {
      status.lastError = e.payload.error.message;
      if (e.payload.restart) log.error({ err: e.payload.error }, 'kafka consumer crashed; kafkajs starts it again');
      else startAgainLater(e.payload.error);
    });
    return { consumer, supervisor, committer, offsets };
  });

  return {
    status: () => [...states.values()].map((s) => {
      const positions = Object.values(s.partitions).map(BigInt);
      const max = positions.reduce((a, b) => (b > a ? b : a), 0n);
      return { ...s, partitions: { ...s.partitions }, position: max.toString() };
    }),
    async stop() {
      await Promise.all(consumers.map(async ({ consumer, supervisor, committer, offsets }) => {
        supervisor.stopping = true;
        clearTimeout(supervisor.timer);
        clearInterval(committer);
        await supervisor.starting;
        await offsets.drain();
        await consumer.disconnect().catch(() => undefined);
      }));
    },
  };
}
