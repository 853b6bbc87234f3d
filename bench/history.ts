import pg from 'pg';
import { registerUser } from '../services/identity/identity.handlers';
import { systemMetadata } from '../services/shared/context';
import { startTestApp } from '../test/support/app';
import { HttpClient } from '../test/support/server';
import { BenchSanityError, describeCode, describeMachine, round, writeResult } from './support';

/**
 * History for analysts (issue 20): the timeline of one entity with many events
 * (GET /api/history/{entity}/{id}, a page of 50) over HTTP, p50 and p95, its first page (the goal)
 * and its last (the stream read up to it), against reading the entity's stream alone in the same run. The application runs in this process (startTestApp:
 * the whole API over loopback, the PostgreSQL event store, a throw-away database). Goal: p50 < 50 ms
 * at 10,000 events. `asOf` reads against the current read model and the rebuild throughput of the
 * read model with its history are measured by `npm run bench -- rebuild` (1,000,000 events).
 */
export interface HistoryBenchOptions {
  /** Events of the entity (its creation, then updates). */
  events: number;
  iterations: number;
}
export const HISTORY_DEFAULTS: HistoryBenchOptions = { events: 10_000, iterations: 100 };
const GOAL_P50_MS = 50;
const APPEND_BATCH = 500;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

export async function runHistory(o: HistoryBenchOptions): Promise<boolean> {
  const app = await startTestApp();
  try {
    const meta = systemMetadata('bench');
    await registerUser(app.deps, { email: 'bench@example.com', name: 'Bench', password: 'history bench password', access: 'ADMIN' }, meta);
    const client = new HttpClient(app.url);
    if ((await client.post('/api/auth/login', { email: 'bench@example.com', password: 'history bench password' })).status !== 200) throw new BenchSanityError('login refused');
    const project = (await client.post('/api/model/project/create', { data: { name: 'History' } })).body.data.id as number;
    const id = (await client.post('/api/model/repositoryCase/create', { data: { title: 'v0', project: { connect: { id: project } } } })).body.data.id as number;
    // The updates straight into the store (untimed): each a RepositoryCaseUpdated as the generic aggregate writes it.
    let revision = 0n;
    for (let done = 1; done < o.events; done += APPEND_BATCH) {
      const events = Array.from({ length: Math.min(APPEND_BATCH, o.events - done) }, (_, k) => ({
        type: 'RepositoryCaseUpdated', data: { caseId: id, changes: { title: `v${done + k}`, estimate: done + k }, updatedAt: new Date().toISOString() },
      }));
      revision = (await app.deps.store.append(`repositoryCase-${id}`, events, { expectedRevision: revision, metadata: meta })).nextRevision;
    }
    const timeline: number[] = [];
    let entries = 0;
    for (let i = 0; i < o.iterations; i++) {
      const started = performance.now();
      const res = await client.get(`/api/history/repositoryCase/${id}?take=50`);
      timeline.push(performance.now() - started);
      if (res.status !== 200) throw new BenchSanityError(`timeline answered ${res.status}: ${JSON.stringify(res.body)}`);
      entries = res.body.data.length;
    }
    const stream: number[] = [];
    let read = 0;
    for (let i = 0; i < o.iterations; i++) {
      const started = performance.now();
      read = (await app.deps.store.readStream(`repositoryCase-${id}`)).length;
      stream.push(performance.now() - started);
    }
    if (read !== o.events || entries !== 50) throw new BenchSanityError(`${read} events read (not ${o.events}), a page of ${entries} entries (not 50)`);
    // The last page: a timeline reads its stream up to one event past the page, so the last page costs the most.
    let cursor: string | null = null;
    for (let seen = 0; seen < o.events - 50;) {
      const res = await client.get(`/api/history/repositoryCase/${id}?take=${Math.min(500, o.events - 50 - seen)}${cursor ? `&cursor=${cursor}` : ''}`);
      seen += res.body.data.length;
      cursor = res.body.nextCursor;
    }
    const lastPage: number[] = [];
    for (let i = 0; i < o.iterations; i++) {
      const started = performance.now();
      const res = await client.get(`/api/history/repositoryCase/${id}?take=50${cursor ? `&cursor=${cursor}` : ''}`);
      lastPage.push(performance.now() - started);
      if (res.status !== 200 || res.body.nextCursor !== null) throw new BenchSanityError(`the last page answered ${res.status} with a next cursor ${res.body.nextCursor}`);
    }
    lastPage.sort((a, b) => a - b);
    timeline.sort((a, b) => a - b);
    stream.sort((a, b) => a - b);
    const p50 = percentile(timeline, 0.5);
    const passed = p50 < GOAL_P50_MS;
    const pool = new pg.Pool({ connectionString: app.databaseUrl, max: 1 });
    const machine = await describeMachine(pool);
    await pool.end();
    const written = writeResult('history', {
      benchmark: 'history',
      date: new Date().toISOString(),
      machine,
      code: describeCode(['services', 'projections', 'bench', 'contracts', 'infra']),
      parameters: { ...o, page: 50, server: 'in this process (startTestApp): API over loopback, PostgreSQL event store' },
      timeline: { p50Ms: round(p50, 1), p95Ms: round(percentile(timeline, 0.95), 1), maxMs: round(timeline[timeline.length - 1], 1) },
      lastPage: { p50Ms: round(percentile(lastPage, 0.5), 1), p95Ms: round(percentile(lastPage, 0.95), 1), note: 'the stream read and folded up to the page: what precedes it' },
      readStreamAlone: { p50Ms: round(percentile(stream, 0.5), 1), p95Ms: round(percentile(stream, 0.95), 1) },
      measuredElsewhere: 'asOf reads against the current read model, and the rebuild of the read model with its history: npm run bench -- rebuild',
      goals: { timelineP50Ms: round(p50, 1), timelineGoalMs: GOAL_P50_MS, timelineMet: passed },
      passed,
    });
    console.log(`  timeline of ${o.events} events, a page of 50: p50 ${p50.toFixed(1)} ms (goal < ${GOAL_P50_MS}) ${passed ? 'ok' : 'MISSED'}; the last page p50 ${percentile(lastPage, 0.5).toFixed(1)} ms; the stream read alone p50 ${percentile(stream, 0.5).toFixed(1)} ms`);
    console.log(`  ${passed ? 'goal met' : 'goal missed'}; ${written}`);
    return passed;
  } finally {
    await app.stop();
  }
}
