import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { loadContracts } from '../contracts/validator';
import { type AppendRequest, PostgresEventStore, setupPostgresEventStore } from '../infra/eventstore/postgres';
import { createKafka, ensureTopic, headerText, type Kafka, partitionOf } from '../infra/kafka';
import { createKnex, createPool } from '../infra/postgres/database';
import { migrateReadModel } from '../projections/migrations';
import { readModelProjection } from '../projections/readModel';
import { CHECKPOINT_CHANNEL } from '../projections/runtime/checkpoints';
import { consumerGroupOf, kafkaCheckpointKey, startKafkaProjector } from '../projections/runtime/kafkaProjector';
import type { Projection } from '../projections/runtime/projection';
import { type Projector, startProjector } from '../projections/runtime/projector';
import { type Relay, startRelay } from '../services/relay/relay';
import { createTestDatabase, type TestDatabase } from '../test/support/database';
import { type SeedCategory, SeedLog } from './seed';
import { BenchSanityError, describeCode, describeMachine, type Machine, median, percentile, round, writeResult } from './support';

/**
 * The read model fed by the direct transport (startProjector: the projection follows the event
 * store's log) against the Kafka transport (startRelay publishes the log to a topic,
 * startKafkaProjector applies it per partition), in the same run, each round on a fresh database
 * (and, for Kafka, a fresh topic and consumer group):
 *
 * - throughput: `events` appended by `writers` concurrent writers as fast as the store takes them;
 *   from the first append until the read model's checkpoints cover the last position
 *   ('readModel' direct; 'readModel#<partition>' on Kafka, each partition up to the last position
 *   appended to it);
 * - lag: a rate-limited writer at `lagRateFraction` × the median Kafka throughput; for each append,
 *   the time from its acknowledgement to the commit that applied it, seen as a NOTIFY on
 *   `projection_checkpoint` by a dedicated LISTEN connection.
 *
 * Rounds alternate direct, kafka, direct, kafka; the summary takes medians. Along the way it records
 * where the time goes: relay sends, consumer fetches and batches, offset commits, projection applies
 * (kafkajs producer and consumer are wrapped, nothing in the source is changed).
 */
export interface TransportOptions {
  /** Events appended per throughput round. */
  events: number;
  /** Concurrent writers of a throughput round (PostgresEventStore group-commits what they have in flight). */
  writers: number;
  /** Appended and applied before each measurement: connects the relay's producer, lets the consumer group join. */
  warmupEvents: number;
  /** Rounds per transport and measurement: direct, kafka, direct, kafka… */
  rounds: number;
  lagSeconds: number;
  /** Steady writing before the measured lag window. */
  lagWarmupSeconds: number;
  /** Rate of the lag rounds as a fraction of the median Kafka throughput. */
  lagRateFraction: number;
  partitions: number;
  brokers: string[];
  /** Longest wait for the read model to catch up after the writers stop. */
  drainTimeoutSeconds: number;
  /** No checkpoint moved for this long while events wait: the transport is stalled, the round is recorded as such. */
  stallSeconds: number;
}

export const TRANSPORT_DEFAULTS: TransportOptions = {
  events: 20_000, writers: 32, warmupEvents: 500, rounds: 3, lagSeconds: 15, lagWarmupSeconds: 2, lagRateFraction: 0.5,
  partitions: 6, brokers: ['127.0.0.1:9092'], drainTimeoutSeconds: 120, stallSeconds: 20,
};
const GOAL_THROUGHPUT_RATIO = 0.5;
const GOAL_KAFKA_P99_LAG_MS = 1000;
/** The first consumer group join of a fresh topic takes a few seconds. */
const WARMUP_TIMEOUT_MS = 120_000;
/** Re-read of the checkpoints while waiting, in case a notification was lost. */
const SAFETY_POLL_MS = 250;
const SANITY_VALIDATE_EVERY = 100;

type TransportName = 'direct' | 'kafka';
const TABLES: Record<SeedCategory, string> = { projects: 'projects', folders: 'repository_folders', cases: 'repository_cases' };

/** The read model stopped following the log: a measured failure of the transport, not of the benchmark. */
class TransportStalled extends Error {
  constructor(readonly what: string, readonly stalledForMs: number, readonly missing: string[]) {
    super(`${what}: no checkpoint moved for ${Math.round(stalledForMs)} ms while events wait: ${missing.join(', ')}`);
    this.name = 'TransportStalled';
  }
}

interface Stall {
  what: string;
  /** Seconds since the measurement started when the stall was declared. */
  declaredAfterSeconds: number;
  stalledForSeconds: number;
  /** Checkpoint key: where it stopped < the last position appended to it. */
  checkpoints: string[];
  /** Events the read-model rows account for (sum of revision + 1), of all appended in the session. */
  readModelEvents: number;
  appendedEvents: number;
}

const now = () => performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Distribution { count: number; mean: number; p50: number; p99: number; max: number; total: number }

function distribution(values: number[], digits = 2): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const total = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length, mean: round(sorted.length > 0 ? total / sorted.length : NaN, digits),
    p50: round(percentile(sorted, 50), digits), p99: round(percentile(sorted, 99), digits), max: round(sorted[sorted.length - 1] ?? NaN, digits),
    total: round(total, digits),
  };
}

/**
 * Checkpoint positions as committed, from a dedicated LISTEN connection (payload `<key>:<position>`),
 * stamped with performance.now() when they arrive; re-read from the table while someone waits.
 */
class AppliedWatcher {
  readonly positions = new Map<string, bigint>();
  private readonly listeners = new Set<(key: string, position: bigint, at: number) => void>();
  private client: pg.Client | null = null;
  notifications = 0;
  /** Checkpoint moves first seen by the safety poll rather than by NOTIFY: should stay 0. */
  pollAdvances = 0;
  lostConnection: Error | null = null;

