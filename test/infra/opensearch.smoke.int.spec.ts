// Smoke test of the real OpenSearch node (infra/opensearch/up.sh, `npm run search:up`): it is
// OpenSearch 2.19, it accepts an index with the spec's settings (1 shard, 0 replicas,
// max_result_window 50000, refresh_interval 1s, a custom analyzer: standard tokenizer, lowercase,
// stop, snowball), and that analyzer stems and drops stop words, so analysis-common is loaded.
// Plain fetch, no client library. SEARCH_URL (default http://127.0.0.1:9200); with nothing
// answering the suite is skipped, or fails when REQUIRE_SERVICES=1 (CI).
import { expect } from 'chai';
import { SEARCH_TEST_URL, dropIndices, requireOpenSearch, searchFetch, uniqueIndexPrefix } from '../support/search';

const SUITE = 'OpenSearch smoke test';

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await searchFetch(SEARCH_TEST_URL, path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

describe('OpenSearch node (npm run search:up)', function () {
  this.timeout(60_000);
  const prefix = uniqueIndexPrefix();
  const index = `${prefix}smoke`;

  before(async function () {
    await requireOpenSearch(this, SUITE);
  });

  after(async () => {
    // Also when a test failed half-way; nothing to do (and an error ignored) when the suite was skipped.
    await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  it('answers GET / as OpenSearch 2.19', async () => {
    const { status, json } = await call('GET', '/');
    expect(status).to.equal(200);
    expect(json.version.distribution).to.equal('opensearch');
    expect(json.version.number).to.match(/^2\.19\.\d+$/);
  });

  it('creates an index with the spec settings and analyzer, which stems and drops stop words', async () => {
    const created = await call('PUT', `/${index}`, {
      settings: {
        number_of_shards: 1,
        number_of_replicas: 0,
        max_result_window: 50000,
        refresh_interval: '1s',
        analysis: {
          analyzer: {
            testament_text: { type: 'custom', tokenizer: 'standard', filter: ['lowercase', 'stop', 'snowball'] },
          },
        },
      },
      mappings: { properties: { title: { type: 'text', analyzer: 'testament_text' } } },
    });
    expect(created.status, JSON.stringify(created.json)).to.equal(200);
    expect(created.json.acknowledged).to.equal(true);

    const settings = (await call('GET', `/${index}/_settings`)).json[index].settings.index;
    expect(settings).to.include({ number_of_shards: '1', number_of_replicas: '0', max_result_window: '50000', refresh_interval: '1s' });
    expect(settings.analysis.analyzer.testament_text).to.deep.include({ tokenizer: 'standard', filter: ['lowercase', 'stop', 'snowball'] });

    const health = await call('GET', `/_cluster/health/${index}?wait_for_status=green&timeout=30s`);
    expect(health.json.status).to.equal('green');

    const analyzed = await call('POST', `/${index}/_analyze`, { analyzer: 'testament_text', text: 'The Running Foxes' });
    expect(analyzed.status, JSON.stringify(analyzed.json)).to.equal(200);
    expect(analyzed.json.tokens.map((t: { token: string }) => t.token)).to.deep.equal(['run', 'fox']);
  });

  it('deletes the index again', async () => {
    expect((await call('DELETE', `/${index}`)).status).to.equal(200);
    expect((await call('GET', `/${index}`)).status).to.equal(404);
  });

  it('dropIndices deletes every index of its prefix and no other', async () => {
    const other = uniqueIndexPrefix();
    try {
      for (const name of [`${prefix}a`, `${prefix}b_v1`, `${other}a`]) {
        expect((await call('PUT', `/${name}`, { settings: { number_of_shards: 1, number_of_replicas: 0 } })).status, name).to.equal(200);
      }
      await dropIndices(SEARCH_TEST_URL, prefix);
      const left = (await call('GET', `/_cat/indices/${prefix}*,${other}*?format=json&h=index`)).json.map((row: { index: string }) => row.index);
      expect(left).to.deep.equal([`${other}a`]);
    } finally {
      await dropIndices(SEARCH_TEST_URL, other);
    }
  });
});
