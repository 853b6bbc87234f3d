/**
 * The memory benchmark: what one large model API read costs the server. A run of 100,000 results
 * (imported from a JUnit file through POST /api/junit/import, as months of CI would leave them) on
 * the embedded default (the built server, `node dist/services/process/main.js`), then, on a server started
 * afresh over the same data (so that the import's own peak does not count):
 *  - `unpaged`: the read from issue 15, `testRunResult.findMany` of the run without `take`, with
 *    each result's run case, case and status included: answered 400 too-many-rows;
 *  - `paged`: the same rows read in pages of `take` (MODEL_MAX_ROWS / 4: a page of results with
 *    their three includes is the largest answer allowed) and `cursor`, every row checked; then the
 *    same on a server whose V8 heap is held to SMALL_HEAP_NODE_ARGS, which tells how much of the
 *    rise is live memory and how much garbage V8 lets accumulate before it collects;
 *  - `unbounded` (the "before"): the same read on a server started with the bound off
 *    (MODEL_MAX_ROWS=10000000), answered whole.
 * Measured: the server process's RSS when idle (after a small warm-up read), its peak (VmHWM, reset
 * through /proc/<pid>/clear_refs, and VmRSS sampled every 20 ms) while the requests run, the time
 * and the bytes answered. Goal: the unpaged read, and the pages on the small heap, each < 100 MB of
 * peak RSS above the idle RSS before it (the pages on the default heap are recorded, with no goal).
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { DEFAULT_MAX_ROWS } from '../services/model/query';
import { api, freePort, startServer, status, writeReport } from './import';
import { BenchSanityError, describeCode, describeMachine, round, seconds, writeResult } from './support';

export interface MemoryBenchOptions {
  results: number;
  suites: number;
  maxRows: number;
}
export const MEMORY_DEFAULTS: MemoryBenchOptions = { results: 100_000, suites: 500, maxRows: DEFAULT_MAX_ROWS };

const ROOT = path.join(__dirname, '..');
const ADMIN = { email: 'bench@example.com', password: 'memory bench password' };
const GOAL_ABOVE_IDLE_BYTES = 100 * 1024 * 1024;
const MB = 1024 * 1024;
const INCLUDE = { testRunCase: { include: { repositoryCase: true } }, status: true };
const ROWS_PER_RESULT = 4;
const SMALL_HEAP_NODE_ARGS = ['--max-old-space-size=64'];

type Server = Awaited<ReturnType<typeof startServer>>;

async function stop(server: Server | null): Promise<void> {
  if (!server) return;
  const child: ChildProcess = server.child;
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
  child.kill('SIGKILL');
}

/** One model API call; the body is counted as it arrives and parsed only when asked (a 147 MB answer is not). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answers' shapes are checked where they are read
type Answer = any;

async function call(url: string, token: string, p: string, body: unknown, parse: boolean): Promise<{ status: number; bytes: number; json: Answer }> {
  const res = await fetch(url + p, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  let bytes = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    if (parse || res.status !== 200) chunks.push(Buffer.from(chunk));
  }
  return { status: res.status, bytes, json: chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : null };
}

/** Runs `work` while watching the server's RSS: idle before, peak during (VmHWM reset first where the kernel allows). */
async function watchMemory<T>(pid: number, work: () => Promise<T>): Promise<{ value: T; idleBytes: number; peakBytes: number; aboveIdleMB: number; seconds: number }> {
  await new Promise((r) => setTimeout(r, 1000));
  const idleBytes = status(pid, 'VmRSS');
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // resets VmHWM to the current RSS
  } catch { /* the sampled maximum still counts */ }
  let sampled = idleBytes;
  const sampler = setInterval(() => (sampled = Math.max(sampled, status(pid, 'VmRSS'))), 20);
  const started = process.hrtime.bigint();
  try {
    const value = await work();
    const took = seconds(started);
    const peakBytes = Math.max(sampled, status(pid, 'VmHWM'), status(pid, 'VmRSS'));
    return { value, idleBytes, peakBytes, aboveIdleMB: round((peakBytes - idleBytes) / MB, 1), seconds: round(took, 2) };
  } finally {
    clearInterval(sampler);
  }
}

async function startAndLogIn(env: NodeJS.ProcessEnv, nodeArgs?: string[]): Promise<{ server: Server; token: string }> {
  const server = await startServer(env, nodeArgs);
  const login = await api(server.url, null, 'POST', '/api/auth/login', ADMIN);
  const token = (await api(server.url, null, 'POST', '/api/tokens', { name: 'bench' }, login.cookie)).body.token as string;
  return { server, token };
}

