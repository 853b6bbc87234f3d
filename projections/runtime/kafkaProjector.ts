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

/**
 * The consumer group of a process's projections on a topic: one group per set of projections (the
 * names sorted, joined by `+`), so every projector process running the same projections shares the
 * topic's partitions, and a set that changes (a projection added) starts a new group from the
 * topic's beginning, the projections that already hold an event recognising it by its checkpoint.
 */
export function consumerGroupOf(topic: string, projections: string | readonly string[]): string {
  const names = [...new Set(typeof projections === 'string' ? [projections] : projections)].sort();
  for (const name of names) if (name === '' || name.includes('+')) throw new Error(`a projection's name cannot be empty or hold "+": ${JSON.stringify(name)}`);
  return `${groupPrefixOf(topic)}${names.join('+')}`;
}
const groupPrefixOf = (topic: string) => `${topic}.projection.`;

/** The projections whose consumer group `groupId` is (consumerGroupOf), or null when it is no projections' group of `topic`. */
export function projectionsOfGroup(topic: string, groupId: string): string[] | null {
  const prefix = groupPrefixOf(topic);
  return groupId.startsWith(prefix) && groupId.length > prefix.length ? groupId.slice(prefix.length).split('+') : null;
}

type Decoded = { event: EventEnvelope } | { invalid: Parking };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidOrNull = (text: string | null) => (text !== null && UUID.test(text) ? text : null);

/**
 * The Kafka transport: one consumer (consumerGroupOf: one group per set of projections) whose
 * fetches serve every projection of the process. Each message's envelope and data are checked
 * against the contracts once; a partition's batch is applied by each projection in its own
 * transaction with its own checkpoint for that partition (`<projection>#<partition>`, the last
 * global position it applied), the projections side by side, so a message delivered again — by
 * Kafka after a crash before the offset commit, by the relay after its own restart, or to a
 * projection that already holds it while another catches up — is recognised by its position and
 * changes nothing. The group's offset moves once every projection applied the batch.
 *
 * Failure policy, the same as the direct transport's (projections/runtime/parking.ts): a message
 * that is not a valid event (malformed JSON, contract violation) is parked (`invalid`) and
 * skipped. An event that cannot be applied (an error that is not transient, see
 * services/shared/faults.ts), tried MAX_TRIES times, is parked, and so are the later events of its
 * stream (applying them out of order would corrupt the row), while every other stream goes on.
 * Parked events are reported by /readyz (`degraded`) and the logs, and retried on request.
 *
 * Transient failures (the database away while a batch is applied, the broker away) are retried
 * within the retry budget (RETRY_BUDGET_MS) from the first failure of the run: a projection applies
 * its batch again in place after a pause (0.5 s doubling to 30 s, heartbeating meanwhile), a
 * consumer kafkajs gives up on is started again (1 s doubling to 30 s); the projection is reported
 * failing meanwhile. A budget spent, or an error that is not transient and is no event's fault (a
 * programming error escaping a batch), ends that projection: `failed`, logged once at error level,
 * `onFailed` told; it applies nothing more until the process restarts, and from then on the group's
 * offset stays where every projection had applied (what the others apply meanwhile is theirs to
 * recognise when it comes again). The other projections go on. A consumer that cannot run (an error
 * kafkajs cannot recover from, its restarts' budget spent) ends them all, its consumer disconnected
 * after what they applied is committed.
 */
