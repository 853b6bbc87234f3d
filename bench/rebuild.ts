import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import type pg from 'pg';
import { loadContracts } from '../contracts/validator';
import { type AppendRequest, PostgresEventStore, setupPostgresEventStore } from '../infra/eventstore/postgres';
import { createKnex, createPool } from '../infra/postgres/database';
import { ENTITIES, historyTableOf } from '../contracts/entities';
import { migrateReadModel } from '../projections/migrations';
import { historyTables } from '../projections/migrations/catalogueTables';
import { runGroupBy } from '../services/model/aggregate';
import { parseFindArgs, parseGroupByArgs } from '../services/model/args';
import { runFind } from '../services/model/query';
import { readModelProjection } from '../projections/readModel';
import type { Projection } from '../projections/runtime/projection';
import { rebuildProjection } from '../projections/runtime/rebuild';
import type { EventStore, ReadAllOptions } from '../services/shared/eventStore';
import { createTestDatabase } from '../test/support/database';
import { type SeedCategory, SeedLog } from './seed';
import { BenchSanityError, copyRound, describeCode, describeMachine, round, seconds, writeResult } from './support';

/**
 * Seeds a realistic log (untimed), then times rebuildProjection(readModel) over all of it, split
 * into reading the log, folding it in memory and the read-model statements, and checks the rows
 * it produced against what was seeded. The read model keeps its history as it goes (docs/history.md):
 * this is also the temporal projection's rebuild throughput (issue 20: ≥ 20,000 events/s), and on
 * the rebuilt tables five reads are timed as of the middle of the log against now (goal ≤ 3x).
 */
export interface RebuildOptions {
  events: number;
  seedBatch: number;
  /** Passed to rebuildProjection; undefined keeps its default. */
  pageSize?: number;
}

// Not the 2,000 one might pick: es_append grows its result with `v_results || ...`, which copies the
// array each request (quadratic), so 2,000-request calls seed ~3x slower than 250-request ones.
export const REBUILD_DEFAULTS: RebuildOptions = { events: 1_000_000, seedBatch: 250 };
const GOAL_EVENTS_PER_SECOND = 20_000;
/** Issue 37: the rebuild ÷ (a raw read of the log + a COPY of the final rows), both in the same run. */
const GOAL_BASELINE_RATIO = 0.5;
/** Every event of the first batch and every VALIDATE_EVERY-th after it are checked against the JSON Schemas. */
const VALIDATE_EVERY = 100;

const TABLES: Record<SeedCategory, string> = { projects: 'projects', folders: 'repository_folders', cases: 'repository_cases' };

export async function seedLog(store: PostgresEventStore, o: Pick<RebuildOptions, 'events' | 'seedBatch'>) {
  const seed = new SeedLog();
  const contracts = loadContracts();
  const validatedTypes = new Set<string>();
  const started = process.hrtime.bigint();
  const validate = (batch: AppendRequest[], all: boolean) => {
    const first = seed.events - batch.length;
    for (let i = 0; i < batch.length; i++) {
      if (!all && (first + i) % VALIDATE_EVERY !== 0) continue;
      const e = batch[i].events[0];
      contracts.check(e);
      validatedTypes.add(e.type);
    }
  };
  const write = async (batch: AppendRequest[]) => {
    const outcomes = await store.appendMany(batch);
    const refused = outcomes.findIndex((x) => !x.ok);
    if (refused !== -1) {
      throw new BenchSanityError(`seed request ${JSON.stringify({ ...batch[refused], expectedRevision: String(batch[refused].expectedRevision) })} refused: ${JSON.stringify(outcomes[refused])}`);
    }
  };

  let batch = seed.nextBatch(Math.min(o.seedBatch, o.events));
  validate(batch, true);
  let nextReport = o.events / 10;
  while (batch.length > 0) {
    // Generate the next batch while PostgreSQL writes this one.
    const writing = write(batch);
    const remaining = o.events - seed.events;
    const next = remaining > 0 ? seed.nextBatch(Math.min(o.seedBatch, remaining)) : [];
    await writing;
    validate(next, false);
    const written = seed.events - next.length;
    if (written >= nextReport || next.length === 0) {
      const s = seconds(started);
      console.log(`  seeded ${written.toLocaleString('en')}/${o.events.toLocaleString('en')} events (${s.toFixed(1)} s, ${Math.round(written / s)} events/s)`);
      nextReport += o.events / 10;
    }
    batch = next;
  }
  const unvalidated = Object.keys(seed.counts).filter((t) => !validatedTypes.has(t));
  if (unvalidated.length > 0) throw new BenchSanityError(`seeded types never validated against their schema: ${unvalidated.join(', ')}`);
  return { seed, seconds: seconds(started), validatedTypes: [...validatedTypes].sort() };
}

