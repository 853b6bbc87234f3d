/**
 * The evidence benchmark (docs/compliance.md):
 *
 * - verification: a log of 1,000,000 events (the rebuild benchmark's seed, appended through
 *   es_append, so chained) checked whole by PostgresEventStore.verifyChain, three rounds; goal
 *   ≥ 100,000 events/s (median);
 * - a bundle: a run of 10,000 results (one JUnit file imported through the built server on the
 *   embedded default, the run signed), GET /api/evidence timed and sized, then checked offline
 *   (verifyBundle). No goal was set for it: time and size are recorded.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChainLedger, LedgerChainedStore, startChainFollower } from '../infra/eventstore/chainLedger';
import { PostgresEventStore, setupPostgresEventStore } from '../infra/eventstore/postgres';
import { createPool } from '../infra/postgres/database';
import { verifyBundle } from '../services/shared/evidenceBundle';
import { createTestDatabase } from '../test/support/database';
import { api, freePort, startServer, stopServer, writeReport } from './import';
import { seedLog } from './rebuild';
import { BenchSanityError, describeCode, describeMachine, median, round, seconds, writeResult } from './support';

export interface IntegrityBenchOptions { events: number; results: number; rounds: number }
export const INTEGRITY_DEFAULTS: IntegrityBenchOptions = { events: 1_000_000, results: 10_000, rounds: 3 };
const GOAL_VERIFY_EVENTS_PER_SECOND = 100_000;
const ROOT = path.join(__dirname, '..');
const ADMIN = { email: 'bench@example.com', password: 'evidence bench password' };

async function benchVerify(o: IntegrityBenchOptions) {
  const db = await createTestDatabase('bench_integrity');
  const pool = createPool(db.url, 4);
  const store = new PostgresEventStore(pool, db.url);
  try {
    await setupPostgresEventStore(pool);
    const machine = await describeMachine(pool);
    console.log(`integrity: seeding ${o.events.toLocaleString('en')} events`);
    const seeded = await seedLog(store, { events: o.events, seedBatch: 250 });
    await pool.query('VACUUM (ANALYZE) es_events');
    await pool.query('CHECKPOINT');
    const { rows: [size] } = await pool.query<{ bytes: string }>(`SELECT pg_total_relation_size('es_events')::bigint AS bytes`);
    const rounds: { seconds: number; eventsPerSecond: number }[] = [];
    for (let i = 0; i < o.rounds; i++) {
      const started = process.hrtime.bigint();
      const report = await store.verifyChain();
      const took = seconds(started);
      if (!report.intact || report.checked !== o.events) throw new BenchSanityError(`verification: ${JSON.stringify(report)}`);
      rounds.push({ seconds: round(took, 2), eventsPerSecond: round(o.events / took) });
      console.log(`  verified ${o.events.toLocaleString('en')} events in ${took.toFixed(2)} s (${round(o.events / took)} events/s)`);
    }
    const ledger = await benchLedger(store, pool, o);
    return { machine, seedSeconds: round(seeded.seconds, 1), logBytes: Number(size.bytes), rounds, medianEventsPerSecond: median(rounds.map((r) => r.eventsPerSecond)), ledger };
  } finally {
    await store.close();
    await pool.end();
    await db.drop();
  }
}

/**
 * The chain as EventStoreDB has it (infra/eventstore/chainLedger.ts), over the same log read
 * through the port only: the follower chaining it all once, then LedgerChainedStore.verifyChain
 * (events read back in pages, every hash recomputed in Node), the rounds as above. No goal of its
 * own: reported beside the PostgreSQL chain's.
 */
async function benchLedger(store: PostgresEventStore, pool: ReturnType<typeof createPool>, o: IntegrityBenchOptions) {
  const ledger = new ChainLedger(pool);
  await ledger.setup();
  const chained = new LedgerChainedStore(store, ledger);
  const follower = startChainFollower({ store, ledger, logger: { info: () => undefined, warn: () => undefined, error: () => undefined }, pollMs: 60_000 });
  const started = process.hrtime.bigint();
  const head = await follower.catchUp();
  const chainSeconds = seconds(started);
  await follower.stop();
  if (head !== String(o.events)) throw new BenchSanityError(`the follower chained up to ${head}, not ${o.events}`);
  console.log(`  ledger: chained ${o.events.toLocaleString('en')} events in ${chainSeconds.toFixed(2)} s (${round(o.events / chainSeconds)} events/s)`);
  const rounds: { seconds: number; eventsPerSecond: number }[] = [];
  for (let i = 0; i < o.rounds; i++) {
    const t = process.hrtime.bigint();
    const report = await chained.verifyChain();
    const took = seconds(t);
    if (!report.intact || report.checked !== o.events) throw new BenchSanityError(`ledger verification: ${JSON.stringify(report)}`);
    rounds.push({ seconds: round(took, 2), eventsPerSecond: round(o.events / took) });
    console.log(`  ledger: verified ${o.events.toLocaleString('en')} events in ${took.toFixed(2)} s (${round(o.events / took)} events/s)`);
  }
  return { chainSeconds: round(chainSeconds, 2), chainEventsPerSecond: round(o.events / chainSeconds), rounds, medianEventsPerSecond: median(rounds.map((r) => r.eventsPerSecond)) };
}

