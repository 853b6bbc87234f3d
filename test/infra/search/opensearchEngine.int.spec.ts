import { createServer, type Server, type Socket } from 'node:net';
import { expect } from 'chai';
import { openOpenSearch } from '../../../infra/search/opensearch';
import {
  BulkWriteFailed, DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchSettings,
} from '../../../services/shared/search';
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