/** Times where a rebuild spends its wall clock: readAll, apply (and the SQL inside it), the rest. */
class RebuildTimer {
  readMs = 0;
  applyMs = 0;
  /** The projection's end-of-rebuild step (Projection.rebuilding). */
  finishMs = 0;
  pages = 0;
  private readonly reads: [number, number][] = [];
  private readonly applies: [number, number][] = [];
  readonly sql = { select: { count: 0, ms: 0 }, insert: { count: 0, ms: 0 }, other: { count: 0, ms: 0 } };
  maxRssBytes = 0;
  /** Time per statement, by its first words (the heaviest are reported). */
  readonly statements = new Map<string, { count: number; ms: number }>();
  private readonly started = new Map<string, { t: number; kind: 'select' | 'insert' | 'other'; text: string }>();

  watch(knex: Knex): void {
    knex.on('query', (q: { __knexQueryUid: string; sql: string }) => {
      const verb = q.sql.trimStart().slice(0, 6).toLowerCase();
      const text = q.sql.replace(/\s+/g, ' ').trim().slice(0, 70);
      this.started.set(q.__knexQueryUid, { t: performance.now(), kind: verb === 'select' ? 'select' : verb === 'insert' ? 'insert' : 'other', text });
    });
    knex.on('query-response', (_response: unknown, q: { __knexQueryUid: string }) => this.done(q.__knexQueryUid));
    knex.on('query-error', (_error: unknown, q: { __knexQueryUid: string }) => this.done(q.__knexQueryUid));
  }

  private done(uid: string): void {
    const s = this.started.get(uid);
    if (!s) return;
    this.started.delete(uid);
    const ms = performance.now() - s.t;
    this.sql[s.kind].count++;
    this.sql[s.kind].ms += ms;
    let statement = this.statements.get(s.text);
    if (!statement) this.statements.set(s.text, (statement = { count: 0, ms: 0 }));
    statement.count++;
    statement.ms += ms;
  }

  store(inner: EventStore): EventStore {
    return {
      kind: inner.kind,
      append: (...args) => inner.append(...args),
      readStream: (...args) => inner.readStream(...args),
      readAll: async (options?: ReadAllOptions) => {
        const t = performance.now();
        const page = await inner.readAll(options);
        this.reads.push([t, performance.now()]);
        this.readMs += performance.now() - t;
        this.pages++;
        return page;
      },
      subscribeToAll: (...args) => inner.subscribeToAll(...args),
      headPosition: () => inner.headPosition(),
      positionAt: (time) => inner.positionAt(time),
      close: () => inner.close(),
    };
  }

  /** Read time the rebuild actually waited for: reads overlapping an apply (prefetch) are hidden. */
  readWaitMs(): number {
    let wait = 0;
    for (const [rs, re] of this.reads) {
      let hidden = 0;
      for (const [as, ae] of this.applies) hidden += Math.max(0, Math.min(re, ae) - Math.max(rs, as));
      wait += re - rs - hidden;
    }
    return wait;
  }