export async function runMemory(o: MemoryBenchOptions): Promise<boolean> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-bench-memory-'));
  const report = path.join(work, 'TEST-big.xml');
  let server: Server | null = null;
  try {
    console.log('memory: building the server (npm run build)...');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    await writeReport(report, { cases: o.results, suites: o.suites });
    const dataDir = path.join(work, 'data');
    fs.mkdirSync(dataDir);
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', work]);
    const pgPort = await freePort();
    const env = {
      DATA_DIR: dataDir, PORT: '0', EMBEDDED_POSTGRES_PORT: String(pgPort), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'info', MAX_UPLOAD_BYTES: String(200 * MB), RATE_LIMIT_ENABLED: 'false',
    };

    // The data: one import of o.results results.
    console.log(`memory: importing ${o.results} results...`);
    let session = await startAndLogIn(env);
    server = session.server;
    const projectId = (await api(server.url, session.token, 'POST', '/api/model/project/create', { data: { name: 'Bench' } })).body.data.id as number;
    const form = new FormData();
    form.append('name', 'Months of CI');
    form.append('projectId', String(projectId));
    form.append('files', await fs.openAsBlob(report), 'TEST-big.xml');
    const imported = await fetch(`${server.url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${session.token}` }, body: form });
    const stream = await imported.text();
    const last = JSON.parse(stream.trim().split('\n\n').pop()!.slice('data: '.length));
    if (imported.status !== 200 || !last.complete) throw new BenchSanityError(`the import did not complete: ${imported.status} ${stream.slice(-500)}`);
    const runId = last.testRunId as number;
    const secrets = JSON.parse(fs.readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'));
    const pool = new pg.Pool({ host: '127.0.0.1', port: pgPort, user: 'postgres', password: secrets.embeddedPostgresPassword, database: 'testament', max: 1 });
    const machine = await describeMachine(pool);
    const counted = (await pool.query('SELECT count(*)::int AS n FROM test_run_results WHERE test_run_id = $1', [runId])).rows[0].n as number;
    await pool.end();
    if (counted !== o.results) throw new BenchSanityError(`the run holds ${counted} results, not ${o.results}`);
    const unpagedRequest = { where: { testRunId: runId }, include: INCLUDE };
    const warmUp = async (token: string) => {
      const small = await call(server!.url, token, '/api/model/testRunResult/findMany', { ...unpagedRequest, take: 10 }, true);
      if (small.status !== 200 || small.json.data.length !== 10) throw new BenchSanityError(`warm-up read: ${small.status}`);
    };

    // The bounded server (MODEL_MAX_ROWS as given), started afresh.
    await stop(server);
    session = await startAndLogIn({ ...env, MODEL_MAX_ROWS: String(o.maxRows) });
    server = session.server;
    await warmUp(session.token);
    const pageSize = Math.floor(o.maxRows / ROWS_PER_RESULT);
    const unpaged = await watchMemory(server.child.pid!, async () => {
      const answer = await call(server!.url, session.token, '/api/model/testRunResult/findMany', unpagedRequest, false);
      if (answer.status !== 400 || answer.json.code !== 'too-many-rows') throw new BenchSanityError(`the unpaged read answered ${answer.status} ${JSON.stringify(answer.json)}`);
      return { status: answer.status, code: answer.json.code as string, bytes: answer.bytes };
    });
    const readInPages = async () => {
      let cursor: number | null = null;
      let rows = 0;
      let pages = 0;
      let bytes = 0;
      let largestPageBytes = 0;
      for (;;) {
        const page = await call(server!.url, session.token, '/api/model/testRunResult/findMany', {
          ...unpagedRequest, take: pageSize, orderBy: { id: 'asc' }, ...(cursor !== null && { cursor: { id: cursor }, skip: 1 }),
        }, true);
        if (page.status !== 200) throw new BenchSanityError(`page ${pages + 1} answered ${page.status} ${JSON.stringify(page.json)}`);
        const data = page.json.data as { id: number; testRunCase: { repositoryCase: { id: number } | null } | null; status: { id: number } | null }[];
        if (data.length === 0) break;
        if (data.some((r) => !r.testRunCase?.repositoryCase || !r.status)) throw new BenchSanityError(`page ${pages + 1} lacks an include`);
        if (cursor !== null && data[0].id <= cursor) throw new BenchSanityError('pages overlap');
        rows += data.length;
        pages += 1;
        bytes += page.bytes;
        largestPageBytes = Math.max(largestPageBytes, page.bytes);
        cursor = data[data.length - 1].id;
      }
      if (rows !== o.results) throw new BenchSanityError(`the pages held ${rows} results, not ${o.results}`);
      return { pageSize, pages, rows, bytes, largestPageBytes };
    };
    const paged = await watchMemory(server.child.pid!, readInPages);

    // The same pages on a small V8 heap: what stays live, without the garbage a default heap keeps.
    await stop(server);
    session = await startAndLogIn({ ...env, MODEL_MAX_ROWS: String(o.maxRows) }, SMALL_HEAP_NODE_ARGS);
    server = session.server;
    await warmUp(session.token);
    const pagedSmallHeap = await watchMemory(server.child.pid!, readInPages);

    // The same read with the bound off: what it cost before.
    await stop(server);
    session = await startAndLogIn({ ...env, MODEL_MAX_ROWS: '10000000' });
    server = session.server;
    await warmUp(session.token);
    const unbounded = await watchMemory(server.child.pid!, () => call(server!.url, session.token, '/api/model/testRunResult/findMany', unpagedRequest, false));
    if (unbounded.value.status !== 200) throw new BenchSanityError(`the unbounded read answered ${unbounded.value.status} ${JSON.stringify(unbounded.value.json)}`);
    await stop(server);
    server = null;

    const aboveIdle = (watched: { idleBytes: number; peakBytes: number }) => watched.peakBytes - watched.idleBytes;
    const passed = aboveIdle(unpaged) < GOAL_ABOVE_IDLE_BYTES && aboveIdle(pagedSmallHeap) < GOAL_ABOVE_IDLE_BYTES;
    const memory = (watched: { idleBytes: number; peakBytes: number; aboveIdleMB: number; seconds: number }) =>
      ({ idleRssMB: round(watched.idleBytes / MB, 1), peakRssMB: round(watched.peakBytes / MB, 1), aboveIdleMB: watched.aboveIdleMB, seconds: watched.seconds });
    const result = {
      benchmark: 'memory',
      date: new Date().toISOString(),
      machine,
      code: describeCode(['services', 'projections', 'bench', 'contracts', 'infra']),
      parameters: { ...o, request: unpagedRequest, server: 'node dist/services/process/main.js, embedded PostgreSQL, started afresh over the imported data' },
      unpaged: { maxRows: o.maxRows, ...unpaged.value, ...memory(unpaged) },
      paged: { maxRows: o.maxRows, ...paged.value, ...memory(paged), resultsPerSecond: round(o.results / paged.seconds) },
      pagedSmallHeap: { nodeArgs: SMALL_HEAP_NODE_ARGS, ...memory(pagedSmallHeap), resultsPerSecond: round(o.results / pagedSmallHeap.seconds) },
      unbounded: { maxRows: 10_000_000, status: unbounded.value.status, bytes: unbounded.value.bytes, ...memory(unbounded) },
      goals: { unpagedAboveIdleMB: unpaged.aboveIdleMB, pagedSmallHeapAboveIdleMB: pagedSmallHeap.aboveIdleMB, goalMB: GOAL_ABOVE_IDLE_BYTES / MB, met: passed },
      passed,
    };
    const written = writeResult('memory', result);
    const ok = (watched: { idleBytes: number; peakBytes: number }) => (aboveIdle(watched) < GOAL_ABOVE_IDLE_BYTES ? 'ok' : 'MISSED');
    console.log(`  unpaged read of ${o.results} results with 3 includes: ${unpaged.value.status} ${unpaged.value.code} in ${unpaged.seconds} s; server RSS ${unpaged.aboveIdleMB} MB above idle (goal < ${GOAL_ABOVE_IDLE_BYTES / MB}) ${ok(unpaged)}`);
    console.log(`  paged: ${paged.value.pages} pages of ${pageSize}, ${(paged.value.bytes / MB).toFixed(1)} MB in ${paged.seconds} s; server RSS ${paged.aboveIdleMB} MB above idle (no goal: V8's default heap)`);
    console.log(`  paged on ${SMALL_HEAP_NODE_ARGS.join(' ')}: ${pagedSmallHeap.seconds} s; server RSS ${pagedSmallHeap.aboveIdleMB} MB above idle (goal < ${GOAL_ABOVE_IDLE_BYTES / MB}) ${ok(pagedSmallHeap)}`);
    console.log(`  with the bound off: ${(unbounded.value.bytes / MB).toFixed(0)} MB answered in ${unbounded.seconds} s, peak ${(unbounded.peakBytes / MB).toFixed(0)} MB, ${unbounded.aboveIdleMB} MB above idle`);
    console.log(`  ${passed ? 'goal met' : 'goal missed'}; ${written}`);
    return passed;
  } finally {
    await stop(server);
    fs.rmSync(work, { recursive: true, force: true });
  }
}
