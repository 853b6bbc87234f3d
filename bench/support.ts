import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { mulberry32 } from '../scripts/generateExport';
import { withGuard } from './guard';

export const RESULTS_DIR = path.join(__dirname, 'results');

export interface Machine {
  cpus: number;
  /** 1/5/15-minute load averages when the benchmark started: other work on the machine skews the numbers. */
  loadAverage: number[];
  cpuModel: string;
  totalMemoryBytes: number;
  node: string;
  platform: string;
  postgres: { serverVersion: string; settings: Record<string, string> };
}

/** PostgreSQL settings that move these numbers the most; recorded so runs can be compared. */
const PG_SETTINGS = ['shared_buffers', 'synchronous_commit', 'fsync', 'wal_sync_method', 'commit_delay', 'max_wal_size', 'work_mem'];

export async function describeMachine(pool: pg.Pool): Promise<Machine> {
  const { rows } = await pool.query<{ name: string; setting: string }>(
    `SELECT name, current_setting(name) AS setting FROM pg_settings WHERE name = ANY($1::text[]) OR name = 'server_version'`,
    [PG_SETTINGS],
  );
  const settings = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  const { server_version: serverVersion, ...rest } = settings;
  return {
    cpus: os.cpus().length,
    loadAverage: os.loadavg().map((l) => round(l, 2)),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    totalMemoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    postgres: { serverVersion, settings: rest },
  };
}

/**
 * The commit measured, and the files under the given paths that differed from it when the run
 * started: a result from a working tree others are editing says so.
 */
export function describeCode(paths: string[]): { commit: string; uncommitted: string[] } {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: path.join(__dirname, '..'), encoding: 'utf8' });
  try {
    // Porcelain lines are "XY path": the status letters may start with a space, so no trimming.
    const uncommitted = git('status', '--porcelain', '--', ...paths).split('\n').filter(Boolean).map((l) => l.slice(3));
    return { commit: git('rev-parse', 'HEAD').trim(), uncommitted };
  } catch {
    return { commit: 'unknown', uncommitted: [] };
  }
}

