import { expect } from 'chai';
import pino from 'pino';
import type { Knex } from 'knex';
import { HttpError } from '../../../services/shared/errors';
import { SEARCH_TYPES, SearchUnavailable, type FacetRequest, type SearchEngine, type SearchRequest } from '../../../services/shared/search';
import { facets, filtersOf, kafkaCheckpointKeys, reached, waitForIndexer, type SearchDeps } from '../../../services/search/search.service';
import { MemoryEventStore } from '../../support/memoryEventStore';

/** A hand-written engine: answers what a test sets, records every call. */
class FakeEngine {
  readonly engine = 'opensearch' as const;
  readonly facetCalls: FacetRequest[] = [];
  readonly searchCalls: SearchRequest[] = [];
  checkpoints: Record<string, string> = {};
  live: number | null = 1;
  failure: unknown = null;
  checkpointReads = 0;
  readonly refreshed: (number | undefined)[] = [];
  async liveVersion() {
    if (this.failure) throw this.failure;
    return this.live;
  }
  async readCheckpoints() {
    this.checkpointReads++;
    return { ...this.checkpoints };
  }
  async refresh(version?: number) {
    this.refreshed.push(version);
  }
  async facets(request: FacetRequest) {
    this.facetCalls.push(request);
    return Object.fromEntries(request.fields.map((f) => [f, { [`${f}-label`]: request.types.length }]));
  }
  async search(request: SearchRequest) {
    this.searchCalls.push(request);
    return { total: 0, tookMs: 1, hits: [] };
  }
}

/** Access of an administrator (no query at all: resolveProjectAccess answers admins without the database). */
const ADMIN = { id: 1, email: 'a@example.com', name: 'A', access: 'ADMIN' as const };

function depsOf(engine: FakeEngine, extra: Partial<SearchDeps> = {}): SearchDeps {
  return { engine: () => engine as unknown as SearchEngine, knex: null as unknown as Knex, writeTimeoutMs: 300, logger: pino({ level: 'silent' }), ...extra };
}

