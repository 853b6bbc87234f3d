import fs from 'node:fs';
import path from 'node:path';
import { ADMIN, type Deployment, type Fault } from './deployments';
import { ChaosClient, Recorder, type Failure } from './http';
import { FULL_SIZES, SHORT_SIZES, failingOf, migration, reader, searcher, upload, type LoadSizes, type MigrationOutcome, type UploadOutcome } from './load';
import { ROOT, sleep } from './processes';

/**
 * One deployment under the chaos load: the service started, the load run while the faults are
 * injected one after another, then the checks, and the figures.
 */

/** 503s the documentation gives for a dependency that is away (docs/errors.md). */
export const DOCUMENTED_UNAVAILABLE = ['service-unavailable', 'read-model-lagging', 'search-unavailable', 'search-lagging', 'shutting-down', 'import-interrupted'];
/** After a fault is undone, a request that began during it may still answer its 503 (a write waits WRITE_TIMEOUT_MS, 10 s, for the read model). */
const GRACE_MS = 15_000;
/** The full form's rounds of faults at most. */
const FULL_ROUNDS = 3;

/**
 * A failed job is acceptable only with a documented code that is not an internal error
 * (`import-internal-error`, `external-import-internal-error`: docs/errors.md calls them programming errors).
 */
export function acceptedFailure(code: string, documented: Set<string>): boolean {
  return documented.has(code) && !code.endsWith('internal-error');
}

/** Every code docs/errors.md lists (a failed job must fail with one of them). */
export function documentedCodes(): Set<string> {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'errors.md'), 'utf8');
  return new Set([...text.matchAll(/^\| `([a-z0-9-]+)` \|/gm)].map((m) => m[1]));
}

export interface FaultFigures {
  name: string;
  what: string;
  /** From the injection until the API's /readyz answered ready again after the restore. */
  recoveredMs: number | null;
  /** The longest stretch within the fault's window (and its grace) in which one kind of request of the load kept failing (5xx or no answer) until it was answered again. */
  longestUnavailableMs: number;
  /** That kind of request. */
  longestUnavailableRoute: string | null;
  /** The longest stretch within the fault's window in which no request at all was answered below 500. */
  noAnswerMs: number;
  /** Requests of the load that got a 5xx or no answer within the window. */
  failedRequests: number;
  start: number;
  end: number;
  apiDown: boolean;
}

export interface ChaosReport {
  deployment: string;
  short: boolean;
  ok: boolean;
  failures: string[];
  durationMs: number;
  loadMs: number;
  requests: number;
  byStatus: Record<string, number>;
  fiveXxByCode: Record<string, number>;
  unexpected: Failure[];
  uploads: Array<{ jobId: number | null; state: string | null; results: number; expected: number; found: number; inSearch: number; failuresInSearch: number; retries: number }>;
  migration: { jobId: number | null; phase: string | null; cases: number; casesFound: number; casesInSearch: number; runs: number; runsFound: number };
  resultsAcknowledged: number;
  resultsFound: number;
  readRows: number;
  searches: number;
  /** From the end of the load until search had applied the log's head (null: not within the wait). */
  searchCaughtUpMs: number | null;
  faults: FaultFigures[];
  failedJobs: Array<{ jobId: number; code: string }>;
  logDir: string;
}

/**
 * The failures no fault excuses: a 5xx other than a documented 503 of a dependency away, any 5xx
 * or refused connection outside a fault's window (and its grace), a refused connection while the
 * API process itself was up.
 */
export function unexpectedFailures(failures: Failure[], faults: Array<Pick<FaultFigures, 'start' | 'end' | 'apiDown'>>, graceMs = GRACE_MS): Failure[] {
  return failures.filter((f) => {
    const windows = faults.filter((w) => f.at >= w.start && f.at <= w.end + graceMs);
    if (windows.length === 0) return true;
    if (f.status === 0) return !windows.some((w) => w.apiDown);
    return !(f.status === 503 && DOCUMENTED_UNAVAILABLE.includes(f.code));
  });
}

export function longestGap(served: number[], start: number, end: number): number {
  let prev = start;
  let longest = 0;
  for (const t of served) {
    if (t < start) continue;
    longest = Math.max(longest, Math.min(t, end) - prev);
    if (t >= end) return longest;
    prev = t;
  }
  return Math.max(longest, end - prev);
}

