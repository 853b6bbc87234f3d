import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { EventMetadata } from '../contracts/envelope';
import { PostgresEventStore, setupPostgresEventStore } from '../infra/eventstore/postgres';
import { createPool } from '../infra/postgres/database';
import { createTestDatabase } from '../test/support/database';
import { BenchSanityError, describeCode, describeMachine, median, percentile, round, seconds, writeResult } from './support';

/**
 * Single-event appends through PostgresEventStore.append (group commit, es_append) against the
 * floor of what PostgreSQL does for the same writers: autocommit single-row INSERTs into a table of
 * the same shape. Rounds alternate so that drift (checkpoints, autovacuum, a neighbour's load)
 * hits both sides alike.
 */
export interface AppendOptions {
  writers: number;
  warmupSeconds: number;
  measureSeconds: number;
  rounds: number;
  streams: number;
}

export const APPEND_DEFAULTS: AppendOptions = { writers: 8, warmupSeconds: 2, measureSeconds: 10, rounds: 6, streams: 1000 };
const GOAL_RATIO = 0.5;
/** The hash chain's cost (docs/compliance.md): the store with it against the store without it. */
const GOAL_CHAIN_RATIO = 0.9;
/**
 * The store without the chain's work, for the `unchained` rounds: es_append as the schema file
 * defines it, less its lines between `-- chain: begin` and `-- chain: end` (each event's content
 * built and hashed). Put back by setupPostgresEventStore after each such round.
 */
function unchainedAppendSql(): string {
  const schema = fs.readFileSync(path.join(__dirname, '../infra/eventstore/postgres.schema.sql'), 'utf8');
  const start = schema.indexOf('CREATE OR REPLACE FUNCTION es_append');
  const fn = schema.slice(start, schema.indexOf('END $$;', start) + 'END $$;'.length);
  const unchained = fn.replace(/^\s*-- chain: begin[\s\S]*?-- chain: end\n/m, '');
  if (unchained === fn) throw new BenchSanityError('es_append has no "-- chain: begin" … "-- chain: end" lines to leave out');
  return unchained;
}


const PLAIN_TABLE_SQL = `
CREATE TABLE bench_plain_events (
  position       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id             uuid        NOT NULL UNIQUE,
  stream_id      text        NOT NULL,
  revision       bigint      NOT NULL,
  type           text        NOT NULL,
  schema_version integer     NOT NULL,
  data           jsonb       NOT NULL,
  metadata       jsonb       NOT NULL,
  recorded_at    timestamptz NOT NULL,
  UNIQUE (stream_id, revision)
)`;
const PLAIN_INSERT_SQL = `INSERT INTO bench_plain_events (id, stream_id, revision, type, schema_version, data, metadata, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, now())`;

/** A RepositoryCaseUpdated of typical size (~200 bytes of JSON). */
function caseUpdate(caseId: number) {
  return {
    type: 'RepositoryCaseUpdated',
    data: {
      caseId,
      changes: {
        title: 'Login with an expired password opens the reset form',
        description: 'Sign in as a user whose password expired yesterday; the reset form opens with the email filled in.',
      },
      updatedAt: new Date().toISOString(),
    },
  };
}

function metadata(): EventMetadata {
  return { actor: { userId: 1, via: 'api' }, correlationId: randomUUID(), causationId: null };
}

interface RoundResult {
  kind: 'plain' | 'store' | 'unchained';
  events: number;
  seconds: number;
  eventsPerSecond: number;
  latencyMs: { p50: number; p99: number; max: number };
  /** store only: es_append calls in the window, i.e. transactions; events / transactions = batch size. */
  transactions?: number;
}

/** Runs `writers` loops of `write` for warm-up + measure seconds; counts what completes in the window. */
async function runRound(
  kind: RoundResult['kind'], o: AppendOptions, write: (writer: number) => Promise<void>, onWindow?: (open: boolean) => void,
): Promise<RoundResult> {
  let measuring = false;
  let stopped = false;
  let events = 0;
  const latencies: number[] = [];
  const loop = async (writer: number) => {
    while (!stopped) {
      const t0 = performance.now();
      await write(writer);
      if (measuring) {
        events++;
        latencies.push(performance.now() - t0);
      }
    }
  };
  const loops = Array.from({ length: o.writers }, (_, w) => loop(w));
  await new Promise((r) => setTimeout(r, o.warmupSeconds * 1000));
  measuring = true;
  onWindow?.(true);
  const start = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, o.measureSeconds * 1000));
  measuring = false;
  onWindow?.(false);
  const elapsed = seconds(start);
  stopped = true;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  return {
    kind, events, seconds: round(elapsed, 3), eventsPerSecond: round(events / elapsed),
    latencyMs: { p50: round(percentile(latencies, 50), 2), p99: round(percentile(latencies, 99), 2), max: round(latencies[latencies.length - 1] ?? NaN, 2) },
  };
}

