import path from 'node:path';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';
import { DEFAULT_SEARCH_SETTINGS } from '../../services/shared/search';

describe('configuration of search (SEARCH_*)', () => {
  it('defaults to PostgreSQL full-text search with the spec\'s index settings', () => {
    expect(loadConfig({}).search).to.deep.equal(DEFAULT_SEARCH_SETTINGS);
    expect(DEFAULT_SEARCH_SETTINGS).to.include({ url: null, engine: 'auto', indexPrefix: 'testament_', sslVerify: true, bulkSize: 100, shards: 1, replicas: 0, refreshInterval: '1s' });
  });

  it('takes every variable from the environment', () => {
    const search = loadConfig({
      SEARCH_URL: 'https://search.example.com:9200/', SEARCH_ENGINE: 'opensearch', SEARCH_INDEX_PREFIX: 'acme-', SEARCH_USERNAME: 'indexer',
      SEARCH_PASSWORD: 'secret', SEARCH_API_KEY: 'a2V5', SEARCH_SSL_VERIFY: 'false', SEARCH_SSL_CA_PATH: 'ca.pem', SEARCH_REQUEST_TIMEOUT: '2500',
      SEARCH_MAX_RETRIES: '5', SEARCH_BULK_SIZE: '1000', SEARCH_SHARDS: '3', SEARCH_REPLICAS: '1', SEARCH_REFRESH_INTERVAL: '500ms',
    }).search;
    expect(search).to.deep.equal({
      url: 'https://search.example.com:9200', engine: 'opensearch', indexPrefix: 'acme-', username: 'indexer', password: 'secret', apiKey: 'a2V5',
      sslVerify: false, sslCaPath: path.resolve('ca.pem'), requestTimeoutMs: 2500, maxRetries: 5, bulkSize: 1000, shards: 3, replicas: 1, refreshInterval: '500ms',
    });
  });

  const refused: [Record<string, string>, RegExp][] = [
    [{ SEARCH_URL: 'ftp://search' }, /SEARCH_URL/],
    [{ SEARCH_URL: 'not a url' }, /SEARCH_URL/],
    [{ SEARCH_URL: 'http://user:pw@search:9200' }, /SEARCH_USERNAME/],
    [{ SEARCH_ENGINE: 'solr' }, /SEARCH_ENGINE/],
    [{ SEARCH_ENGINE: 'opensearch' }, /needs SEARCH_URL/],
    [{ SEARCH_ENGINE: 'postgres', SEARCH_URL: 'http://127.0.0.1:9200' }, /unset SEARCH_URL/],
    [{ SEARCH_INDEX_PREFIX: 'Upper_' }, /SEARCH_INDEX_PREFIX/],
    [{ SEARCH_INDEX_PREFIX: 'a b' }, /SEARCH_INDEX_PREFIX/],
    [{ SEARCH_INDEX_PREFIX: '_hidden' }, /SEARCH_INDEX_PREFIX/],
    [{ SEARCH_INDEX_PREFIX: 'acme-' }, /PostgreSQL tables/],
    [{ SEARCH_USERNAME: 'only-user' }, /together/],
    [{ SEARCH_SSL_VERIFY: 'maybe' }, /SEARCH_SSL_VERIFY/],
    [{ SEARCH_REQUEST_TIMEOUT: '0' }, /SEARCH_REQUEST_TIMEOUT/],
    [{ SEARCH_MAX_RETRIES: '-1' }, /SEARCH_MAX_RETRIES/],
    [{ SEARCH_BULK_SIZE: '0' }, /SEARCH_BULK_SIZE/],
    [{ SEARCH_SHARDS: '0' }, /SEARCH_SHARDS/],
    [{ SEARCH_REFRESH_INTERVAL: 'often' }, /SEARCH_REFRESH_INTERVAL/],
  ];
  for (const [env, message] of refused)
    it(`refuses ${JSON.stringify(env)}`, () => expect(() => loadConfig(env)).to.throw(ConfigError, message));
});
