import { expect } from 'chai';
import { openSearchEngine } from '../../../infra/search';
import type { SearchIndexer } from '../../../projections/search/indexer';
import { rebuildSearch, searchBuilder, SearchBuildRunning } from '../../../projections/search/rebuild';
import { registerUser } from '../../../services/identity/identity.handlers';
import { ReindexSaga } from '../../../services/searchAdmin/reindex.saga';
import { systemMetadata } from '../../../services/shared/context';
import { DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchEngine } from '../../../services/shared/search';
import { importingAdmin } from '../../imports/importClient';
import { caughtUp, expected, quietLogger, startIndexer, wrapWrites } from '../../projections/search/support';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { dropIndices, requireOpenSearch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../../support/search';
import { serveSearchAdmin } from '../../support/searchAdminApp';
import { HttpClient } from '../../support/server';
import { waitUntil } from '../../support/wait';

const PATH = '/api/admin/search/reindex';

/** A JUnit file of `cases` cases, every third failing (a failure document each). */
function junit(cases: number, name: string): string {
  const rows = Array.from({ length: cases }, (_, i) => (i % 3 === 0
    ? `<testcase classname="pkg.${name}" name="case ${i}"><failure message="java.lang.IllegalStateException: ${name} ${i}" type="E">trace ${i}</failure></testcase>`
    : `<testcase classname="pkg.${name}" name="case ${i}"/>`));
  return `<?xml version="1.0" encoding="UTF-8"?><testsuite name="pkg.${name}" tests="${cases}">${rows.join('')}</testsuite>`;
}

/**
 * Reindex jobs (docs/search.md, "Reindex") through the API on each real engine, run by the worker
 * of services/searchAdmin/reindex.saga.ts over the app's database: a full reindex builds a new
 * version side by side and switches to it, every document once; a partial one rewrites its scope
 * in the live version; pause, resume, cancel, schedules, an engine that changes or goes away, and
 * every refusal (nothing appended).
 * Slow: on PostgreSQL and on OpenSearch, runs ten reindex jobs (seven full) over 50 cases in batches of 2-7 documents, six with writes slowed 20-30 ms, and waits for the indexer to follow
 */
for (const engineName of ['postgres', 'opensearch'] as const) describe(`search administration: reindex jobs (${engineName})`, function () {
  this.timeout(180_000);
  const prefix = uniqueIndexPrefix();
  let app: TestApp;
  let real: SearchEngine;
  let other: SearchEngine;
  /** The engine the worker and the routes are given: the real one (slowed down while `slowMs` > 0), another, or none. */
  let inUse: 'real' | 'other' | 'away' = 'real';
  let slowMs = 0;
  let slowed: SearchEngine;
  let indexer: SearchIndexer;
  let saga: ReindexSaga;
  let panel: { url: string; stop(): Promise<void> };
  let admin: HttpClient;
  let alice: HttpClient;
  let anonymous: HttpClient;
  let projectA: number;
  let projectB: number;
  let model: Awaited<ReturnType<typeof importingAdmin>>['model'];

  const settings = (indexPrefix: string) => ({
    ...DEFAULT_SEARCH_SETTINGS, url: engineName === 'opensearch' ? SEARCH_TEST_URL : null, indexPrefix, refreshInterval: '200ms', requestTimeoutMs: 5000,
  });
  const engine = () => {
    if (inUse === 'away') throw new SearchUnavailable(real.engine);
    return inUse === 'other' ? other : slowed;
  };
  const job = async (jobId: number) => (await admin.get(`${PATH}/${jobId}`)).body.data;
  const request = async (body: Record<string, unknown>) => {
    const res = await admin.post(PATH, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(202);
    return res.body.data;
  };
  const until = async (jobId: number, phases: string[], timeoutMs = 60_000) => {
    let last: any;
    await waitUntil(async () => phases.includes((last = await job(jobId)).phase), `job ${jobId} ${phases.join('|')}`, timeoutMs, () => JSON.stringify(last));
    return last;
  };
  const full = (extra: Record<string, unknown> = {}) => ({ mode: 'full', confirm: prefix, ...extra });
  /** Documents per type in a version, as the engine counts them. */
  const counts = async (version: number) => {
    await real.refresh(version);
    const all: Record<string, number> = {};
    for (const type of searchBuilder({ knex: app.deps.knex, logger: quietLogger() }).types) all[type] = await real.count(version, type);
    return all;
  };
  const readModelCounts = async () => Object.fromEntries(Object.entries(await expected(app)).map(([type, ids]) => [type, ids.length]));

  before(async function () {
    if (engineName === 'opensearch') await requireOpenSearch(this, 'search administration reindex on OpenSearch');
    app = await startTestApp();
    let token: string;
    let upload: Awaited<ReturnType<typeof importingAdmin>>['upload'];
    ({ model, projectId: projectA, token, upload } = await importingAdmin(app, 'Alpha'));
    projectB = (await model('project', 'create', { data: { name: 'Beta' } })).id;
    expect((await upload({ name: 'nightly' }, [{ name: 'a.xml', content: junit(45, 'Alpha') }])).status).to.equal(200);
    for (let i = 0; i < 5; i++) await model('repositoryCase', 'create', { data: { title: `Beta case ${i}`, project: { connect: { id: projectB } } } });
    await registerUser(app.deps, { email: 'alice@example.com', name: 'Alice', password: 'alice-password-1', access: 'USER' }, systemMetadata('test'));

    real = await openSearchEngine(settings(prefix), { knex: app.deps.knex, logger: quietLogger() });
    other = await openSearchEngine(settings(uniqueIndexPrefix()), { knex: app.deps.knex, logger: quietLogger() });
    slowed = wrapWrites(real, async (write, ...args) => {
      if (slowMs > 0) await new Promise((r) => setTimeout(r, slowMs));
      return write(...args);
    });
    indexer = startIndexer(app, real);
    await caughtUp(app, indexer, real);
    saga = new ReindexSaga({
      ...app.deps, logger: quietLogger(), engine, builder: searchBuilder({ knex: app.deps.knex, logger: quietLogger() }),
      reindex: { pollMs: 100, retryBudgetMs: 2000, firstRetryMs: 50, maxRetryMs: 200, defaultBatchSize: 100 },
    });
    saga.start();
    panel = await serveSearchAdmin(app, engine, { reindex: saga });
    admin = new HttpClient(panel.url, token!);
    const aliceSession = new HttpClient(app.url);
    expect((await aliceSession.post('/api/auth/login', { email: 'alice@example.com', password: 'alice-password-1' })).status).to.equal(200);
    alice = new HttpClient(panel.url, (await aliceSession.post('/api/tokens', { name: 'reindex' })).body.token);
    anonymous = new HttpClient(panel.url);
  });

  after(async () => {
    await saga?.stop();
    await indexer?.stop();
    await panel?.stop();
    await real?.close();
    await other?.close();
    await app?.stop();
    if (engineName === 'opensearch') await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  it('answers 401 without authentication and 403 below ADMIN on every route, appending nothing', async () => {
    const jobId = (await request({ mode: 'partial', types: ['projects'] })).jobId;
    await until(jobId, ['completed']);
    const calls: [string, string, unknown?][] = [
      ['POST', PATH, { mode: 'partial' }], ['GET', PATH], ['GET', `${PATH}/${jobId}`],
      ['POST', `${PATH}/${jobId}/pause`], ['POST', `${PATH}/${jobId}/resume`], ['POST', `${PATH}/${jobId}/cancel`],
    ];
    for (const [method, path, body] of calls) {
      expect((await expectRefused(app, () => anonymous.request(method, path, body), 401)).code).to.equal('unauthenticated');
      expect((await expectRefused(app, () => alice.request(method, path, body), 403)).code).to.equal('forbidden');
    }
  });

  it('refuses every bad request with its code and field, appending nothing', async () => {
    const refused = async (body: unknown, status: number, code: string, path?: string) => {
      const error = await expectRefused(app, () => admin.post(PATH, body), status);
      expect(error.code, JSON.stringify(error)).to.equal(code);
      if (path !== undefined) expect(error.details.path, JSON.stringify(error)).to.equal(path);
      return error;
    };
    await refused({}, 400, 'invalid-argument', 'mode');
    await refused({ mode: 'some' }, 400, 'invalid-argument', 'mode');
    await refused({ mode: 'partial', colour: 'red' }, 400, 'invalid-argument', 'colour');
    const unconfirmed = await refused({ mode: 'full' }, 400, 'confirmation-required', 'confirm');
    expect(unconfirmed.details.expected).to.equal(prefix);
    await refused({ mode: 'full', confirm: 'testament_' }, 400, 'confirmation-required', 'confirm');
    await refused(full({ projectIds: [projectA] }), 400, 'invalid-argument', 'projectIds');
    await refused(full({ types: ['projects'] }), 400, 'invalid-argument', 'types');
    await refused({ mode: 'partial', projectIds: [projectA, 999_999] }, 404, 'not-found', 'projectIds[1]');
    await refused({ mode: 'partial', projectIds: [] }, 400, 'invalid-argument', 'projectIds');
    await refused({ mode: 'partial', projectIds: ['1'] }, 400, 'invalid-argument', 'projectIds[0]');
    await refused({ mode: 'partial', types: ['cases'] }, 400, 'invalid-argument', 'types[0]');
    for (const batchSize of [0, 10_001, 1.5, '10']) await refused({ mode: 'partial', batchSize }, 400, 'invalid-argument', 'batchSize');
    await refused({ mode: 'partial', runAt: 'tomorrow' }, 400, 'invalid-argument', 'runAt');
    await refused({ mode: 'partial', runAt: new Date(app.clock.now.getTime() - 1000).toISOString() }, 400, 'invalid-argument', 'runAt');
    for (const every of [4, 527_041, 10.5]) await refused({ mode: 'partial', repeatEveryMinutes: every }, 400, 'invalid-argument', 'repeatEveryMinutes');
    // Reads and steering of what does not exist.
    for (const query of ['take=0', 'take=101', 'cursor=x', 'state=done', 'page=2']) expect((await expectRefused(app, () => admin.get(`${PATH}?${query}`), 400)).code).to.equal('invalid-argument');
    expect((await expectRefused(app, () => admin.get(`${PATH}/abc`), 400)).code).to.equal('invalid-argument');
    expect((await expectRefused(app, () => admin.get(`${PATH}/999999`), 404)).code).to.equal('reindex-job-not-found');
    for (const action of ['pause', 'resume', 'cancel']) expect((await expectRefused(app, () => admin.post(`${PATH}/999999/${action}`), 404)).code).to.equal('reindex-job-not-found');
    // The engine away: a full reindex (which names the engine's prefix) cannot be checked.
    inUse = 'away';
    try {
      await refused(full(), 503, 'search-unavailable');
    } finally {
      inUse = 'real';
    }
  });

  it('a full reindex builds the next version side by side in batches, then switches to it: every document once, the older version dropped', async () => {
    const live = (await real.liveVersion())!;
    const want = await readModelCounts();
    const requested = await request(full({ batchSize: 7 }));
    expect(requested).to.include({ mode: 'full', batchSize: 7, repeatOf: null });
    expect(['queued', 'running', 'completed']).to.include(requested.phase);
    expect(requested.createdBy.userId).to.be.a('number');
    const done = await until(requested.jobId, ['completed', 'failed']);
    expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
    expect(done).to.include({ version: live + 1, replacesVersion: live, switched: true, engine: real.engine, target: prefix });
    expect(done.droppedVersions).to.deep.equal([live]);
    expect(await real.liveVersion()).to.equal(live + 1);
    expect(await real.versions()).to.deep.equal([live + 1]);
    expect(await counts(live + 1)).to.deep.equal(want);
    expect(done.progress.percent).to.equal(100);
    expect(done.progress.documents).to.equal(Object.values(want).reduce((a, b) => a + b, 0));
    for (const t of done.progress.types) expect(t, t.type).to.include({ documents: want[t.type], total: want[t.type], done: true, percent: 100 });
    // One progress event per batch of 7 rows at most, each one after the previous cursor.
    const events = await app.deps.store.readStream(`searchReindex-${requested.jobId}`);
    const progress = events.filter((e) => e.type === 'SearchReindexProgressed').map((e) => e.data as { type: string; afterId: number; documents: number });
    expect(progress.filter((p) => p.type === 'repository_cases').length).to.be.at.least(Math.ceil(want.repository_cases / 7));
    expect(events.map((e) => e.metadata.actor.userId)).to.satisfy((ids: unknown[]) => ids.every((id) => id === requested.createdBy.userId));
    expect(events[events.length - 1].type).to.equal('SearchReindexCompleted');
    // The indexer follows the new version (it looks every few seconds): a case written now is found there.
    await waitUntil(() => indexer.status().version === live + 1, 'the indexer on the new version', 30_000);
    const created = await model('repositoryCase', 'create', { data: { title: 'Written after the switch', project: { connect: { id: projectB } } } });
    await caughtUp(app, indexer, real);
    expect((await counts(live + 1)).repository_cases).to.equal(want.repository_cases + 1);
    await model('repositoryCase', 'delete', { where: { id: created.id } });
    await caughtUp(app, indexer, real);
  });

  it('a partial reindex writes its scope again into the live version, removes documents of deleted rows, touches nothing else', async () => {
    const live = (await real.liveVersion())!;
    const cases = (await model('repositoryCase', 'findMany', { where: { projectId: { in: [projectA, projectB] } }, select: { id: true, projectId: true } })) as { id: number; projectId: number }[];
    const inA = cases.filter((c) => c.projectId === projectA);
    const inB = cases.filter((c) => c.projectId === projectB);
    // The index drifts: a document lost in each project, and one for a deleted case.
    await real.write(live, { upsert: [], remove: [{ type: 'repository_cases', id: String(inA[0].id) }, { type: 'repository_cases', id: String(inB[0].id) }] });
    await model('repositoryCase', 'delete', { where: { id: inA[1].id } });
    await caughtUp(app, indexer, real);
    const stale = (await real.search({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 1 })).hits[0].document;
    await real.write(live, { upsert: [{ ...stale, id: String(inA[1].id), title: 'deleted meanwhile' }], remove: [] });
    await real.refresh(live);
    const before = await counts(live);

    const done = await until((await request({ mode: 'partial', projectIds: [projectA], types: ['repository_cases'], batchSize: 4 })).jobId, ['completed', 'failed']);
    expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
    expect(done).to.include({ version: live, replacesVersion: null, switched: false });
    expect(done.projectIds).to.deep.equal([projectA]);
    expect(done.progress.types.map((t: { type: string }) => t.type)).to.deep.equal(['repository_cases']);
    expect(done.progress.types[0]).to.include({ documents: inA.length - 1, total: inA.length - 1 });
    expect(await real.liveVersion()).to.equal(live);
    const after = await counts(live);
    // Project A: the lost document is back, the deleted case's is gone (+1 - 1); project B's lost one stays lost.
    expect(after.repository_cases).to.equal(before.repository_cases);
    expect(after).to.deep.equal({ ...before });
    const ids = new Set((await real.search({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 1000 })).hits.map((h) => h.id));
    expect(ids.has(String(inA[0].id)), 'the lost document of A is written again').to.equal(true);
    expect(ids.has(String(inA[1].id)), 'the deleted case of A has no document').to.equal(false);
    expect(ids.has(String(inB[0].id)), 'B is out of scope').to.equal(false);
    // Mend B for the next tests.
    await until((await request({ mode: 'partial', projectIds: [projectB] })).jobId, ['completed']);
  });

  it('pauses after the batch in flight, resumes from its cursor, refuses a second full reindex meanwhile; a rebuild is refused while one runs', async () => {
    const live = (await real.liveVersion())!;
    slowMs = 30;
    try {
      const { jobId } = await request(full({ batchSize: 2 }));
      await waitUntil(async () => (await job(jobId)).progress.documents > 0, 'some progress');
      // While it runs it holds the build lock: `npm run rebuild -- search` is refused.
      const refusedRebuild = await rebuildSearch({ engine: real, knex: app.deps.knex, logger: quietLogger(), bulkSize: 100, lock: 'refuse' }).then(() => null, (err) => err);
      expect(refusedRebuild).to.be.instanceOf(SearchBuildRunning);
      expect(refusedRebuild.code).to.equal('reindex-running');
      const paused = await admin.post(`${PATH}/${jobId}/pause`);
      expect(paused.status, JSON.stringify(paused.body)).to.equal(200);
      expect(paused.body.data.phase).to.equal('paused');
      expect(paused.headers.get('x-event-position')).to.match(/^\d+$/);
      expect((await admin.post(`${PATH}/${jobId}/pause`)).status, 'pausing again changes nothing').to.equal(200);
      // Stopped: after the batch in flight, nothing moves.
      await new Promise((r) => setTimeout(r, 400));
      const stopped = (await job(jobId)).progress.documents;
      await new Promise((r) => setTimeout(r, 400));
      expect((await job(jobId)).progress.documents).to.equal(stopped);
      expect(stopped).to.be.lessThan((await job(jobId)).progress.total);
      const second = await expectRefused(app, () => admin.post(PATH, full()), 409);
      expect(second).to.deep.include({ code: 'reindex-running', details: { jobId, state: 'paused' } });
      expect(await real.liveVersion(), 'the live version serves meanwhile').to.equal(live);

      const resumed = await admin.post(`${PATH}/${jobId}/resume`);
      expect(resumed.status).to.equal(200);
      expect(['running', 'completed']).to.include(resumed.body.data.phase);
      slowMs = 0;
      const done = await until(jobId, ['completed', 'failed']);
      expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
      expect(await counts(live + 1)).to.deep.equal(await readModelCounts());
      const events = (await app.deps.store.readStream(`searchReindex-${jobId}`)).map((e) => e.type);
      expect(events.filter((t) => t === 'SearchReindexPaused')).to.have.length(1);
      for (const action of ['pause', 'resume', 'cancel']) {
        expect((await expectRefused(app, () => admin.post(`${PATH}/${jobId}/${action}`), 409)).code).to.equal('reindex-job-finished');
      }
    } finally {
      slowMs = 0;
    }
  });

  it('a cancelled full reindex stops after its batch and drops its unfinished version; the live one stays', async () => {
    const live = (await real.liveVersion())!;
    slowMs = 30;
    try {
      const { jobId } = await request(full({ batchSize: 2 }));
      await waitUntil(async () => (await job(jobId)).progress.documents > 0, 'some progress');
      expect(await real.versions()).to.deep.equal([live, live + 1]);
      const cancelled = await admin.post(`${PATH}/${jobId}/cancel`);
      expect(cancelled.status).to.equal(200);
      expect(cancelled.body.data.phase).to.equal('cancelled');
      await waitUntil(async () => (await real.versions()).length === 1, 'the unfinished version dropped');
      expect(await real.versions()).to.deep.equal([live]);
      expect(await real.liveVersion()).to.equal(live);
      expect((await admin.post(`${PATH}/${jobId}/cancel`)).status, 'cancelling again changes nothing').to.equal(200);

      // Paused first, then cancelled while no worker runs it: its version goes too.
      const second = (await request(full({ batchSize: 2 }))).jobId;
      await waitUntil(async () => (await job(second)).progress.documents > 0, 'some progress');
      expect((await admin.post(`${PATH}/${second}/pause`)).status).to.equal(200);
      await until(second, ['paused']);
      expect((await admin.post(`${PATH}/${second}/cancel`)).body.data.phase).to.equal('cancelled');
      await waitUntil(async () => (await real.versions()).length === 1, 'the paused job\'s version dropped');
      expect(await real.liveVersion()).to.equal(live);
    } finally {
      slowMs = 0;
    }
  });

  it('a scheduled job starts at its time, and a repeating one requests its next run when it completes', async () => {
    const runAt = new Date(app.clock.now.getTime() + 3_600_000).toISOString();
    const scheduled = await request({ mode: 'partial', types: ['projects'], runAt, repeatEveryMinutes: 30 });
    expect(scheduled).to.include({ phase: 'scheduled', runAt, repeatEveryMinutes: 30 });
    const listed = (await admin.get(`${PATH}?state=scheduled`)).body.data.map((j: { jobId: number }) => j.jobId);
    expect(listed).to.deep.equal([scheduled.jobId]);
    await new Promise((r) => setTimeout(r, 500)); // a few polls: not due
    expect((await job(scheduled.jobId)).phase).to.equal('scheduled');

    app.clock.advance(3_600_000);
    const done = await until(scheduled.jobId, ['completed', 'failed']);
    expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
    await waitUntil(async () => (await job(scheduled.jobId)).nextJobId !== null, 'the next run requested');
    const next = await job((await job(scheduled.jobId)).nextJobId);
    expect(next).to.include({ phase: 'scheduled', repeatOf: scheduled.jobId, repeatEveryMinutes: 30, mode: 'partial' });
    expect(Date.parse(next.runAt)).to.equal(Date.parse(done.finishedAt) + 30 * 60_000);
    // Cancelled, the series ends.
    expect((await admin.post(`${PATH}/${next.jobId}/cancel`)).body.data.phase).to.equal('cancelled');
    app.clock.advance(3_600_000);
    await new Promise((r) => setTimeout(r, 500));
    expect((await job(next.jobId)).nextJobId).to.equal(null);
    // The list, newest first, paged.
    const page = await admin.get(`${PATH}?take=1`);
    expect(page.body.data.map((j: { jobId: number }) => j.jobId)).to.deep.equal([next.jobId]);
    const rest = await admin.get(`${PATH}?take=100&cursor=${page.body.nextCursor}`);
    expect(rest.body.data[0].jobId).to.equal(scheduled.jobId);
    expect(rest.body.nextCursor).to.equal(null);
  });

  it('fails with search-engine-changed when the engine in use changes under a job, and drops its version', async () => {
    const live = (await real.liveVersion())!;
    slowMs = 30;
    try {
      const { jobId } = await request(full({ batchSize: 2 }));
      await waitUntil(async () => (await job(jobId)).progress.documents > 0, 'some progress');
      inUse = 'other';
      const failed = await until(jobId, ['failed', 'completed']);
      expect(failed.phase).to.equal('failed');
      expect(failed.error.code).to.equal('search-engine-changed');
      expect(failed.error.details).to.deep.include({ target: prefix });
      expect(await other.versions(), 'nothing written to the other engine').to.deep.equal([]);
    } finally {
      inUse = 'real';
      slowMs = 0;
    }
    await waitUntil(async () => (await real.versions()).length === 1, 'the failed job\'s version dropped');
    expect(await real.liveVersion()).to.equal(live);
  });

  it('rides out the engine going away within the retry budget, and fails once with reindex-interrupted-too-long beyond it', async () => {
    const live = (await real.liveVersion())!;
    slowMs = 20;
    try {
      const { jobId } = await request(full({ batchSize: 3 }));
      await waitUntil(async () => (await job(jobId)).progress.documents > 0, 'some progress');
      inUse = 'away';
      await new Promise((r) => setTimeout(r, 600));
      inUse = 'real';
      const done = await until(jobId, ['completed', 'failed']);
      expect(done.phase, JSON.stringify(done.error)).to.equal('completed');
      expect(await counts(live + 1)).to.deep.equal(await readModelCounts());

      const second = (await request(full({ batchSize: 3 }))).jobId;
      await waitUntil(async () => (await job(second)).progress.documents > 0, 'some progress');
      inUse = 'away';
      const failed = await until(second, ['failed', 'completed'], 30_000);
      expect(failed.phase).to.equal('failed');
      expect(failed.error.code).to.equal('reindex-interrupted-too-long');
      const events = (await app.deps.store.readStream(`searchReindex-${second}`)).map((e) => e.type);
      expect(events.filter((t) => t === 'SearchReindexFailed')).to.have.length(1);
    } finally {
      inUse = 'real';
      slowMs = 0;
    }
    expect(await real.liveVersion()).to.equal(live + 1);
  });
});