  projection(inner: Projection): Projection {
    const timed = (apply: Projection['apply']): Projection['apply'] => async (trx, events) => {
      const t = performance.now();
      await apply(trx, events);
      this.applies.push([t, performance.now()]);
      this.applyMs += performance.now() - t;
      this.maxRssBytes = Math.max(this.maxRssBytes, process.memoryUsage().rss);
    };
    return {
      name: inner.name,
      tables: inner.tables,
      apply: timed((trx, events) => inner.apply(trx, events)),
      ...(inner.rebuilding && {
        rebuilding: () => {
          const session = inner.rebuilding!();
          return {
            apply: timed((trx, events) => session.apply(trx, events)),
            finish: async (trx: Knex.Transaction) => {
              const t = performance.now();
              await session.finish(trx);
              this.finishMs += performance.now() - t;
            },
          };
        },
      }),
    };
  }
}

const GOAL_AS_OF_RATIO = 3;
const AS_OF_ITERATIONS = 41;

/**
 * Five model API reads (runFind / runGroupBy, as the API runs them, without HTTP), each timed now
 * and as of the middle of the log, alternately, p50 of each: the cost of reading the history
 * tables (docs/history.md) against the current read model in the same run.
 */
async function timeAsOfReads(knex: Knex, seed: SeedLog) {
  const middle = String(Math.floor(seed.events / 2));
  const project = (await knex('repository_cases').where('valid_from', '<=', middle).orderBy('id').first('project_id')).project_id as number;
  const someCase = (await knex('repository_cases_history').where('valid_from', '<=', middle).andWhere('valid_to', '>', middle).orderBy('id').first('id'))?.id as number;
  const cases = ENTITIES.repositoryCase;
  const folders = ENTITIES.repositoryFolder;
  const queries: { query: string; run: (asOf?: string) => Promise<unknown> }[] = [
    { query: 'cases of a project, first page of 50 by title', run: (asOf) => runFind(knex, cases, 'findMany', parseFindArgs(cases, 'findMany', { where: { projectId: project }, orderBy: { title: 'asc' }, take: 50 }), { ...(asOf && { asOf }) }) },
    { query: 'count of a project\'s cases', run: (asOf) => runFind(knex, cases, 'count', parseFindArgs(cases, 'count', { where: { projectId: project } }), { ...(asOf && { asOf }) }) },
    { query: 'one case changed since, with its folder and project', run: (asOf) => runFind(knex, cases, 'findUnique', parseFindArgs(cases, 'findUnique', { where: { id: someCase }, include: { folder: true, project: true } }), { ...(asOf && { asOf }) }) },
    { query: 'folders of a project with their cases counted', run: (asOf) => runFind(knex, folders, 'findMany', parseFindArgs(folders, 'findMany', { where: { projectId: project }, include: { _count: { select: { repositoryCases: true } } }, take: 50 }), { ...(asOf && { asOf }) }) },
    { query: 'cases of a project grouped by folder', run: (asOf) => runGroupBy(knex, cases, parseGroupByArgs(cases, { by: ['folderId'], where: { projectId: project }, _count: true }), { ...(asOf && { asOf }) }) },
  ];
  const p50 = (samples: number[]) => samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)];
  const results = [];
  for (const q of queries) {
    const now: number[] = [];
    const then: number[] = [];
    for (let i = 0; i < AS_OF_ITERATIONS; i++) {
      for (const [asOf, samples] of [[undefined, now], [middle, then]] as const) {
        const t = performance.now();
        await q.run(asOf);
        samples.push(performance.now() - t);
      }
    }
    const [currentP50Ms, asOfP50Ms] = [round(p50(now), 2), round(p50(then), 2)];
    results.push({ query: q.query, asOfPosition: middle, currentP50Ms, asOfP50Ms, ratio: round(asOfP50Ms / currentP50Ms, 2) });
  }
  return results;
}