  constructor(private readonly url: string, private readonly knex: Knex) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      const at = now();
      const payload = msg.payload ?? '';
      const colon = payload.lastIndexOf(':');
      if (colon <= 0) return;
      this.notifications++;
      this.advance(payload.slice(0, colon), BigInt(payload.slice(colon + 1)), at);
    });
    client.on('error', (error) => (this.lostConnection = error));
    await client.connect();
    await client.query(`LISTEN ${CHECKPOINT_CHANNEL}`);
    this.client = client;
  }

  onAdvance(listener: (key: string, position: bigint, at: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private advance(key: string, position: bigint, at: number): boolean {
    if (position <= (this.positions.get(key) ?? 0n)) return false;
    this.positions.set(key, position);
    for (const l of this.listeners) l(key, position, at);
    return true;
  }

  async refresh(): Promise<void> {
    const rows: { name: string; position: string }[] = await this.knex('projection_checkpoints').select('name', 'position');
    const at = now();
    for (const r of rows) if (this.advance(r.name, BigInt(r.position), at)) this.pollAdvances++;
  }

  private missing(targets: Map<string, bigint>): string[] {
    return [...targets].filter(([k, p]) => (this.positions.get(k) ?? 0n) < p).map(([k, p]) => `${k} at ${this.positions.get(k) ?? 0n} < ${p}`);
  }

  /**
   * Resolves with the time the last of the targets was reached; rejects with TransportStalled when no
   * checkpoint moved for `stallMs`, with BenchSanityError after `timeoutMs` of slow progress.
   */
  waitFor(targets: Map<string, bigint>, timeoutMs: number, what: string, stallMs = timeoutMs): Promise<number> {
    if (this.missing(targets).length === 0) return Promise.resolve(now());
    return new Promise((resolve, reject) => {
      let lastMove = now();
      const done = () => {
        off();
        clearInterval(poller);
        clearTimeout(timer);
      };
      const off = this.onAdvance((_k, _p, at) => {
        lastMove = at;
        if (this.missing(targets).length > 0) return;
        done();
        resolve(at);
      });
      const poller = setInterval(() => {
        if (now() - lastMove >= stallMs) {
          done();
          reject(new TransportStalled(what, now() - lastMove, this.missing(targets)));
          return;
        }
        void this.refresh().catch(() => undefined);
      }, SAFETY_POLL_MS);
      const timer = setTimeout(() => {
        done();
        reject(new BenchSanityError(`${what}: the read model did not catch up within ${timeoutMs} ms: ${this.missing(targets).join(', ')}`));
      }, timeoutMs);
    });
  }

  async stop(): Promise<void> {
    await this.client?.end().catch(() => undefined);
  }
}

/**
 * Lag per append: acknowledged at `ackAt`, applied when the checkpoint of its key first covers its
 * position. Acknowledgements of one key arrive in position order (group commit flushes in order).
 */
class LagTracker {
  private readonly pending = new Map<string, { position: bigint; ackAt: number; measured: boolean }[]>();
  /** Measured appends: position → [ackAt, appliedAt]. */
  readonly times = new Map<string, [number, number]>();
  appliedBeforeAck = 0;
  private readonly off: () => void;

  constructor(private readonly watcher: AppliedWatcher) {
    this.off = watcher.onAdvance((key, position, at) => this.applied(key, position, at));
  }

  acked(key: string, position: bigint, ackAt: number, measured: boolean): void {
    if ((this.watcher.positions.get(key) ?? 0n) >= position) {
      // Applied (and notified) before the writer saw its acknowledgement: the event loop ran the notification first.
      if (measured) {
        this.appliedBeforeAck++;
        this.times.set(position.toString(), [ackAt, ackAt]);
      }
      return;
    }
    let queue = this.pending.get(key);
    if (!queue) this.pending.set(key, (queue = []));
    let i = queue.length;
    while (i > 0 && queue[i - 1].position > position) i--;
    queue.splice(i, 0, { position, ackAt, measured });
  }

  private applied(key: string, position: bigint, at: number): void {
    const queue = this.pending.get(key);
    if (!queue) return;
    let n = 0;
    while (n < queue.length && queue[n].position <= position) {
      if (queue[n].measured) this.times.set(queue[n].position.toString(), [queue[n].ackAt, at]);
      n++;
    }
    queue.splice(0, n);
  }

  lags(): number[] {
    return [...this.times.values()].map(([ack, applied]) => applied - ack);
  }

  stop(): void {
    this.off();
  }
}

/** Where the time goes: what the relay sends, what the consumer fetches and handles, what the projection applies. */
class Probe {
  enabled = false;
  /** First time each position was: acknowledged by the broker to the relay, handed to eachBatch, passed to projection.apply. */
  readonly published = new Map<string, number>();
  readonly received = new Map<string, number>();
  readonly applyStarted = new Map<string, number>();
  sends: { messages: number; ms: number }[] = [];
  fetches: number[] = [];
  batches: { messages: number; ms: number }[] = [];
  /** Durations of commitOffsets calls made by the projector itself. */
  offsetCommits: number[] = [];
  /** Offset commits sent to the group coordinator, by the projector or by kafkajs's auto-commit. */
  committed = 0;
  applies: { events: number; ms: number }[] = [];
  /** Highest offset handed to eachBatch per partition, over the whole session. */
  readonly handedOffset = new Map<number, bigint>();
  /** Messages handed to eachBatch again (offset at or below one already handed) and for the first time. */
  refetchedMessages = 0;
  newMessages = 0;

  private cpuAt: { at: number; usage: NodeJS.CpuUsage; elu: ReturnType<typeof performance.eventLoopUtilization>; machine: { busy: number; total: number } } | null = null;
  /** This process's CPU, its event loop's utilisation and the whole machine's CPU while the probe ran. */
  cpu: { seconds: number; processCpuSeconds: number; processCpuShare: number; eventLoopUtilization: number; machineCpuBusy: number } | null = null;

  private static machineTimes() {
    let busy = 0;
    let total = 0;
    for (const c of os.cpus()) {
      const t = c.times;
      busy += t.user + t.nice + t.sys + t.irq;
      total += t.user + t.nice + t.sys + t.irq + t.idle;
    }
    return { busy, total };
  }

  start(): void {
    this.enabled = true;
    this.cpuAt = { at: now(), usage: process.cpuUsage(), elu: performance.eventLoopUtilization(), machine: Probe.machineTimes() };
    this.cpu = null;
    for (const m of [this.published, this.received, this.applyStarted]) m.clear();
    this.sends = [];
    this.fetches = [];
    this.batches = [];
    this.offsetCommits = [];
    this.committed = 0;
    this.applies = [];
    this.refetchedMessages = 0;
    this.newMessages = 0;
  }

  stop(): void {
    if (!this.enabled) return;
    this.enabled = false;
    if (!this.cpuAt) return;
    const seconds = (now() - this.cpuAt.at) / 1000;
    const usage = process.cpuUsage(this.cpuAt.usage);
    const machine = Probe.machineTimes();
    const cpuSeconds = (usage.user + usage.system) / 1e6;
    this.cpu = {
      seconds: round(seconds, 3),
      processCpuSeconds: round(cpuSeconds, 2),
      /** Of one core. */
      processCpuShare: round(cpuSeconds / seconds, 2),
      eventLoopUtilization: round(performance.eventLoopUtilization(this.cpuAt.elu).utilization, 2),
      machineCpuBusy: round((machine.busy - this.cpuAt.machine.busy) / Math.max(1, machine.total - this.cpuAt.machine.total), 2),
    };
  }

  handed(partition: number, offsets: string[]): void {
    const highest = this.handedOffset.get(partition) ?? -1n;
    let refetched = 0;
    let top = highest;
    for (const o of offsets) {
      const offset = BigInt(o);
      if (offset <= highest) refetched++;
      if (offset > top) top = offset;
    }
    this.handedOffset.set(partition, top);
    if (!this.enabled) return;
    this.refetchedMessages += refetched;
    this.newMessages += offsets.length - refetched;
  }

  mark(map: Map<string, number>, positions: (string | null)[], at: number): void {
    if (!this.enabled) return;
    for (const p of positions) if (p !== null && !map.has(p)) map.set(p, at);
  }

  summary(kafka: boolean) {
    const sizes = (xs: number[]) => {
      const d = distribution(xs, 1);
      return { mean: d.mean, p50: d.p50, max: d.max };
    };
    const timing = (xs: number[]) => {
      const d = distribution(xs);
      return { p50: d.p50, p99: d.p99, max: d.max, total: round(d.total) };
    };
    const applies = {
      calls: this.applies.length, eventsPerCall: sizes(this.applies.map((a) => a.events)), ms: timing(this.applies.map((a) => a.ms)),
    };
    if (!kafka) return { cpu: this.cpu, projectionApply: applies };
    return {
      cpu: this.cpu,
      relaySends: { calls: this.sends.length, messagesPerSend: sizes(this.sends.map((s) => s.messages)), ms: timing(this.sends.map((s) => s.ms)) },
      // kafkajs 2 reports no batch count with its fetch event (always 0).
      consumerFetches: { calls: this.fetches.length, ms: timing(this.fetches) },
      eachBatch: {
        calls: this.batches.length, messagesPerBatch: sizes(this.batches.map((b) => b.messages)), ms: timing(this.batches.map((b) => b.ms)),
        newMessages: this.newMessages, refetchedMessages: this.refetchedMessages,
      },
      offsetCommits: { sent: this.committed, byProjector: { calls: this.offsetCommits.length, ms: timing(this.offsetCommits) } },
      projectionApply: applies,
    };
  }
}

function probedProjection(inner: Projection, probe: Probe): Projection {
  return {
    name: inner.name,
    tables: inner.tables,
    async apply(trx, events) {
      const t = now();
      probe.mark(probe.applyStarted, events.map((e) => e.position), t);
      await inner.apply(trx, events);
      if (probe.enabled) probe.applies.push({ events: events.length, ms: now() - t });
    },
  };
}

type Producer = ReturnType<Kafka['producer']>;
type Consumer = ReturnType<Kafka['consumer']>;

function probedProducer(producer: Producer, probe: Probe): Producer {
  const send = producer.send.bind(producer);
  producer.send = async (record) => {
    const t = now();
    const result = await send(record);
    const done = now();
    probe.mark(probe.published, record.messages.map((m) => headerText(m.headers, 'position')), done);
    if (probe.enabled) probe.sends.push({ messages: record.messages.length, ms: done - t });
    return result;
  };
  return producer;
}

function probedConsumer(consumer: Consumer, probe: Probe): Consumer {
  const run = consumer.run.bind(consumer);
  consumer.run = (config) => {
    const eachBatch = config?.eachBatch;
    if (!eachBatch) return run(config);
    return run({
      ...config,
      eachBatch: async (payload) => {
        const t = now();
        probe.mark(probe.received, payload.batch.messages.map((m) => headerText(m.headers, 'position')), t);
        probe.handed(payload.batch.partition, payload.batch.messages.map((m) => m.offset));
        await eachBatch(payload);
        if (probe.enabled && payload.batch.messages.length > 0) probe.batches.push({ messages: payload.batch.messages.length, ms: now() - t });
      },
    });
  };
  const commitOffsets = consumer.commitOffsets.bind(consumer);
  consumer.commitOffsets = async (offsets) => {
    const t = now();
    await commitOffsets(offsets);
    if (probe.enabled) probe.offsetCommits.push(now() - t);
  };
  consumer.on(consumer.events.COMMIT_OFFSETS, () => {
    if (probe.enabled) probe.committed++;
  });
  consumer.on(consumer.events.FETCH, (e) => {
    if (probe.enabled) probe.fetches.push(e.payload.duration);
  });
  return consumer;
}

/** The session's Kafka client with its producers and consumers wrapped by the probe. */
function probedKafka(kafka: Kafka, probe: Probe): Kafka {
  return new Proxy(kafka, {
    get(target, property) {
      if (property === 'producer') return (...args: Parameters<Kafka['producer']>) => probedProducer(target.producer(...args), probe);
      if (property === 'consumer') return (...args: Parameters<Kafka['consumer']>) => probedConsumer(target.consumer(...args), probe);
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** One transport on its own database (and topic): the store, the projector, and what watches them. */
interface Session {
  transport: TransportName;
  db: TestDatabase;
  pool: pg.Pool;
  knex: Knex;
  store: PostgresEventStore;
  watcher: AppliedWatcher;
  probe: Probe;
  seed: SeedLog;
  /** Highest position appended per checkpoint key. */
  heads: Map<string, bigint>;
  keyOf(streamId: string): string;
  partitions: number | null;
  topic: string | null;
  relay: Relay | null;
  projector: Projector;
}

interface Shared {
  o: TransportOptions;
  logger: Logger;
  /** Error-level entries logged by the relay, the projectors and kafkajs (a broker restarting mid-round shows up here). */
  loggedErrors: { count: number };
  kafka: Kafka;
  contracts: ReturnType<typeof loadContracts>;
  /** Event types checked against their JSON Schema (first warm-up batch, then every 100th event). */
  validatedTypes: Set<string>;
  validated: number;
  /** Event types appended in any session. */
  seededTypes: Set<string>;
}

async function openSession(transport: TransportName, shared: Shared): Promise<Session> {
  const { o, logger } = shared;
  const db = await createTestDatabase(`bench_transport_${transport}`);
  const pool = createPool(db.url, 8);
  const knex = createKnex(db.url, 8);
  const store = new PostgresEventStore(pool, db.url);
  const watcher = new AppliedWatcher(db.url, knex);
  const probe = new Probe();
  const projection = probedProjection(readModelProjection, probe);
  let topic: string | null = null;
  try {
    await setupPostgresEventStore(pool);
    await migrateReadModel(knex);
    await watcher.start();
    const base = { transport, db, pool, knex, store, watcher, probe, seed: new SeedLog(), heads: new Map<string, bigint>() };
    if (transport === 'direct') {
      const projector = startProjector({ store, knex, projections: [projection], logger });
      return { ...base, keyOf: () => projection.name, partitions: null, topic: null, relay: null, projector };
    }
    topic = `testament.bench.transport.${randomBytes(4).toString('hex')}`;
    const partitions = await ensureTopic(shared.kafka, topic, o.partitions);
    const kafka = probedKafka(shared.kafka, probe);
    const relay = startRelay({ store, knex, kafka, topic, logger });
    const projector = startKafkaProjector({ kafka, knex, topic, projections: [projection], contracts: shared.contracts, logger });
    return {
      ...base, keyOf: (streamId) => kafkaCheckpointKey(projection.name, partitionOf(streamId, partitions)), partitions, topic, relay, projector,
    };
  } catch (error) {
    await cleanUp({ db, pool, knex, store, watcher, topic, relay: null, projector: null }, shared);
    throw error;
  }
}

async function cleanUp(
  s: Pick<Session, 'db' | 'pool' | 'knex' | 'store' | 'watcher' | 'topic'> & { relay: Relay | null; projector: Projector | null }, shared: Shared,
): Promise<void> {
  const step = async (what: string, f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (error) {
      console.error(`  transport: cannot ${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  await step('stop the relay', async () => s.relay?.stop());
  await step('stop the projector', async () => s.projector?.stop());
  if (s.topic) {
    const topic = s.topic;
    const group = consumerGroupOf(topic, readModelProjection.name);
    // A broker restarting under the round (or a consumer that could not leave its group) makes these
    // fail for a while: retry for about the consumer session timeout before leaving them behind.
    await step(`delete topic ${topic}`, () => retry(() => withAdmin(shared, (admin) => admin.deleteTopics({ topics: [topic], timeout: 10_000 }))));
    await step(`delete consumer group ${group}`, () => retry(() => withAdmin(shared, (admin) => admin.deleteGroups([group]))));
  }
  await step('stop listening', () => s.watcher.stop());
  await step('close the store', () => s.store.close());
  await step('close knex', () => s.knex.destroy());
  await step('close the pool', () => s.pool.end());
  await step(`drop database ${s.db.name}`, () => s.db.drop());
}

async function withAdmin<T>(shared: Shared, f: (admin: ReturnType<Kafka['admin']>) => Promise<T>): Promise<T> {
  const admin = shared.kafka.admin();
  await admin.connect();
  try {
    return await f(admin);
  } finally {
    await admin.disconnect();
  }
}

async function retry<T>(f: () => Promise<T>, attempts = 8, delayMs = 5000): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (error) {
      if (attempt >= attempts) throw error;
      await sleep(delayMs);
    }
  }
}

/** Takes the next seeded request (synchronously, so each stream's expected revisions stay in order) and appends it. */
async function appendNext(s: Session, shared: Shared): Promise<{ key: string; position: bigint }> {
  const r: AppendRequest = s.seed.nextBatch(1)[0];
  const e = r.events[0];
  if (s.seed.events <= shared.o.warmupEvents || s.seed.events % SANITY_VALIDATE_EVERY === 0) {
    shared.contracts.check(e);
    shared.validatedTypes.add(e.type);
    shared.validated++;
  }
  const result = await s.store.append(r.streamId, r.events, { expectedRevision: r.expectedRevision, metadata: r.metadata });
  const key = s.keyOf(r.streamId);
  const position = BigInt(result.position);
  if (position > (s.heads.get(key) ?? 0n)) s.heads.set(key, position);
  return { key, position };
}

/** `count` appends from `writers` concurrent loops; answers the last position per checkpoint key. */
async function burst(s: Session, shared: Shared, count: number, writers: number) {
  const targets = new Map<string, bigint>();
  let remaining = count;
  const loop = async () => {
    while (remaining > 0) {
      remaining--;
      const { key, position } = await appendNext(s, shared);
      if (position > (targets.get(key) ?? 0n)) targets.set(key, position);
    }
  };
  const startedAt = now();
  await Promise.all(Array.from({ length: Math.min(writers, count) }, loop));
  return { targets, startedAt, appendedAt: now() };
}

async function warmUp(s: Session, shared: Shared): Promise<void> {
  const { targets } = await burst(s, shared, shared.o.warmupEvents, shared.o.writers);
  await s.watcher.waitFor(targets, WARMUP_TIMEOUT_MS, `${s.transport} warm-up`, shared.o.stallSeconds * 1000);
}

async function readModelEvents(s: Session): Promise<number> {
  let events = 0;
  for (const table of Object.values(TABLES)) {
    const { rows: [r] } = await s.knex.raw(`SELECT coalesce(sum(revision + 1), 0)::bigint AS events FROM "${table}"`);
    events += Number(r.events);
  }
  return events;
}

async function stallOf(s: Session, error: TransportStalled, startedAt: number): Promise<Stall> {
  return {
    what: error.what, declaredAfterSeconds: round((now() - startedAt) / 1000, 1), stalledForSeconds: round(error.stalledForMs / 1000, 1),
    checkpoints: error.missing, readModelEvents: await readModelEvents(s), appendedEvents: s.seed.events,
  };
}

interface ThroughputRound {
  transport: TransportName;
  events: number;
  /** First append → the checkpoints cover the last position; null when the transport stalled. */
  seconds: number | null;
  /** 0 when the transport stalled (the read model never caught up). */
  eventsPerSecond: number;
  /** The writers alone: first append → last acknowledgement. */
  appendSeconds: number | null;
  appendEventsPerSecond: number | null;
  /** Last acknowledgement → applied. */
  drainSeconds: number | null;
  stalled: Stall | null;
  pipeline: ReturnType<Probe['summary']>;
}

async function throughputRound(s: Session, shared: Shared): Promise<ThroughputRound> {
  const { o } = shared;
  const started = now();
  let appended: { startedAt: number; appendedAt: number } | null = null;
  try {
    await warmUp(s, shared);
    s.probe.start();
    const b = await burst(s, shared, o.events, o.writers);
    appended = b;
    const appliedAt = await s.watcher.waitFor(b.targets, o.drainTimeoutSeconds * 1000, `${s.transport} throughput`, o.stallSeconds * 1000);
    s.probe.stop();
    const total = (appliedAt - b.startedAt) / 1000;
    const appending = (b.appendedAt - b.startedAt) / 1000;
    return {
      transport: s.transport, events: o.events, seconds: round(total, 3), eventsPerSecond: round(o.events / total),
      appendSeconds: round(appending, 3), appendEventsPerSecond: round(o.events / appending),
      drainSeconds: round(Math.max(0, appliedAt - b.appendedAt) / 1000, 3), stalled: null, pipeline: s.probe.summary(s.transport === 'kafka'),
    };
  } catch (error) {
    if (!(error instanceof TransportStalled)) throw error;
    s.probe.stop();
    const appending = appended ? (appended.appendedAt - appended.startedAt) / 1000 : null;
    return {
      transport: s.transport, events: o.events, seconds: null, eventsPerSecond: 0,
      appendSeconds: appending === null ? null : round(appending, 3), appendEventsPerSecond: appending === null ? null : round(o.events / appending),
      drainSeconds: null, stalled: await stallOf(s, error, appended?.startedAt ?? started), pipeline: s.probe.summary(s.transport === 'kafka'),
    };
  }
}

interface LagRound {
  transport: TransportName;
  targetEventsPerSecond: number;
  /** Measured appends (after the lag warm-up) and the rate they were acknowledged at. */
  events: number;
  achievedEventsPerSecond: number;
  /** null when the transport stalled: some events were never applied. */
  lagMs: Distribution | null;
  /** Applied (and notified) before the writer saw the acknowledgement: counted as 0 ms. */
  appliedBeforeAck: number;
  /** Scheduled → acknowledged: the writer kept its rate when this stays small. */
  appendLatencyMs: Distribution;
  /** Each measured event's lag split at the milestones the probe saw (Kafka: relay acked by the broker, eachBatch, projection.apply). */
  stagesMs: Record<string, Distribution>;
  stalled: Stall | null;
  /** Measured events applied before the stall (all of them when not stalled). */
  appliedEvents: number;
  pipeline: ReturnType<Probe['summary']>;
}

async function lagRound(s: Session, shared: Shared, rate: number): Promise<LagRound> {
  const { o } = shared;
  const tracker = new LagTracker(s.watcher);
  const targets = new Map<string, bigint>();
  const appendLatencies: number[] = [];
  const inflight = new Set<Promise<void>>();
  let failure: unknown = null;
  let stalled: Stall | null = null;
  let issued = 0;
  let measured = 0;
  let firstAck = Infinity;
  let lastAck = 0;
  const totalEvents = Math.round((o.lagWarmupSeconds + o.lagSeconds) * rate);
  const warmupEvents = Math.round(o.lagWarmupSeconds * rate);
  const start = now();
  try {
    await warmUp(s, shared);
    const writing = now();
    // Open loop: appends are issued on schedule whether or not earlier ones were acknowledged.
    while (issued < totalEvents && failure === null) {
      const due = Math.min(totalEvents, Math.floor(((now() - writing) / 1000) * rate) + 1);
      while (issued < due) {
        const scheduledAt = writing + (issued / rate) * 1000;
        const isMeasured = issued >= warmupEvents;
        if (isMeasured && !s.probe.enabled) s.probe.start();
        issued++;
        if (isMeasured) measured++;
        const p = appendNext(s, shared).then(({ key, position }) => {
          const ackAt = now();
          if (position > (targets.get(key) ?? 0n)) targets.set(key, position);
          if (isMeasured) {
            appendLatencies.push(ackAt - scheduledAt);
            firstAck = Math.min(firstAck, ackAt);
            lastAck = Math.max(lastAck, ackAt);
          }
          tracker.acked(key, position, ackAt, isMeasured);
        }, (error: unknown) => {
          failure ??= error;
        });
        inflight.add(p);
        void p.then(() => inflight.delete(p));
      }
      await sleep(1);
    }
    await Promise.all(inflight);
    if (failure !== null) throw failure;
    await s.watcher.waitFor(targets, o.drainTimeoutSeconds * 1000, `${s.transport} lag`, o.stallSeconds * 1000);
  } catch (error) {
    if (!(error instanceof TransportStalled)) throw error;
    await Promise.all(inflight);
    stalled = await stallOf(s, error, start);
  } finally {
    tracker.stop();
    s.probe.stop();
  }
  if (!stalled && tracker.times.size !== measured) throw new BenchSanityError(`${s.transport} lag: ${measured} appends measured, ${tracker.times.size} seen applied`);

  const stages: Record<string, number[]> = {};
  const stage = (name: string, from: number | undefined, to: number | undefined) => {
    if (from === undefined || to === undefined) return;
    (stages[name] ??= []).push(to - from);
  };
  for (const [position, [ackAt, appliedAt]] of tracker.times) {
    const applyStarted = s.probe.applyStarted.get(position);
    if (s.transport === 'direct') {
      stage('ackToApplyStart', ackAt, applyStarted);
      stage('applyStartToApplied', applyStarted, appliedAt);
    } else {
      const published = s.probe.published.get(position);
      const received = s.probe.received.get(position);
      stage('ackToPublished', ackAt, published);
      stage('publishedToEachBatch', published, received);
      stage('eachBatchToApplyStart', received, applyStarted);
      stage('applyStartToApplied', applyStarted, appliedAt);
    }
  }
  return {
    transport: s.transport,
    targetEventsPerSecond: rate,
    events: measured,
    achievedEventsPerSecond: measured > 0 ? round(measured / Math.max(1e-9, (lastAck - firstAck) / 1000)) : 0,
    lagMs: stalled ? null : distribution(tracker.lags()),
    appliedBeforeAck: tracker.appliedBeforeAck,
    appendLatencyMs: distribution(appendLatencies),
    stagesMs: Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, distribution(v)])),
    stalled,
    appliedEvents: tracker.times.size,
    pipeline: s.probe.summary(s.transport === 'kafka'),
  };
}

/** Every seeded event made it into the rows, nothing was skipped, the checkpoints end where the log does. */
async function checkSession(s: Session): Promise<void> {
  const problems: string[] = [];
  const created: Record<SeedCategory, number> = { projects: s.seed.projects, folders: s.seed.folders, cases: s.seed.cases };
  for (const category of Object.keys(TABLES) as SeedCategory[]) {
    const table = TABLES[category];
    const { rows: [r] } = await s.knex.raw(`SELECT count(*)::bigint AS n, coalesce(sum(revision + 1), 0)::bigint AS events FROM "${table}"`);
    if (Number(r.n) !== created[category]) problems.push(`${table}: ${r.n} rows, ${created[category]} created`);
    // Each row's revision is its stream's last; sum(revision + 1) counts every event the row absorbed.
    if (Number(r.events) !== s.seed.eventsPerCategory[category]) problems.push(`${table}: rows account for ${r.events} events, ${s.seed.eventsPerCategory[category]} seeded`);
  }
  const { rows: [f] } = await s.knex.raw('SELECT count(*)::bigint AS n FROM projection_failures');
  if (Number(f.n) !== 0) problems.push(`${f.n} rows in projection_failures`);
  const checkpoints: { name: string; position: string }[] = await s.knex('projection_checkpoints').select('name', 'position');
  const byName = new Map(checkpoints.map((c) => [c.name, BigInt(c.position)]));
  for (const [key, head] of s.heads) if (byName.get(key) !== head) problems.push(`checkpoint ${key} at ${byName.get(key)}, last position appended to it ${head}`);
  const status = s.projector.status();
  if (status.some((p) => p.state === 'stopped')) problems.push(`projector stopped: ${JSON.stringify(status)}`);
  if (s.relay && s.relay.status().published < s.seed.events) problems.push(`relay published ${s.relay.status().published} of ${s.seed.events} events`);
  if (s.watcher.lostConnection) problems.push(`LISTEN connection lost: ${s.watcher.lostConnection.message}`);
  if (problems.length > 0) throw new BenchSanityError(`${s.transport} read model does not match what was appended:\n  ${problems.join('\n  ')}`);
}

/** Runs `f` on a fresh session; checks the read model unless the transport stalled; always cleans up. */
async function withSession<T extends { stalled: Stall | null }>(
  transport: TransportName, shared: Shared, f: (s: Session) => Promise<T>, onOpen?: (s: Session) => Promise<void>,
) {
  const s = await openSession(transport, shared);
  try {
    await onOpen?.(s);
    const errorsBefore = shared.loggedErrors.count;
    const result = await f(s);
    const loggedErrors = shared.loggedErrors.count - errorsBefore;
    if (!result.stalled) await checkSession(s);
    for (const type of Object.keys(s.seed.counts)) shared.seededTypes.add(type);
    return { ...result, notifications: s.watcher.notifications, pollAdvances: s.watcher.pollAdvances, partitions: s.partitions, loggedErrors };
  } finally {
    await cleanUp(s, shared);
  }
}

function brokerVersion(): string {
  try {
    const pom = fs.readFileSync(path.join(__dirname, '..', 'infra', 'kafka', 'pom.xml'), 'utf8');
    return /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

function kafkajsVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(require.resolve('kafkajs/package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

const disrupted = (errors: number) => (errors > 0 ? ` [${errors} errors logged during the round: broker or database disrupted? see loggedErrors]` : '');

const stallNote = (stall: Stall | null) => stall
  ? `STALLED: ${stall.what}, no checkpoint moved for ${stall.stalledForSeconds} s; the rows hold ${stall.readModelEvents} of ${stall.appendedEvents} events appended`
  : '';

export async function benchTransport(o: TransportOptions = TRANSPORT_DEFAULTS) {
  // The relay uses kafkajs's default partitioner on purpose (partitionOf mirrors it): its v2 notice is noise here.
  process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
  const loggedErrors = { count: 0 };
  const logger = pino({
    level: process.env.BENCH_LOG_LEVEL ?? 'warn',
    hooks: {
      logMethod(args, method, level) {
        if (level >= pino.levels.values.error) loggedErrors.count++;
        return method.apply(this, args);
      },
    },
  });
  const shared: Shared = {
    o, logger, loggedErrors, kafka: createKafka({ brokers: o.brokers, clientId: 'testament-bench-transport', logger }),
    contracts: loadContracts(), validatedTypes: new Set(), validated: 0, seededTypes: new Set(),
  };
  const code = describeCode(['infra', 'projections', 'contracts', 'services/relay', 'services/shared']);
  const described: { machine?: Machine } = {};
  const describe = async (s: Session) => {
    described.machine ??= await describeMachine(s.pool);
  };
  const sequence: TransportName[] = Array.from({ length: o.rounds }, () => ['direct', 'kafka'] as TransportName[]).flat();

  const throughputRounds: Awaited<ReturnType<typeof withSession<ThroughputRound>>>[] = [];
  for (const [i, transport] of sequence.entries()) {
    const r = await withSession(transport, shared, (s) => throughputRound(s, shared), describe);
    throughputRounds.push(r);
    const line = r.stalled
      ? stallNote(r.stalled)
      : `${r.eventsPerSecond} events/s end to end (appends alone ${r.appendEventsPerSecond} events/s, drained ${r.drainSeconds} s after the last append)`;
    console.log(`  throughput ${i + 1}/${sequence.length} ${transport.padEnd(6)} ${line}${disrupted(r.loggedErrors)}`);
  }
  // A stalled round counts as 0 events/s: its read model never caught up.
  const throughput = (t: TransportName) => median(throughputRounds.filter((r) => r.transport === t).map((r) => r.eventsPerSecond));
  const directThroughput = throughput('direct');
  const kafkaThroughput = throughput('kafka');
  const rate = Math.round(kafkaThroughput * o.lagRateFraction);

  const lagRounds: Awaited<ReturnType<typeof withSession<LagRound>>>[] = [];
  const lagSkipped = rate < 1 ? 'the Kafka transport stalled in the throughput rounds: no rate to write at' : null;
  for (const [i, transport] of (lagSkipped ? [] : sequence).entries()) {
    const r = await withSession(transport, shared, (s) => lagRound(s, shared, rate));
    lagRounds.push(r);
    const l = r.lagMs;
    const line = l ? `p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms over ${l.count} events` : stallNote(r.stalled);
    console.log(`  lag ${i + 1}/${sequence.length} ${transport.padEnd(6)} at ${rate} events/s (achieved ${r.achievedEventsPerSecond}): ${line}${disrupted(r.loggedErrors)}`);
  }
  if (lagSkipped) console.log(`  lag: not measured, ${lagSkipped}`);
  /** Medians over the rounds; null when a round stalled or none ran (some events were never applied). */
  const lagOf = (t: TransportName) => {
    const rounds = lagRounds.filter((r) => r.transport === t);
    const lags = rounds.map((r) => r.lagMs).filter((l): l is Distribution => l !== null);
    if (rounds.length === 0 || lags.length < rounds.length) return { p50: null, p99: null, max: null, stalledRounds: rounds.length - lags.length };
    return { p50: round(median(lags.map((l) => l.p50)), 2), p99: round(median(lags.map((l) => l.p99)), 2), max: round(median(lags.map((l) => l.max)), 2), stalledRounds: 0 };
  };
  const directLag = lagOf('direct');
  const kafkaLag = lagOf('kafka');
  const throughputRatio = round(kafkaThroughput / directThroughput, 3);
  const lagRatio = kafkaLag.p99 === null ? null : round(kafkaLag.p99 / GOAL_KAFKA_P99_LAG_MS, 3);
  const passThroughput = throughputRatio >= GOAL_THROUGHPUT_RATIO;
  const passLag = kafkaLag.p99 !== null && kafkaLag.p99 < GOAL_KAFKA_P99_LAG_MS;
  const unvalidated = [...shared.seededTypes].filter((t) => !shared.validatedTypes.has(t));
  if (unvalidated.length > 0) throw new BenchSanityError(`event types never validated against their schema: ${unvalidated.join(', ')}`);

  return {
    benchmark: 'transport',
    date: new Date().toISOString(),
    machine: described.machine,
    code,
    kafka: { brokers: o.brokers, brokerVersion: `${brokerVersion()} (infra/kafka/pom.xml)`, kafkajs: kafkajsVersion() },
    loadAverageAfter: os.loadavg().map((l) => round(l, 2)),
    parameters: {
      ...o,
      order: `${sequence.join(', ')} for throughput, then the same for lag; each round on a fresh database (Kafka: fresh topic and consumer group, deleted after)`,
      eventsPerThroughputRound: `${o.events} (after ${o.warmupEvents} warm-up events appended and applied)`,
      eventMix: 'bench/seed.ts SeedLog: ~60% RepositoryCaseCreated, ~25% RepositoryCaseUpdated, ~8% RepositoryFolderCreated, ~2% ProjectCreated, ~5% folder/project updates; one event per append, exact expected revisions',
      validatedAgainstContracts: { events: shared.validated, types: [...shared.validatedTypes].sort(), sample: `warm-up events and every ${SANITY_VALIDATE_EVERY}th after` },
      direct: 'startProjector({ store: PostgresEventStore, knex, projections: [readModel] })',
      kafka: 'startRelay + startKafkaProjector({ projections: [readModel] }), same database, fresh topic',
      lagEventsPerSecond: rate,
      lagWriter: 'open loop: one append every 1/rate s whether or not earlier ones were acknowledged',
      appliedAt: `NOTIFY ${CHECKPOINT_CHANNEL} '<key>:<position>' seen by a dedicated LISTEN connection (checkpoints re-read every ${SAFETY_POLL_MS} ms while waiting, as a safety net: pollAdvances counts what only the re-read saw)`,
      stalled: `a round in which no checkpoint moved for ${o.stallSeconds} s while events waited is recorded as stalled: 0 events/s, no lag`,
      pools: 'pg pool 8 (store), knex pool 8 (projector, relay checkpoints)',
      loggedErrors: 'error-level entries logged by the relay, the projectors and kafkajs during the round (a broker restart shows up here); such a round is kept in the medians but flagged',
    },
    throughputRounds,
    lagRounds,
    lagSkipped,
    median: {
      direct: { eventsPerSecond: directThroughput, lagMs: directLag },
      kafka: { eventsPerSecond: kafkaThroughput, lagMs: kafkaLag },
    },
    ratios: {
      throughput: throughputRatio,
      /** kafka ÷ direct of each alternating pair: how much the ratio moves from round to round. */
      throughputPerPair: Array.from({ length: o.rounds }, (_, i) => {
        const [d, k] = [throughputRounds[2 * i], throughputRounds[2 * i + 1]];
        return round(k.eventsPerSecond / d.eventsPerSecond, 3);
      }),
      kafkaP99LagOverGoal: lagRatio,
      kafkaP99OverDirectP99: kafkaLag.p99 === null || directLag.p99 === null ? null : round(kafkaLag.p99 / directLag.p99, 2),
    },
    goal: {
      throughputRatio: GOAL_THROUGHPUT_RATIO,
      kafkaP99LagMs: GOAL_KAFKA_P99_LAG_MS,
      meaning: `median Kafka throughput ≥ ${GOAL_THROUGHPUT_RATIO} × median direct throughput, and median Kafka p99 lag < ${GOAL_KAFKA_P99_LAG_MS} ms at ${o.lagRateFraction} × the Kafka throughput`,
    },
    passThroughput,
    passLag,
    pass: passThroughput && passLag,
  };
}

export async function runTransport(o: TransportOptions): Promise<boolean> {
  console.log(`transport: direct vs Kafka (${o.brokers.join(',')}), ${o.rounds} rounds each: ${o.events.toLocaleString('en')} events from ${o.writers} writers, then ${o.lagSeconds} s at ${o.lagRateFraction} × the Kafka throughput`);
  const result = await benchTransport(o);
  const file = writeResult('transport', result);
  const m = result.median;
  const lag = (l: { p50: number | null; p99: number | null }) => (l.p99 === null ? 'not measured or stalled' : `p50 ${l.p50} ms, p99 ${l.p99} ms`);
  console.log(`transport: throughput direct ${m.direct.eventsPerSecond} events/s, kafka ${m.kafka.eventsPerSecond} events/s (medians), ratio ${result.ratios.throughput} (goal ≥ ${GOAL_THROUGHPUT_RATIO}): ${result.passThroughput ? 'PASS' : 'FAIL'}`);
  console.log(`transport: lag at ${result.parameters.lagEventsPerSecond} events/s: direct ${lag(m.direct.lagMs)}; kafka ${lag(m.kafka.lagMs)}${result.ratios.kafkaP99LagOverGoal === null ? '' : ` = ${result.ratios.kafkaP99LagOverGoal} × the goal`} (< ${GOAL_KAFKA_P99_LAG_MS} ms): ${result.passLag ? 'PASS' : 'FAIL'}  → ${file}`);
  return result.pass;
}
