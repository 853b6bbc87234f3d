import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import pino from 'pino';
import { openSearchEngine } from '../../../infra/search';
import { DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchSettings } from '../../../services/shared/search';
import { createTestDatabase, type TestDatabase } from '../../support/database';
import { SEARCH_TEST_URL, requireOpenSearch, uniqueIndexPrefix } from '../../support/search';

/*
 * The engine factory (infra/search/index.ts): PostgreSQL without SEARCH_URL, else what the server
 * answers to GET / — against the real OpenSearch, a real database, and a loopback HTTP server
 * that is no search engine.
 */

describe('openSearchEngine: which engine answers', function () {
  this.timeout(60_000);
  const logger = pino({ level: 'silent' });
  let db: TestDatabase;
  let knex: Knex;
  const settings = (over: Partial<SearchSettings>): SearchSettings => ({ ...DEFAULT_SEARCH_SETTINGS, indexPrefix: uniqueIndexPrefix(), ...over });

  before(async () => {
    db = await createTestDatabase('searchfactory');
    knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 2 } });
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('no SEARCH_URL: PostgreSQL full-text search in the service database', async () => {
    const engine = await openSearchEngine(settings({ url: null }), { knex, logger });
    expect(engine.engine).to.equal('postgres');
    expect((await engine.info()).engine).to.equal('postgres');
    await engine.close();
  });

  it('OpenSearch is recognised from its answer', async function () {
    await requireOpenSearch(this, 'openSearchEngine against OpenSearch');
    const engine = await openSearchEngine(settings({ url: SEARCH_TEST_URL }), { knex, logger });
    try {
      expect(engine.engine).to.equal('opensearch');
      const info = await engine.info();
      expect(info.engine).to.equal('opensearch');
      expect(info.version).to.match(/^[23]\./);
    } finally {
      await engine.close();
    }
  });

  describe('a server that is no search engine', () => {
    let server: Server;
    let url: string;
    before(async () => {
      server = createServer((req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>Welcome to the intranet</body></html>');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    after(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('is refused with a message naming the URL (without credentials) and what answered', async () => {
      const withCredentials = url.replace('http://', 'http://admin:hunter2@');
      const error = await openSearchEngine(settings({ url: withCredentials, password: 'hunter2', username: 'admin' }), { knex, logger }).then(() => null, (e: unknown) => e);
      expect(error).to.be.instanceOf(Error).and.not.instanceOf(SearchUnavailable);
      const message = (error as Error).message;
      expect(message).to.contain(`127.0.0.1:${(server.address() as AddressInfo).port}`);
      expect(message).to.contain('is not OpenSearch').and.contain('text/html').and.contain('Welcome to the intranet');
      expect(message).not.to.contain('hunter2');
    });

    it('unless SEARCH_ENGINE forces an engine (no detection)', async () => {
      const engine = await openSearchEngine(settings({ url, engine: 'opensearch' }), { knex, logger });
      expect(engine.engine).to.equal('opensearch');
      await engine.close();
    });
  });

  it('nobody answers at the URL: SearchUnavailable (the caller retries)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const started = Date.now();
    const error = await openSearchEngine(settings({ url: `http://127.0.0.1:${port}`, requestTimeoutMs: 1000, maxRetries: 1 }), { knex, logger }).then(() => null, (e: unknown) => e);
    expect(error).to.be.instanceOf(SearchUnavailable);
    expect((error as Error).message).to.contain(`127.0.0.1:${port}`);
    expect(Date.now() - started).to.be.lessThan(2000);
  });
});
