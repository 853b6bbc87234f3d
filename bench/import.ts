/**
 * The result import benchmark: one JUnit file of 100,000 test cases in 500 suites, imported end to
 * end through POST /api/junit/import on the embedded default (the built server, `node
 * dist/services/process/main.js`, with embedded PostgreSQL under a fresh DATA_DIR and no DATABASE_URL),
 * against a plain COPY of the same rows (folders, cases, run cases, results) into tables of the
 * same shape (`LIKE … INCLUDING ALL`) on the same PostgreSQL server, in the same run (COPY before
 * and after the import; the mean of the two). Measured: time from the request to `complete`,
 * results per second, the server process's peak RSS (VmHWM) and RSS sampled every 50 ms.
 * Also: the time until every projection and the search indexer have applied the import too
 * (`allWrittenSeconds`), against COPY of everything it wrote by then (every table with more rows
 * than before: events, read model, history, statistics, search documents, audit; the mean of two
 * rounds), and the CPU it
 * cost (the server's process and PostgreSQL's, from /proc).
 * Goals (issue 37): import rate ≥ 0.35 × COPY rate, peak RSS < 200 MB, everything written ≥ 0.5 × its COPY.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { BenchSanityError, CpuMeter, caughtUp, cpuSecondsOf, describeCode, describeMachine, grownSince, meanCopy, postgresCpuSeconds, postmasterOf, round, rowCounts, seconds, writeResult, writeStatementStats } from './support';

export interface ImportBenchOptions {
  cases: number;
  suites: number;
}
export const IMPORT_DEFAULTS: ImportBenchOptions = { cases: 100_000, suites: 500 };

const ROOT = path.join(__dirname, '..');
const ADMIN = { email: 'bench@example.com', password: 'import bench password' };
const GOAL_RATIO = 0.35;
const GOAL_RSS_BYTES = 200 * 1024 * 1024;
const GOAL_ALL_WRITTEN_RATIO = 0.5;

/** The n-th case: every fifth fails (message, type, stack), every 50th has system-out. */
function caseXml(n: number, suite: number): string {
  const time = ((n % 97) / 100).toFixed(3);
  const name = `case ${n} handles input ${n % 13}`;
  const cls = `com.acme.module${suite % 20}.Suite${suite}`;
  if (n % 5 === 0) {
    return `<testcase classname="${cls}" name="${name}" time="${time}"><failure message="expected ${n} but was ${n + 1}" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected ${n}\n\tat ${cls}.test(Suite${suite}.java:${n % 300})\n\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)</failure></testcase>\n`;
  }
  if (n % 50 === 1) return `<testcase classname="${cls}" name="${name}" time="${time}"><system-out>started ${n}\nfinished ${n}</system-out></testcase>\n`;
  return `<testcase classname="${cls}" name="${name}" time="${time}"/>\n`;
}

export async function writeReport(file: string, o: ImportBenchOptions): Promise<void> {
  const perSuite = Math.ceil(o.cases / o.suites);
  async function* lines() {
    yield '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n';
    for (let s = 0, n = 0; s < o.suites && n < o.cases; s++) {
      const count = Math.min(perSuite, o.cases - n);
      yield `<testsuite name="com.acme.module${s % 20}.Suite${s}" tests="${count}" timestamp="2026-11-01T10:00:00">\n`;
      let chunk = '';
      for (let i = 0; i < count; i++, n++) chunk += caseXml(n, s);
      yield chunk;
      yield '</testsuite>\n';
    }
    yield '</testsuites>\n';
  }
  await pipeline(Readable.from(lines()), fs.createWriteStream(file));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/** `node dist/services/process/main.js` on a fresh DATA_DIR; resolves with its URL once it listens. */
export function startServer(env: NodeJS.ProcessEnv, nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const { DATABASE_URL: _d, KAFKA_BROKERS: _k, EVENTSTORE_URL: _e, ...rest } = process.env;
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'dist', 'services', 'process', 'main.js')], { cwd: ROOT, env: { ...rest, ...env } });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 120_000);
    child.stderr!.on('data', (d) => (output += d));
    child.stdout!.on('data', (d: Buffer) => {
      output += d;
      for (const line of d.toString().split('\n')) {
        if (!line.includes('"API listening"')) continue;
        clearTimeout(timer);
        resolve({ child, url: `http://127.0.0.1:${JSON.parse(line).address.port}`, output: () => output });
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
  });
}

export const status = (pid: number, key: 'VmRSS' | 'VmHWM'): number => {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
};

