import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import type { ContractValidator } from '../../contracts/validator';
import { LIVE_RETRY_MAX_MS, RetryBudgetSpent, budgetOf, describeError, isTransient, type RetryBudget, type RetryPolicy } from '../../services/shared/faults';
import { Pauses } from '../../services/shared/pauses';
import { decodeValue, headerText, type ConsumerConfig, type ConsumerRunConfig, type Kafka, type KafkaMessage } from '../../infra/kafka';
import { applyBatch } from './applyBatch';
import { applyIsolating, ParkedStreams, parkingOf, triesError, type Parking } from './parking';
import { OffsetCommitter } from './offsetCommitter';
import type { Projection } from './projection';
import type { ProjectionStatus, Projector } from './projector';

const OFFSET_COMMIT_INTERVAL_MS = 1000;
/**
 * A projection's live pace, as on the direct transport (projections/runtime/projector.ts): after a
 * batch of at least LIVE_BATCH_MIN events that reached the partition's end, the next fetch waits
 * out the rest of LIVE_PERIOD_MS. Measured (bench/README.md): Kafka lag p50 196 → 90 ms, p99
 * 1,107 → 435 ms at ~2,200 events/s.
 */
const LIVE_PERIOD_MS = 50;
const LIVE_BATCH_MIN = 20;
const PARTITIONS_IN_PARALLEL = 3;
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = LIVE_RETRY_MAX_MS;
const APPLY_FIRST_MS = 500;
const APPLY_MAX_MS = LIVE_RETRY_MAX_MS;
/**
 * How long the broker keeps a member that stopped heartbeating (kafkajs: 30 s). A process that is
 * killed, or a consumer that crashed when the broker went away and joins again as a new member,
 * leaves a member behind that the group waits for before it hands the partitions out again: with
 * 30 s, the read model stood still for half a minute after a projector's SIGKILL or a broker's
 * restart (the chaos run's; requests waiting for their writes answered 503 meanwhile).
 */
export const SESSION_TIMEOUT_MS = 10_000;
/**
 * A consumer that heard nothing from the broker for this long (no fetch answered, no heartbeat, no
 * batch) is reported `failing`, though kafkajs still retries its connection and has not crashed: a
 * broker that is away left every projection `running` in /readyz for as long as it stayed away. The
 * broker has dropped such a member from its group by then anyway. A fetch with nothing to return is
 * answered within a second (consumerOptions), so a consumer with nothing to do is heard from too.
 */
const SILENT_MS = SESSION_TIMEOUT_MS;
/** How often a consumer heartbeats between fetches (kafkajs: 3 s; at most a third of the session). */
const HEARTBEAT_INTERVAL_MS = 1000;
/** A batch being applied, or waiting to be applied again, heartbeats at least this often, so the group keeps it. */
const HEARTBEAT_SLICE_MS = 3000;

export interface KafkaProjectorHooks {
  /** Called after a batch's read-model transaction committed and before its offset is resolved and committed (tests). */
  afterApply?(projection: string, partition: number, lastOffset: string): Promise<void>;
}

export const kafkaCheckpointKey = (projection: string, partition: number) => `${projection}#${partition}`;
/**
 * A consumer of this service's topic. A fetch with nothing to return waits at most a second (kafkajs:
 * 5 s): disconnect() waits for the fetch under way, and every role must stop within
 * SHUTDOWN_TIMEOUT_MS. A fetch that finds messages returns at once either way.
 */
export const consumerOptions = (groupId: string): ConsumerConfig => ({
  groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 1000, sessionTimeout: SESSION_TIMEOUT_MS, heartbeatInterval: HEARTBEAT_INTERVAL_MS,
});

export const consumerGroupOf = (topic: string, projection: string) => `${topic}.projection.${projection}`;

type Decoded = { event: EventEnvelope } | { invalid: Parking };

/**
 * Every consumer group of a process (one per projection) fetches the same messages: each is
 * decoded and checked against the contracts once, and the others take what the first found (a
 * projector's thread spent ~1.7 s of ~21 parsing and checking each message nine times,
 * bench/README.md). Keyed by partition and offset, and taken only for the same bytes (a topic
 * made again starts its offsets again); the newest DECODED_KEPT_BYTES of messages are kept.
 * Projections never change the events they are given, so one object serves them all.
 */
