import { expect } from 'chai';
import { openSearchEngine } from '../../../infra/search';
import { openOpenSearch } from '../../../infra/search/opensearch';
import { SEARCH_ADMINISTRATION_STREAM } from '../../../services/searchAdmin/operations';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { DEFAULT_SEARCH_SETTINGS, SEARCH_TYPES, SearchUnavailable, type SearchEngine } from '../../../services/shared/search';
import { importingAdmin } from '../../imports/importClient';
import { quietLogger } from '../../projections/search/support';
import { searchDocument } from '../../infra/search/documents';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { dropIndices, requireOpenSearch, searchFetch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../../support/search';
import { serveSearchAdmin } from '../../support/searchAdminApp';
import { HttpClient } from '../../support/server';

const INDICES = '/api/admin/search/indices';
const OPERATIONS = '/api/admin/search/operations';

/**
 * Indices and maintenance of the search administration (docs/search.md, "Indices and
 * maintenance") over HTTP, on each real engine: the list with checkpoints and lag against the real
 * event log, creating and deleting indices (confirmed), the maintenance operations, health and
 * nodes; every operation an event with its actor, every refusal nothing at all.
 * Slow: every route of the index administration on both engines: indices deleted and created again, force merges, a REINDEX and a mapping update, and an engine that stops answering mid-operation
 */
for (const engineName of ['postgres', 'opensearch'] as const) describe(`search administration: indices and maintenance (${engineName})`, function () {
  this.timeout(120_000);
  const prefix = uniqueIndexPrefix();
  let app: TestApp;
  let engine: SearchEngine;
  let panel: { url: string; stop(): Promise<void> };
  let admin: HttpClient;
  let alice: HttpClient;
  let anonymous: HttpClient;
  let adminId: number;
  /** What the app's engine getter answers: the real engine, none (throws), or another one. */
  let current: () => SearchEngine;
  const indexName = (type: string, version = 1) => `${prefix}${type}_v${version}`;

  before(async function () {
    if (engineName === 'opensearch') await requireOpenSearch(this, 'search administration indices on OpenSearch');
    app = await startTestApp();
    const { token } = await importingAdmin(app, 'Indices');
    adminId = (await app.deps.knex('users').where({ email: 'admin@example.com' }).first('id')).id;
    await registerUser(app.deps, { email: 'alice@example.com', name: 'Alice', password: 'alice-password-1', access: 'USER' }, systemMetadata('test'));
    engine = await openSearchEngine({
      ...DEFAULT_SEARCH_SETTINGS, url: engineName === 'opensearch' ? SEARCH_TEST_URL : null, indexPrefix: prefix, requestTimeoutMs: 5000,
    }, { knex: app.deps.knex, logger: quietLogger() });
    current = () => engine;
    panel = await serveSearchAdmin(app, () => current());
    const aliceSession = new HttpClient(app.url);
    expect((await aliceSession.post('/api/auth/login', { email: 'alice@example.com', password: 'alice-password-1' })).status).to.equal(200);
    alice = new HttpClient(panel.url, (await aliceSession.post('/api/tokens', { name: 'indices' })).body.token);
    admin = new HttpClient(panel.url, token);
    anonymous = new HttpClient(panel.url);
  });

  after(async () => {
    await panel?.stop();
    await engine?.close();
    await app?.stop();
    if (engineName === 'opensearch') await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  beforeEach(async () => {
    current = () => engine;
    // A live version 1 holding a few documents, its checkpoint 3 events behind the log's head.
    for (const version of await engine.versions()) {
      if (version !== (await engine.liveVersion())) await engine.dropVersion(version);
    }
    await engine.ensureVersion(1);
    if ((await engine.liveVersion()) === null) await engine.switchAlias(1);
    const head = BigInt(await app.deps.store.headPosition());
    await engine.write(1, {
      upsert: [searchDocument('repository_cases', 'c1', { title: 'Running tests' }), searchDocument('repository_cases', 'c2'), searchDocument('failures', 'f1')],
      remove: [],
    }, { search: String(head > 3n ? head - 3n : 0n) });
    await engine.refresh();
  });

  const head = async () => (await app.deps.store.headPosition()).toString();
  /** The last event of the administration stream. */
  const lastOperation = async () => {
    const [event] = await app.deps.store.readStream(SEARCH_ADMINISTRATION_STREAM, { direction: 'backwards', maxCount: 1 });
    return event;
  };
  /** Asserts the answer recorded one SearchOperationPerformed by the administrator, at the answer's X-Event-Position. */
  const recorded = async (res: { headers: Headers }, before: string) => {
    const event = await lastOperation();
    expect(event.type).to.equal('SearchOperationPerformed');
    expect(BigInt(event.position)).to.equal(BigInt(before) + 1n);
    expect(res.headers.get('x-event-position')).to.equal(event.position);
    expect(event.metadata.actor).to.deep.include({ userId: adminId, via: 'api' });
    return event.data as { operation: string; engine: string | null; targets: string[]; outcome: string; error: string | null; details: Record<string, unknown> };
  };
  const mappingOf = async (index: string) => {
    const response = await searchFetch(SEARCH_TEST_URL, `/${index}`);
    expect(response.status).to.equal(200);
    const body = (await response.json()) as any;
    return { mappings: body[index].mappings, analysis: body[index].settings.index.analysis, aliases: Object.keys(body[index].aliases) };
  };
  const hasTheAnalyzer = async (index: string) => {
    const { mappings, analysis } = await mappingOf(index);
    expect(mappings.dynamic).to.equal('strict');
    expect(mappings.properties.title).to.deep.include({ type: 'text', analyzer: 'testament_text' });
    expect(analysis.analyzer.testament_text).to.deep.include({ type: 'custom', tokenizer: 'standard' });
    expect(analysis.analyzer.testament_text.filter).to.deep.equal(['lowercase', 'testament_stop', 'testament_snowball']);
  };

  describe('access', () => {
    const calls: [string, (c: HttpClient) => Promise<{ status: number; body: any }>][] = [
      ['GET indices', (c) => c.get(INDICES)],
      ['POST indices', (c) => c.post(INDICES, {})],
      ['DELETE an index', (c) => c.request('DELETE', `${INDICES}/${indexName('failures')}`, { confirm: indexName('failures') })],
      ...(['force-merge', 'cache-clear', 'refresh', 'mapping-update'] as const).map((op): [string, (c: HttpClient) => Promise<{ status: number; body: any }>] =>
        [`POST ${op}`, (c) => c.post(`${OPERATIONS}/${op}`, {})]),
      ['GET health', (c) => c.get('/api/admin/search/health')],
      ['GET nodes', (c) => c.get('/api/admin/search/nodes')],
    ];
    it('anonymous: 401 on every route; nothing appended, nothing deleted', async () => {
      for (const [name, call] of calls) expect((await expectRefused(app, () => call(anonymous), 401)).code, name).to.equal('unauthenticated');
      expect(await engine.count(1, 'failures')).to.equal(1);
    });
    it('a user below ADMIN: 403 on every route; nothing appended, nothing deleted', async () => {
      for (const [name, call] of calls) expect((await expectRefused(app, () => call(alice), 403)).code, name).to.equal('forbidden');
      expect(await engine.count(1, 'failures')).to.equal(1);
    });
  });

  describe('GET /api/admin/search/indices', () => {
    it('every index of every version: alias, documents, size, health, the indexer\'s checkpoint and the events it is behind the log', async () => {
      await engine.ensureVersion(2);
      const before = await head();
      const res = await admin.get(INDICES);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(await head(), 'a read appends nothing').to.equal(before);
      expect(res.body).to.deep.include({ engine: engineName, liveVersion: 1, head: before });
      expect(res.body.indices).to.have.length(SEARCH_TYPES.length * 2);
      const cases = res.body.indices.find((i: { name: string }) => i.name === indexName('repository_cases'));
      expect(cases).to.have.all.keys('name', 'alias', 'type', 'version', 'live', 'documents', 'sizeBytes', 'health', 'checkpoint', 'lag');
      const applied = (BigInt(before) - 3n).toString();
      expect(cases).to.deep.include({ alias: `${prefix}repository_cases`, type: 'repository_cases', version: 1, live: true, documents: 2 });
      expect(cases.checkpoint).to.deep.equal({ position: applied, keys: { search: applied } });
      expect(cases.lag).to.deep.equal({ events: 3, exact: true });
      expect(cases.sizeBytes).to.be.a('number').at.least(0);
      expect(cases.health).to.be.oneOf(['green', 'yellow']);
      const building = res.body.indices.find((i: { name: string }) => i.name === indexName('failures', 2));
      expect(building).to.deep.include({ live: false, documents: 0, checkpoint: { position: null, keys: {} }, lag: { events: Number(before), exact: true } });
      // Real events (a project created through the model API) widen the lag by as many.
      const created = await admin.post('/api/model/project/create', { data: { name: 'Lagging' } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const later = BigInt(await head());
      const again = await admin.get(INDICES);
      expect(again.body.indices.find((i: { name: string }) => i.name === indexName('repository_cases')).lag).to.deep.equal({ events: Number(later - BigInt(applied)), exact: true });
      await engine.dropVersion(2);
    });

    it('an unknown query parameter: 400 invalid-argument', async () => {
      expect((await expectRefused(app, () => admin.get(`${INDICES}?type=failures`), 400)).details).to.deep.equal({ path: 'type' });
    });
  });

  describe('POST /api/admin/search/indices (create the missing ones)', () => {
    it('an index deleted behind the panel\'s back comes back with the spec\'s settings and analyzer (201, one event); nothing missing: 200, still an event', async () => {
      const before = await head();
      if (engineName === 'opensearch') {
        expect((await searchFetch(SEARCH_TEST_URL, `/${indexName('sessions')}`, { method: 'DELETE' })).status).to.equal(200);
      } else {
        await app.deps.knex.raw(`DROP VIEW "${prefix}search"`);
      }
      const res = await admin.post(INDICES, {});
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      if (engineName === 'opensearch') {
        expect(res.body).to.deep.equal({ version: 1, created: [indexName('sessions')], aliasesRepaired: [`${prefix}sessions`] });
        await hasTheAnalyzer(indexName('sessions'));
        expect((await mappingOf(indexName('sessions'))).aliases).to.deep.equal([`${prefix}sessions`]);
      } else {
        expect(res.body).to.deep.equal({ version: 1, created: [], aliasesRepaired: SEARCH_TYPES.map((t) => `${prefix}${t}`) });
      }
      const event = await recorded(res, before);
      expect(event).to.deep.include({ operation: 'create-indices', engine: engineName, outcome: 'succeeded', error: null });
      expect(event.targets).to.deep.equal([...res.body.created, ...res.body.aliasesRepaired]);
      expect((await engine.search({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 10 })).total).to.equal(2);

      const again = await admin.post(INDICES);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal({ version: 1, created: [], aliasesRepaired: [] });
      expect(await recorded(again, (BigInt(before) + 1n).toString())).to.deep.include({ operation: 'create-indices', targets: [] });
    });

    it('a body with fields: 400 invalid-argument, nothing asked', async () => {
      expect((await expectRefused(app, () => admin.post(INDICES, { version: 3 }), 400)).details).to.deep.equal({ path: 'version' });
      expect(await engine.versions()).to.deep.equal([1]);
    });
  });

  describe('DELETE /api/admin/search/indices/{name}', () => {
    it('without the confirmation, or with another name: 400 confirmation-required, the index and its documents still there, nothing appended', async () => {
      const name = indexName('repository_cases');
      for (const body of [undefined, {}, { confirm: '' }, { confirm: indexName('failures') }, { confirm: name.toUpperCase() }, { confirm: [name] }]) {
        const error = await expectRefused(app, () => admin.request('DELETE', `${INDICES}/${name}`, body), 400);
        expect(error.code, JSON.stringify(body)).to.equal('confirmation-required');
        expect(error.details).to.deep.equal({ path: 'confirm', expected: name });
      }
      expect((await expectRefused(app, () => admin.request('DELETE', `${INDICES}/${name}`, { confirm: name, force: true }), 400)).details).to.deep.equal({ path: 'force' });
      expect(await engine.count(1, 'repository_cases')).to.equal(2);
      expect((await engine.stats()).some((s) => s.index === name)).to.equal(true);
    });

    it('a name that is not one of the indices: 404 search-index-not-found, nothing appended', async () => {
      for (const name of [`${prefix}repository_cases`, indexName('repository_cases', 9), 'testament_repository_cases_v1', '_all']) {
        const error = await expectRefused(app, () => admin.request('DELETE', `${INDICES}/${encodeURIComponent(name)}`, { confirm: name }), 404);
        expect(error).to.deep.include({ code: 'search-index-not-found', details: { index: name } });
      }
      expect(await engine.count(1, 'repository_cases')).to.equal(2);
    });

    it('confirmed: the live index is deleted and back at once, empty, behind its alias, with the analyzer; one event names it', async () => {
      const name = indexName('repository_cases');
      const before = await head();
      const res = await admin.request('DELETE', `${INDICES}/${name}`, { confirm: name });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.equal({
        index: name, alias: `${prefix}repository_cases`, type: 'repository_cases', version: 1, live: true, documentsDeleted: 2, recreated: true,
      });
      const event = await recorded(res, before);
      expect(event).to.deep.include({ operation: 'delete-index', engine: engineName, targets: [name], outcome: 'succeeded', error: null });
      expect(event.details).to.deep.equal({ alias: `${prefix}repository_cases`, version: 1, live: true, documentsDeleted: 2 });
      await engine.refresh();
      expect(await engine.count(1, 'repository_cases')).to.equal(0);
      expect(await engine.count(1, 'failures')).to.equal(1);
      if (engineName === 'opensearch') {
        await hasTheAnalyzer(name);
        expect((await mappingOf(name)).aliases).to.deep.equal([`${prefix}repository_cases`]);
      }
      // The indexer's next write lands in the right mapping: stemmed search finds it.
      await engine.write(1, { upsert: [searchDocument('repository_cases', 'c9', { title: 'Running tests again' })], remove: [] });
      await engine.refresh();
      const found = await admin.get('/api/search?q=run%20test&type=repository_cases');
      expect(found.status, JSON.stringify(found.body)).to.equal(200);
      expect(found.body.hits.map((h: { id: string }) => h.id)).to.deep.equal(['c9']);
    });

    it('an index of a version being built is deleted for good on OpenSearch (emptied on PostgreSQL, whose types share a table)', async () => {
      await engine.ensureVersion(2);
      await engine.write(2, { upsert: [searchDocument('failures', 'f2')], remove: [] });
      const name = indexName('failures', 2);
      const res = await admin.request('DELETE', `${INDICES}/${name}`, { confirm: name });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.include({ live: false, recreated: false, documentsDeleted: engineName === 'opensearch' ? 0 : 1 });
      const listed = (await engine.stats()).find((s) => s.index === name);
      if (engineName === 'opensearch') expect(listed).to.equal(undefined);
      else expect(listed).to.deep.include({ documents: 0 });
      await engine.dropVersion(2);
    });
  });

  describe('POST /api/admin/search/operations/*', () => {
    it('force merge (PostgreSQL: VACUUM (ANALYZE)): its targets and the engine\'s account, recorded', async () => {
      const before = await head();
      const res = await admin.post(`${OPERATIONS}/force-merge`, { maxSegments: 1 });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.include({ operation: 'force-merge', engine: engineName });
      const expectedTargets = engineName === 'opensearch'
        ? [...SEARCH_TYPES.map((t) => indexName(t)).sort(), `${prefix}checkpoints`]
        : [`${prefix}search_v1`, `${prefix}search_checkpoints`];
      expect(res.body.targets).to.deep.equal(expectedTargets);
      if (engineName === 'opensearch') expect(res.body.details).to.deep.include({ maxSegments: 1 });
      else expect(res.body.details.statement).to.equal('VACUUM (ANALYZE)');
      const event = await recorded(res, before);
      expect(event).to.deep.include({ operation: 'force-merge', engine: engineName, targets: expectedTargets, outcome: 'succeeded', error: null });
      expect((await admin.post(`${OPERATIONS}/force-merge`)).status, 'no body: the engine\'s default').to.equal(200);
    });

    it('a bad force merge: 400 invalid-argument, nothing asked, nothing appended', async () => {
      for (const body of [{ maxSegments: 0 }, { maxSegments: 101 }, { maxSegments: 1.5 }, { maxSegments: '1' }, { segments: 1 }, [1]]) {
        const error = await expectRefused(app, () => admin.post(`${OPERATIONS}/force-merge`, body), 400);
        expect(error.code, JSON.stringify(body)).to.equal('invalid-argument');
      }
      expect((await expectRefused(app, () => admin.post(`${OPERATIONS}/refresh?all=1`, {}), 400)).details).to.deep.equal({ path: 'all' });
    });

    if (engineName === 'postgres') {
      it('cache clear and refresh: 400 not-supported-by-engine naming PostgreSQL, nothing appended', async () => {
        for (const operation of ['cache-clear', 'refresh']) {
          const error = await expectRefused(app, () => admin.post(`${OPERATIONS}/${operation}`, {}), 400);
          expect(error).to.deep.include({ code: 'not-supported-by-engine', details: { engine: 'postgres', operation } });
        }
      });
    } else {
      it('cache clear and refresh: the engine\'s shards answered, recorded; a refresh makes a write searchable', async () => {
        for (const operation of ['cache-clear', 'refresh']) {
          const before = await head();
          const res = await admin.post(`${OPERATIONS}/${operation}`, {});
          expect(res.status, JSON.stringify(res.body)).to.equal(200);
          expect(res.body.details.shards).to.deep.include({ failed: 0 });
          expect(res.body.details.shards.successful).to.be.at.least(SEARCH_TYPES.length);
          expect(await recorded(res, before)).to.deep.include({ operation, outcome: 'succeeded' });
        }
        await engine.write(1, { upsert: [searchDocument('failures', 'fresh', { title: 'Freshly written' })], remove: [] });
        expect((await admin.post(`${OPERATIONS}/refresh`)).status).to.equal(200);
        expect(await engine.count(1, 'failures')).to.equal(2);
      });
    }

    it('mapping update: applied in place (PostgreSQL: missing indexes created, REINDEX), recorded', async () => {
      const before = await head();
      const res = await admin.post(`${OPERATIONS}/mapping-update`, {});
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.include({ operation: 'mapping-update', engine: engineName });
      expect(await recorded(res, before)).to.deep.include({ operation: 'mapping-update', outcome: 'succeeded', targets: res.body.targets });
    });

    it('mapping update the engine cannot apply in place: 409 mapping-needs-reindex pointing at a full reindex, nothing changed, recorded as failed', async () => {
      if (engineName === 'opensearch') {
        // An index made by hand (no template): no custom analyzer, its title a keyword.
        await searchFetch(SEARCH_TEST_URL, `/_index_template/${prefix}versioned_indices`, { method: 'DELETE' });
        await searchFetch(SEARCH_TEST_URL, `/${indexName('projects')}`, { method: 'DELETE' });
        const made = await searchFetch(SEARCH_TEST_URL, `/${indexName('projects')}`, {
          method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ mappings: { properties: { title: { type: 'keyword' } } } }),
        });
        expect(made.status).to.equal(200);
      } else {
        await app.deps.knex.raw(`ALTER TABLE "${prefix}search_v1" DROP COLUMN folder CASCADE`);
      }
      const before = await head();
      const res = await admin.post(`${OPERATIONS}/mapping-update`, {});
      expect(res.status, JSON.stringify(res.body)).to.equal(409);
      expect(res.body.code).to.equal('mapping-needs-reindex');
      expect(res.body.details.reindex).to.deep.equal({ method: 'POST', path: '/api/admin/search/reindex', body: { mode: 'full', confirm: prefix } });
      expect(res.body.details.conflicts.join(' ')).to.contain(engineName === 'opensearch' ? `${indexName('projects')}: analysis` : 'column folder is missing');
      const event = await recorded(res, before);
      expect(event).to.deep.include({ operation: 'mapping-update', engine: engineName, outcome: 'failed' });
      expect(event.details.code).to.equal('mapping-needs-reindex');
      if (engineName === 'opensearch') {
        expect((await mappingOf(indexName('projects'))).mappings.properties).to.deep.equal({ title: { type: 'keyword' } });
        await searchFetch(SEARCH_TEST_URL, `/${indexName('projects')}`, { method: 'DELETE' });
        expect((await admin.post(INDICES)).status).to.equal(201);
      } else {
        // The layout back as it was: the version rebuilt from scratch.
        await app.deps.knex.raw(`DROP TABLE "${prefix}search_v1" CASCADE`);
        expect((await admin.post(INDICES)).status).to.equal(201);
      }
    });
  });

  describe('GET health and nodes', () => {
    it('health: the status with the engine\'s reasons; nodes: heap, disk, documents, indexing and search totals (null where the engine has none); nothing appended', async () => {
      const before = await head();
      const health = await admin.get('/api/admin/search/health');
      expect(health.status, JSON.stringify(health.body)).to.equal(200);
      expect(health.body).to.have.all.keys('engine', 'status', 'reasons', 'clusterName', 'nodes', 'shards', 'details');
      expect(health.body.engine).to.equal(engineName);
      expect(health.body.status).to.be.oneOf(['green', 'yellow', 'red']);
      const nodes = await admin.get('/api/admin/search/nodes');
      expect(nodes.status).to.equal(200);
      expect(nodes.body.engine).to.equal(engineName);
      expect(nodes.body.nodes.length).to.be.at.least(1);
      for (const node of nodes.body.nodes) expect(node).to.have.all.keys('id', 'name', 'heap', 'disk', 'documents', 'indexingTotal', 'searchTotal');
      if (engineName === 'postgres') {
        expect(health.body).to.deep.include({ status: 'green', shards: null, nodes: 1 });
        expect(health.body.details.databaseSizeBytes).to.be.above(0);
        expect(nodes.body.nodes[0]).to.deep.include({ heap: null, disk: null, searchTotal: null });
      } else {
        expect(health.body.shards).to.have.all.keys('active', 'initializing', 'relocating', 'unassigned');
        expect(nodes.body.nodes[0].heap.maxBytes).to.be.above(0);
        expect(nodes.body.nodes[0].disk.totalBytes).to.be.above(0);
      }
      expect(await head()).to.equal(before);
    });
  });

  describe('the engine away', () => {
    it('no engine: a reading is 503 search-unavailable appending nothing; an operation is 503 and recorded as failed', async () => {
      current = () => {
        throw new SearchUnavailable(engineName);
      };
      for (const path of [INDICES, '/api/admin/search/health', '/api/admin/search/nodes']) {
        expect(await expectRefused(app, () => admin.get(path), 503)).to.deep.include({ code: 'search-unavailable', details: { engine: engineName } });
      }
      const before = await head();
      const res = await admin.post(`${OPERATIONS}/force-merge`, {});
      expect(res.status).to.equal(503);
      expect(res.body).to.deep.include({ code: 'search-unavailable', details: { engine: engineName } });
      expect(await recorded(res, before)).to.deep.include({ operation: 'force-merge', engine: engineName, outcome: 'failed', targets: [] });
      const confirmedDelete = await admin.request('DELETE', `${INDICES}/${indexName('failures')}`, { confirm: indexName('failures') });
      expect(confirmedDelete.status).to.equal(503);
      expect(await recorded(confirmedDelete, (BigInt(before) + 1n).toString()))
        .to.deep.include({ operation: 'delete-index', engine: engineName, outcome: 'failed', targets: [indexName('failures')] });
    });

    if (engineName === 'opensearch') {
      it('an engine that stops answering mid-operation: 503, recorded as failed with the engine\'s error', async () => {
        const dead = openOpenSearch({ ...DEFAULT_SEARCH_SETTINGS, url: 'http://127.0.0.1:9', indexPrefix: prefix, requestTimeoutMs: 500, maxRetries: 0 });
        current = () => dead;
        try {
          const before = await head();
          const res = await admin.post(`${OPERATIONS}/cache-clear`, {});
          expect(res.status).to.equal(503);
          const event = await recorded(res, before);
          expect(event).to.deep.include({ operation: 'cache-clear', engine: 'opensearch', outcome: 'failed' });
          expect(event.error).to.contain('127.0.0.1:9');
        } finally {
          await dead.close();
        }
      });
    }
  });
});
