import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import pg from 'pg';
import pino, { type Logger } from 'pino';
import { loadContracts } from '../contracts/validator';
import { type AppendRequest, PostgresEventStore, setupPostgresEventStore } from '../infra/eventstore/postgres';
import { createKafka, ensureTopic, type Kafka, partitionOf } from '../infra/kafka';
import { createKnex, createPool } from '../infra/postgres/database';
import { ALL_PROJECTIONS } from '../projections';
import { migrateReadModel } from '../projections/migrations';
import { readModelProjection } from '../projections/readModel';
import { CHECKPOINT_CHANNEL } from '../projections/runtime/checkpoints';
import { consumerGroupOf, kafkaCheckpointKey } from '../projections/runtime/kafkaProjector';
import { DEFAULT_KAFKA_PARTITIONS } from '../services/process/config';
import { createTestDatabase, type TestDatabase } from '../test/support/database';
import { type SeedCategory, SeedLog } from './seed';
import { BenchSanityError, describeCode, describeMachine, type Machine, median, percentile, round, writeResult } from './support';

/**
 * The read model fed by the direct transport (the projector process follows the event store's log)
 * against the Kafka transport (the relay process publishes the log to a topic, the projector process
 * consumes it per partition), in the same run, each round on a fresh database (and, for Kafka, a
 * fresh topic and consumer groups). The consuming side runs as in production (docker-compose.yml):
 * child processes `node --require tsx/cjs services/{relay,projector}/main.ts`, all projections
 * (identity and readModel) for both transports; this process only writes and measures:
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
 * the CPU used while measuring by this process and by each child (/proc/<pid>/stat).
 */
export interface TransportOptions {
  /** Events appended per throughput round. */
  events: number;
  /** Concurrent writers of a throughput round (PostgresEventStore group-commits what they have in flight). */
  writers: number;
  /** Appended and applied before each measurement: the children are ready (the consumer groups have joined) once these are applied. */
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
  partitions: DEFAULT_KAFKA_PARTITIONS, brokers: ['127.0.0.1:9092'], drainTimeoutSeconds: 120, stallSeconds: 20,
};
/** Issue 37's goals: Kafka ≥ 0.8 × direct; p99 lag < 300 ms on both transports; the read model drained within 0.5 s of the last append (median of each transport's throughput rounds). */
const GOAL_THROUGHPUT_RATIO = 0.8;
const GOAL_P99_LAG_MS = 300;
const GOAL_DRAIN_SECONDS = 0.5;
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

/** Children not yet seen exiting: killed if the bench process goes down without its clean-up (uncaught error, Ctrl-C). */
const LIVE_CHILDREN = new Set<Child>();
let exitHookInstalled = false;
function killChildrenOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const c of LIVE_CHILDREN) c.proc.kill('SIGKILL');
  });
}

/** One consuming-side process (relay or projector) as docker-compose runs it: `node --require tsx/cjs services/<role>/main.ts`. */
class Child {
  readonly proc: ChildProcess;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  stopping = false;
  /** Error-level (≥ 50) log lines the child wrote (pino JSON), and its last output lines for diagnostics. */
  loggedErrors = 0;
  private readonly tail: string[] = [];
  private readonly lineListeners = new Set<(line: string) => void>();