class DecodedMessages {
  private readonly entries = new Map<string, { value: Buffer | null; decoded: Decoded }>();
  private bytes = 0;

  get(partition: number, message: KafkaMessage, decode: () => Decoded): Decoded {
    const key = `${partition}:${message.offset}`;
    const hit = this.entries.get(key);
    if (hit && (hit.value === null ? message.value === null : message.value !== null && hit.value.equals(message.value))) return hit.decoded;
    const decoded = decode();
    if (hit) this.forget(key, hit.value);
    this.entries.set(key, { value: message.value, decoded });
    this.bytes += message.value?.length ?? 0;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= DECODED_KEPT_BYTES) break;
      this.forget(oldest, entry.value);
    }
    return decoded;
  }

  private forget(key: string, value: Buffer | null): void {
    this.entries.delete(key);
    this.bytes -= value?.length ?? 0;
  }
}
const DECODED_KEPT_BYTES = 32 * 1024 * 1024;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidOrNull = (text: string | null) => (text !== null && UUID.test(text) ? text : null);

/**
 * The Kafka transport: one consumer group per projection. Each message's envelope and data are
 * checked against the contracts; a partition's batch is applied in one transaction with that
 * partition's checkpoint (`<projection>#<partition>`, the last global position applied), so a
 * message delivered again — by Kafka after a crash before the offset commit, or by the relay
 * after its own restart — is recognised by its position and changes nothing.
 *
 * Failure policy, the same as the direct transport's (projections/runtime/parking.ts): a message
 * that is not a valid event (malformed JSON, contract violation) is parked (`invalid`) and
 * skipped. An event that cannot be applied (an error that is not transient, see
 * services/shared/faults.ts), tried MAX_TRIES times, is parked, and so are the later events of its
 * stream (applying them out of order would corrupt the row), while every other stream goes on.
 * Parked events are reported by /readyz (`degraded`) and the logs, and retried on request.
 *
 * Transient failures (the database away while a batch is applied, the broker away) are retried
 * within the retry budget (RETRY_BUDGET_MS) from the first failure of the run: a batch is applied
 * again in place after a pause (0.5 s doubling to 30 s, heartbeating meanwhile), a consumer
 * kafkajs gives up on is started again (1 s doubling to 30 s); the projection is reported failing
 * meanwhile. A budget spent, or an error that is not transient and is no event's fault (a
 * programming error escaping a batch, a consumer kafkajs cannot run), ends the projection:
 * `failed`, logged once at error level, its consumer disconnected (what it applied is committed
 * first), `onFailed` told. It stays stopped until the process restarts; the other projections go on.
 */
