import { createServer, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import { openOpenSearch } from '../../../infra/search/opensearch';
import {
  BulkWriteFailed, DEFAULT_SEARCH_SETTINGS, MappingNeedsReindex, SearchUnavailable, type SearchSettings,
} from '../../../services/shared/search';
import { indexBody, indexTemplateName } from '../../../infra/search/engineBodies';
import { SEARCH_TEST_URL, dropIndices, requireOpenSearch, searchFetch, uniqueIndexPrefix } from '../../support/search';
import { searchDocument } from './documents';
import { describeSearchEngineContract } from './engineContract';

/*
 * The OpenSearch adapter against the real OpenSearch of `npm run search:up` (SEARCH_URL, default
 * http://127.0.0.1:9200): the shared contract, then what only a separate server shows (a bulk
 * request refused in part, the server away).
 */

const settingsFor = (prefix: string, overrides: Partial<SearchSettings> = {}): SearchSettings =>
  ({ ...DEFAULT_SEARCH_SETTINGS, url: SEARCH_TEST_URL, indexPrefix: prefix, ...overrides });

// Slow: runs the whole search engine contract against a real OpenSearch node (each index created, refreshed and deleted over HTTP), then waits out request time limits and retries against an engine away or silent
describe('OpenSearch search engine contract', () => {
  // Here, not in `open`: one SKIPPED line for the whole suite.
  before(async function () {
    await requireOpenSearch(this, 'OpenSearch search engine contract');
  });

  describeSearchEngineContract('OpenSearch', async () => {
    const prefix = uniqueIndexPrefix();
    const engine = openOpenSearch(settingsFor(prefix));
    return {
      engine,
      async cleanup() {
        await engine.close();
        await dropIndices(SEARCH_TEST_URL, prefix);
      },
    };
  });
});

describe('OpenSearch search engine', function () {
  this.timeout(60_000);

  before(async function () {
    await requireOpenSearch(this, 'OpenSearch search engine');
  });

  it('an index is created with the settings and analyzer the spec names, and the mapping of the port', async () => {
    const prefix = uniqueIndexPrefix();
    const engine = openOpenSearch(settingsFor(prefix, { shards: 2, replicas: 0, refreshInterval: '5s' }));
    try {
      await engine.ensureVersion(1);
      const response = await searchFetch(SEARCH_TEST_URL, `/${prefix}repository_cases_v1`);
      const body = (await response.json()) as any;
      const index = body[`${prefix}repository_cases_v1`];
      expect(index.settings.index).to.include({ number_of_shards: '2', number_of_replicas: '0', max_result_window: '50000', refresh_interval: '5s' });
      expect(index.mappings.properties.customFields.type).to.equal('nested');
      expect(index.mappings.properties.title.fields.keyword.type).to.equal('keyword');
      const analyzed = await searchFetch(SEARCH_TEST_URL, `/${prefix}repository_cases_v1/_analyze`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ field: 'content', text: 'The Running Foxes in java.lang.NullPointerException 2.4' }),
      });
      const tokens = ((await analyzed.json()) as any).tokens.map((t: { token: string }) => t.token);
      expect(tokens).to.deep.equal(['run', 'fox', 'java', 'lang', 'nullpointerexcept', '2.4']);
    } finally {
      await engine.close();
      await dropIndices(SEARCH_TEST_URL, prefix);
    }
  });

  it('custom field values: found through their nested documents and highlighted, escaped as HTML', async () => {
    const prefix = uniqueIndexPrefix();
    const engine = openOpenSearch(settingsFor(prefix));
    try {
      await engine.ensureVersion(1);
      await engine.switchAlias(1);
      const doc = searchDocument('repository_cases', 'cf', { customFields: [{ name: 'Component', value: 'Authentication <b>service</b>' }, { name: 'Owner', value: 'Zoë' }] });
      await engine.write(1, { upsert: [doc, searchDocument('repository_cases', 'other', {})], remove: [] });
      await engine.refresh();
      const r = await engine.search({
        types: ['repository_cases'], filter: [], sort: [], from: 0, size: 10, highlight: ['title', 'customFields.value'],
        query: { kind: 'text', query: 'authentication', fields: [{ field: 'title', boost: 2 }, { field: 'customFields.value', boost: 1 }], operator: 'or', phrase: false },
      });
      expect(r.hits.map((h) => h.id)).to.deep.equal(['cf']);
      expect(r.hits[0].highlight).to.deep.equal({ 'customFields.value': ['<mark>Authentication</mark> &lt;b&gt;service&lt;&#x2F;b&gt;'] });
      expect(r.hits[0].document).to.deep.equal(doc);
    } finally {
      await engine.close();
      await dropIndices(SEARCH_TEST_URL, prefix);
    }
  });

  it('a bulk write refused for one document throws BulkWriteFailed naming it; the others are written and the checkpoint stays', async () => {
    const prefix = uniqueIndexPrefix();
    // Bulk size 2: the refused document is in the second of three requests.
    const engine = openOpenSearch(settingsFor(prefix, { bulkSize: 2 }));
    try {
      await engine.ensureVersion(1);
      await engine.write(1, { upsert: [searchDocument('repository_cases', 'ok0', {})], remove: [] }, { search: '7' });
      const docs = [
        searchDocument('repository_cases', 'ok1', {}), searchDocument('repository_cases', 'ok2', {}),
        searchDocument('repository_cases', 'ok3', {}), searchDocument('repository_cases', 'bad', { updatedAt: '31/02/2024' }),
        searchDocument('repository_cases', 'ok4', {}),
      ];
      const error = await engine.write(1, { upsert: docs, remove: [] }, { search: '8' }).then(() => null, (e: unknown) => e);
      expect(error).to.be.instanceOf(BulkWriteFailed);
      const failures = (error as BulkWriteFailed).failures;
      expect(failures.map((f) => [f.type, f.id, f.status])).to.deep.equal([['repository_cases', 'bad', 400]]);
      expect(failures[0].reason).to.match(/updatedAt|date/);
      expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '7' });
      await engine.refresh(1);
      expect(await engine.count(1, 'repository_cases')).to.equal(5);
    } finally {
      await engine.close();
      await dropIndices(SEARCH_TEST_URL, prefix);
    }
  });

  it('a write read earlier than what the index holds changes nothing (a bulk request applied late, a reindex page read before the indexer wrote)', async () => {
    const prefix = uniqueIndexPrefix();
    const engine = openOpenSearch(settingsFor(prefix));
    const titleOf = async (id: string) => {
      const response = await searchFetch(SEARCH_TEST_URL, `/${prefix}repository_cases_v1/_doc/${id}`);
      return response.status === 404 ? null : ((await response.json()) as { _source: { title: string } })._source.title;
    };
    try {
      await engine.ensureVersion(1);
      const key = { type: 'repository_cases' as const, id: '7' };
      await engine.write(1, { upsert: [searchDocument('repository_cases', '7', { title: 'read second' })], remove: [], readAt: '2000' }, { search: '2' });
      // The request of an earlier read, applied after: acknowledged (no failure, the checkpoint moves), the document stays.
      await engine.write(1, { upsert: [searchDocument('repository_cases', '7', { title: 'read first' })], remove: [], readAt: '1000' }, { search: '3' });
      await engine.write(1, { upsert: [], remove: [key], readAt: '1500' });
      expect(await titleOf('7')).to.equal('read second');
      expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '3' });
      // Read at the same time: the last one written wins (one read, written again).
      await engine.write(1, { upsert: [searchDocument('repository_cases', '7', { title: 'same read' })], remove: [], readAt: '2000' });
      expect(await titleOf('7')).to.equal('same read');
      // Deleted by a later read: a write of an earlier read does not bring it back.
      await engine.write(1, { upsert: [], remove: [key], readAt: '3000' });
      await engine.write(1, { upsert: [searchDocument('repository_cases', '7', { title: 'back?' })], remove: [], readAt: '2500' });
      expect(await titleOf('7')).to.equal(null);
      // A document written before reads carried a time (an internal version) is replaced by a read one.
      await engine.write(1, { upsert: [searchDocument('repository_cases', '8', { title: 'unversioned' })], remove: [] });
      await engine.write(1, { upsert: [searchDocument('repository_cases', '8', { title: 'read now' })], remove: [], readAt: String(Date.now() * 1000) });
      expect(await titleOf('8')).to.equal('read now');
    } finally {
      await engine.close();
      await dropIndices(SEARCH_TEST_URL, prefix);
    }
  });

  it('the engine away: SearchUnavailable within about the request time limit, for reads and writes', async () => {
    // A port that was just free and is closed again: connections are refused.
    const port = await new Promise<number>((resolve) => {
      const probe: Server = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as { port: number };
        probe.close(() => resolve(p));
      });
    });
    const engine = openOpenSearch(settingsFor(uniqueIndexPrefix(), { url: `http://user:s3cret@127.0.0.1:${port}`, requestTimeoutMs: 1000, maxRetries: 2 }));
    try {
      for (const attempt of [
        () => engine.search({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 10 }),
        () => engine.write(1, { upsert: [searchDocument('repository_cases', 'x', {})], remove: [] }, { search: '1' }),
        () => engine.info(),
      ]) {
        const started = Date.now();
        const error = await attempt().then(() => null, (e: unknown) => e);
        expect(error).to.be.instanceOf(SearchUnavailable);
        expect((error as SearchUnavailable).engine).to.equal('opensearch');
        expect((error as Error).message).to.contain(`127.0.0.1:${port}`).and.not.contain('s3cret');
        expect(Date.now() - started).to.be.lessThan(1500);
      }
    } finally {
      await engine.close();
    }
  });

  it('a server that accepts the connection and never answers: SearchUnavailable after the time limit and the retries', async () => {
    const { port, close } = await silentServer();
    const engine = openOpenSearch(settingsFor(uniqueIndexPrefix(), { url: `http://127.0.0.1:${port}`, requestTimeoutMs: 300, maxRetries: 1 }));
    try {
      const started = Date.now();
      const error = await engine.count(1, 'failures').then(() => null, (e: unknown) => e);
      const took = Date.now() - started;
      expect(error).to.be.instanceOf(SearchUnavailable);
      expect(took).to.be.within(250, 300 * 2 + 500);
    } finally {
      await engine.close();
      await close();
    }
  });

  it('a search someone waits on is not retried: SearchUnavailable after one time limit, whatever SEARCH_MAX_RETRIES', async () => {
    const { port, close } = await silentServer();
    const engine = openOpenSearch(settingsFor(uniqueIndexPrefix(), { url: `http://127.0.0.1:${port}`, requestTimeoutMs: 400, maxRetries: 3 }));
    try {
      const everything = { kind: 'all' } as const;
      for (const attempt of [
        () => engine.search({ types: ['repository_cases'], query: everything, filter: [], sort: [], highlight: [], from: 0, size: 10 }),
        () => engine.facets({ types: ['repository_cases'], query: everything, filter: [], fields: ['tags'], size: 10 }),
      ]) {
        const started = Date.now();
        const error = await attempt().then(() => null, (e: unknown) => e);
        expect(error).to.be.instanceOf(SearchUnavailable);
        // Four attempts of 400 ms would take 1,600 ms at least.
        expect(Date.now() - started).to.be.within(350, 1200);
      }
    } finally {
      await engine.close();
      await close();
    }
  });
});