async function benchBundle(o: IntegrityBenchOptions) {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-bench-evidence-'));
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  try {
    console.log('integrity: building the server (npm run build)...');
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
    const report = path.join(work, 'TEST-run.xml');
    await writeReport(report, { cases: o.results, suites: Math.max(1, Math.round(o.results / 200)) });
    const dataDir = path.join(work, 'data');
    fs.mkdirSync(dataDir);
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', work]);
    server = await startServer({
      DATA_DIR: dataDir, PORT: '0', EMBEDDED_POSTGRES_PORT: String(await freePort()), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      LOG_LEVEL: 'info', RATE_LIMIT_ENABLED: 'false',
    });
    const { url } = server;
    const login = await api(url, null, 'POST', '/api/auth/login', ADMIN);
    const token = (await api(url, null, 'POST', '/api/tokens', { name: 'bench' }, login.cookie)).body.token as string;
    const projectId = (await api(url, token, 'POST', '/api/model/project/create', { data: { name: 'Bench' } })).body.data.id as number;
    const form = new FormData();
    form.append('name', 'Evidence run');
    form.append('projectId', String(projectId));
    form.append('files', await fs.openAsBlob(report), 'TEST-run.xml');
    const res = await fetch(`${url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    const text = await res.text();
    const last = JSON.parse(text.trim().split('\n\n').pop()!.slice('data: '.length));
    if (!last.complete) throw new BenchSanityError(`import did not complete: ${text.slice(-500)}`);
    const runId = last.testRunId as number;
    await api(url, token, 'POST', '/api/signatures', { entity: 'testRun', id: runId, meaning: 'approved', password: ADMIN.password });

    const bundle = path.join(work, 'evidence.zip');
    const started = process.hrtime.bigint();
    const answer = await fetch(`${url}/api/evidence?runId=${runId}`, { headers: { authorization: `Bearer ${token}` } });
    if (answer.status !== 200) throw new BenchSanityError(`evidence answered ${answer.status}: ${await answer.text()}`);
    fs.writeFileSync(bundle, Buffer.from(await answer.arrayBuffer()));
    const bundleSeconds = seconds(started);
    const checkStarted = process.hrtime.bigint();
    const checked = await verifyBundle(bundle);
    const verifySeconds = seconds(checkStarted);
    if (!checked.ok) throw new BenchSanityError(`the bundle does not verify: ${JSON.stringify(checked.problems.slice(0, 3))}`);
    const bytes = fs.statSync(bundle).size;
    console.log(`  bundle of a ${o.results.toLocaleString('en')}-result run: ${bundleSeconds.toFixed(2)} s, ${(bytes / 1e6).toFixed(1)} MB, ${checked.checked.events} events; checked offline in ${verifySeconds.toFixed(2)} s`);
    return { results: o.results, bundleSeconds: round(bundleSeconds, 2), bundleBytes: bytes, events: checked.checked.events, files: checked.checked.files, verifySeconds: round(verifySeconds, 2) };
  } finally {
    if (server) await stopServer(server);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export async function runIntegrity(o: IntegrityBenchOptions): Promise<boolean> {
  const verify = await benchVerify(o);
  const bundle = await benchBundle(o);
  const pass = verify.medianEventsPerSecond >= GOAL_VERIFY_EVENTS_PER_SECOND;
  const result = {
    benchmark: 'integrity',
    date: new Date().toISOString(),
    machine: verify.machine,
    code: describeCode(['infra', 'services', 'contracts', 'bench']),
    parameters: { ...o, verification: 'PostgresEventStore.verifyChain over the whole log (es_event_content, sha256 in PostgreSQL, ranges of 50,000); ledger: the same log chained by the EventStoreDB chain follower, then LedgerChainedStore.verifyChain (no goal of its own)', bundle: 'GET /api/evidence?runId= on the built server (embedded default), then verifyBundle offline' },
    verification: { ...verify, machine: undefined },
    bundle,
    goals: { verifyEventsPerSecond: GOAL_VERIFY_EVENTS_PER_SECOND, meaning: 'median of the rounds ≥ 100,000 events/s over 1,000,000 events; the bundle has no goal (time and size recorded)' },
    pass,
  };
  const file = writeResult('integrity', result);
  console.log(`integrity: ledger (EventStoreDB's chain) chained at ${verify.ledger.chainEventsPerSecond} events/s, verified at median ${verify.ledger.medianEventsPerSecond} events/s`);
  console.log(`integrity: verification median ${verify.medianEventsPerSecond} events/s over ${o.events.toLocaleString('en')} events (goal ≥ ${GOAL_VERIFY_EVENTS_PER_SECOND}): ${pass ? 'PASS' : 'FAIL'}; bundle ${bundle.bundleSeconds} s, ${(bundle.bundleBytes / 1e6).toFixed(1)} MB  → ${file}`);
  return pass;
}