/** The history tables' rows and size against the tables they keep the history of. */
async function historySize(knex: Knex) {
  const tables = historyTables().map(({ table }) => table);
  const size = async (names: string[]) => (await knex.raw('SELECT sum(pg_total_relation_size(t::regclass)) AS bytes FROM unnest(?::text[]) AS t', [names])).rows[0].bytes as string;
  const r = { live: await size(tables), history: await size(tables.map(historyTableOf)) };
  const { rows: [c] } = await knex.raw(`SELECT ${tables.map((t) => `(SELECT count(*) FROM "${historyTableOf(t)}")`).join(' + ')} AS n`);
  const mib = (bytes: string) => round(Number(bytes) / 2 ** 20, 1);
  return { historyRows: Number(c.n), liveMiB: mib(r.live), historyMiB: mib(r.history), ratio: round(Number(r.history) / Number(r.live), 2) };
}

async function checkRows(knex: Knex, seed: SeedLog, rebuiltEvents: number) {
  const rows: Record<string, { rows: number; created: number; revisionEvents: number; seededEvents: number }> = {};
  const problems: string[] = [];
  const created: Record<SeedCategory, number> = { projects: seed.projects, folders: seed.folders, cases: seed.cases };
  for (const category of Object.keys(TABLES) as SeedCategory[]) {
    const table = TABLES[category];
    const { rows: [r] } = await knex.raw(`SELECT count(*)::bigint AS n, coalesce(sum(revision + 1), 0)::bigint AS events FROM "${table}"`);
    const found = { rows: Number(r.n), revisionEvents: Number(r.events) };
    rows[table] = { rows: found.rows, created: created[category], revisionEvents: found.revisionEvents, seededEvents: seed.eventsPerCategory[category] };
    if (found.rows !== created[category]) problems.push(`${table}: ${found.rows} rows, ${created[category]} created`);
    // Each row's revision is its stream's last; sum(revision + 1) counts every event the row absorbed.
    if (found.revisionEvents !== seed.eventsPerCategory[category]) {
      problems.push(`${table}: rows account for ${found.revisionEvents} events, ${seed.eventsPerCategory[category]} seeded`);
    }
  }
  const checkpoint = await knex('projection_checkpoints').where({ name: readModelProjection.name }).first();
  if (String(checkpoint?.position) !== String(seed.events)) problems.push(`checkpoint at ${checkpoint?.position}, ${seed.events} events seeded`);
  if (rebuiltEvents !== seed.events) problems.push(`rebuild read ${rebuiltEvents} events, ${seed.events} seeded`);
  if (problems.length > 0) throw new BenchSanityError(`read model does not match the seeded log:\n  ${problems.join('\n  ')}`);
  return rows;
}

