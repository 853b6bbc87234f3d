// Support for the Kafka transport suites (test/transport/*.int.spec.ts): the broker check, one
// throw-away database and topic per test, a recording projection, concurrent writers, the relay
// as a child process, waits on checkpoints and committed offsets, and the checks every suite
// makes against the event store. KAFKA_BROKERS (default 127.0.0.1:9092); TEST_LOG_LEVEL shows the
// in-process relay's and projector's logs; without it, their info lines and above are kept and
// printed when a test fails (printLogsIfFailed).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import type pg from 'pg';
import pino, { type Logger } from 'pino';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';
import { loadContracts, type ContractValidator } from '../../contracts/validator';
import { createKafka, ensureTopic, partitionOf, type Kafka } from '../../infra/kafka';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { readModelProjection } from '../../projections/readModel';
import { projectionsOfGroup, startKafkaProjector, type KafkaProjectorHooks } from '../../projections/runtime/kafkaProjector';
import type { Projection } from '../../projections/runtime/projection';
import type { Projector } from '../../projections/runtime/projector';
import { ENTITIES } from '../../contracts/entities';
import { streamOf } from '../../contracts/entityEvents';

export const caseStream = (caseId: number) => streamOf(ENTITIES.repositoryCase, caseId);
import { startRelay, type Relay } from '../../services/process/relay/relay';
import { ConcurrencyError } from '../../services/shared/errors';
import type { EventStore } from '../../services/shared/eventStore';
import { withContracts } from '../../services/shared/validatingEventStore';
import { createMigratedDatabase, type TestDatabase } from './database';
import { KAFKA_BROKERS, brokerAnswers, kafkaAnswers } from './kafkaBroker.cjs';
import { waitUntil } from './wait';

export { waitUntil };

const ROOT = path.join(__dirname, '..', '..');

export { KAFKA_BROKERS, brokerAnswers, kafkaAnswers };
export const PARTITIONS = 6;
export const TEST_SECRET = 's'.repeat(40);
export const META: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: 'transport-test', causationId: null };

type Admin = ReturnType<Kafka['admin']>;
type Consumer = ReturnType<Kafka['consumer']>;

// ---------------------------------------------------------------------------------------------
// The broker