async function signIn(base: () => string, recorder: Recorder): Promise<ChaosClient> {
  const res = await fetch(`${base()}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json', origin: new URL(base()).origin }, body: JSON.stringify(ADMIN),
  });
  if (res.status !== 200) throw new Error(`signing in answered ${res.status}: ${await res.text()}`);
  const cookie = res.headers.get('set-cookie')!.split(';')[0];
  const token = await fetch(`${base()}/api/tokens`, {
    method: 'POST', headers: { 'content-type': 'application/json', origin: new URL(base()).origin, cookie }, body: JSON.stringify({ name: 'chaos' }),
  });
  if (token.status !== 201) throw new Error(`making a token answered ${token.status}: ${await token.text()}`);
  return new ChaosClient(base, recorder, ((await token.json()) as { token: string }).token);
}

/** Waits until /readyz answers 200 with status ready; answers when (null: not within `ms`). */
async function readyAgain(base: () => string, ms: number): Promise<number | null> {
  for (const until = Date.now() + ms; Date.now() < until;) {
    try {
      const res = await fetch(`${base()}/readyz`, { signal: AbortSignal.timeout(5000) });
      if (res.status === 200 && ((await res.json()) as { status: string }).status === 'ready') return Date.now();
    } catch { /* not yet */ }
    await sleep(250);
  }
  return null;
}

/** The event store's head position, as the API's /readyz reports it (retried while it answers no head). */
async function headPosition(client: ChaosClient, ms: number): Promise<string | null> {
  for (const until = Date.now() + ms; Date.now() < until;) {
    const res = await client.request('GET', '/readyz');
    const head = (res.body?.checks as Array<{ name: string; details?: { head?: string } }> | undefined)?.find((c) => c.name === 'eventStore')?.details?.head;
    if (head !== undefined) return String(head);
    await sleep(1000);
  }
  return null;
}

/**
 * Waits until search has applied `position` (a search `?after=` it: 200 once the indexer is there,
 * 503 search-lagging after WRITE_TIMEOUT_MS before); answers when (null: not within `ms`).
 */
async function searchReaches(client: ChaosClient, position: string, ms: number): Promise<number | null> {
  for (const until = Date.now() + ms; Date.now() < until;) {
    const res = await client.request('POST', `/api/search?after=${position}`, { query: { match_all: {} }, limit: 1 });
    if (res.status === 200) return Date.now();
    await sleep(1000);
  }
  return null;
}

/** Polls `read` until it answers `expected` or `ms` pass; answers the last value. */
async function settle(read: () => Promise<number>, expected: number, ms: number): Promise<number> {
  let value = -1;
  for (const until = Date.now() + ms; Date.now() < until;) {
    value = await read().catch(() => -1);
    if (value === expected) return value;
    await sleep(1000);
  }
  return value;
}

export async function runDeployment(deployment: Deployment, opts: { short: boolean; log?: (line: string) => void }): Promise<ChaosReport> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const sizes: LoadSizes = opts.short ? SHORT_SIZES : FULL_SIZES;
  const started = Date.now();
  const failures: string[] = [];
  const recorder = new Recorder();
  log(`[${deployment.name}] starting the service (logs in ${deployment.logDir})`);
  await deployment.start();
  log(`[${deployment.name}] up in ${((Date.now() - started) / 1000).toFixed(1)} s at ${deployment.url()}`);
  const client = await signIn(() => deployment.url(), recorder);
  const projects: number[] = [];
  for (let i = 0; i < sizes.uploads; i++) {
    const res = await client.post('/api/model/project/create', { data: { name: `Chaos CI ${i + 1}` } });
    if (res.status !== 200 && res.status !== 201) throw new Error(`creating a project answered ${res.status} ${JSON.stringify(res.body)}`);
    projects.push(res.body.data.id);
  }

  // The load.
  const loadStart = Date.now();
  let stopping = false;
  const stop = () => stopping;
  const endMs = opts.short ? 240_000 : 900_000;
  const readers = Array.from({ length: sizes.readers }, (_, i) => reader(client, () => projects, stop, i));
  const searchers = Array.from({ length: sizes.searchers }, () => searcher(client, stop));
  const uploads: Array<Promise<UploadOutcome>> = projects.map((project, i) =>
    sleep(i * sizes.uploadStaggerMs).then(() => upload(client, project, `u${i + 1}`, sizes.resultsPerUpload, endMs)));
  const migrationDone: Promise<MigrationOutcome> = sleep(1000).then(() => migration(client, deployment.logDir, sizes.migration, endMs));

  // The faults, one after another, while the load runs: the short form once each; the full form
  // round after round while the uploads and the migration go on, at most FULL_ROUNDS (a process
  // killed every 20 s never lets a 20,000-result import finish: its last step takes longer).
  const faults: FaultFigures[] = [];
  const gapMs = opts.short ? 3000 : 20_000;
  let writesEnded = false;
  const allWrites = Promise.all([Promise.all(uploads), migrationDone]).finally(() => (writesEnded = true));
  for (let round = 1; round === 1 || (!opts.short && !writesEnded && round <= FULL_ROUNDS); round++) {
    for (const fault of deployment.faults()) {
      await sleep(gapMs);
      if (round > 1 && writesEnded) break;
      faults.push(await inject(deployment, fault, log, round));
    }
  }
  const [uploaded, migrated] = await allWrites;
  stopping = true;
  const readRows = (await Promise.all(readers)).reduce((a, b) => a + b, 0);
  const searches = (await Promise.all(searchers)).reduce((a, b) => a + b, 0);
  const loadMs = Date.now() - loadStart;
  log(`[${deployment.name}] load done in ${(loadMs / 1000).toFixed(1)} s; checking`);

  // The checks: every acknowledged write once in the read model and in search.
  const checker = new ChaosClient(() => deployment.url(), new Recorder(), client.token);
  const count = async (entity: string, where: unknown) => {
    const res = await checker.until('POST', `/api/model/${entity}/count`, { where });
    if (res.status !== 200) throw new Error(`count ${entity} answered ${res.status}`);
    return res.body.data as number;
  };
  const searchTotal = async (filters: unknown, query: unknown = { match_all: {} }) => {
    const res = await checker.until('POST', '/api/search', { query, filters, limit: 1 });
    if (res.status !== 200) throw new Error(`search answered ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.total as number;
  };
  // Search follows the log on its own and may be far behind after the faults (an indexer started
  // again, the engine away, every import to index): first wait until it has applied the log's
  // head, so that a document missing afterwards is lost, not late. The wait is a figure of its own.
  const checksStart = Date.now();
  const catchUpMs = opts.short ? 600_000 : 1_800_000;
  const head = await headPosition(checker, 120_000);
  const caughtUpAt = head === null ? null : await searchReaches(checker, head, catchUpMs);
  const searchCaughtUpMs = caughtUpAt === null ? null : caughtUpAt - checksStart;
  if (head === null) failures.push('/readyz named no event store head within 120 s of the load');
  else if (caughtUpAt === null) failures.push(`search had not applied the log's head (position ${head}) ${catchUpMs / 60_000} min after the load`);
  const settleMs = opts.short ? 90_000 : 180_000;
  const documented = documentedCodes();
  const failedJobs: ChaosReport['failedJobs'] = [];
  const uploadFigures: ChaosReport['uploads'] = [];
  for (const [i, u] of uploaded.entries()) {
    const name = `upload ${i + 1}`;
    if (u.jobId === null) {
      failures.push(`${name}: never acknowledged in ${endMs / 1000} s (${u.retries} tries)`);
      continue;
    }
    const state = u.job?.state ?? null;
    if (!['completed', 'failed'].includes(state)) failures.push(`${name} (job ${u.jobId}): did not end: ${JSON.stringify(u.job)?.slice(0, 300)}`);
    if (state === 'failed') {
      const code = String(u.job.error?.code ?? u.job.code ?? 'no-code');
      failedJobs.push({ jobId: u.jobId, code });
      if (!acceptedFailure(code, documented)) failures.push(`${name} (job ${u.jobId}): failed with ${code} (${String(u.job.error?.error ?? '').slice(0, 200)})`);
    }
    const results = state === 'completed' ? u.cases : Number(u.job?.counts?.results ?? 0);
    if (state === 'completed' && u.job.counts?.results !== u.cases) failures.push(`${name} (job ${u.jobId}): completed reporting ${u.job.counts?.results} results of ${u.cases}`);
    const runId = u.job?.testRunId as number | undefined;
    let found = 0;
    let inSearch = 0;
    let failuresInSearch = 0;
    if (runId) {
      found = await settle(() => count('testRunResult', { testRunId: runId }), results, settleMs);
      if (found !== results) failures.push(`${name} (job ${u.jobId}): ${found} results in the read model, ${results} acknowledged`);
      const runCases = await count('testRunCase', { testRunId: runId });
      if (runCases !== results) failures.push(`${name} (job ${u.jobId}): ${runCases} run cases, ${results} acknowledged`);
      const twice = await checker.until('POST', '/api/model/testRunResult/groupBy', {
        by: ['testRunCaseId'], where: { testRunId: runId }, _count: { _all: true }, having: { testRunCaseId: { _count: { gt: 1 } } },
      });
      if (twice.status !== 200 || twice.body.data.length > 0) failures.push(`${name} (job ${u.jobId}): run cases with more than one result: ${JSON.stringify(twice.body).slice(0, 200)}`);
      const cases = await count('repositoryCase', { projectId: u.project });
      if (state === 'completed' && cases !== u.cases) failures.push(`${name} (job ${u.jobId}): ${cases} cases in its project, ${u.cases} imported`);
      if (state === 'completed') {
        inSearch = await settle(() => searchTotal({ type: ['repository_cases'], projectId: u.project }), u.cases, settleMs);
        if (inSearch !== u.cases) failures.push(`${name} (job ${u.jobId}): ${inSearch} cases in search, ${u.cases} imported; ${await missingCases(checker, u.project)}`);
        const failing = failingOf(u.cases);
        failuresInSearch = await settle(() => searchTotal({ type: ['failures'] }, { term: { runId: String(runId) } }), failing, settleMs);
        if (failuresInSearch !== failing) failures.push(`${name} (job ${u.jobId}): ${failuresInSearch} failures in search, ${failing} failing results imported`);
      }
    } else if (state === 'completed') {
      failures.push(`${name} (job ${u.jobId}): completed without a run`);
    }
    uploadFigures.push({ jobId: u.jobId, state, results, expected: u.cases, found, inSearch, failuresInSearch, retries: u.retries });
  }

  // The migration: its cases and runs in the projects it made, its cases in search.
  const mig: ChaosReport['migration'] = { jobId: migrated.jobId, phase: migrated.job?.phase ?? null, cases: 0, casesFound: 0, casesInSearch: 0, runs: 0, runsFound: 0 };
  if (migrated.jobId === null) failures.push('migration: the upload was never acknowledged');
  else if (mig.phase === 'failed') {
    const code = String(migrated.job.error?.code ?? 'no-code');
    failedJobs.push({ jobId: migrated.jobId, code });
    if (!acceptedFailure(code, documented)) failures.push(`migration (job ${migrated.jobId}): failed with ${code}`);
  } else if (mig.phase !== 'completed') {
    failures.push(`migration (job ${migrated.jobId}): did not end (phase ${mig.phase})`);
  } else {
    const all = await checker.until('POST', '/api/model/project/findMany', { select: { id: true }, take: 100 });
    const made = (all.body.data as Array<{ id: number }>).map((p) => p.id).filter((id) => !projects.includes(id));
    mig.cases = migrated.job.counts?.repository_cases?.created ?? 0;
    mig.runs = migrated.job.counts?.runs?.created ?? 0;
    mig.casesFound = await settle(() => count('repositoryCase', { projectId: { in: made } }), mig.cases, settleMs);
    mig.runsFound = await count('testRun', { projectId: { in: made } });
    mig.casesInSearch = await settle(() => searchTotal({ type: ['repository_cases'] }, { terms: { projectId: made.map(String) } }), mig.cases, settleMs);
    if (mig.cases === 0) failures.push(`migration (job ${migrated.jobId}): completed without creating a case: ${JSON.stringify(migrated.job.counts)}`);
    if (mig.casesFound !== mig.cases) failures.push(`migration (job ${migrated.jobId}): ${mig.casesFound} cases in the read model, ${mig.cases} created`);
    if (mig.runsFound !== mig.runs) failures.push(`migration (job ${migrated.jobId}): ${mig.runsFound} runs in the read model, ${mig.runs} created`);
    if (mig.casesInSearch !== mig.cases) failures.push(`migration (job ${migrated.jobId}): ${mig.casesInSearch} cases in search, ${mig.cases} created`);
  }

  // Caught up: ready, nothing parked.
  const ready = await readyAgain(() => deployment.url(), 60_000);
  if (ready === null) {
    const res = await checker.get('/readyz');
    failures.push(`/readyz not ready after the load: ${JSON.stringify(res.body).slice(0, 500)}`);
  }
  const parked = await checker.until('GET', '/api/admin/parked-events');
  if (parked.status !== 200) failures.push(`GET /api/admin/parked-events answered ${parked.status}`);
  else if ((parked.body.data ?? []).length > 0) failures.push(`parked events: ${JSON.stringify(parked.body.data).slice(0, 500)}`);

  // No 5xx but the documented 503s while a dependency was away (and no refused connection unless the API itself was down).
  const unexpected = unexpectedFailures(recorder.failures, faults);
  for (const f of unexpected.slice(0, 10)) failures.push(`unexpected ${f.status || 'no answer'} ${f.code} on ${f.method} ${f.route} at +${((f.at - loadStart) / 1000).toFixed(1)} s`);
  if (unexpected.length > 10) failures.push(`… ${unexpected.length - 10} more unexpected failures`);

  const fiveXxByCode: Record<string, number> = {};
  for (const f of recorder.failures) {
    const key = f.status === 0 ? `no answer (${f.code})` : `${f.status} ${f.code}`;
    fiveXxByCode[key] = (fiveXxByCode[key] ?? 0) + 1;
  }
  for (const w of faults) {
    const outage = recorder.longestOutage(w.start, w.end + GRACE_MS);
    w.longestUnavailableMs = outage.ms;
    w.longestUnavailableRoute = outage.route;
    w.noAnswerMs = longestGap(recorder.served, w.start, w.end);
    w.failedRequests = recorder.failures.filter((f) => f.at >= w.start && f.at <= w.end + GRACE_MS).length;
    if (w.recoveredMs === null) failures.push(`${w.name}: /readyz not ready again within 120 s`);
  }

  const acknowledged = uploadFigures.reduce((a, u) => a + u.results, 0) + mig.cases;
  const found = uploadFigures.reduce((a, u) => a + u.found, 0) + mig.casesFound;
  return {
    deployment: deployment.name, short: opts.short, ok: failures.length === 0, failures,
    durationMs: Date.now() - started, loadMs, requests: recorder.requests,
    byStatus: Object.fromEntries([...recorder.byStatus].sort(([a], [b]) => a - b).map(([s, n]) => [String(s), n])),
    fiveXxByCode, unexpected, uploads: uploadFigures, migration: mig,
    resultsAcknowledged: acknowledged, resultsFound: found, readRows, searches, searchCaughtUpMs, faults, failedJobs, logDir: deployment.logDir,
  };
}