/** Writes bench/results/<name>.json, with the benchmark's guard against the recorded result (bench/guard.ts). */
export function writeResult(name: string, result: object): string {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify(withGuard(name, result as Record<string, unknown>), null, 2)}\n`);
  return file;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export const seconds = (since: bigint): number => Number(process.hrtime.bigint() - since) / 1e9;

export const round = (n: number, digits = 0): number => Number(n.toFixed(digits));

/** mulberry32 (scripts/generateExport.ts), so two runs seed the same event log. */
export const seededRandom = (seed: number): (() => number) => mulberry32(seed);

/** Thrown when a benchmark's own sanity checks fail: the numbers it measured cannot be trusted. */
export class BenchSanityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchSanityError';
  }
}

export interface CopySource { table: string; where?: string }

/** COPY these rows (each source's rows, as COPY's text) into LIKE-shaped tables; answers the seconds and rows. */
export async function copyRound(client: pg.ClientBase, work: string, sources: readonly CopySource[]): Promise<{ seconds: number; rows: number; tables: Record<string, { rows: number; seconds: number }> }> {
  const files: Array<{ table: string; file: string; rows: number }> = [];
  const tables: Record<string, { rows: number; seconds: number }> = {};
  let rows = 0;
  for (const { table, where } of sources) {
    const exists = (await client.query('SELECT to_regclass($1) AS t', [table])).rows[0].t;
    if (!exists) continue;
    const file = path.join(work, `${table}.copy`);
    const selected = where ? `(SELECT * FROM ${table} WHERE ${where})` : table;
    await pipeline(client.query(copyTo(`COPY ${selected} TO STDOUT`)), fs.createWriteStream(file));
    const n = (await client.query(`SELECT count(*)::int AS n FROM ${table}${where ? ` WHERE ${where}` : ''}`)).rows[0].n as number;
    rows += n;
    files.push({ table, file, rows: n });
    await client.query(`DROP TABLE IF EXISTS bench_${table}; CREATE TABLE bench_${table} (LIKE ${table} INCLUDING ALL)`);
  }
  const started = process.hrtime.bigint();
  for (const { table, file, rows: n } of files) {
    const one = process.hrtime.bigint();
    await pipeline(fs.createReadStream(file), client.query(copyFrom(`COPY bench_${table} FROM STDIN`)));
    tables[table] = { rows: n, seconds: round(seconds(one), 3) };
  }
  const took = seconds(started);
  for (const { table, file } of files) {
    await client.query(`DROP TABLE bench_${table}`);
    fs.rmSync(file);
  }
  return { seconds: took, rows, tables };
}

/**
 * copyRound `rounds` times in a row: the mean seconds (`rounds`: each), the rows and the last round's
 * tables. A floor measured once moved by ±10 % between runs (bench/README.md).
 */
export async function meanCopy(client: pg.ClientBase, work: string, sources: readonly CopySource[], rounds = 2): Promise<{ seconds: number; rounds: number[]; rows: number; tables: Record<string, { rows: number; seconds: number }> }> {
  const each: Array<Awaited<ReturnType<typeof copyRound>>> = [];
  for (let i = 0; i < rounds; i++) each.push(await copyRound(client, work, sources));
  const last = each[each.length - 1];
  return { seconds: each.reduce((sum, r) => sum + r.seconds, 0) / each.length, rounds: each.map((r) => round(r.seconds, 2)), rows: last.rows, tables: last.tables };
}

/** Every table's row count (the service's schema, not the benchmarks' own `bench_` copies). */
export async function rowCounts(client: pg.ClientBase): Promise<Map<string, number>> {
  const { rows } = await client.query<{ table: string }>(`SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname NOT LIKE 'bench\\_%' ORDER BY c.relname`);
  const counts = new Map<string, number>();
  for (const { table } of rows) counts.set(table, Number((await client.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0].n));
  return counts;
}

/**
 * Everything written since `before` (rowCounts then): each table that has more rows now, whole (the
 * few rows it had before, a benchmark's setup, go with it). COPY of them is the floor of the work
 * in between: it cannot have taken less than writing all of it.
 */
export async function grownSince(client: pg.ClientBase, before: Map<string, number>): Promise<CopySource[]> {
  const after = await rowCounts(client);
  return [...after].filter(([table, n]) => n > (before.get(table) ?? 0)).map(([table]) => ({ table }));
}

/**
 * Waits until every projection and the search indexer have applied the log as far as it goes now,
 * and the statistics worker has counted every batch waiting (a job's end is one projection's news:
 * the read model, its statistics and the search documents may still be applying its last events).
 */
export async function caughtUp(connection: pg.ClientConfig): Promise<CaughtUp> {
  const client = new pg.Client(connection);
  await client.connect();
  const started = process.hrtime.bigint();
  const at: CaughtUp = { projections: null, search: null, statistics: null };
  const mark = (key: keyof CaughtUp, done: boolean) => {
    if (done) at[key] ??= Math.round(Number(process.hrtime.bigint() - started) / 1e6) / 1000;
  };
  try {
    const head = BigInt((await client.query('SELECT coalesce(max(position), 0)::text AS p FROM es_events')).rows[0].p);
    for (;;) {
      const { rows: [row] } = await client.query(`SELECT (SELECT min(position::numeric) FROM projection_checkpoints)::text AS projections,
        (SELECT min(position::numeric) FROM testament_search_checkpoints WHERE version = (SELECT max(version) FROM testament_search_checkpoints))::text AS search,
        EXISTS (SELECT 1 FROM statistics_pending WHERE failed_at IS NULL) AS statistics_waiting`);
      const projections = row.projections !== null && BigInt(row.projections) >= head;
      mark('projections', projections);
      mark('search', row.search !== null && BigInt(row.search) >= head);
      mark('statistics', projections && !row.statistics_waiting);
      if (at.projections !== null && at.search !== null && at.statistics !== null) return at;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await client.end();
  }
}

/** Seconds after the call at which each part had caught up (the projections, the search indexer, the statistics worker). */
export interface CaughtUp { projections: number | null; search: number | null; statistics: number | null }

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux's every architecture here). */
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** A process's CPU seconds (user + system) from /proc; with `reaped`, its children's that it has waited for too. Null when it is gone. */
export function cpuSecondsOf(pid: number, reaped = false): number | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The fields after the command's closing parenthesis: state is [0], utime [11], stime [12], cutime [13], cstime [14].
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
  return (f[11] + f[12] + (reaped ? f[13] + f[14] : 0)) / TICKS;
}

/**
 * A PostgreSQL server's CPU seconds so far: the postmaster's, its live processes' (backends,
 * writers, autovacuum), and those of the processes that have ended (the postmaster waits for each,
 * so their time is in its own `cutime`). `postmasterPid`: the parent of any backend
 * (`pg_backend_pid()`'s `PPid`).
 */
export function postgresCpuSeconds(postmasterPid: number): number | null {
  const own = cpuSecondsOf(postmasterPid, true);
  if (own === null) return null;
  let children = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmasterPid) children += cpuSecondsOf(Number(entry)) ?? 0;
  }
  return own + children;
}

/** The postmaster of the server `client` is connected to (the parent of its backend): this machine's only. */
export async function postmasterOf(client: pg.ClientBase): Promise<number> {
  const backend = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  const m = /^PPid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${backend}/status`, 'utf8'));
  if (!m) throw new BenchSanityError(`no parent for PostgreSQL backend ${backend}`);
  return Number(m[1]);
}

/**
 * CPU seconds of named processes over a span, sampled: a process replaced between samples (a
 * SIGKILLed server started again, with its PostgreSQL) keeps what it had used at its last sample,
 * and the new one counts from its start. `read(pid)` is cpuSecondsOf or postgresCpuSeconds.
 */
export class CpuMeter {
  private readonly tracked = new Map<string, { pid: number; base: number; last: number; done: number }>();

  sample(name: string, pid: number, read: (pid: number) => number | null): void {
    const now = read(pid);
    const t = this.tracked.get(name);
    if (!t) {
      if (now !== null) this.tracked.set(name, { pid, base: now, last: now, done: 0 });
      return;
    }
    if (t.pid !== pid) {
      t.done += t.last - t.base;
      Object.assign(t, { pid, base: 0, last: now ?? 0 });
    } else if (now !== null) t.last = now;
  }

  seconds(name: string): number {
    const t = this.tracked.get(name);
    return t ? t.done + t.last - t.base : 0;
  }
}

/** The 40 statements PostgreSQL spent most time on since its statistics were last reset, one per line: ms, calls, rows, the statement's start. */
export async function writeStatementStats(client: pg.ClientBase, file: string): Promise<Array<{ ms: number; calls: number; rows: number; query: string }>> {
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const statements = (await client.query(`SELECT round(total_exec_time)::int AS ms, calls::int, rows::int, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 40`)).rows as Array<{ ms: number; calls: number; rows: number; query: string }>;
  fs.writeFileSync(file, statements.map((r) => `${r.ms}\t${r.calls}\t${r.rows}\t${r.query}`).join('\n'));
  return statements;
}