describe('OpenSearch search engine administration', function () {
  this.timeout(60_000);
  let prefix: string;
  let engine: ReturnType<typeof openOpenSearch>;
  const json = async (path: string, init: RequestInit = {}) => {
    const response = await searchFetch(SEARCH_TEST_URL, path, { ...init, headers: { 'content-type': 'application/json' } });
    return { status: response.status, body: (await response.json()) as any };
  };
  /** The index as the engine describes it: its mapping and its analysis settings. */
  const described = async (index: string) => {
    const { status, body } = await json(`/${index}`);
    expect(status, JSON.stringify(body)).to.equal(200);
    return { mappings: body[index].mappings, analysis: body[index].settings.index.analysis, aliases: Object.keys(body[index].aliases) };
  };
  const hasTheMapping = (d: Awaited<ReturnType<typeof described>>) => {
    expect(d.mappings.dynamic).to.equal('strict');
    expect(d.mappings.properties.title).to.deep.include({ type: 'text', analyzer: 'testament_text' });
    expect(d.mappings.properties.customFields.type).to.equal('nested');
    expect(d.analysis.analyzer.testament_text).to.deep.include({ type: 'custom', tokenizer: 'standard' });
    expect(d.analysis.analyzer.testament_text.filter).to.deep.equal(['lowercase', 'testament_stop', 'testament_snowball']);
  };

  before(async function () {
    await requireOpenSearch(this, 'OpenSearch search engine administration');
  });
  beforeEach(() => {
    prefix = uniqueIndexPrefix();
    engine = openOpenSearch(settingsFor(prefix));
  });
  afterEach(async () => {
    await engine?.close();
    if (prefix) await dropIndices(SEARCH_TEST_URL, prefix);
  });

  it('a live index deleted through the port is back at once behind its alias, with the analyzer and the strict mapping', async () => {
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    await engine.write(1, { upsert: [searchDocument('failures', 'f')], remove: [] });
    await engine.deleteIndex(`${prefix}failures_v1`);
    const d = await described(`${prefix}failures_v1`);
    hasTheMapping(d);
    expect(d.aliases).to.deep.equal([`${prefix}failures`]);
    await engine.refresh();
    expect(await engine.count(1, 'failures')).to.equal(0);
  });

  it('an index deleted behind the port\'s back: the indexer\'s next write re-creates it through the template (not with dynamic mappings), create-missing puts its alias back', async () => {
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    expect((await json(`/${prefix}comments_v1`, { method: 'DELETE' })).status).to.equal(200);
    await engine.write(1, { upsert: [searchDocument('comments', 'k', { title: 'Running tests' })], remove: [] });
    hasTheMapping(await described(`${prefix}comments_v1`));
    expect((await described(`${prefix}comments_v1`)).aliases, 'the template carries no alias').to.deep.equal([]);
    const refused = await engine.write(1, { upsert: [{ ...searchDocument('comments', 'x'), surprise: 1 } as never], remove: [] }).then(() => null, (e: unknown) => e);
    expect(refused, 'strict: an unknown field is refused, not mapped').to.be.instanceOf(BulkWriteFailed);
    const repaired = await engine.createMissingIndices();
    expect(repaired).to.deep.equal({ version: 1, created: [], aliasesRepaired: [`${prefix}comments`] });
    expect((await described(`${prefix}comments_v1`)).aliases).to.deep.equal([`${prefix}comments`]);
    expect((await json(`/${prefix}sessions_v1`, { method: 'DELETE' })).status).to.equal(200);
    const created = await engine.createMissingIndices();
    expect(created).to.deep.equal({ version: 1, created: [`${prefix}sessions_v1`], aliasesRepaired: [`${prefix}sessions`] });
    hasTheMapping(await described(`${prefix}sessions_v1`));
    await engine.refresh();
    const found = await engine.search({
      types: ['comments'], filter: [], sort: [], from: 0, size: 10, highlight: [],
      query: { kind: 'text', query: 'run test', fields: [{ field: 'title', boost: 1 }], operator: 'and', phrase: false },
    });
    expect(found.hits.map((h) => h.id)).to.deep.equal(['k']);
  });

  it('updateMapping adds a field an index lacks; a field of another type or another analyzer needs a reindex and changes nothing, on any index', async () => {
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    // Indices made by hand, without the template: one lacking a field, one with a conflicting field.
    expect((await json(`/_index_template/${indexTemplateName(prefix)}`, { method: 'DELETE' })).status).to.equal(200);
    const body = indexBody(DEFAULT_SEARCH_SETTINGS) as any;
    const { branch: _branch, ...withoutBranch } = body.mappings.properties;
    await json(`/${prefix}milestones_v1`, { method: 'DELETE' });
    expect((await json(`/${prefix}milestones_v1`, { method: 'PUT', body: JSON.stringify({ ...body, mappings: { ...body.mappings, properties: withoutBranch } }) })).status).to.equal(200);
    await json(`/${prefix}projects_v1`, { method: 'DELETE' });
    const conflicting = { ...body.mappings.properties, title: { type: 'keyword' } };
    expect((await json(`/${prefix}projects_v1`, { method: 'PUT', body: JSON.stringify({ ...body, mappings: { ...body.mappings, properties: conflicting } }) })).status).to.equal(200);

    const error = await engine.updateMapping().then(() => null, (e: unknown) => e);
    expect(error).to.be.instanceOf(MappingNeedsReindex);
    expect((error as MappingNeedsReindex).conflicts.join(' ')).to.contain('title');
    expect((await described(`${prefix}milestones_v1`)).mappings.properties.branch, 'nothing changed, not even on the index that could take it').to.equal(undefined);
    expect((await described(`${prefix}projects_v1`)).mappings.properties.title).to.deep.equal({ type: 'keyword' });

    await json(`/${prefix}projects_v1`, { method: 'DELETE' });
    const updated = await engine.updateMapping();
    expect(updated.targets).to.include(`${prefix}milestones_v1`).and.not.include(`${prefix}projects_v1`);
    expect(updated.details.fieldsAdded).to.deep.equal({ [`${prefix}milestones_v1`]: ['branch'] });
    expect((await described(`${prefix}milestones_v1`)).mappings.properties.branch).to.deep.equal({ type: 'keyword' });

    // Another analyzer (an older one without the dotted-names filter) is a setting the mapping cannot change.
    await json(`/${prefix}milestones_v1`, { method: 'DELETE' });
    const { char_filter: _c, ...olderAnalysis } = body.settings.analysis;
    const olderAnalyzer = { ...olderAnalysis.analyzer.testament_text, char_filter: [] };
    expect((await json(`/${prefix}milestones_v1`, { method: 'PUT', body: JSON.stringify({ ...body, settings: { ...body.settings, analysis: { ...olderAnalysis, analyzer: { testament_text: olderAnalyzer } } } }) })).status).to.equal(200);
    const analysis = await engine.updateMapping().then(() => null, (e: unknown) => e);
    expect(analysis).to.be.instanceOf(MappingNeedsReindex);
    expect((analysis as MappingNeedsReindex).conflicts.join(' ')).to.contain(`${prefix}milestones_v1: analysis`);
  });

  it('cluster health: a replica that cannot be assigned (one node) makes it yellow, the reasons name the shard and the engine\'s explanation', async () => {
    const nodes = (await json('/_cluster/health')).body.number_of_nodes as number;
    const replicated = openOpenSearch(settingsFor(prefix, { replicas: nodes }));
    try {
      await replicated.createMissingIndices();
      const health = await replicated.clusterHealth();
      expect(health.status).to.equal('yellow');
      expect(health.shards!.unassigned).to.be.at.least(1);
      expect(health.reasons.join('\n')).to.match(/unassigned shard/).and.match(/replica: unassigned/).and.match(/shard \d+: .*allocat/);
      expect(health.nodes).to.equal(nodes);
      expect(health.clusterName).to.be.a('string');
    } finally {
      await replicated.close();
    }
  });

  it('node statistics: heap, disk, documents, indexing and search totals as the engine counts them', async () => {
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    const before = await engine.nodeStats();
    await engine.write(1, { upsert: Array.from({ length: 5 }, (_, i) => searchDocument('comments', `n${i}`)), remove: [] });
    await engine.refresh();
    await engine.search({ types: ['comments'], filter: [], sort: [], from: 0, size: 1, highlight: [], query: { kind: 'all' } });
    const after = await engine.nodeStats();
    expect(after.map((n) => n.id)).to.deep.equal(before.map((n) => n.id));
    const total = (stats: typeof after, key: 'indexingTotal' | 'searchTotal') => stats.reduce((sum, n) => sum + n[key]!, 0);
    expect(total(after, 'indexingTotal')).to.be.at.least(total(before, 'indexingTotal') + 5);
    expect(total(after, 'searchTotal')).to.be.above(total(before, 'searchTotal'));
    for (const node of after) {
      expect(node.heap!.maxBytes).to.be.above(0);
      expect(node.disk!.totalBytes).to.be.above(0);
      expect(node.documents).to.be.a('number');
    }
  });
});

/** A server on loopback that accepts connections and never answers. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const silent: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  return {
    port: (silent.address() as { port: number }).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    },
  };
}