/** Which of a project's cases search lacks: their ids as ranges, with when the first was created (for the report of a failed check). */
async function missingCases(client: ChaosClient, project: number): Promise<string> {
  const inSearch = new Set<string>();
  for (let offset = 0; offset < 10_000; offset += 100) {
    const res = await client.until('POST', '/api/search', { query: { match_all: {} }, filters: { type: ['repository_cases'], projectId: project }, sort: [{ createdAt: { order: 'asc' } }], highlight: { fields: {} }, limit: 100, offset });
    if (res.status !== 200) return `search answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
    for (const hit of res.body.hits) inSearch.add(String(hit.id));
    if (res.body.hits.length < 100) break;
  }
  const missing: Array<{ id: number; createdAt: string; folderId: number }> = [];
  let cursor: number | null = null;
  for (;;) {
    const res = await client.until('POST', '/api/model/repositoryCase/findMany', {
      where: { projectId: project }, select: { id: true, createdAt: true, folderId: true }, take: 1000, orderBy: { id: 'asc' }, ...(cursor !== null && { cursor: { id: cursor }, skip: 1 }),
    });
    if (res.status !== 200) return `reading the cases answered ${res.status}`;
    const rows = res.body.data as Array<{ id: number; createdAt: string; folderId: number }>;
    for (const row of rows) if (!inSearch.has(String(row.id))) missing.push(row);
    if (rows.length < 1000) break;
    cursor = rows[rows.length - 1].id;
  }
  const ranges: string[] = [];
  for (const row of missing) {
    const last = ranges.at(-1);
    const m = last && /^(\d+)(?:-(\d+))?$/.exec(last);
    if (m && Number(m[2] ?? m[1]) === row.id - 1) ranges[ranges.length - 1] = `${m[1]}-${row.id}`;
    else ranges.push(String(row.id));
  }
  const folders = [...new Set(missing.map((r) => r.folderId))];
  return `missing case ids ${ranges.slice(0, 10).join(', ')} (folders ${folders.slice(0, 10).join(', ')}; first created ${missing[0]?.createdAt}, last ${missing.at(-1)?.createdAt})`;
}

async function inject(deployment: Deployment, fault: Fault, log: (line: string) => void, round: number): Promise<FaultFigures> {
  const start = Date.now();
  log(`[${deployment.name}] ${new Date(start).toISOString()} fault: ${fault.name} (round ${round})`);
  await fault.inject();
  await sleep(fault.downMs);
  await fault.restore();
  const ready = await readyAgain(() => deployment.url(), 120_000);
  const end = ready ?? Date.now();
  log(`[${deployment.name}]   restored; ready again after ${((end - start) / 1000).toFixed(1)} s`);
  return { name: round > 1 ? `${fault.name} (round ${round})` : fault.name, what: fault.what, recoveredMs: ready === null ? null : end - start, longestUnavailableMs: 0, longestUnavailableRoute: null, noAnswerMs: 0, failedRequests: 0, start, end, apiDown: fault.apiDown };
}

/** Over every round, per fault: the longest time to ready and the longest unavailability. */
function worstPerFault(faults: FaultFigures[]): string[] {
  const worst = new Map<string, { rounds: number; ready: number | null; unavailable: number; route: string | null }>();
  for (const f of faults) {
    const name = f.name.replace(/ \(round \d+\)$/, '');
    const w = worst.get(name) ?? { rounds: 0, ready: 0, unavailable: 0, route: null };
    w.rounds++;
    w.ready = w.ready === null || f.recoveredMs === null ? null : Math.max(w.ready, f.recoveredMs);
    if (f.longestUnavailableMs > w.unavailable) Object.assign(w, { unavailable: f.longestUnavailableMs, route: f.longestUnavailableRoute });
    worst.set(name, w);
  }
  if ([...worst.values()].every((w) => w.rounds === 1)) return [];
  return ['worst per fault over every round:', ...[...worst].map(([name, w]) => `  ${name} (${w.rounds}×): ready after at most ${seconds(w.ready)}, unavailable at most ${seconds(w.unavailable)}${w.route ? ` (${w.route})` : ''}`)];
}

const seconds = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);

/** The figures, as printed (and as docs/reliability.md keeps them). */
export function formatReport(r: ChaosReport): string {
  const lines = [
    `== ${r.deployment}${r.short ? ' (short)' : ''}: ${r.ok ? 'PASSED' : 'FAILED'} in ${seconds(r.durationMs)} (load ${seconds(r.loadMs)})`,
    `requests: ${r.requests} (by status: ${Object.entries(r.byStatus).map(([s, n]) => `${s === '0' ? 'no answer' : s} ${n}`).join(', ')})`,
    `writes: ${r.resultsAcknowledged} results and migrated cases acknowledged, ${r.resultsFound} found in the read model`,
    ...r.uploads.map((u, i) => `  upload ${i + 1}: job ${u.jobId} ${u.state}, ${u.results}/${u.expected} results, ${u.found} in the read model, ${u.inSearch} cases and ${u.failuresInSearch} failures in search, ${u.retries} upload retries`),
    `  migration: job ${r.migration.jobId} ${r.migration.phase}, ${r.migration.cases} cases (${r.migration.casesFound} in the read model, ${r.migration.casesInSearch} in search), ${r.migration.runs} runs (${r.migration.runsFound} found)`,
    `reads: ${r.readRows} rows paged; searches answered: ${r.searches}`,
    `search caught up with the log's head ${seconds(r.searchCaughtUpMs)} after the load`,
    `5xx and unanswered by code: ${Object.entries(r.fiveXxByCode).map(([c, n]) => `${c} ×${n}`).join(', ') || 'none'}`,
    `failed jobs: ${r.failedJobs.map((j) => `${j.jobId} ${j.code}`).join(', ') || 'none'}`,
    'faults (ready = from the injection until /readyz answered ready again; unavailable = the longest a kind of request kept failing; nothing served = the longest stretch no request at all was answered below 500):',
    ...r.faults.map((f) => `  ${f.name}: ready after ${seconds(f.recoveredMs)}, unavailable ${seconds(f.longestUnavailableMs)}${f.longestUnavailableRoute ? ` (${f.longestUnavailableRoute})` : ''}, nothing served ${seconds(f.noAnswerMs)}, ${f.failedRequests} requests failed`),
    ...worstPerFault(r.faults),
    ...(r.failures.length ? ['FAILED CHECKS:', ...r.failures.map((f) => `  - ${f}`)] : ['every check passed']),
    `logs: ${r.logDir}`,
  ];
  return lines.join('\n');
}