export async function api(url: string, token: string | null, method: string, p: string, body?: unknown, cookie?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json', origin: url };
  if (token) headers.authorization = `Bearer ${token}`;
  if (cookie) headers.cookie = cookie;
  const res = await fetch(url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new BenchSanityError(`${method} ${p}: ${res.status} ${text}`);
  return { body: text ? JSON.parse(text) : null, cookie: res.headers.get('set-cookie')?.split(';')[0] };
}

/** COPY the rows an import of this report writes into LIKE-shaped tables; answers the seconds it took. */
async function copyRound(client: pg.Client, o: ImportBenchOptions, round: number): Promise<number> {
  const tables = { repository_folders: 'bench_folders', repository_cases: 'bench_cases', test_run_cases: 'bench_run_cases', test_run_results: 'bench_results' };
  for (const [source, target] of Object.entries(tables)) {
    await client.query(`DROP TABLE IF EXISTS ${target}; CREATE TABLE ${target} (LIKE ${source} INCLUDING ALL)`);
  }
  const perSuite = Math.ceil(o.cases / o.suites);
  const now = new Date().toISOString();
  const esc = (v: string | null) => (v === null ? '\\N' : v.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n'));
  const copy = async (table: string, columns: string[], rows: () => Generator<(string | number | boolean | null)[]>) => {
    async function* text() {
      let batch = '';
      for (const row of rows()) {
        batch += `${row.map((v) => (v === null ? '\\N' : esc(String(v)))).join('\t')}\n`;
        if (batch.length > 1 << 16) {
          yield batch;
          batch = '';
        }
      }
      if (batch) yield batch;
    }
    await pipeline(Readable.from(text()), client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`)));
  };
  const started = process.hrtime.bigint();
  await copy('bench_folders', ['id', 'project_id', 'parent_id', 'name', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision'], function* () {
    for (let s = 0; s < o.suites; s++) yield [s + 1, 1, null, `com.acme.module${s % 20}.Suite${s}`, round, false, now, now, -1];
  });
  await copy('bench_cases', ['id', 'project_id', 'folder_id', 'title', 'class_name', 'source', 'automated', 'template_id', 'state_id', 'created_by_id', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision'], function* () {
    for (let n = 0; n < o.cases; n++) {
      const s = Math.floor(n / perSuite);
      yield [n + 1, 1, s + 1, `case ${n} handles input ${n % 13}`, `com.acme.module${s % 20}.Suite${s}`, 'JUNIT', true, 1, 1, 1, round, false, now, now, -1];
    }
  });
  await copy('bench_run_cases', ['id', 'test_run_id', 'repository_case_id', 'sort_order', 'status_id', 'is_completed', 'completed_at', 'elapsed_ms', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision'], function* () {
    for (let n = 0; n < o.cases; n++) yield [n + 1, 1, n + 1, n, n % 5 === 0 ? 3 : 2, true, now, (n % 97) * 10, round, false, now, now, -1];
  });
  await copy('bench_results', ['id', 'test_run_id', 'test_run_case_id', 'status_id', 'duration_ms', 'executed_at', 'message', 'failure_type', 'stack_trace', 'system_out', 'properties', 'attempt', 'executed_by_id', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision'], function* () {
    for (let n = 0; n < o.cases; n++) {
      const s = Math.floor(n / perSuite);
      const cls = `com.acme.module${s % 20}.Suite${s}`;
      const failed = n % 5 === 0;
      yield [n + 1, 1, n + 1, failed ? 3 : 2, (n % 97) * 10, now, failed ? `expected ${n} but was ${n + 1}` : null, failed ? 'org.opentest4j.AssertionFailedError' : null,
        failed ? `org.opentest4j.AssertionFailedError: expected ${n}\n\tat ${cls}.test(Suite${s}.java:${n % 300})\n\tat java.base/java.lang.reflect.Method.invoke(Method.java:580)` : null,
        n % 50 === 1 ? `started ${n}\nfinished ${n}` : null, '[]', 1, 1, round, false, now, now, -1];
    }
  });
  const took = seconds(started);
  for (const target of Object.values(tables)) await client.query(`DROP TABLE ${target}`);
  return took;
}

export async function runImport(o: ImportBenchOptions): Promise<boolean> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-bench-import-'));
  const report = path.join(work, 'TEST-big.xml');
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  try {
    console.log('import: building the server (npm run build)...');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    await writeReport(report, o);
    const fileBytes = fs.statSync(report).size;
    console.log(`import: ${o.cases} cases in ${o.suites} suites, ${(fileBytes / 1e6).toFixed(1)} MB`);
    const dataDir = path.join(work, 'data');
    fs.mkdirSync(dataDir);
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', work]);
    const pgPort = await freePort();
    server = await startServer({
      DATA_DIR: dataDir, PORT: '0', EMBEDDED_POSTGRES_PORT: String(pgPort), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'info', EMBEDDED_POSTGRES_STATEMENT_STATS: process.env.BENCH_PG_STATS ? 'true' : 'false', MAX_UPLOAD_BYTES: String(Math.max(fileBytes + 1024, 50 * 1024 * 1024)), RATE_LIMIT_ENABLED: 'false',
    });
    const pid = server.child.pid!;
    const { url } = server;
    const login = await api(url, null, 'POST', '/api/auth/login', ADMIN);
    const token = (await api(url, null, 'POST', '/api/tokens', { name: 'bench' }, login.cookie)).body.token as string;
    const projectId = (await api(url, token, 'POST', '/api/model/project/create', { data: { name: 'Bench' } })).body.data.id as number;

    const secrets = JSON.parse(fs.readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'));
    const connection = { host: '127.0.0.1', port: pgPort, user: 'postgres', password: secrets.embeddedPostgresPassword, database: 'testament' };
    const client = new pg.Client(connection);
    await client.connect();
    const machine = await describeMachine(new pg.Pool({ host: '127.0.0.1', port: pgPort, user: 'postgres', password: secrets.embeddedPostgresPassword, database: 'testament', max: 1 }));

    const copyBefore = await copyRound(client, o, 1);
    console.log(`import: COPY of the same rows ${copyBefore.toFixed(2)} s`);

    const rowsBefore = await rowCounts(client);
    if (process.env.BENCH_PG_STATS) await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()');
    const postmaster = await postmasterOf(client);
    const meter = new CpuMeter();
    const sampleCpu = () => {
      meter.sample('server', pid, (p) => cpuSecondsOf(p));
      meter.sample('postgres', postmaster, postgresCpuSeconds);
    };
    const rssBefore = status(pid, 'VmRSS');
    let rssMax = rssBefore;
    let rssMaxAt = 0;
    sampleCpu();
    const started = process.hrtime.bigint();
    const sampler = setInterval(() => {
      const rss = status(pid, 'VmRSS');
      if (rss > rssMax) [rssMax, rssMaxAt] = [rss, seconds(started)];
    }, 50);
    const form = new FormData();
    form.append('name', 'Bench run');
    form.append('projectId', String(projectId));
    form.append('files', await fs.openAsBlob(report), 'TEST-big.xml');
    const res = await fetch(`${url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    if (res.status !== 200) throw new BenchSanityError(`import answered ${res.status}: ${await res.text()}`);
    let text = '';
    let firstProgressSeconds: number | null = null;
    const marks: { progress: number; seconds: number }[] = [];
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      text += Buffer.from(chunk).toString();
      for (const m of text.matchAll(/"progress":(\d+)/g)) {
        const p = Number(m[1]);
        if (!marks.some((x) => x.progress === p)) marks.push({ progress: p, seconds: round(seconds(started), 2) });
        firstProgressSeconds ??= seconds(started);
      }
    }
    const completeSeconds = seconds(started);
    const afterComplete = await caughtUp(connection);
    const allWrittenSeconds = seconds(started);
    sampleCpu();
    clearInterval(sampler);
    const last = JSON.parse(text.trim().split('\n\n').pop()!.slice('data: '.length));
    if (!last.complete) throw new BenchSanityError(`import did not complete: ${JSON.stringify(last)}`);
    const peakRss = status(pid, 'VmHWM');
    rssMax = Math.max(rssMax, status(pid, 'VmRSS'));

    const counted = (await client.query('SELECT count(*)::int AS n FROM test_run_results WHERE test_run_id = $1', [last.testRunId])).rows[0].n as number;
    if (counted !== o.cases) throw new BenchSanityError(`the run has ${counted} results, not ${o.cases}`);
    const events = (await client.query(`SELECT count(*)::int AS n, sum(pg_column_size(data))::bigint AS bytes FROM es_events WHERE stream_id = $1`, [`importJob-${last.jobId}`])).rows[0];

    // Where PostgreSQL's time went over the import, per statement, when asked: BENCH_PG_STATS names a file for it.
    const statements = process.env.BENCH_PG_STATS ? await writeStatementStats(client, process.env.BENCH_PG_STATS) : null;
    const copyAfter = await copyRound(client, o, 2);
    console.log(`import: COPY again ${copyAfter.toFixed(2)} s`);
    const floor = await meanCopy(client, work, await grownSince(client, rowsBefore));
    console.log(`import: COPY of everything it wrote (${floor.rows} rows in ${Object.keys(floor.tables).length} tables) ${floor.seconds.toFixed(2)} s (the mean of ${floor.rounds.join(' and ')} s)`);
    await client.end();

    const copySeconds = (copyBefore + copyAfter) / 2;
    const importRate = o.cases / completeSeconds;
    const copyRate = o.cases / copySeconds;
    const ratio = importRate / copyRate;
    const allWrittenRatio = floor.seconds / allWrittenSeconds;
    const cpuServer = meter.seconds('server');
    const cpuPostgres = meter.seconds('postgres');
    const cpu = {
      serverSeconds: round(cpuServer, 1), postgresSeconds: round(cpuPostgres, 1), coresBusy: round((cpuServer + cpuPostgres) / allWrittenSeconds, 2), cores: machine.cpus,
      // With every core busy throughout, the import could not take less than its CPU seconds ÷ cores.
      bestAllWrittenRatioAtThisCpu: round(floor.seconds / ((cpuServer + cpuPostgres) / machine.cpus), 3),
    };
    const passed = ratio >= GOAL_RATIO && peakRss < GOAL_RSS_BYTES && allWrittenRatio >= GOAL_ALL_WRITTEN_RATIO;
    const result = {
      benchmark: 'import',
      date: new Date().toISOString(),
      machine,
      code: describeCode(['services', 'projections', 'bench', 'contracts']),
      parameters: { ...o, fileBytes, chunkSize: 500, server: 'node dist/services/process/main.js, embedded PostgreSQL, PostgreSQL event store, direct transport' },
      import: {
        completeSeconds: round(completeSeconds, 2), allWrittenSeconds: round(allWrittenSeconds, 2),
        // After `complete`: when the projections, the search indexer and the statistics worker had each caught up (s, ±0.1).
        caughtUpAfterComplete: afterComplete, cpu, firstProgressSeconds: round(firstProgressSeconds ?? 0, 3), resultsPerSecond: round(importRate),
        progress: marks, jobEvents: events.n, jobEventBytes: Number(events.bytes),
      },
      copy: { secondsBefore: round(copyBefore, 2), secondsAfter: round(copyAfter, 2), rowsPerCase: 3 + o.suites / o.cases, casesPerSecond: round(copyRate) },
      ...(statements && { statements }),
      copyOfAllWritten: { seconds: round(floor.seconds, 2), rounds: floor.rounds, rows: floor.rows, tables: floor.tables },
      memory: { rssBeforeBytes: rssBefore, rssMaxSampledBytes: rssMax, rssMaxSampledAtSeconds: round(rssMaxAt, 2), peakRssBytes: peakRss, peakRssMB: round(peakRss / 1048576, 1) },
      goals: {
        rateRatio: round(ratio, 3), rateGoal: GOAL_RATIO, rateMet: ratio >= GOAL_RATIO,
        peakRssMB: round(peakRss / 1048576, 1), rssGoalMB: GOAL_RSS_BYTES / 1048576, rssMet: peakRss < GOAL_RSS_BYTES,
        allWrittenRatio: round(allWrittenRatio, 3), allWrittenGoal: GOAL_ALL_WRITTEN_RATIO, allWrittenMet: allWrittenRatio >= GOAL_ALL_WRITTEN_RATIO,
      },
      passed,
    };
    console.log(`  import ${completeSeconds.toFixed(2)} s to complete = ${round(importRate)} results/s; COPY ${copySeconds.toFixed(2)} s = ${round(copyRate)} cases/s`);
    console.log(`  ratio ${ratio.toFixed(3)} (goal ≥ ${GOAL_RATIO}) ${ratio >= GOAL_RATIO ? 'ok' : 'MISSED'}; peak RSS ${(peakRss / 1048576).toFixed(0)} MB (goal < ${GOAL_RSS_BYTES / 1048576}) ${peakRss < GOAL_RSS_BYTES ? 'ok' : 'MISSED'}`);
    console.log(`  everything written after ${allWrittenSeconds.toFixed(2)} s against its COPY ${floor.seconds.toFixed(2)} s: ratio ${allWrittenRatio.toFixed(3)} (goal ≥ ${GOAL_ALL_WRITTEN_RATIO}) ${allWrittenRatio >= GOAL_ALL_WRITTEN_RATIO ? 'ok' : 'MISSED'}`);
    console.log(`  after complete: projections caught up ${afterComplete.projections} s, search ${afterComplete.search} s, statistics ${afterComplete.statistics} s later`);
    console.log(`  CPU: server ${cpu.serverSeconds} s, PostgreSQL ${cpu.postgresSeconds} s = ${cpu.coresBusy} of ${cpu.cores} cores busy; with all busy throughout that ratio could reach ${cpu.bestAllWrittenRatioAtThisCpu} at this CPU`);
    const written = writeResult('import', result);
    console.log(`  ${passed ? 'goal met' : 'goal missed'}; ${written}`);
    return passed;
  } finally {
    if (server) await stopServer(server);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** SIGTERM (SIGKILL after 30 s); the output to BENCH_SERVER_LOG when set. */
export async function stopServer(server: Awaited<ReturnType<typeof startServer>>): Promise<void> {
  const exited = new Promise((r) => server.child.once('exit', r));
  server.child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
  server.child.kill('SIGKILL');
  if (process.env.BENCH_SERVER_LOG) fs.writeFileSync(process.env.BENCH_SERVER_LOG, server.output());
}