  constructor(readonly role: 'relay' | 'projector', env: NodeJS.ProcessEnv, cwd: string) {
    // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to the children, as in bench/import.ts.
    const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
    this.proc = spawn(process.execPath, [...nodeArgs, '--require', 'tsx/cjs', path.join('services', 'process', role, 'main.ts')], {
      cwd, env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    killChildrenOnExit();
    LIVE_CHILDREN.add(this);
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        LIVE_CHILDREN.delete(this);
        this.exit = { code, signal };
        resolve(this.exit);
      });
      this.proc.once('error', (error) => {
        this.line(`spawn error: ${error.message}`);
        this.exit ??= { code: null, signal: null };
        resolve(this.exit);
      });
    });
    for (const stream of [this.proc.stdout, this.proc.stderr]) {
      let buffered = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        buffered += chunk;
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          this.line(buffered.slice(0, nl));
          buffered = buffered.slice(nl + 1);
        }
      });
    }
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  private line(line: string): void {
    if (line.trim() === '') return;
    try {
      const entry = JSON.parse(line) as { level?: unknown };
      if ((typeof entry.level === 'number' && entry.level >= 50) || entry.level === 'fatal') this.loggedErrors++;
    } catch {
      // Not a log entry (a stack trace, tsx's output): kept in the tail only.
    }
    this.tail.push(line.length > 2000 ? `${line.slice(0, 2000)}…` : line);
    if (this.tail.length > 20) this.tail.shift();
    for (const l of this.lineListeners) l(line);
  }

  lastLines(): string {
    return this.tail.join('\n    ');
  }

  /** Resolves when a log line contains `text`; rejects when the process exits first or after `timeoutMs`. */
  waitForLine(text: string, timeoutMs: number): Promise<void> {
    if (this.tail.some((l) => l.includes(text))) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        this.lineListeners.delete(onLine);
        clearTimeout(timer);
      };
      const onLine = (line: string) => {
        if (!line.includes(text)) return;
        done();
        resolve();
      };
      this.lineListeners.add(onLine);
      const timer = setTimeout(() => {
        done();
        reject(new BenchSanityError(`${this.role}: no "${text}" within ${timeoutMs} ms:\n    ${this.lastLines()}`));
      }, timeoutMs);
      void this.exited.then(() => {
        done();
        reject(new BenchSanityError(`${this.role} exited (${JSON.stringify(this.exit)}) before "${text}":\n    ${this.lastLines()}`));
      });
    });
  }

  /** CPU seconds (user + system) the process has used so far, from /proc/<pid>/stat; null when unavailable. */
  cpuSeconds(): number | null {
    if (this.pid === undefined || this.exit) return null;
    try {
      const stat = fs.readFileSync(`/proc/${this.pid}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces), counted from field 3 (state): utime is 14, stime 15.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[14 - 3]) + Number(fields[15 - 3])) / CLOCK_TICKS;
    } catch {
      return null;
    }
  }

  /** SIGTERM (the services shut down gracefully), SIGKILL after `graceMs`; resolves once exited. */
  async stop(graceMs = 30_000): Promise<void> {
    if (this.exit || this.pid === undefined) return;
    this.stopping = true;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    const exit = await this.exited;
    clearTimeout(timer);
    LIVE_CHILDREN.delete(this);
    if (exit.code !== 0) throw new Error(`${this.role} exited with ${JSON.stringify(exit)}:\n    ${this.lastLines()}`);
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Rejects with BenchSanityError as soon as one of the children exits while the round runs. */
function childExit(children: Child[]): { promise: Promise<never>; cancel(): void } {
  let cancelled = false;
  const promise = new Promise<never>((_resolve, reject) => {
    for (const c of children) {
      void c.exited.then((exit) => {
        if (cancelled || c.stopping) return;
        reject(new BenchSanityError(`${c.role} (pid ${c.pid}) exited during the round (${JSON.stringify(exit)}):\n    ${c.lastLines()}`));
      });
    }
  });
  promise.catch(() => undefined);
  return { promise, cancel: () => (cancelled = true) };
}

/** Where the CPU goes while measuring: the bench process (writers, LISTEN, measuring) and the consuming-side children. */
class Probe {
  enabled = false;
  private cpuAt: {
    at: number; usage: NodeJS.CpuUsage; elu: ReturnType<typeof performance.eventLoopUtilization>; machine: { busy: number; total: number };
    children: (number | null)[];
  } | null = null;
  cpu: {
    seconds: number; benchCpuSeconds: number; benchCpuShare: number; benchEventLoopUtilization: number; machineCpuBusy: number;
    /** Per child: CPU seconds (user + system, /proc/<pid>/stat) over the window and the share of one core. */
    children: Record<string, { pid: number | undefined; cpuSeconds: number | null; cpuShare: number | null }>;
  } | null = null;

  constructor(private readonly children: Child[]) {}

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
    this.cpu = null;
    this.cpuAt = {
      at: now(), usage: process.cpuUsage(), elu: performance.eventLoopUtilization(), machine: Probe.machineTimes(),
      children: this.children.map((c) => c.cpuSeconds()),
    };
  }

  stop(): void {
    if (!this.enabled) return;
    this.enabled = false;
    if (!this.cpuAt) return;
    const from = this.cpuAt;
    const seconds = (now() - from.at) / 1000;
    const usage = process.cpuUsage(from.usage);
    const machine = Probe.machineTimes();
    const cpuSeconds = (usage.user + usage.system) / 1e6;
    const children = Object.fromEntries(this.children.map((c, i) => {
      const [before, after] = [from.children[i], c.cpuSeconds()];
      const used = before === null || after === null ? null : after - before;
      return [c.role, { pid: c.pid, cpuSeconds: used === null ? null : round(used, 2), cpuShare: used === null ? null : round(used / seconds, 2) }];
    }));
    this.cpu = {
      seconds: round(seconds, 3),
      benchCpuSeconds: round(cpuSeconds, 2),
      /** Of one core. */
      benchCpuShare: round(cpuSeconds / seconds, 2),
      benchEventLoopUtilization: round(performance.eventLoopUtilization(from.elu).utilization, 2),
      machineCpuBusy: round((machine.busy - from.machine.busy) / Math.max(1, machine.total - from.machine.total), 2),
      children,
    };
  }

  summary() {
    return { cpu: this.cpu };
  }
}

/** One transport on its own database (and topic): the store the bench writes to, the child processes that consume, what watches them. */
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
  /** direct: [projector]; kafka: [relay, projector]. */
  children: Child[];
  dataDir: string;
}

interface Shared {
  o: TransportOptions;
  logger: Logger;
  /** Error-level entries logged by the bench's own Kafka admin client (the children's are counted per child). */
  loggedErrors: { count: number };
  kafka: Kafka;
  contracts: ReturnType<typeof loadContracts>;
  /** Event types checked against their JSON Schema (first warm-up batch, then every 100th event). */
  validatedTypes: Set<string>;
  validated: number;
  /** Event types appended in any session. */
  seededTypes: Set<string>;
}

const REPO_ROOT = path.join(__dirname, '..');
/** The relay logs "relay started" once its producer is connected (it may have to create nothing: the bench made the topic). */
const CHILD_START_TIMEOUT_MS = 60_000;

/** The children's environment: the bench's, minus anything that would pick another database, store or transport. */
function childEnv(s: { db: TestDatabase; dataDir: string; topic: string | null; partitions: number | null }, shared: Shared, role: Child['role']): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (/^(KAFKA_|EVENTSTORE_URL$|DATABASE_URL$|ADMIN_|PORT$|HOST$)/.test(name)) delete env[name];
  Object.assign(env, {
    DATABASE_URL: s.db.url, DATA_DIR: s.dataDir,
    SESSION_SECRET: randomBytes(20).toString('hex'), TOKEN_SECRET: randomBytes(20).toString('hex'),
    // The relay logs "relay started" at info (its only info line after start-up): the bench waits for it.
    LOG_LEVEL: role === 'relay' ? 'info' : 'warn',
    KAFKAJS_NO_PARTITIONER_WARNING: '1',
  });
  if (s.topic !== null) {
    Object.assign(env, { KAFKA_BROKERS: shared.o.brokers.join(','), KAFKA_TOPIC: s.topic, KAFKA_PARTITIONS: String(s.partitions ?? shared.o.partitions) });
  }
  return env;
}

async function openSession(transport: TransportName, shared: Shared): Promise<Session> {
  const { o } = shared;
  const db = await createTestDatabase(`bench_transport_${transport}`);
  const pool = createPool(db.url, 8);
  const knex = createKnex(db.url, 8);
  const store = new PostgresEventStore(pool, db.url);
  const watcher = new AppliedWatcher(db.url, knex);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-bench-transport-'));
  const children: Child[] = [];
  let topic: string | null = null;
  try {
    await setupPostgresEventStore(pool);
    await migrateReadModel(knex);
    await watcher.start();
    let partitions: number | null = null;
    if (transport === 'kafka') {
      topic = `testament.bench.transport.${randomBytes(4).toString('hex')}`;
      partitions = await ensureTopic(shared.kafka, topic, o.partitions);
    }
    const where = { db, dataDir, topic, partitions };
    if (transport === 'kafka') {
      const relay = new Child('relay', childEnv(where, shared, 'relay'), REPO_ROOT);
      children.push(relay);
      await relay.waitForLine('relay started', CHILD_START_TIMEOUT_MS);
    }
    // The projector is ready once the warm-up events are applied (each round's warm-up step).
    children.push(new Child('projector', childEnv(where, shared, 'projector'), REPO_ROOT));
    const probe = new Probe(children);
    const base = { transport, db, pool, knex, store, watcher, probe, seed: new SeedLog(), heads: new Map<string, bigint>(), topic, partitions, children, dataDir };
    if (partitions === null) return { ...base, keyOf: () => readModelProjection.name };
    const n = partitions;
    return { ...base, keyOf: (streamId) => kafkaCheckpointKey(readModelProjection.name, partitionOf(streamId, n)) };
  } catch (error) {
    await cleanUp({ db, pool, knex, store, watcher, topic, children, dataDir }, shared);
    throw error;
  }
}

async function cleanUp(s: Pick<Session, 'db' | 'pool' | 'knex' | 'store' | 'watcher' | 'topic' | 'children' | 'dataDir'>, shared: Shared): Promise<void> {
  const step = async (what: string, f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (error) {
      console.error(`  transport: cannot ${what}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  // Relay first (as docker-compose would stop the producer side), then the projector; both before their database and topic go.
  for (const c of s.children) await step(`stop the ${c.role} (pid ${c.pid})`, () => c.stop());
  if (s.topic) {
    const topic = s.topic;
    const groups = [consumerGroupOf(topic, ALL_PROJECTIONS.map((p) => p.name))];
    // A broker restarting under the round (or a consumer that could not leave its group) makes these
    // fail for a while: retry for about the consumer session timeout before leaving them behind.
    await step(`delete topic ${topic}`, () => retry(() => withAdmin(shared, (admin) => admin.deleteTopics({ topics: [topic], timeout: 10_000 }))));
    await step(`delete consumer groups ${groups.join(', ')}`, () => retry(() => withAdmin(shared, (admin) => admin.deleteGroups(groups))));
  }
  await step('stop listening', () => s.watcher.stop());
  await step('close the store', () => s.store.close());
  await step('close knex', () => s.knex.destroy());
  await step('close the pool', () => s.pool.end());
  await step(`drop database ${s.db.name}`, () => s.db.drop());
  await step(`remove ${s.dataDir}`, async () => fs.rmSync(s.dataDir, { recursive: true, force: true }));
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

/** Also the children's readiness: the projector (and the relay) have applied (and published) the warm-up events. */
async function warmUp(s: Session, shared: Shared): Promise<void> {
  const { targets } = await burst(s, shared, shared.o.warmupEvents, shared.o.writers);
  await s.watcher.waitFor(targets, WARMUP_TIMEOUT_MS, `${s.transport} warm-up`, shared.o.stallSeconds * 1000);
}

/** `f`, unless one of the session's children exits first (a crash is a failure of the benchmark, not a stall). */
async function whileChildrenRun<T>(s: Session, f: () => Promise<T>): Promise<T> {
  const exit = childExit(s.children);
  try {
    return await Promise.race([f(), exit.promise]);
  } finally {
    exit.cancel();
  }
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

function throughputRound(s: Session, shared: Shared): Promise<ThroughputRound> {
  return whileChildrenRun(s, () => measureThroughput(s, shared));
}

async function measureThroughput(s: Session, shared: Shared): Promise<ThroughputRound> {
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
      drainSeconds: round(Math.max(0, appliedAt - b.appendedAt) / 1000, 3), stalled: null, pipeline: s.probe.summary(),
    };
  } catch (error) {
    if (!(error instanceof TransportStalled)) throw error;
    s.probe.stop();
    const appending = appended ? (appended.appendedAt - appended.startedAt) / 1000 : null;
    return {
      transport: s.transport, events: o.events, seconds: null, eventsPerSecond: 0,
      appendSeconds: appending === null ? null : round(appending, 3), appendEventsPerSecond: appending === null ? null : round(o.events / appending),
      drainSeconds: null, stalled: await stallOf(s, error, appended?.startedAt ?? started), pipeline: s.probe.summary(),
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
  stalled: Stall | null;
  /** Measured events applied before the stall (all of them when not stalled). */
  appliedEvents: number;
  pipeline: ReturnType<Probe['summary']>;
  /**
   * Kafka only: from each measured append's acknowledgement to the relay's send of it (the
   * message's CreateTime, set by the relay's producer on this machine's clock): the part of the
   * lag before the projector can fetch the event.
   */
  relayMs: Distribution | null;
}

function lagRound(s: Session, shared: Shared, rate: number): Promise<LagRound> {
  return whileChildrenRun(s, () => measureLag(s, shared, rate));
}

async function measureLag(s: Session, shared: Shared, rate: number): Promise<LagRound> {
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
  /** Measured appends: position → wall-clock time of the acknowledgement (for the relay's share of the lag). */
  const ackWallOf = new Map<string, number>();
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
            ackWallOf.set(position.toString(), Date.now());
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

  return {
    transport: s.transport,
    targetEventsPerSecond: rate,
    events: measured,
    achievedEventsPerSecond: measured > 0 ? round(measured / Math.max(1e-9, (lastAck - firstAck) / 1000)) : 0,
    lagMs: stalled ? null : distribution(tracker.lags()),
    appliedBeforeAck: tracker.appliedBeforeAck,
    appendLatencyMs: distribution(appendLatencies),
    stalled,
    appliedEvents: tracker.times.size,
    pipeline: s.probe.summary(),
    relayMs: stalled || s.topic === null ? null : distribution(await relayLatencies(s, shared, ackWallOf)),
  };
}

/** Reads the round's topic from the start (a group of its own) and answers, per measured position, its send time less its acknowledgement. */
async function relayLatencies(s: Session, shared: Shared, ackWallOf: Map<string, number>): Promise<number[]> {
  const latencies: number[] = [];
  const consumer = shared.kafka.consumer({ groupId: `${s.topic}.bench.relay.${randomBytes(3).toString('hex')}`, allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [s.topic!], fromBeginning: true });
    const left = new Set(ackWallOf.keys());
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new BenchSanityError(`relay latency: ${left.size} measured events not found on ${s.topic}`)), 60_000);
      consumer.run({
        eachMessage: async ({ message }) => {
          const position = message.headers?.position?.toString();
          if (position === undefined || !left.delete(position)) return;
          latencies.push(Number(message.timestamp) - ackWallOf.get(position)!);
          if (left.size === 0) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
  return latencies;
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
  const { rows: [f] } = await s.knex.raw('SELECT count(*)::bigint AS n FROM parked_events');
  if (Number(f.n) !== 0) problems.push(`${f.n} events parked (parked_events)`);
  const checkpoints: { name: string; position: string }[] = await s.knex('projection_checkpoints').select('name', 'position');
  const byName = new Map(checkpoints.map((c) => [c.name, BigInt(c.position)]));
  for (const [key, head] of s.heads) if (byName.get(key) !== head) problems.push(`checkpoint ${key} at ${byName.get(key)}, last position appended to it ${head}`);
  for (const c of s.children) if (c.exit) problems.push(`${c.role} exited: ${JSON.stringify(c.exit)}:\n    ${c.lastLines()}`);
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
    const errorsBefore = shared.loggedErrors.count + s.children.reduce((n, c) => n + c.loggedErrors, 0);
    const result = await f(s);
    const loggedErrors = shared.loggedErrors.count + s.children.reduce((n, c) => n + c.loggedErrors, 0) - errorsBefore;
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
  const code = describeCode(['infra', 'projections', 'contracts', 'services/process', 'services/shared']);
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
    const relay = r.relayMs ? ` (of which append → relay's send: p50 ${r.relayMs.p50} ms, p99 ${r.relayMs.p99} ms)` : '';
    const line = l ? `p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms over ${l.count} events${relay}` : stallNote(r.stalled);
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
  const lagRatio = kafkaLag.p99 === null ? null : round(kafkaLag.p99 / GOAL_P99_LAG_MS, 3);
  const passThroughput = throughputRatio >= GOAL_THROUGHPUT_RATIO;
  const passLag = [directLag, kafkaLag].every((l) => l.p99 !== null && l.p99 < GOAL_P99_LAG_MS);
  const drainOf = (t: TransportName) => round(median(throughputRounds.filter((r) => r.transport === t && r.drainSeconds !== null).map((r) => r.drainSeconds as number)), 3);
  const drain = { direct: drainOf('direct'), kafka: drainOf('kafka') };
  const passDrain = drain.direct <= GOAL_DRAIN_SECONDS && drain.kafka <= GOAL_DRAIN_SECONDS;
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
      direct: 'child process: node --require tsx/cjs services/process/projector/main.ts (no KAFKA_BROKERS: direct projector, all projections)',
      kafka: 'child processes: services/process/relay/main.ts and services/process/projector/main.ts with KAFKA_BROKERS, a fresh KAFKA_TOPIC, KAFKA_PARTITIONS (Kafka projector, all projections); same database',
      children: 'env DATABASE_URL (the round\'s database), DATA_DIR (temp dir), SESSION_SECRET/TOKEN_SECRET, LOG_LEVEL=warn (relay: info, to see "relay started"); started after the bench set the database up, ready after the warm-up is applied, SIGTERM at the end of the round',
      lagEventsPerSecond: rate,
      lagWriter: 'open loop: one append every 1/rate s whether or not earlier ones were acknowledged',
      appliedAt: `NOTIFY ${CHECKPOINT_CHANNEL} '<key>:<position>' seen by a dedicated LISTEN connection (checkpoints re-read every ${SAFETY_POLL_MS} ms while waiting, as a safety net: pollAdvances counts what only the re-read saw)`,
      stalled: `a round in which no checkpoint moved for ${o.stallSeconds} s while events waited is recorded as stalled: 0 events/s, no lag`,
      pools: 'bench: pg pool 8 (store), knex pool 8 (checkpoints); children: openPlatform defaults',
      loggedErrors: 'error-level entries logged by the children (relay, projector, their kafkajs) and the bench\'s Kafka admin during the round (a broker restart shows up here); such a round is kept in the medians but flagged',
    },
    throughputRounds,
    lagRounds,
    lagSkipped,
    median: {
      direct: { eventsPerSecond: directThroughput, lagMs: directLag, drainSeconds: drain.direct },
      kafka: { eventsPerSecond: kafkaThroughput, lagMs: kafkaLag, drainSeconds: drain.kafka },
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
      p99LagMs: GOAL_P99_LAG_MS,
      drainSeconds: GOAL_DRAIN_SECONDS,
      meaning: `median Kafka throughput ≥ ${GOAL_THROUGHPUT_RATIO} × median direct throughput; median p99 lag < ${GOAL_P99_LAG_MS} ms on both transports at ${o.lagRateFraction} × the Kafka throughput; the read model drained within ${GOAL_DRAIN_SECONDS} s of the last append (median of each transport's throughput rounds)`,
    },
    passThroughput,
    passLag,
    passDrain,
    pass: passThroughput && passLag && passDrain,
  };
}

export async function runTransport(o: TransportOptions): Promise<boolean> {
  console.log(`transport: direct vs Kafka (${o.brokers.join(',')}), ${o.rounds} rounds each: ${o.events.toLocaleString('en')} events from ${o.writers} writers, then ${o.lagSeconds} s at ${o.lagRateFraction} × the Kafka throughput`);
  const result = await benchTransport(o);
  const file = writeResult('transport', result);
  const m = result.median;
  const lag = (l: { p50: number | null; p99: number | null }) => (l.p99 === null ? 'not measured or stalled' : `p50 ${l.p50} ms, p99 ${l.p99} ms`);
  console.log(`transport: throughput direct ${m.direct.eventsPerSecond} events/s, kafka ${m.kafka.eventsPerSecond} events/s (medians), ratio ${result.ratios.throughput} (goal ≥ ${GOAL_THROUGHPUT_RATIO}): ${result.passThroughput ? 'PASS' : 'FAIL'}`);
  console.log(`transport: lag at ${result.parameters.lagEventsPerSecond} events/s: direct ${lag(m.direct.lagMs)}; kafka ${lag(m.kafka.lagMs)}${result.ratios.kafkaP99LagOverGoal === null ? '' : ` = ${result.ratios.kafkaP99LagOverGoal} × the goal`} (p99 < ${GOAL_P99_LAG_MS} ms on both): ${result.passLag ? 'PASS' : 'FAIL'}`);
  console.log(`transport: drained ${result.median.direct.drainSeconds} s (direct), ${result.median.kafka.drainSeconds} s (kafka) after the last append (goal ≤ ${GOAL_DRAIN_SECONDS} s): ${result.passDrain ? 'PASS' : 'FAIL'}  → ${file}`);
  return result.pass;
}