/** Rows of each table of the schema (exact counts; the event store's tables left out). */
async function tableRows(knex: Knex): Promise<Map<string, number>> {
  const { rows } = await knex.raw(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'es\\_%' ORDER BY table_name`);
  const counts = new Map<string, number>();
  for (const { table_name: table } of rows as { table_name: string }[]) counts.set(table, Number((await knex.raw(`SELECT count(*)::bigint AS n FROM "${table}"`)).rows[0].n));
  return counts;
}

/**
 * What a rebuild cannot go below, measured in the same run: the log read raw (the columns the
 * store reads, pages of `pageSize` by position, through `pg` with its JSON parsing, no envelope,
 * no fold) and a COPY of the final rows of every table the rebuild filled (into `LIKE … INCLUDING
 * ALL` tables, indexes and all, as bench/migration.ts does).
 */
async function rebuildBaseline(pool: pg.Pool, written: string[], pageSize: number) {
  const client = await pool.connect();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-bench-rebuild-'));
  try {
    const started = process.hrtime.bigint();
    let after = '0';
    let events = 0;
    for (;;) {
      const { rows } = await client.query<{ position: string }>(
        'SELECT position, id, stream_id, revision, type, schema_version, data, metadata, recorded_at FROM es_events WHERE position > $1 ORDER BY position ASC LIMIT $2', [after, pageSize]);
      if (rows.length === 0) break;
      events += rows.length;
      after = rows[rows.length - 1].position;
    }
    const readSeconds = seconds(started);
    const copy = await copyRound(client, work, written.map((table) => ({ table })));
    return { readSeconds, events, copy };
  } finally {
    client.release();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export async function benchRebuild(o: RebuildOptions = REBUILD_DEFAULTS) {
  const db = await createTestDatabase('bench_rebuild');
  const pool = createPool(db.url, 4);
  const knex = createKnex(db.url, 4);
  const store = new PostgresEventStore(pool, db.url);
  try {
    await setupPostgresEventStore(pool);
    await migrateReadModel(knex);
    const machine = await describeMachine(pool);
    const code = describeCode(['infra', 'projections', 'contracts']);

    const seeded = await seedLog(store, o);
    // A production log is old and vacuumed: hint bits set, statistics current, nothing dirty.
    await pool.query('VACUUM (ANALYZE) es_events');
    await pool.query('CHECKPOINT');
    const { rows: [size] } = await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('es_events')::bigint AS bytes`);

    const rowsBefore = await tableRows(knex);
    const timer = new RebuildTimer();
    timer.watch(knex);
    let nextReport = o.events / 10;
    const result = await rebuildProjection(timer.projection(readModelProjection), {
      store: timer.store(store), knex, pageSize: o.pageSize,
      onProgress: (events) => {
        if (events < nextReport) return;
        nextReport += o.events / 10;
        console.log(`  rebuilt ${events.toLocaleString('en')} events`);
      },
    });
    const rows = await checkRows(knex, seeded.seed, result.events);
    const rowsAfter = await tableRows(knex);
    const written = [...rowsAfter].filter(([table, n]) => n > (rowsBefore.get(table) ?? 0)).map(([table]) => table);
    const baseline = await rebuildBaseline(pool, written, o.pageSize ?? 5000);
    if (baseline.events !== result.events) throw new BenchSanityError(`the raw read found ${baseline.events} events, the rebuild ${result.events}`);
    const baselineSeconds = baseline.readSeconds + baseline.copy.seconds;
    const baselineRatio = round(baselineSeconds / result.seconds, 3);
    const eventsPerSecond = round(result.events / result.seconds);
    const asOf = await timeAsOfReads(knex, seeded.seed);
    const history = await historySize(knex);
    const ms = (n: number) => round(n);
    return {
      benchmark: 'rebuild',
      date: new Date().toISOString(),
      machine,
      code,
      loadAverageAfter: os.loadavg().map((l) => round(l, 2)),
      parameters: {
        ...o,
        pageSize: o.pageSize ?? 'rebuildProjection default (5000)',
        projection: readModelProjection.name,
        eventStoreBytes: Number(size.bytes),
        beforeRebuild: 'VACUUM (ANALYZE) es_events; CHECKPOINT',
      },
      seed: {
        seconds: round(seeded.seconds, 1),
        eventsPerSecond: round(seeded.seed.events / seeded.seconds),
        events: seeded.seed.events,
        byType: seeded.seed.counts,
        created: { projects: seeded.seed.projects, folders: seeded.seed.folders, cases: seeded.seed.cases },
        validatedAgainstContracts: { sample: `first batch + every ${VALIDATE_EVERY}th event`, types: seeded.validatedTypes },
      },
      rebuild: {
        events: result.events,
        seconds: round(result.seconds, 2),
        eventsPerSecond,
        pages: timer.pages,
        phasesMs: {
          readAll: ms(timer.readMs),
          readAllWaited: ms(timer.readWaitMs()),
          apply: ms(timer.applyMs),
          applySqlSelect: { ...timer.sql.select, ms: ms(timer.sql.select.ms) },
          applySqlInsert: { ...timer.sql.insert, ms: ms(timer.sql.insert.ms) },
          // Folding events into rows plus knex compiling the statements (before its 'query' event).
          applyFoldAndQueryBuild: ms(timer.applyMs + timer.finishMs - timer.sql.select.ms - timer.sql.insert.ms),
          // The projection's end-of-rebuild step (its SQL is counted in applySql* too).
          finish: ms(timer.finishMs),
          rest: ms(result.seconds * 1000 - timer.readWaitMs() - timer.applyMs - timer.finishMs),
        },
        maxRssMiB: round(timer.maxRssBytes / 2 ** 20),
        baseline: {
          meaning: 'a raw read of the log (pg, pages by position, the store\'s columns) plus a COPY of the final rows of every table the rebuild filled, in this run; ratio = baseline seconds ÷ rebuild seconds',
          readSeconds: round(baseline.readSeconds, 2),
          copySeconds: round(baseline.copy.seconds, 2),
          copiedRows: baseline.copy.rows,
          tables: baseline.copy.tables,
          seconds: round(baselineSeconds, 2),
          ratio: baselineRatio,
        },
        heaviestStatements: [...timer.statements].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12)
          .map(([sql, { count, ms: spent }]) => ({ sql, count, ms: ms(spent) })),
      },
      rows,
      history,
      asOf,
      goal: { eventsPerSecond: GOAL_EVENTS_PER_SECOND, asOfP50Ratio: GOAL_AS_OF_RATIO, baselineRatio: GOAL_BASELINE_RATIO },
      pass: eventsPerSecond >= GOAL_EVENTS_PER_SECOND && asOf.every((q) => q.ratio <= GOAL_AS_OF_RATIO) && baselineRatio >= GOAL_BASELINE_RATIO,
    };
  } finally {
    await store.close();
    await knex.destroy();
    await pool.end();
    await db.drop();
  }
}