async function failure(promise: Promise<unknown>): Promise<HttpError> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof HttpError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('search service (services/search/search.service.ts)', () => {
  describe('filters, access first', () => {
    const none = { projectId: null, tags: [], dateRange: null };
    it('administrators: no access clause; others: a terms on the projects they read', () => {
      expect(filtersOf('all', none)).to.deep.equal([]);
      expect(filtersOf(['3', '5'], none)).to.deep.equal([{ kind: 'terms', field: 'projectId', values: ['3', '5'] }]);
    });
    it('nothing readable, or a project filter outside what is readable: null (an empty answer, the engine not asked)', () => {
      expect(filtersOf([], none)).to.equal(null);
      expect(filtersOf(['3'], { ...none, projectId: '4' })).to.equal(null);
      expect(filtersOf(['3'], { ...none, projectId: '3' })).to.deep.equal([
        { kind: 'terms', field: 'projectId', values: ['3'] }, { kind: 'terms', field: 'projectId', values: ['3'] },
      ]);
      expect(filtersOf('all', { ...none, projectId: '4' })).to.deep.equal([{ kind: 'terms', field: 'projectId', values: ['4'] }]);
    });
    it('one terms clause per tag (every tag present), the date range with both bounds included', () => {
      expect(filtersOf('all', { projectId: null, tags: ['a', 'b'], dateRange: { field: 'updatedAt', from: '2026-01-01T00:00:00.000Z' } })).to.deep.equal([
        { kind: 'terms', field: 'tags', values: ['a'] }, { kind: 'terms', field: 'tags', values: ['b'] },
        { kind: 'range', field: 'updatedAt', gte: '2026-01-01T00:00:00.000Z' },
      ]);
      expect(filtersOf('all', { projectId: null, tags: [], dateRange: { field: 'createdAt', to: '2026-02-01T00:00:00.000Z' } }))
        .to.deep.equal([{ kind: 'range', field: 'createdAt', lte: '2026-02-01T00:00:00.000Z' }]);
    });
  });

  describe('facets', () => {
    it('each facet over the requested types that have its field; facets over the same types share a request', async () => {
      const engine = new FakeEngine();
      const answer = await facets(depsOf(engine), ADMIN, { query: { kind: 'all' }, types: [...SEARCH_TYPES], projectId: null }, 'c');
      const calls = engine.facetCalls.map((c) => ({ types: c.types, fields: c.fields })).sort((a, b) => a.types.length - b.types.length);
      expect(calls).to.deep.equal([
        { types: ['repository_cases'], fields: ['folder'] },
        { types: ['repository_cases', 'sessions'], fields: ['template'] },
        { types: ['repository_cases', 'test_runs', 'sessions'], fields: ['tags', 'state'] },
      ]);
      expect(answer.facets).to.deep.equal({ tags: { 'tags-label': 3 }, folders: { 'folder-label': 1 }, templates: { 'template-label': 2 }, states: { 'state-label': 3 } });
      expect(engine.facetCalls.every((c) => c.size === 100 && c.filter.length === 0)).to.equal(true);
    });
    it('a type without a facet\'s field: that facet {} and not asked; none at all: no request', async () => {
      const engine = new FakeEngine();
      const runs = await facets(depsOf(engine), ADMIN, { query: { kind: 'all' }, types: ['test_runs'], projectId: '7' }, 'c');
      expect(engine.facetCalls.map((c) => [c.types, c.fields, c.filter])).to.deep.equal([[['test_runs'], ['tags', 'state'], [{ kind: 'terms', field: 'projectId', values: ['7'] }]]]);
      expect(runs.facets).to.deep.include({ folders: {}, templates: {} });
      const failures = await facets(depsOf(engine), ADMIN, { query: { kind: 'all' }, types: ['failures', 'comments'], projectId: null }, 'c');
      expect(failures.facets).to.deep.equal({ tags: {}, folders: {}, templates: {}, states: {} });
      expect(engine.facetCalls).to.have.length(1);
    });
  });

  describe('the engine away', () => {
    it('SearchUnavailable, or an error that says the connection is away: 503 search-unavailable naming the engine; any other error passes as it is', async () => {
      const engine = new FakeEngine();
      engine.facets = async () => { throw new SearchUnavailable('elasticsearch', new Error('timeout')); };
      const e = await failure(facets(depsOf(engine), ADMIN, { query: { kind: 'all' }, types: ['test_runs'], projectId: null }, 'c'));
      expect(e).to.include({ status: 503, code: 'search-unavailable' });
      expect(e.details).to.deep.equal({ engine: 'elasticsearch' });
      const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9200'), { code: 'ECONNREFUSED' });
      engine.failure = refused;
      const transient = await failure(waitForIndexer(depsOf(engine), 5n, 'c'));
      expect(transient).to.include({ status: 503, code: 'search-unavailable' });
      expect(transient.details).to.deep.equal({ engine: 'opensearch' });
      engine.failure = new TypeError('a bug');
      let thrown: unknown = null;
      await waitForIndexer(depsOf(engine), 5n, 'c').catch((err) => (thrown = err));
      expect(thrown).to.be.instanceOf(TypeError);
    });

    it('no engine at all yet (the connection still opening: its getter throws SearchUnavailable): 503 search-unavailable, not a 500', async () => {
      const deps = { ...depsOf(new FakeEngine()), engine: (): SearchEngine => { throw new SearchUnavailable('opensearch'); } };
      const e = await failure(facets(deps, ADMIN, { query: { kind: 'all' }, types: ['test_runs'], projectId: null }, 'c'));
      expect(e).to.include({ status: 503, code: 'search-unavailable' });
      expect(e.details).to.deep.equal({ engine: 'opensearch' });
    });
  });

  describe('read-your-writes', () => {
    it('reached: the named checkpoints at or past the position; search@*: every partition\'s, at least one', () => {
      expect(reached({ search: '10' }, ['search'], 10n)).to.equal(true);
      expect(reached({ search: '9' }, ['search'], 10n)).to.equal(false);
      expect(reached({}, ['search'], 1n)).to.equal(false);
      expect(reached({ search: 'garbage' }, ['search'], 1n)).to.equal(false);
      expect(reached({ 'search@0': '12', 'search@1': '3' }, ['search@0'], 10n)).to.equal(true);
      expect(reached({ 'search@0': '12', 'search@1': '3' }, ['search@*'], 10n)).to.equal(false);
      expect(reached({ 'search@0': '12', 'search@1': '30' }, ['search@*'], 10n)).to.equal(true);
      expect(reached({ search: '30' }, ['search@*'], 10n)).to.equal(false);
    });

    it('waits with backoff until the checkpoint reaches the position, then answers', async () => {
      const engine = new FakeEngine();
      engine.checkpoints = { search: '4' };
      setTimeout(() => (engine.checkpoints = { search: '5' }), 100);
      const started = Date.now();
      await waitForIndexer(depsOf(engine, { writeTimeoutMs: 2000 }), 5n, 'c');
      expect(Date.now() - started).to.be.within(90, 1000);
      // 20, 40, 80 ms ...: a handful of reads, not a busy loop.
      expect(engine.checkpointReads).to.be.within(2, 6);
      // Then what the indexer wrote is made searchable for this reader (OpenSearch's refresh_interval).
      expect(engine.refreshed).to.deep.equal([1]);
    });

    it('times out with 503 search-lagging; before any version is live nothing counts as applied', async () => {
      const engine = new FakeEngine();
      engine.checkpoints = { search: '100' };
      engine.live = null;
      const started = Date.now();
      const e = await failure(waitForIndexer(depsOf(engine), 5n, 'c'));
      expect(e).to.include({ status: 503, code: 'search-lagging' });
      expect(e.details).to.deep.equal({ position: '5', timeoutMs: 300 });
      expect(Date.now() - started).to.be.within(295, 800);
      expect(engine.checkpointReads).to.equal(0);
    });

    it('Kafka: the checkpoint of the partition of the stream written at the position; a position naming no event: every partition\'s', async () => {
      const store = new MemoryEventStore();
      const meta = { actor: { userId: null, via: 'system' as const }, correlationId: 'c', causationId: null };
      await store.append('testRun-1', [{ type: 'TestRunCreated', data: {} }], { expectedRevision: 'any', metadata: meta });
      await store.append('project-2', [{ type: 'ProjectCreated', data: {} }, { type: 'ProjectRenamed', data: {} }], { expectedRevision: 'any', metadata: meta });
      const partitionOf = (streamId: string) => (streamId.startsWith('project') ? 2 : 0);
      const keys = kafkaCheckpointKeys(store, partitionOf);
      expect(await keys(1n)).to.deep.equal(['search@0']);
      expect(await keys(3n)).to.deep.equal(['search@2']);
      expect(await keys(4n)).to.deep.equal(['search@*']);
      expect(await keys(0n)).to.deep.equal(['search@*']);
      const engine = new FakeEngine();
      engine.checkpoints = { 'search@0': '1', 'search@2': '3' };
      await waitForIndexer(depsOf(engine, { checkpointKeys: keys }), 3n, 'c');
      expect((await failure(waitForIndexer(depsOf(engine, { checkpointKeys: keys }), 4n, 'c'))).code).to.equal('search-lagging');
    });
  });
});