/** In a `before`: skips the suite with one visible line when no broker answers, or fails with REQUIRE_SERVICES=1. */
export async function requireKafka(ctx: Mocha.Context, suite: string): Promise<void> {
  if (await kafkaAnswers()) return;
  const where = KAFKA_BROKERS.join(',');
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${suite}: no Kafka broker answers at ${where} and REQUIRE_SERVICES=1 (start one with npm run kafka:up)`);
  console.log(`  SKIPPED ${suite}: no broker at ${where} (npm run kafka:up)`);
  ctx.skip();
}

/** Runs infra/kafka/up.sh or down.sh to completion (the real path, so the scripts find their own dist/). */
export function kafkaScript(name: 'up' | 'down', timeoutMs = 180_000): Promise<string> {
  const script = fs.realpathSync(path.join(ROOT, 'infra', 'kafka', `${name}.sh`));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`infra/kafka/${name}.sh exited with ${code}:\n${output}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Waiting

/** An open-once barrier the writers stop at when `at` events have been appended. */
export class Gate {
  private opened = false;
  private readonly waiters: (() => void)[] = [];
  constructor(readonly at: number) {}
  open(): void {
    this.opened = true;
    this.waiters.splice(0).forEach((w) => w());
  }
  wait(): Promise<void> {
    return this.opened ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

// ---------------------------------------------------------------------------------------------
// One database and one topic per test

export interface TransportTest {
  db: TestDatabase;
  pool: pg.Pool;
  knex: Knex;
  store: EventStore;
  kafka: Kafka;
  admin: Admin;
  contracts: ContractValidator;
  logger: Logger;
  topic: string;
  partitions: number;
  /** The last lines (info and above) the in-process relay and projectors logged, when TEST_LOG_LEVEL is not set. */
  recentLogs(): string[];
  /** Runs `stop` when the test ends (all together: relays, projectors, processes, producers). */
  defer(stop: () => Promise<unknown>): void;
  startRelay(): Relay;
  startProjector(projections: readonly Projection[], hooks?: KafkaProjectorHooks): Projector;
  /** Messages handed to the projectors' eachBatch more than once, per projection: `partition:offset` → times. */
  redeliveries(projection: string): Record<string, number>;
  close(): Promise<void>;
}

const LOG_LINES_KEPT = 300;

/** In an afterEach: when the test failed, prints what its relay and projectors logged (info and above). */
export function printLogsIfFailed(ctx: Mocha.Context, t: TransportTest | undefined): void {
  if (ctx.currentTest?.state !== 'failed' || !t) return;
  const lines = t.recentLogs();
  console.log(`    the last ${lines.length} log lines (info and above) of the in-process relay and projectors:`);
  for (const line of lines) console.log(`      ${line}`);
}

/**
 * What every transport suite sets up, called in its describe: the broker check (skip, or fail with
 * REQUIRE_SERVICES=1), and after each test its logs when it failed, then its clean-up
 * (`beforeClose` first, when given). A test opens its TransportTest with `open` or `published`.
 */
export function transportSuite(suite: string, opts: { beforeClose?: (t: TransportTest) => Promise<void> } = {}) {
  let current: TransportTest | undefined;
  before(async function () {
    await requireKafka(this, suite);
  });
  afterEach(async function () {
    printLogsIfFailed(this, current);
    if (current) await opts.beforeClose?.(current).catch(() => undefined);
    await current?.close();
    current = undefined;
  });
  return {
    async open(options: { partitions?: number } = {}): Promise<TransportTest> {
      current = await openTransportTest(options);
      return current;
    },
    /** 150 events on 15 streams, all published to a 3-partition topic before any projector starts. */
    async published(): Promise<TransportTest> {
      const t = await this.open({ partitions: 3 });
      await startBurst(t.store, { streams: 15, eventsPerStream: 10, writers: 4 }).done;
      const relay = t.startRelay();
      await waitForRelay(t);
      await relay.stop();
      return t;
    },
  };
}

export const uniqueTopic = () => `t-${randomBytes(5).toString('hex')}`;

/** A fresh database (read model, event store, recording table) and a fresh topic (and thus fresh consumer groups). */
export async function openTransportTest(opts: { partitions?: number } = {}): Promise<TransportTest> {
  const kept: string[] = [];
  const keep = {
    write(line: string) {
      kept.push(line.trimEnd().slice(0, 600));
      if (kept.length > LOG_LINES_KEPT) kept.shift();
    },
  };
  const logger = process.env.TEST_LOG_LEVEL ? pino({ level: process.env.TEST_LOG_LEVEL }) : pino({ level: 'info' }, keep);
  const db = await createMigratedDatabase('kafka');
  const pool = createPool(db.url);
  const knex = createKnex(db.url, 20);
  const stoppers: (() => Promise<unknown>)[] = [];
  const topic = uniqueTopic();
  const kafka = createKafka({ brokers: KAFKA_BROKERS, clientId: `testament-${topic}`, logger });
  const admin = kafka.admin();
  const deliveries = new Map<string, Map<string, number>>();
  const spied = countingDeliveries(kafka, deliveries);
  const contracts = loadContracts();
  let adminConnected = false;
  let adapter: PostgresEventStore | undefined;
  const close = async () => {
    // A stopping consumer waits for its fetch to return (up to 5 s): stop them all at once.
    await Promise.all(stoppers.map((stop) => stop().catch((err) => console.error(`    cleanup: ${err?.message ?? err}`))));
    await adapter?.close();
    if (adminConnected) {
      const groups = (await admin.listGroups().catch(() => ({ groups: [] }))).groups.map((g) => g.groupId).filter((g) => g.startsWith(`${topic}.`));
      await admin.deleteGroups(groups).catch(() => undefined);
      await admin.deleteTopics({ topics: [topic], timeout: 10_000 }).catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
    }
    await knex.destroy().catch(() => undefined);
    await pool.end().catch(() => undefined);
    await db.drop();
  };
  try {
    await migrateReadModel(knex);
    await setupPostgresEventStore(pool);
    await createRecordingTable(knex);
    adapter = new PostgresEventStore(pool, db.url);
    const store = withContracts(adapter, contracts);
    await admin.connect();
    adminConnected = true;
    const partitions = await ensureTopic(kafka, topic, opts.partitions ?? PARTITIONS);
    const t: TransportTest = {
      db, pool, knex, store, kafka, admin, contracts, logger, topic, partitions,
      recentLogs: () => [...kept],
      defer: (stop) => void stoppers.push(stop),
      startRelay() {
        const relay = startRelay({ store, knex, kafka, topic, logger });
        stoppers.push(() => relay.stop());
        return relay;
      },
      startProjector(projections, hooks) {
        const projector = startKafkaProjector({ kafka: spied, knex, topic, projections, contracts, logger, hooks });
        stoppers.push(() => projector.stop());
        return projector;
      },
      redeliveries(projection) {
        // What the groups holding the projection were handed (a process's consumer serves all its projections).
        const counts = new Map<string, number>();
        for (const [groupId, handed] of deliveries) {
          if (!projectionsOfGroup(topic, groupId)?.includes(projection)) continue;
          for (const [message, n] of handed) counts.set(message, (counts.get(message) ?? 0) + n);
        }
        return Object.fromEntries([...counts].filter(([, n]) => n > 1));
      },
      close,
    };
    return t;
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The same client, but its consumers count what their eachBatch is handed (while running and not
 * stale, as the projector checks): a spy on the real client, to tell a redelivered batch.
 */
function countingDeliveries(kafka: Kafka, deliveries: Map<string, Map<string, number>>): Kafka {
  const spied: Kafka = Object.create(kafka);
  spied.consumer = (config) => {
    const consumer: Consumer = kafka.consumer(config);
    const counts = deliveries.get(config.groupId) ?? new Map<string, number>();
    deliveries.set(config.groupId, counts);
    const run = consumer.run.bind(consumer);
    consumer.run = (runConfig) => {
      const eachBatch = runConfig?.eachBatch;
      return run({
        ...runConfig,
        ...(eachBatch && {
          eachBatch: async (payload) => {
            if (payload.isRunning() && !payload.isStale()) {
              for (const m of payload.batch.messages) {
                const key = `${payload.batch.partition}:${m.offset}`;
                counts.set(key, (counts.get(key) ?? 0) + 1);
              }
            }
            return eachBatch(payload);
          },
        }),
      });
    };
    return consumer;
  };
  return spied;
}

// ---------------------------------------------------------------------------------------------
// The recording projection: one row per event applied, in the projection's transaction. It keeps
// no revision guard of its own, so an event applied twice shows as two rows, and `seq` (assigned
// while the partition's checkpoint row is locked) gives the order in which events were applied.

export const RECORDER = 'recorder';

export async function createRecordingTable(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE transport_applied (
    seq bigserial PRIMARY KEY, projection text NOT NULL, consumer text NOT NULL,
    stream_id text NOT NULL, revision bigint NOT NULL, position bigint NOT NULL, event_id uuid NOT NULL)`);
}

export function recordingProjection(opts: { consumer?: string; name?: string; failWhen?: (e: EventEnvelope) => boolean } = {}): Projection {
  const name = opts.name ?? RECORDER;
  return {
    name,
    tables: ['transport_applied'],
    async apply(trx, events) {
      const culprit = opts.failWhen && events.find(opts.failWhen);
      if (culprit) throw new Error(`recorder refuses ${culprit.streamId}@${culprit.revision}`);
      await trx('transport_applied').insert(events.map((e) => ({
        projection: name, consumer: opts.consumer ?? '-', stream_id: e.streamId, revision: e.revision, position: e.position, event_id: e.id,
      })));
    },
  };
}

export interface AppliedRow { seq: string; consumer: string; stream_id: string; revision: string; position: string }

export function appliedRows(knex: Knex, projection = RECORDER): Promise<AppliedRow[]> {
  return knex('transport_applied').where({ projection }).orderBy('seq').select('seq', 'consumer', 'stream_id', 'revision', 'position');
}

export async function appliedCount(knex: Knex, projection = RECORDER, consumer?: string): Promise<number> {
  const q = knex('transport_applied').where({ projection });
  if (consumer) q.andWhere({ consumer });
  const [{ n }] = await q.count({ n: '*' });
  return Number(n);
}

export const projectionsUnderTest = (consumer?: string) => [readModelProjection, recordingProjection({ consumer })];

// ---------------------------------------------------------------------------------------------
// Events

const at = (second: number) => new Date(Date.UTC(2026, 0, 1) + second * 1000).toISOString();

/** The event a writer appends at `revision` of case `caseId`: created first, then retitled. */
export function caseEvent(caseId: number, revision: number, writer = 0): NewEvent {
  if (revision === 0) {
    // The first shape of these events (v1): still valid, and still applied by the read model.
    return { type: 'RepositoryCaseCreated', schemaVersion: 1, data: { caseId, projectId: 1, folderId: null, title: `case ${caseId}`, description: null, createdAt: at(0) } };
  }
  return { type: 'RepositoryCaseUpdated', schemaVersion: 1, data: { caseId, changes: { title: `case ${caseId} r${revision} w${writer}` }, updatedAt: at(revision) } };
}

/** Appends `count` events to case `caseId`'s stream (one append each, expected revisions). */
export async function appendCase(store: EventStore, caseId: number, count: number): Promise<void> {
  const existing = await store.readStream(caseStream(caseId), { direction: 'backwards', maxCount: 1 });
  let revision = existing.length === 0 ? -1 : Number(existing[0].revision);
  for (let i = 0; i < count; i++) {
    await store.append(caseStream(caseId), [caseEvent(caseId, revision + 1)], { expectedRevision: revision === -1 ? 'no-stream' : BigInt(revision), metadata: META });
    revision++;
  }
}

export interface Burst {
  appended(): number;
  conflicts(): number;
  total: number;
  done: Promise<void>;
}

/**
 * `writers` concurrent writers fill `streams` case streams with `eventsPerStream` events each.
 * Each picks a random stream that is not full as far as it knows and appends one event with the
 * revision it last saw as the expected revision; a conflict tells it the stream's real revision.
 * Writers stop at each closed gate once `gate.at` events are appended (a few in flight may pass).
 */
export function startBurst(store: EventStore, opts: { streams: number; eventsPerStream: number; writers: number; firstCaseId?: number; gates?: Gate[] }): Burst {
  const first = opts.firstCaseId ?? 1;
  const last = opts.eventsPerStream - 1;
  let appended = 0;
  let conflicts = 0;
  const writer = async (w: number) => {
    const known = new Map<number, number>(); // case id → revision seen (-1: no stream)
    for (let i = 0; i < opts.streams; i++) known.set(first + i, -1);
    for (;;) {
      const open = [...known].filter(([, revision]) => revision < last).map(([id]) => id);
      if (open.length === 0) return;
      for (const gate of opts.gates ?? []) if (appended >= gate.at) await gate.wait();
      const caseId = open[Math.floor(Math.random() * open.length)];
      const revision = known.get(caseId)!;
      try {
        await store.append(caseStream(caseId), [caseEvent(caseId, revision + 1, w)], {
          expectedRevision: revision === -1 ? 'no-stream' : BigInt(revision), metadata: META,
        });
        known.set(caseId, revision + 1);
        appended++;
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
        conflicts++;
        known.set(caseId, error.actual === 'no-stream' ? -1 : Number(error.actual));
      }
    }
  };
  const done = Promise.all(Array.from({ length: opts.writers }, (_, w) => writer(w))).then(() => undefined);
  done.catch(() => undefined); // awaited by the test; not an unhandled rejection meanwhile
  return { appended: () => appended, conflicts: () => conflicts, total: opts.streams * opts.eventsPerStream, done };
}

export async function readAllEvents(store: EventStore): Promise<EventEnvelope[]> {
  const all: EventEnvelope[] = [];
  for (;;) {
    const page = await store.readAll({ after: all.at(-1)?.position ?? '0', maxCount: 1000 });
    all.push(...page);
    if (page.length < 1000) return all;
  }
}

// ---------------------------------------------------------------------------------------------
// Relay and consumers caught up

export async function relayPosition(knex: Knex, name: string): Promise<string> {
  const row = await knex('relay_checkpoints').where({ name }).first('position');
  return row ? String(row.position) : '0';
}

/** The relay's checkpoint reached the event store's head: every event is on the topic. */
export async function waitForRelay(t: TransportTest, timeoutMs = 60_000): Promise<void> {
  await waitUntil(async () => (await relayPosition(t.knex, t.topic)) === (await t.store.headPosition()), 'the relay to publish up to the head', timeoutMs,
    async () => `relay at ${await relayPosition(t.knex, t.topic)}, head ${await t.store.headPosition()}`);
}

/** Per partition: the group's committed offset ('-1' for none) and the partition's end. */
async function committedOffsets(admin: Admin, topic: string, groupId: string): Promise<{ partition: number; committed: string; low: string; high: string }[]> {
  const ends = await admin.fetchTopicOffsets(topic);
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return ends.map((end) => ({
    partition: end.partition, low: end.low, high: end.high,
    committed: committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? '-1',
  }));
}

const lagOf = (p: { committed: string; low: string; high: string }) => Number(BigInt(p.high) - BigInt(p.committed === '-1' ? p.low : p.committed));

export async function committedLag(admin: Admin, topic: string, groupId: string): Promise<number> {
  return (await committedOffsets(admin, topic, groupId)).reduce((lag, p) => lag + lagOf(p), 0);
}

/** The consumer groups of the topic holding any of `projections` (one per set of projections, consumerGroupOf). */
export async function groupsHolding(t: Pick<TransportTest, 'admin' | 'topic'>, projections: readonly string[]): Promise<Array<{ groupId: string; held: string[] }>> {
  const { groups } = await t.admin.listGroups();
  return groups.map(({ groupId }) => ({ groupId, held: (projectionsOfGroup(t.topic, groupId) ?? []).filter((p) => projections.includes(p)) }))
    .filter((g) => g.held.length > 0).sort((a, b) => a.groupId.localeCompare(b.groupId));
}

/** Each projection's consumer group (every group holding it) committed the end of every partition: nothing is left to (re)deliver. */
export async function waitForConsumers(t: TransportTest, projections: string[], timeoutMs = 60_000): Promise<void> {
  // On a timeout: each group's lag, and committed/end of each partition behind.
  const lags = async () => {
    const groups = await groupsHolding(t, projections);
    const missing = projections.filter((p) => !groups.some((g) => g.held.includes(p)));
    return [...missing.map((p) => `${p}: no consumer group yet`), ...(await Promise.all(groups.map(async ({ groupId }) => {
      const parts = await committedOffsets(t.admin, t.topic, groupId);
      const behind = parts.filter((p) => lagOf(p) > 0).map((p) => `p${p.partition} ${p.committed}/${p.high}`);
      return `${groupId}: ${parts.reduce((lag, p) => lag + lagOf(p), 0)}${behind.length ? ` (${behind.join(', ')})` : ''}`;
    })))].join(', ');
  };
  await waitUntil(async () => {
    const groups = await groupsHolding(t, projections);
    if (projections.some((p) => !groups.some((g) => g.held.includes(p)))) return false;
    return (await Promise.all(groups.map((g) => committedLag(t.admin, t.topic, g.groupId)))).every((lag) => lag === 0);
  }, 'the consumer groups to commit the end of the topic', timeoutMs, async () => `uncommitted messages ${await lags()}`);
}

/** Kafka handed each message to the projection's consumers once (no crash, no rebalance). */
export function expectNoRedeliveries(t: TransportTest, projection: string): void {
  const again = Object.entries(t.redeliveries(projection));
  const sample = again.slice(0, 5).map(([message, n]) => `${message} ×${n}`).join(', ');
  expect(again.length, `messages delivered again to ${projection} (partition:offset ×times): ${sample}`).to.equal(0);
}

export async function topicMessageCount(admin: Admin, topic: string): Promise<number> {
  return (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(BigInt(p.high) - BigInt(p.low)), 0);
}

// ---------------------------------------------------------------------------------------------
// Checks against the event store

/** Every event of the store applied exactly once, and each stream's events in revision order. */
export async function expectEachEventAppliedOnceInOrder(t: TransportTest, projection = RECORDER): Promise<AppliedRow[]> {
  const events = await readAllEvents(t.store);
  const rows = await appliedRows(t.knex, projection);
  const seen = new Map<string, number>();
  for (const r of rows) seen.set(r.position, (seen.get(r.position) ?? 0) + 1);
  expect([...seen].filter(([, n]) => n > 1).map(([position]) => position), 'positions applied more than once').to.deep.equal([]);
  const byNumber = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
  expect(rows.map((r) => r.position).sort(byNumber), 'positions applied').to.deep.equal(events.map((e) => e.position));
  const order = (list: { stream_id?: string; streamId?: string; revision: string }[]) => {
    const byStream: Record<string, string[]> = {};
    for (const r of list) (byStream[r.stream_id ?? r.streamId!] ??= []).push(String(r.revision));
    return byStream;
  };
  expect(order(rows), 'revisions of each stream in the order they were applied').to.deep.equal(order(events));
  return rows;
}

interface CaseRow { id: number; project_id: number; folder_id: number | null; title: string; description: string | null; is_deleted: boolean; updated_at: string; revision: string }

/** The repository_cases rows are what folding the store's events gives. */
export async function expectReadModelMatchesStore(t: TransportTest): Promise<void> {
  const expected = new Map<number, CaseRow>();
  for (const e of await readAllEvents(t.store)) {
    if (e.type === 'RepositoryCaseCreated') {
      const d = e.data as { caseId: number; projectId: number; folderId: number | null; title: string; description: string | null; createdAt: string };
      expected.set(d.caseId, { id: d.caseId, project_id: d.projectId, folder_id: d.folderId, title: d.title, description: d.description, is_deleted: false, updated_at: d.createdAt, revision: e.revision });
    } else if (e.type === 'RepositoryCaseUpdated') {
      const d = e.data as { caseId: number; changes: { title?: string; description?: string | null; folderId?: number | null }; updatedAt: string };
      const row = expected.get(d.caseId)!;
      expected.set(d.caseId, {
        ...row, ...(d.changes.title !== undefined && { title: d.changes.title }), ...(d.changes.description !== undefined && { description: d.changes.description }),
        ...(d.changes.folderId !== undefined && { folder_id: d.changes.folderId }), updated_at: d.updatedAt, revision: e.revision,
      });
    }
  }
  const rows = (await t.knex('repository_cases').orderBy('id').select('id', 'project_id', 'folder_id', 'title', 'description', 'is_deleted', 'updated_at', 'revision'))
    .map((r) => ({ ...r, updated_at: (r.updated_at as Date).toISOString(), revision: String(r.revision) }));
  expect(rows, 'repository_cases').to.deep.equal([...expected.values()].sort((a, b) => a.id - b.id));
}

/** Each projection's checkpoint of each partition is the last position the relay put on that partition. */
export async function expectCheckpointsAtPartitionHeads(t: TransportTest, projections: string[]): Promise<void> {
  const heads: Record<string, string> = {};
  for (const e of await readAllEvents(t.store)) heads[String(partitionOf(e.streamId, t.partitions))] = e.position;
  for (const projection of projections) {
    const rows = await t.knex('projection_checkpoints').where('name', 'like', `${projection}#%`).select('name', 'position');
    const actual = Object.fromEntries(rows.map((r) => [r.name.slice(projection.length + 1), String(r.position)]));
    expect(actual, `checkpoints of ${projection}`).to.deep.equal(heads);
  }
}

/** The events and messages a projection parked (projections/runtime/parking.ts), oldest first; `reason` is the error recorded. */
export async function failures(knex: Knex, projection?: string): Promise<Record<string, unknown>[]> {
  const q = knex('parked_events').orderBy('id').select('projection', 'kind', 'position', 'stream_id', 'kafka_partition', 'kafka_offset', 'error as reason', 'attempts');
  if (projection) q.where({ projection });
  return q;
}

// ---------------------------------------------------------------------------------------------
// The relay as its own process

export interface RelayProcess {
  /** The checkpoint the relay logged it starts after. */
  after: string;
  output(): string;
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>;
}

/** Starts `services/process/relay/main.ts` on the test's database and topic; resolves at its "relay started" log line. */
export function startRelayProcess(t: TransportTest): Promise<RelayProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-relay-'));
  const child: ChildProcess = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'services', 'process', 'relay', 'main.ts')], {
    cwd: ROOT,
    env: {
      ...process.env, LOG_LEVEL: 'info', DATABASE_URL: t.db.url, EVENTSTORE_URL: '', KAFKA_BROKERS: KAFKA_BROKERS.join(','), KAFKA_TOPIC: t.topic,
      KAFKA_PARTITIONS: String(t.partitions), DATA_DIR: dataDir, SESSION_SECRET: TEST_SECRET, TOKEN_SECRET: TEST_SECRET,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) => child.on('exit', (code) => {
    exitCode = code;
    fs.rmSync(dataDir, { recursive: true, force: true });
    resolve();
  }));
  const kill = async () => {
    if (exitCode === undefined) child.kill('SIGKILL');
    await exited;
  };
  t.defer(kill);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the relay did not start in time:\n${output}`)), 60_000);
    let pending = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk;
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        if (!line.includes('"relay started"')) continue;
        clearTimeout(timer);
        resolve({ after: JSON.parse(line).after, output: () => output, kill });
      }
    });
    child.stderr!.on('data', (d) => (output += d));
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the relay exited with ${exitCode} before it started:\n${output}`));
    });
  });
}