export async function runRebuild(o: RebuildOptions): Promise<boolean> {
  console.log(`rebuild: seeding ${o.events.toLocaleString('en')} events in batches of ${o.seedBatch}`);
  const result = await benchRebuild(o);
  const file = writeResult('rebuild', result);
  const r = result.rebuild;
  const p = r.phasesMs;
  console.log(`rebuild: seeded in ${result.seed.seconds} s; rebuilt ${r.events.toLocaleString('en')} events in ${r.seconds} s = ${r.eventsPerSecond} events/s (goal ≥ ${GOAL_EVENTS_PER_SECOND}): ${result.pass ? 'PASS' : 'FAIL'}  → ${file}`);
  console.log(`  readAll ${p.readAll} ms (waited for ${p.readAllWaited} ms), apply ${p.apply} ms (select ${p.applySqlSelect.ms} ms, upsert ${p.applySqlInsert.ms} ms, fold + query build ${p.applyFoldAndQueryBuild} ms), end-of-rebuild step ${p.finish} ms, rest ${p.rest} ms; peak RSS ${r.maxRssMiB} MiB`);
  const b = r.baseline;
  console.log(`  against a raw read of the log (${b.readSeconds} s) + COPY of the final ${b.copiedRows.toLocaleString('en')} rows (${b.copySeconds} s): ratio ${b.ratio} (goal ≥ ${GOAL_BASELINE_RATIO}): ${b.ratio >= GOAL_BASELINE_RATIO ? 'PASS' : 'FAIL'}`);
  console.log(`  rows: ${Object.entries(result.rows).map(([t, c]) => `${t} ${c.rows}`).join(', ')} (match the seed)`);
  console.log(`  history: ${result.history.historyRows} versions kept, ${result.history.historyMiB} MiB beside ${result.history.liveMiB} MiB of tables (${result.history.ratio} x)`);
  for (const q of result.asOf) console.log(`  asOf ${q.query}: p50 ${q.asOfP50Ms} ms against ${q.currentP50Ms} ms now = ${q.ratio} x (goal ≤ ${GOAL_AS_OF_RATIO})`);
  return result.pass;
}