export function startKafkaProjector(deps: {
  kafka: Kafka; knex: Knex; topic: string; projections: readonly Projection[]; contracts: ContractValidator; logger: Logger; hooks?: KafkaProjectorHooks;
  retry?: RetryPolicy; onFailed?: (status: ProjectionStatus) => void;
  /** Told after an event was parked (committed). */
  onParked?: (projection: string, event: EventEnvelope) => void;
}): Projector {
  const groupId = consumerGroupOf(deps.topic, deps.projections.map((p) => p.name));
  const consumerLog = deps.logger.child({ role: 'projector', transport: 'kafka', groupId });
  const consumer = deps.kafka.consumer(consumerOptions(groupId));
  const offsets = new OffsetCommitter(
    (batch) => consumer.commitOffsets(batch.map(({ partition, offset }) => ({ topic: deps.topic, partition, offset }))),
    (err) => consumerLog.debug({ err }, 'offset commit failed; retried on the next tick'),
  );
  const committer = setInterval(() => void offsets.flush(), OFFSET_COMMIT_INTERVAL_MS);
  const pauses = new Pauses();
  /** When the broker was last heard from (SILENT_MS). */
  let heardAt = Date.now();

  // kafkajs restarts a consumer after a retriable error itself; after any other (a broker away
  // at start-up, an error it does not know, a bug) it gives up. A transient one is ours to
  // retry: the consumer is started again with backoff, reported as failing meanwhile, within the
  // budget; anything else ends the projections.
  const supervisor = {
    stopping: false, timer: undefined as NodeJS.Timeout | undefined, subscribed: false, starting: Promise.resolve(),
    restarts: budgetOf(deps.retry, { firstMs: RESTART_FIRST_MS, maxMs: RESTART_MAX_MS }),
  };

  function decode(message: KafkaMessage, partition: number): Decoded {
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
  const lanes = deps.projections.map((projection) => laneOf(projection));
  const live = () => lanes.filter((lane) => lane.status.state !== 'failed');

  /** One projection's part: its status, parked streams, retries of its batches, and the end of it alone. */
  function laneOf(projection: Projection) {
    const log = deps.logger.child({ role: 'projector', projection: projection.name, transport: 'kafka' });
    const status = {
      name: projection.name, position: '0', state: 'running' as ProjectionStatus['state'], lastError: null as string | null,
      correlationId: undefined as string | undefined, partitions: {} as Record<number, string>, parkedStreams: 0,
    };
    const streams = new ParkedStreams(projection.name);
    const budgets = new Map<number, RetryBudget>();
    /** Partitions whose batch is waiting to be applied again. */
    const retrying = new Set<number>();

    /**
     * Applies a partition's messages: those that are not valid events are parked (`invalid`), the
     * events applied with the partition's checkpoint; one that fails for a reason that is not
     * transient is parked after its tries, with the later events of its stream
     * (projections/runtime/parking.ts). A transient failure is thrown: the caller applies the
     * whole batch again after a pause (what landed is recognised by the checkpoint).
     */
    async function handle(partition: number, messages: KafkaMessage[], decoded: Decoded[], heartbeat: () => Promise<void>): Promise<void> {
      const key = kafkaCheckpointKey(projection.name, partition);
      const offsetOf = new Map<EventEnvelope, string>();
      const events: EventEnvelope[] = [];
      const invalid: Parking[] = [];
      decoded.forEach((d, i) => {
        if ('invalid' in d) invalid.push(d.invalid);
        else {
          events.push(d.event);
          offsetOf.set(d.event, messages[i].offset);
        }
      });
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
        transient: async (error) => stopped() || isTransient(error) || !(await databaseAnswers()),
        pauseAfter: async (error) => {
          throw error;
        },
        pause: async (ms) => {
          await pauses.sleep(ms);
          if (stopped()) return false;
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
      if (stopped()) throw new Error('stopping');
      status.parkedStreams = streams.size;
      if (checkpoint > 0n) status.partitions[partition] = checkpoint.toString();
    }

    const stopped = () => supervisor.stopping || status.state === 'failed';

    /** Ends this projection: failed, logged once, onFailed told. The consumer goes on for the others (when none is left, it is disconnected). */
    function giveUp(error: unknown): void {
      if (stopped()) return;
      status.state = 'failed';
      status.lastError = describeError(error);
      status.correlationId = randomUUID();
      log.error({ err: error, correlationId: status.correlationId, partitions: status.partitions }, 'projection failed; stopped until restarted');
      deps.onFailed?.({ name: status.name, position: positionOf(status), state: status.state, lastError: status.lastError, correlationId: status.correlationId });
      if (live().length === 0) stopConsumer();
    }

    /**
     * Applies a partition's batch; a transient failure applies it again after a pause (heartbeating,
     * so the group keeps the partition), within the partition's budget. False when the batch was
     * not applied: the projection failed, or it stops, or the partition is no longer ours.
     */
    async function handleWithinBudget(partition: number, messages: KafkaMessage[], decoded: Decoded[], heartbeat: () => Promise<void>, stillOurs: () => boolean): Promise<boolean> {
      if (!budgets.has(partition)) budgets.set(partition, budgetOf(deps.retry, { firstMs: APPLY_FIRST_MS, maxMs: APPLY_MAX_MS }));
      const budget = budgets.get(partition)!;
      for (;;) {
        try {
          await handle(partition, messages, decoded, heartbeat);
          budget.reset();
          retrying.delete(partition);
          if (status.state === 'failing' && retrying.size === 0) {
            status.state = 'running';
            status.lastError = null;
          }
          return true;
        } catch (error) {
          if (stopped()) return false;
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
          for (let left = delay; left > 0 && !stopped(); left -= HEARTBEAT_SLICE_MS) {
            await pauses.sleep(Math.min(left, HEARTBEAT_SLICE_MS));
            if (stopped()) break;
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

    return { name: projection.name, status, giveUp, handleWithinBudget };
  }

  /** Disconnects the consumer once the batches under way ended and what they applied is committed (not awaited: a batch may be the caller). */
  function stopConsumer(): void {
    if (supervisor.stopping) return;
    supervisor.stopping = true;
    clearTimeout(supervisor.timer);
    pauses.close();
    supervisor.starting = supervisor.starting.then(async () => {
      clearInterval(committer);
      await offsets.drain();
      await consumer.disconnect().catch(() => undefined);
    });
  }

  /** A failure of the consumer itself: every projection still running ends with it. */
  function giveUpAll(error: unknown): void {
    for (const lane of live()) lane.giveUp(error);
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
      const lanesNow = live();
      if (lanesNow.length === 0) return;
      const decoded = batch.messages.map((message) => decode(message, batch.partition));
      // A long batch (an import's chunks on a busy machine) must not outlast the session.
      const beat = setInterval(() => void heartbeat().catch(() => undefined), HEARTBEAT_SLICE_MS);
      let handled: boolean[];
      try {
        const stillOurs = () => isRunning() && !isStale();
        // Every projection's part ends before the batch does (a rebalance thrown by one while another
        // still applies would leave that one running beside the partition's next holder).
        const settled = await Promise.allSettled(lanesNow.map((lane) => lane.handleWithinBudget(batch.partition, batch.messages, decoded, heartbeat, stillOurs)));
        const thrown = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
        if (thrown) throw thrown.reason;
        handled = settled.map((s) => (s as PromiseFulfilledResult<boolean>).value);
      } finally {
        clearInterval(beat);
      }
      if (supervisor.stopping || !isRunning() || isStale()) return;
      // A projection that failed on this batch applies nothing more; the others applied it and go on.
      if (handled.some((done, i) => !done && lanesNow[i].status.state !== 'failed')) return;
      const lastOffset = batch.messages[batch.messages.length - 1].offset;
      for (const [i, lane] of lanesNow.entries()) if (handled[i]) await deps.hooks?.afterApply?.(lane.name, batch.partition, lastOffset);
      // Moves this consumer's fetch position; the group's offset follows within OFFSET_COMMIT_INTERVAL_MS,
      // unless a projection failed: the group then keeps the offset every projection applied.
      resolveOffset(lastOffset);
      if (live().length === lanes.length) offsets.note(batch.partition, (BigInt(lastOffset) + 1n).toString());
      // Live (the batch reached the partition's end when it was fetched) and busy: what arrives
      // in the rest of the period comes in one fetch and one transaction; a backlog is applied
      // without a pause.
      const rest = LIVE_PERIOD_MS - (performance.now() - started);
      if (batch.messages.length >= LIVE_BATCH_MIN && batch.offsetLag() === '0' && rest > 0 && !supervisor.stopping) await pauses.sleep(rest);
    },
  };

  const setAll = (state: 'running' | 'failing', lastError: string | null) => {
    for (const lane of live()) {
      lane.status.state = state;
      lane.status.lastError = lastError;
    }
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
    setAll('failing', describeError(error));
    if (!isTransient(error)) return giveUpAll(error);
    const delay = supervisor.restarts.next();
    if (delay === null) return giveUpAll(new RetryBudgetSpent(error, supervisor.restarts));
    consumerLog.warn({ err: error, restartInMs: delay, failures: supervisor.restarts.failures }, 'kafka consumer stopped; starting it again');
    supervisor.timer = setTimeout(() => {
      supervisor.timer = undefined;
      if (!supervisor.stopping) supervisor.starting = start();
    }, delay);
  };
  supervisor.starting = start();

  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    if (supervisor.stopping) return;
    heardAt = Date.now();
    supervisor.restarts.reset();
    setAll('running', null);
    consumerLog.info({ memberId: e.payload.memberId, partitions: e.payload.memberAssignment[deps.topic] ?? [] }, 'joined the consumer group');
    // After a rebalance, only offsets of partitions still ours are worth committing.
    offsets.keepOnly(e.payload.memberAssignment[deps.topic] ?? []);
  });
  const heard = () => {
    heardAt = Date.now();
  };
  for (const event of [consumer.events.FETCH, consumer.events.HEARTBEAT, consumer.events.START_BATCH_PROCESS, consumer.events.END_BATCH_PROCESS]) consumer.on(event, heard);
  consumer.on(consumer.events.CRASH, (e) => {
    if (supervisor.stopping) return;
    if (!e.payload.restart) return startAgainLater(e.payload.error);
    // kafkajs starts it again itself; those restarts count against the budget too.
    setAll('failing', describeError(e.payload.error));
    if (supervisor.restarts.next() === null) return giveUpAll(new RetryBudgetSpent(e.payload.error, supervisor.restarts));
    consumerLog.warn({ err: e.payload.error }, 'kafka consumer crashed; kafkajs starts it again');
  });

  return {
    status: () => lanes.map(({ status: s }) => {
      const silentFor = Date.now() - heardAt;
      const silent = s.state === 'running' && silentFor > SILENT_MS
        ? { state: 'failing' as const, lastError: `nothing heard from the Kafka broker for ${Math.round(silentFor / 1000)} s: not consuming (the connection is being retried)` }
        : {};
      return { ...s, partitions: { ...s.partitions }, position: positionOf(s), ...silent };
    }),
    async stop() {
      supervisor.stopping = true;
      pauses.close();
      clearTimeout(supervisor.timer);
      clearInterval(committer);
      await supervisor.starting;
      await offsets.drain();
      await consumer.disconnect().catch(() => undefined);
    },
  };
}

/** A projection's position on Kafka: the highest over the partitions it applied. */
function positionOf(status: { partitions: Record<number, string> }): string {
  return Object.values(status.partitions).map(BigInt).reduce((a, b) => (b > a ? b : a), 0n).toString();
}