async function plainRound(pool: pg.Pool, o: AppendOptions, revisions: number[]): Promise<RoundResult> {
  const clients = await Promise.all(Array.from({ length: o.writers }, () => pool.connect()));
  try {
    return await runRound('plain', o, async (w) => {
      const e = caseUpdate(w + 1);
      await clients[w].query(PLAIN_INSERT_SQL, [
        randomUUID(), `plain-${w}`, revisions[w]++, e.type, 1, JSON.stringify(e.data), JSON.stringify(metadata()),
      ]);
    });
  } finally {
    for (const c of clients) c.release();
  }
}

async function storeRound(store: PostgresEventStore, pool: pg.Pool, o: AppendOptions, kind: 'store' | 'unchained' = 'store'): Promise<RoundResult> {
  // Counts es_append calls (one transaction each) to report the batch size group commit reaches.
  let transactions = 0;
  let counting = false;
  const query = pool.query.bind(pool);
  pool.query = ((...args: Parameters<typeof query>) => {
    if (counting) transactions++;
    return query(...args);
  }) as typeof pool.query;
  try {
    const result = await runRound(kind, o, async () => {
      const caseId = 1 + Math.floor(Math.random() * o.streams);
      await store.append(`repositoryCase-${caseId}`, [caseUpdate(caseId)], { expectedRevision: 'any', metadata: metadata() });
    }, (open) => (counting = open));
    return { ...result, transactions };
  } finally {
    pool.query = query;
  }
}

export async function benchAppend(o: AppendOptions = APPEND_DEFAULTS) {
  const db = await createTestDatabase('bench_append');
  const pool = createPool(db.url, o.writers);
  const store = new PostgresEventStore(pool, db.url);
  try {
    await setupPostgresEventStore(pool);
    await pool.query(PLAIN_TABLE_SQL);
    const machine = await describeMachine(pool);
    const code = describeCode(['infra', 'contracts']);
    const sample = caseUpdate(1);
    const revisions = Array.from({ length: o.writers }, () => 0);
    const rounds: RoundResult[] = [];
    for (let i = 0; i < o.rounds; i++) {
      let r: RoundResult;
      if (i % 3 === 0) r = await plainRound(pool, o, revisions);
      else if (i % 3 === 1) r = await storeRound(store, pool, o);
      else {
        await pool.query(unchainedAppendSql());
        r = await storeRound(store, pool, o, 'unchained');
        await setupPostgresEventStore(pool);
      }
      console.log(`  round ${i + 1}/${o.rounds} ${r.kind.padEnd(5)} ${r.eventsPerSecond} events/s (p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms${r.transactions ? `, ${round(r.events / r.transactions, 1)} events/transaction` : ''})`);
      rounds.push(r);
    }
    const plain = median(rounds.filter((r) => r.kind === 'plain').map((r) => r.eventsPerSecond));
    const storeRate = median(rounds.filter((r) => r.kind === 'store').map((r) => r.eventsPerSecond));
    const unchained = median(rounds.filter((r) => r.kind === 'unchained').map((r) => r.eventsPerSecond));
    const ratio = round(storeRate / plain, 3);
    const chainRatio = round(storeRate / unchained, 3);
    return {
      benchmark: 'append',
      date: new Date().toISOString(),
      machine,
      code,
      loadAverageAfter: os.loadavg().map((l) => round(l, 2)),
      parameters: {
        ...o,
        poolMax: o.writers,
        eventType: sample.type,
        dataBytes: JSON.stringify(sample.data).length,
        metadataBytes: JSON.stringify(metadata()).length,
        expectedRevision: 'any',
        plain: 'autocommit single-row INSERT per event, one pool connection per writer, one stream per writer',
        store: `PostgresEventStore.append, one event per call, a random one of ${o.streams} streams`,
        unchained: 'the same, with es_append\'s lines between -- chain: begin and -- chain: end left out: no content built or hashed',
        roundOrder: 'plain, store, unchained, repeated',
      },
      rounds,
      median: { plainEventsPerSecond: plain, storeEventsPerSecond: storeRate, unchainedEventsPerSecond: unchained },
      ratio,
      chainRatio,
      goal: {
        ratio: GOAL_RATIO, meaning: 'store median ≥ 0.5 × plain INSERT median',
        chainRatio: GOAL_CHAIN_RATIO, chainMeaning: 'store median ≥ 0.9 × the store without the hash chain\'s work (unchained)',
      },
      pass: ratio >= GOAL_RATIO && chainRatio >= GOAL_CHAIN_RATIO,
    };
  } finally {
    await store.close();
    await pool.end();
    await db.drop();
  }
}

export async function runAppend(o: AppendOptions): Promise<boolean> {
  console.log(`append: ${o.writers} writers, ${o.rounds} rounds of ${o.warmupSeconds} s warm-up + ${o.measureSeconds} s`);
  const result = await benchAppend(o);
  const file = writeResult('append', result);
  console.log(`append: plain ${result.median.plainEventsPerSecond} events/s, store ${result.median.storeEventsPerSecond} events/s, unchained ${result.median.unchainedEventsPerSecond} events/s (medians); store/plain ${result.ratio} (goal ≥ ${GOAL_RATIO}), store/unchained ${result.chainRatio} (goal ≥ ${GOAL_CHAIN_RATIO}): ${result.pass ? 'PASS' : 'FAIL'}  → ${file}`);
  return result.pass;
}
