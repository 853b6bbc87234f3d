import os from 'node:os';
import { expect } from 'chai';
import pino from 'pino';
import { createKnex } from '../../../infra/postgres/database';
import { openSearchEngine } from '../../../infra/search';
import { startSearchIndexer, type SearchIndexer, type SearchIndexerStatus } from '../../../projections/search/indexer';
import { publishIndexingRate, RATE_RETENTION_MINUTES, type IndexingRatePublisher } from '../../../projections/search/indexingRate';
import { SearchMetrics } from '../../../services/search/metrics';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { BulkWriteFailed, DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchEngine } from '../../../services/shared/search';
import { importingAdmin } from '../../imports/importClient';
import { caughtUp, FAST_RETRY, quietLogger, wrapWrites } from '../../projections/search/support';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { dropIndices, requireOpenSearch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../../support/search';
import { serveSearchAdmin } from '../../support/searchAdminApp';
import { HttpClient } from '../../support/server';
import { waitUntil } from '../../support/wait';

const ROUTES = ['/api/admin/search/metrics', '/api/admin/search/indexing-rate', '/api/admin/search/errors'];

/**
 * The search administration's monitoring (docs/search.md, "Monitoring") over HTTP, on each real
 * engine: the search API's counters move with real searches and with a search the engine cannot
 * answer; the indexer, indexing real events written through the model API, publishes its rate and
 * state; the documents it could not write are its error log, paged and filtered.
 */
for (const engineName of ['postgres', 'opensearch'] as const) describe(`search administration: monitoring (${engineName})`, function () {
  this.timeout(120_000);
  const prefix = uniqueIndexPrefix();
  let app: TestApp;
  let engine: SearchEngine;
  let indexer: SearchIndexer;
  let rate: IndexingRatePublisher;
  let metrics: SearchMetrics;
  let panel: { url: string; stop(): Promise<void> };
  let model: Awaited<ReturnType<typeof importingAdmin>>['model'];
  let projectId: number;
  let admin: HttpClient;
  let alice: HttpClient;
  let anonymous: HttpClient;
  /** The engine the app is given: the real one, or one that is away (as SearchConnection.engine() while not open). */
  let away = false;
  /** Documents whose title starts with this are refused by the engine (a mapping conflict, say) while true. */
  let refusing = true;

  before(async function () {
    if (engineName === 'opensearch') await requireOpenSearch(this, 'search administration monitoring on OpenSearch');
    app = await startTestApp();
    let token: string;
    ({ model, projectId, token } = await importingAdmin(app, 'Monitoring'));
    await registerUser(app.deps, { email: 'alice@example.com', name: 'Alice', password: 'alice-password-1', access: 'USER' }, systemMetadata('test'));
    const real = await openSearchEngine({
      ...DEFAULT_SEARCH_SETTINGS, url: engineName === 'opensearch' ? SEARCH_TEST_URL : null, indexPrefix: prefix, refreshInterval: '200ms', requestTimeoutMs: 5000,
    }, { knex: app.deps.knex, logger: quietLogger() });
    engine = real;
    const refusingEngine = wrapWrites(real, async (write, version, ops, checkpoints) => {
      const bad = ops.upsert.filter((d) => refusing && d.title.startsWith('Refused'));
      if (bad.length === 0) return write(version, ops, checkpoints);
      await write(version, { upsert: ops.upsert.filter((d) => !bad.includes(d)), remove: ops.remove });
      throw new BulkWriteFailed(bad.map((d) => ({ type: d.type, id: d.id, reason: 'mapper_parsing_exception: planted', status: 400 })));
    });
    const starting: SearchIndexerStatus = { state: 'starting', engine: real.engine, version: null, position: '0', lastError: null, documentsWritten: 0 };
    // As services/process/roles.ts runIndexer wires them.
    rate = publishIndexingRate({ knex: app.deps.knex, logger: quietLogger(), status: () => indexer?.status() ?? starting, heartbeatMs: 200 });
    indexer = startSearchIndexer({
      engine: refusingEngine, knex: app.deps.knex, store: app.deps.store, databaseUrl: app.databaseUrl, logger: quietLogger(), retry: FAST_RETRY,
      bulkSize: 100, onIndexed: rate.indexed,
    });
    metrics = new SearchMetrics();
    panel = await serveSearchAdmin(app, () => {
      if (away) throw new SearchUnavailable(real.engine);
      return real;
    }, { searchMetrics: metrics });
    const aliceSession = new HttpClient(app.url);
    expect((await aliceSession.post('/api/auth/login', { email: 'alice@example.com', password: 'alice-password-1' })).status).to.equal(200);
    alice = new HttpClient(panel.url, (await aliceSession.post('/api/tokens', { name: 'monitoring' })).body.token);
    admin = new HttpClient(panel.url, token!);
    anonymous = new HttpClient(panel.url);
  });

  after(async () => {
    await panel?.stop();
    await indexer?.stop();
    await rate?.stop();
    await engine?.close();
    await app?.stop();
    if (engineName === 'opensearch') await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  const read = async (path: string) => {
    const before = (await app.deps.store.headPosition()).toString();
    const res = await admin.get(path);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    expect((await app.deps.store.headPosition()).toString(), 'a read appends nothing').to.equal(before);
    return res.body;
  };
  const createCase = async (title: string) => (await model('repositoryCase', 'create', { data: { title, project: { connect: { id: projectId } } } })).id as number;

  it('real searches move the counters and latencies; a refused one counts as refused', async () => {
    const before = await read('/api/admin/search/metrics');
    expect(before.process).to.deep.equal({ id: `${os.hostname()}/${process.pid}`, host: os.hostname(), pid: process.pid });
    expect(Date.parse(before.since)).to.be.at.most(Date.now());
    expect(before.total.queries).to.deep.equal({ search: 0, facets: 0 });
    expect(before.window.latencyMs).to.deep.equal({ samples: 0, p50: null, p95: null, max: null });

    await createCase('Checkout with a gift voucher');
    await caughtUp(app, indexer, engine);
    const found = await admin.get('/api/search?q=voucher');
    expect(found.status).to.equal(200);
    expect(found.body.hits.map((h: { title: string }) => h.title)).to.deep.equal(['Checkout with a gift voucher']);
    expect((await admin.get('/api/search?q=gift&type=repository_cases')).status).to.equal(200);
    expect((await admin.post('/api/search', { query: { match: { title: 'voucher' } } })).status).to.equal(200);
    expect((await admin.get('/api/search/facets?type=repository_cases')).status).to.equal(200);
    expect((await admin.get('/api/search?q=voucher&limit=1000')).status).to.equal(400);
    expect((await admin.post('/api/search', { query: { script: {} } })).status).to.equal(400);

    const after = await read('/api/admin/search/metrics');
    for (const counts of [after.total, after.window]) {
      expect(counts.queries).to.deep.equal({ search: 3, facets: 1 });
      expect(counts.errors).to.deep.equal({ refused: 2, failed: 0, byCode: { 'invalid-argument': 1, 'invalid-search-query': 1 } });
    }
    const latency = after.window.latencyMs;
    expect(latency.samples).to.equal(4);
    expect(latency.p50).to.be.greaterThan(0);
    expect(latency.p95).to.be.at.least(latency.p50);
    expect(latency.max).to.be.at.least(latency.p95 / 1.0906);
    expect(after.since).to.equal(before.since);
  });

  it('a search while the engine is away (503 search-unavailable) counts as a failed query, without a latency sample', async () => {
    const before = (await read('/api/admin/search/metrics')).window;
    away = true;
    try {
      const res = await admin.get('/api/search?q=voucher');
      expect(res.status).to.equal(503);
      expect(res.body.code).to.equal('search-unavailable');
      expect((await admin.get('/api/search/facets')).status).to.equal(503);
    } finally {
      away = false;
    }
    const after = (await read('/api/admin/search/metrics')).window;
    expect(after.errors.failed).to.equal(before.errors.failed + 2);
    expect(after.errors.byCode['search-unavailable']).to.equal((before.errors.byCode['search-unavailable'] ?? 0) + 2);
    expect(after.queries).to.deep.equal(before.queries);
    expect(after.latencyMs.samples).to.equal(before.latencyMs.samples);
  });

  it('the indexer indexing real events publishes a non-zero rate, every document it wrote, and its state', async () => {
    for (let i = 0; i < 5; i++) await createCase(`Rate case ${i}`);
    await caughtUp(app, indexer, engine);
    const written = indexer.status().documentsWritten;
    expect(written).to.be.at.least(5);
    let body: any;
    await waitUntil(async () => {
      body = await read('/api/admin/search/indexing-rate');
      return body.documents === written && body.indexers[0]?.position === indexer.status().position;
    }, 'the rate published', 10_000, () => JSON.stringify(body));
    expect(body.minutes).to.equal(15);
    expect(body.points).to.have.length(15);
    expect(body.points.reduce((sum: number, p: { documents: number }) => sum + p.documents, 0)).to.equal(written);
    expect(body.documentsPerSecond).to.be.greaterThan(0);
    const minutes = body.points.map((p: { minute: string }) => Date.parse(p.minute));
    for (let i = 1; i < minutes.length; i++) expect(minutes[i] - minutes[i - 1]).to.equal(60_000);
    expect(body.from).to.equal(body.points[0].minute);
    expect(Date.parse(body.to)).to.be.at.least(minutes[14]);
    expect(body.indexers).to.have.length(1);
    expect(body.indexers[0]).to.deep.include({
      indexer: `${os.hostname()}/${process.pid}`, host: os.hostname(), pid: process.pid, state: 'running', engine: engineName,
      version: indexer.status().version, documentsWritten: written, lastError: null, stale: false,
    });

    const one = await read('/api/admin/search/indexing-rate?minutes=1');
    expect(one.minutes).to.equal(1);
    expect(one.points).to.have.length(1);
    // The window ends at the minute of the read: the same as the first read's last, or the next when a minute began in between.
    const next = new Date(minutes[14] + 60_000).toISOString();
    expect([body.points[14].minute, next]).to.include(one.points[0].minute);
    expect((await read('/api/admin/search/indexing-rate?minutes=60')).points).to.have.length(60);
  });

  it('old minutes and indexers gone for a day are deleted (bounded retention), the recent ones kept', async () => {
    const { knex } = app.deps;
    await knex.raw(`INSERT INTO search_indexing_rate (minute, indexer, documents, batches)
      VALUES (date_trunc('minute', now()) - make_interval(mins => ?), 'gone/1', 7, 1)`, [RATE_RETENTION_MINUTES + 5]);
    await knex.raw(`INSERT INTO search_indexer_state (indexer, host, pid, state, position, documents_written, started_at, updated_at)
      VALUES ('gone/1', 'gone', 1, 'running', '0', 0, now() - interval '3 days', now() - interval '2 days')`);
    const recent = await knex('search_indexing_rate').whereNot('indexer', 'gone/1').count<{ count: string }[]>('* as count');
    // A publisher of another process: its first write deletes what is past retention.
    const other = publishIndexingRate({ knex, logger: quietLogger(), status: () => indexer.status(), process: { id: 'other/2', host: 'other', pid: 2 } });
    await other.stop();
    expect(await knex('search_indexing_rate').where('indexer', 'gone/1')).to.have.length(0);
    expect(await knex('search_indexer_state').where('indexer', 'gone/1')).to.have.length(0);
    expect(await knex('search_indexing_rate').whereNot('indexer', 'gone/1').count<{ count: string }[]>('* as count')).to.deep.equal(recent);
    const body = await read('/api/admin/search/indexing-rate');
    expect(body.indexers.map((i: { indexer: string }) => i.indexer)).to.include('other/2');
    await knex('search_indexer_state').where('indexer', 'other/2').delete();
  });

  it('publishing never holds up or fails the indexing: a database that refuses is logged and its numbers dropped', async () => {
    const broken = createKnex(app.databaseUrl.replace(/\/[^/]+$/, '/no_such_database_for_monitoring'), 1, { warn: () => undefined, error: () => undefined });
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    try {
      const publisher = publishIndexingRate({ knex: broken, logger, status: () => indexer.status() });
      const started = Date.now();
      for (let i = 0; i < 100; i++) publisher.indexed(10);
      expect(Date.now() - started).to.be.below(50);
      await publisher.stop();
      expect(lines.join('\n')).to.include('cannot publish the search indexing rate');
      expect(lines.filter((l) => l.includes('cannot publish'))).to.have.length(1);
    } finally {
      await broken.destroy();
    }
  });

  it('documents the engine refused are the error log: newest first, paged, filtered, resolved when written at last', async () => {
    const refused: number[] = [];
    for (let i = 0; i < 3; i++) refused.push(await createCase(`Refused case ${i}`));
    await caughtUp(app, indexer, engine);
    const page1 = await read('/api/admin/search/errors?take=2');
    expect(page1.data.map((f: { documentId: string }) => f.documentId)).to.deep.equal([String(refused[2]), String(refused[1])]);
    expect(page1.data[0]).to.deep.include({ engine: engineName, type: 'repository_cases', reason: 'mapper_parsing_exception: planted', resolvedAt: null, version: indexer.status().version });
    expect(page1.data[0].position).to.match(/^\d+$/);
    expect(Date.parse(page1.data[0].failedAt)).to.be.at.least(Date.parse(page1.data[1].failedAt));
    expect(page1.nextCursor).to.be.a('string');
    const page2 = await read(`/api/admin/search/errors?take=2&cursor=${page1.nextCursor}`);
    expect(page2.data.map((f: { documentId: string }) => f.documentId)).to.deep.equal([String(refused[0])]);
    expect(page2.nextCursor).to.equal(null);
    expect((await read('/api/admin/search/errors?take=2&skip=2')).data.map((f: { documentId: string }) => f.documentId)).to.deep.equal([String(refused[0])]);
    expect((await read('/api/admin/search/errors?type=test_runs')).data).to.deep.equal([]);
    expect((await read('/api/admin/search/errors?type=repository_cases')).data).to.have.length(3);

    // Written at last (the engine accepts it at its next change): resolved.
    refusing = false;
    await model('repositoryCase', 'update', { where: { id: refused[1] }, data: { description: 'accepted now' } });
    await caughtUp(app, indexer, engine);
    const resolved = await read('/api/admin/search/errors?resolved=true');
    expect(resolved.data.map((f: { documentId: string }) => f.documentId)).to.deep.equal([String(refused[1])]);
    expect(Date.parse(resolved.data[0].resolvedAt)).to.be.at.least(Date.parse(resolved.data[0].failedAt));
    expect((await read('/api/admin/search/errors?resolved=false')).data.map((f: { documentId: string }) => f.documentId))
      .to.deep.equal([String(refused[2]), String(refused[0])]);
  });

  it('failures of one batch share their time to the microsecond: the cursor still gives every one once', async () => {
    const { knex } = app.deps;
    await knex('search_failures').insert(Array.from({ length: 5 }, (_, i) => ({
      engine: engineName, version: 1, type: 'comments', doc_id: `same-${i}`, position: '1', reason: 'planted', failed_at: knex.raw(`now() + interval '1 hour'`),
    })));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { documentId: string }[]; nextCursor: string | null } =
        await read(`/api/admin/search/errors?type=comments&take=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.data.map((f) => f.documentId));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).to.deep.equal(['same-4', 'same-3', 'same-2', 'same-1', 'same-0']);
  });

  it('refuses unknown, repeated and bad parameters (400 invalid-argument naming them), appending nothing', async () => {
    const refusals: [string, string][] = [
      ['/api/admin/search/metrics?window=5', 'window'],
      ['/api/admin/search/indexing-rate?minutes=0', 'minutes'],
      ['/api/admin/search/indexing-rate?minutes=61', 'minutes'],
      ['/api/admin/search/indexing-rate?minutes=1.5', 'minutes'],
      ['/api/admin/search/indexing-rate?minutes=5&minutes=6', 'minutes'],
      ['/api/admin/search/indexing-rate?from=2026-01-01', 'from'],
      ['/api/admin/search/errors?take=0', 'take'],
      ['/api/admin/search/errors?take=501', 'take'],
      ['/api/admin/search/errors?take=1&take=2', 'take'],
      ['/api/admin/search/errors?skip=-1', 'skip'],
      ['/api/admin/search/errors?cursor=nonsense', 'cursor'],
      [`/api/admin/search/errors?cursor=${Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 3])).toString('base64url')}`, 'cursor'],
      [`/api/admin/search/errors?skip=1&cursor=${Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000000Z', 3])).toString('base64url')}`, 'skip'],
      ['/api/admin/search/errors?resolved=yes', 'resolved'],
      ['/api/admin/search/errors?type=widgets', 'type'],
      ['/api/admin/search/errors?type[]=comments', 'type'],
      ['/api/admin/search/errors?engine=postgres', 'engine'],
    ];
    for (const [path, parameter] of refusals) {
      const body = await expectRefused(app, () => admin.get(path), 400);
      expect(body.code, path).to.equal('invalid-argument');
      expect(body.details.path, path).to.equal(parameter);
    }
  });

  it('401 without authentication and 403 below ADMIN on every route', async () => {
    for (const route of ROUTES) {
      expect((await expectRefused(app, () => anonymous.get(route), 401)).code, route).to.equal('unauthenticated');
      expect((await expectRefused(app, () => alice.get(route), 403)).code, route).to.equal('forbidden');
    }
  });
});