export function startKafkaProjector(deps: {
  kafka: Kafka; knex: Knex; topic: string; projections: readonly Projection[]; contracts: ContractValidator; logger: Logger; hooks?: KafkaProjectorHooks;
  retry?: RetryPolicy; onFailed?: (status: ProjectionStatus) => void;
  /** Told after an event was parked (committed). */
  onParked?: (projection: string, event: EventEnvelope) => void;
}): Projector {
  const states = new Map<string, ProjectionStatus & { partitions: Record<number, string>; parkedStreams: number; heardAt: number }>();
  const decodedMessages = new DecodedMessages();
  const consumers = deps.projections.map((projection) => {
    const log = deps.logger.child({ role: 'projector', projection: projection.name, transport: 'kafka' });
    const status = {
      name: projection.name, position: '0', state: 'running' as ProjectionStatus['state'], lastError: null as string | null,
      correlationId: undefined as string | undefined, partitions: {} as Record<number, string>, parkedStreams: 0,
      /** When the broker was last heard from (SILENT_MS). */
      heardAt: Date.now(),
    };
    states.set(projection.name, status);
    const offsets = new OffsetCommitter(
      (batch) => consumer.commitOffsets(batch.map(({ partition, offset }) => ({ topic: deps.topic, partition, offset }))),
      (err) => log.debug({ err }, 'offset commit failed; retried on the next tick'),
    );
    const committer = setInterval(() => void offsets.flush(), OFFSET_COMMIT_INTERVAL_MS);
    const consumer = deps.kafka.consumer(consumerOptions(consumerGroupOf(deps.topic, projection.name)));

    function decode(message: KafkaMessage, partition: number): Decoded {
      return decodedMessages.get(partition, message, () => decodeOnce(message, partition));
    }

    function decodeOnce(message: KafkaMessage, partition: number): Decoded {
      try {
        const event = deps.contracts.checkEnvelope(decodeValue(message));
        if (message.key?.toString() !== event.streamId) throw new Error(`key ${message.key?.toString()} is not the stream ${event.streamId}`);
        return { event };
      } catch (error) {
        const position = headerText(message.headers, 'position');
        const at = new Date();
        return { invalid: {
          kind: 'invalid', position: position && /^\d{1,19}$/.test(position) ? position : null, eventId: uuidOrNull(headerText(message.headers, 'event-id')),
          eventType: headerText(message.headers, 'event-type'), streamId: message.key?.toString() ?? null, revision: null,
          error: `invalid message: ${error instanceof Error ? error.message : String(error)}`, attempts: 1, firstAttemptAt: at, lastAttemptAt: at,
          partition, offset: message.offset,
        } };
      }
    }

    const databaseAnswers = () => deps.knex.raw('SELECT 1').then(() => true, () => false);
    const streams = new ParkedStreams(projection.name);

    /**
     * Applies a partition's messages: those that are not valid events are parked (`invalid`), the
     * events applied with the partition's checkpoint; one that fails for a reason that is not
     * transient is parked after its tries, with the later events of its stream
     * (projections/runtime/parking.ts). A transient failure is thrown: the caller applies the
     * whole batch again after a pause (what landed is recognised by the checkpoint).
     */
    async function handle(partition: number, messages: KafkaMessage[], heartbeat: () => Promise<void>): Promise<void> {
      const key = kafkaCheckpointKey(projection.name, partition);
      const offsetOf = new Map<EventEnvelope, string>();
      const events: EventEnvelope[] = [];
      const invalid: Parking[] = [];
      for (const message of messages) {
        const decoded = decode(message, partition);
        if ('invalid' in decoded) invalid.push(decoded.invalid);
        else {
          events.push(decoded.event);
          offsetOf.set(decoded.event, message.offset);
        }
      }
      const messageOf = (event: EventEnvelope) => ({ partition, offset: offsetOf.get(event)! });
      let checkpoint = 0n;
      const applied = (position: bigint) => {
        if (position > checkpoint) checkpoint = position;
      };
      if (invalid.length > 0) {
        for (const m of invalid) log.error({ partition, offset: m.offset, position: m.position, streamId: m.streamId, reason: m.error }, 'message skipped by the projection: parked');
        // The checkpoint stays: a message that is not a valid event gives no position to trust.
        applied(await applyBatch(deps.knex, projection, [], key, { streams, park: invalid }));
      }
      await applyIsolating(events, {
        attempt: async (batch) => applied(await applyBatch(deps.knex, projection, batch, key, { streams, messageOf })),
        // A database that does not answer is not the event's fault: nothing parked, the batch applied again.
        transient: async (error) => supervisor.stopping || isTransient(error) || !(await databaseAnswers()),
        pauseAfter: async (error) => {
          throw error;
        },
        pause: async (ms) => {
          await pauses.sleep(ms);
          if (supervisor.stopping) return false;
          await heartbeat();
          return true;
        },
        park: async (event, tries) => {
          applied(await applyBatch(deps.knex, projection, [], key, {
            streams, park: [parkingOf(event, 'failed', triesError(tries), tries, messageOf(event))], through: BigInt(event.position),
          }));
          streams.add(key, event.streamId, event.position);
          status.parkedStreams = streams.size;
          log.error({
            err: tries.error, partition, offset: offsetOf.get(event), correlationId: event.metadata.correlationId, attempts: tries.attempts,
            eventPosition: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId,
          }, 'projection cannot apply an event: parked it (and the later events of its stream) and went on');
          deps.onParked?.(projection.name, event);
          await heartbeat();
        },
      });
      if (supervisor.stopping) throw new Error('stopping');
      status.parkedStreams = streams.size;
      if (checkpoint > 0n) status.partitions[partition] = checkpoint.toString();
    }

    const pauses = new Pauses();

    /** Ends the projection: failed, logged once, its consumer disconnected after what it applied is committed. */
    function giveUp(error: unknown): void {
      if (supervisor.stopping) return;
      supervisor.stopping = true;
      clearTimeout(supervisor.timer);
      status.state = 'failed';
      status.lastError = describeError(error);
      status.correlationId = randomUUID();
      log.error({ err: error, correlationId: status.correlationId, partitions: status.partitions }, 'projection failed; stopped until restarted');
      deps.onFailed?.({ name: status.name, position: status.position, state: status.state, lastError: status.lastError, correlationId: status.correlationId });
      pauses.close();
      // Not awaited: a batch still running (maybe the caller) must end before kafkajs disconnects.
      supervisor.starting = supervisor.starting.then(async () => {
        clearInterval(committer);
        await offsets.drain();
        await consumer.disconnect().catch(() => undefined);
      });
    }

    /**
     * Applies a partition's batch; a transient failure applies it again after a pause (heartbeating,
     * so the group keeps the partition), within the partition's budget. False when the batch was
     * not applied: the projection failed, or it stops, or the partition is no longer ours.
     */
    const budgets = new Map<number, RetryBudget>();
    /** Partitions whose batch is waiting to be applied again. */
    const retrying = new Set<number>();
    async function handleWithinBudget(partition: number, messages: KafkaMessage[], heartbeat: () => Promise<void>, stillOurs: () => boolean): Promise<boolean> {
      if (!budgets.has(partition)) budgets.set(partition, budgetOf(deps.retry, { firstMs: APPLY_FIRST_MS, maxMs: APPLY_MAX_MS }));
      const budget = budgets.get(partition)!;
      for (;;) {
        try {
          await handle(partition, messages, heartbeat);
          budget.reset();
          retrying.delete(partition);
          if (status.state === 'failing' && retrying.size === 0) {
            status.state = 'running';
            status.lastError = null;
          }
          return true;
        } catch (error) {
          if (supervisor.stopping) return false;
          if (!stillOurs()) {
            // Handed over by a rebalance: its new holder applies it; if it comes back, with a fresh budget.
            retrying.delete(partition);
            budgets.delete(partition);
            return false;
          }
          if (!isTransient(error) && (await databaseAnswers())) {
            giveUp(error);
            return false;
          }
          status.state = 'failing';
          status.lastError = describeError(error);
          retrying.add(partition);
          const delay = budget.next();
          if (delay === null) {
            giveUp(new RetryBudgetSpent(error, budget));
            return false;
          }
          log.warn({ err: error, partition, backoffMs: delay, failures: budget.failures }, 'cannot apply the batch (the database is away?); applying it again after a pause');
          for (let left = delay; left > 0 && !supervisor.stopping; left -= HEARTBEAT_SLICE_MS) {
            await pauses.sleep(Math.min(left, HEARTBEAT_SLICE_MS));
            if (supervisor.stopping) break;
            try {
              await heartbeat();
            } catch (rebalancing) {
              retrying.delete(partition); // kafkajs hands the batch over again, to us or another member
              throw rebalancing;
            }
          }
        }
      }
    }

    const runConfig: ConsumerRunConfig = {
      // The read model's own checkpoints recognise redeliveries, so no offset commit has to
      // succeed for correctness: they are committed on a timer, off the batch path.
      autoCommit: false,
      eachBatchAutoResolve: false,
      // Partitions are independent (a stream lives on one): several are applied at once.
      partitionsConsumedConcurrently: PARTITIONS_IN_PARALLEL,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
        if (!isRunning() || isStale() || batch.messages.length === 0 || supervisor.stopping) return;
        const started = performance.now();
        // A long batch (an import's chunks on a busy machine) must not outlast the session.
        const beat = setInterval(() => void heartbeat().catch(() => undefined), HEARTBEAT_SLICE_MS);
        let handled: boolean;
        try {
          handled = await handleWithinBudget(batch.partition, batch.messages, heartbeat, () => isRunning() && !isStale());
        } finally {
          clearInterval(beat);
        }
        if (!handled) return;
        const lastOffset = batch.messages[batch.messages.length - 1].offset;
        await deps.hooks?.afterApply?.(projection.name, batch.partition, lastOffset);
        // Moves this consumer's fetch position; the group's offset follows within OFFSET_COMMIT_INTERVAL_MS.
        resolveOffset(lastOffset);
        offsets.note(batch.partition, (BigInt(lastOffset) + 1n).toString());
        // Live (the batch reached the partition's end when it was fetched) and busy: what arrives
        // in the rest of the period comes in one fetch and one transaction; a backlog is applied
        // without a pause.
        const rest = LIVE_PERIOD_MS - (performance.now() - started);
        if (batch.messages.length >= LIVE_BATCH_MIN && batch.offsetLag() === '0' && rest > 0 && !supervisor.stopping) await pauses.sleep(rest);
      },
    };

    // kafkajs restarts a consumer after a retriable error itself; after any other (a broker away
    // at start-up, an error it does not know, a bug) it gives up. A transient one is ours to
    // retry: the consumer is started again with backoff, reported as failing meanwhile, within the
    // budget; anything else ends the projection.
    const supervisor = {
      stopping: false, timer: undefined as NodeJS.Timeout | undefined, subscribed: false, starting: Promise.resolve(),
      restarts: budgetOf(deps.retry, { firstMs: RESTART_FIRST_MS, maxMs: RESTART_MAX_MS }),
    };
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
      if (supervisor.stopping || supervisor.timer) return;
      status.state = 'failing';
      status.lastError = describeError(error);
      if (!isTransient(error)) return giveUp(error);
      const delay = supervisor.restarts.next();
      if (delay === null) return giveUp(new RetryBudgetSpent(error, supervisor.restarts));
      log.warn({ err: error, restartInMs: delay, failures: supervisor.restarts.failures }, 'kafka consumer stopped; starting it again');
      supervisor.timer = setTimeout(() => {
        supervisor.timer = undefined;
        if (!supervisor.stopping) supervisor.starting = start();
      }, delay);
    };
    supervisor.starting = start();

    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      if (supervisor.stopping) return;
      status.heardAt = Date.now();
      supervisor.restarts.reset();
      status.state = 'running';
      status.lastError = null;
      log.info({ memberId: e.payload.memberId, partitions: e.payload.memberAssignment[deps.topic] ?? [] }, 'joined the consumer group');
      // After a rebalance, only offsets of partitions still ours are worth committing.
      offsets.keepOnly(e.payload.memberAssignment[deps.topic] ?? []);
    });
    const heard = () => {
      status.heardAt = Date.now();
    };
    for (const event of [consumer.events.FETCH, consumer.events.HEARTBEAT, consumer.events.START_BATCH_PROCESS, consumer.events.END_BATCH_PROCESS]) consumer.on(event, heard);
    consumer.on(consumer.events.CRASH, (e) => {
      if (supervisor.stopping) return;
      status.lastError = describeError(e.payload.error);
      if (!e.payload.restart) return startAgainLater(e.payload.error);
      // kafkajs starts it again itself; those restarts count against the budget too.
      status.state = 'failing';
      if (supervisor.restarts.next() === null) return giveUp(new RetryBudgetSpent(e.payload.error, supervisor.restarts));
      log.warn({ err: e.payload.error }, 'kafka consumer crashed; kafkajs starts it again');
    });
    return { consumer, supervisor, committer, offsets, pauses };
  });

  return {
    status: () => [...states.values()].map(({ heardAt, ...s }) => {
      const positions = Object.values(s.partitions).map(BigInt);
      const max = positions.reduce((a, b) => (b > a ? b : a), 0n);
      const silentFor = Date.now() - heardAt;
      const silent = s.state === 'running' && silentFor > SILENT_MS
        ? { state: 'failing' as const, lastError: `nothing heard from the Kafka broker for ${Math.round(silentFor / 1000)} s: not consuming (the connection is being retried)` }
        : {};
      return { ...s, partitions: { ...s.partitions }, position: max.toString(), ...silent };
    }),
    async stop() {
      await Promise.all(consumers.map(async ({ consumer, supervisor, committer, offsets, pauses }) => {
        supervisor.stopping = true;
        pauses.close();
        clearTimeout(supervisor.timer);
        clearInterval(committer);
        await supervisor.starting;
        await offsets.drain();
        await consumer.disconnect().catch(() => undefined);
      }));
    },
  };
}
