import { expect } from 'chai';
import {
  bulkBody, bulkOutcome, checkpointIndexBody, facetsBody, indexBody, parseFacets, parseSearch, parseVersionedIndex,
  searchBody, translate, versionedIndex,
} from '../../../infra/search/engineBodies';
import { detectEngine } from '../../../infra/search';
import { DEFAULT_SEARCH_SETTINGS, MAX_RESULT_WINDOW, type Clause, type SearchRequest } from '../../../services/shared/search';
import { searchDocument } from './documents';

describe('search engine bodies (OpenSearch and Elasticsearch)', () => {
  const request = (r: Partial<SearchRequest>): SearchRequest =>
    ({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 25, ...r });

  describe('index settings and mapping', () => {
    const body = indexBody({ shards: 3, replicas: 1, refreshInterval: '2s' }) as any;

    it('names the spec settings: shards, replicas, max_result_window 50000, refresh_interval', () => {
      expect(body.settings.index).to.deep.equal({ number_of_shards: 3, number_of_replicas: 1, max_result_window: MAX_RESULT_WINDOW, refresh_interval: '2s' });
      expect(MAX_RESULT_WINDOW).to.equal(50_000);
    });

    it('a custom analyzer: standard tokenizer, lowercase, English stop words, English snowball', () => {
      const analyzer = body.settings.analysis.analyzer.testament_text;
      expect(analyzer).to.include({ type: 'custom', tokenizer: 'standard' });
      const filters = analyzer.filter.map((name: string) => body.settings.analysis.filter[name] ?? name);
      expect(filters).to.deep.equal(['lowercase', { type: 'stop', stopwords: '_english_' }, { type: 'snowball', language: 'English' }]);
    });

    it('maps text, the title keyword, keywords, dates and custom fields as nested; nothing else is accepted', () => {
      const p = body.mappings.properties;
      expect(body.mappings.dynamic).to.equal('strict');
      for (const f of ['title', 'description', 'content']) expect(p[f]).to.include({ type: 'text', analyzer: 'testament_text' });
      expect(p.title.fields.keyword.type).to.equal('keyword');
      for (const f of ['id', 'type', 'projectId', 'tags', 'folder', 'template', 'state', 'status', 'creator', 'configuration', 'branch', 'failureType', 'project', 'runId', 'caseId']) {
        expect(p[f], f).to.deep.equal({ type: 'keyword' });
      }
      for (const f of ['createdAt', 'updatedAt', 'executedAt']) expect(p[f]).to.deep.equal({ type: 'date' });
      expect(p.customFields).to.deep.equal({ type: 'nested', properties: { name: { type: 'keyword' }, value: { type: 'text', analyzer: 'testament_text' } } });
      // Every field of a document is mapped (a strict mapping would refuse the document otherwise).
      expect(Object.keys(p).sort()).to.deep.equal(Object.keys(searchDocument('failures', 'x', {})).sort());
    });

    it('the checkpoint index stores positions without indexing them; versioned names read back', () => {
      expect((checkpointIndexBody({ replicas: 0 }) as any).mappings.dynamic).to.equal(false);
      expect(versionedIndex('t_', 'failures', 3)).to.equal('t_failures_v3');
      expect(parseVersionedIndex('t_', 't_repository_cases_v12')).to.deep.equal({ type: 'repository_cases', version: 12 });
      expect(parseVersionedIndex('t_', 't_checkpoints')).to.equal(null);
      expect(parseVersionedIndex('t_', 'u_failures_v1')).to.equal(null);
      expect(parseVersionedIndex('t.', 'tx_failures_v1'), 'the prefix is literal').to.equal(null);
    });
  });

  describe('Clause → query DSL', () => {
    const text = (over: Partial<Extract<Clause, { kind: 'text' }>>): Clause =>
      ({ kind: 'text', query: 'login page', fields: [{ field: 'title', boost: 3 }, { field: 'content', boost: 1 }], operator: 'or', phrase: false, ...over });

    it('text: multi_match best_fields with field^boost and the operator; phrase: type phrase', () => {
      expect(translate(text({}))).to.deep.equal({ multi_match: { query: 'login page', type: 'best_fields', fields: ['title^3', 'content'], operator: 'or' } });
      expect(translate(text({ operator: 'and' }))).to.deep.equal({ multi_match: { query: 'login page', type: 'best_fields', fields: ['title^3', 'content'], operator: 'and' } });
      expect(translate(text({ phrase: true }))).to.deep.equal({ multi_match: { query: 'login page', type: 'phrase', fields: ['title^3', 'content'] } });
    });

    it('text on a custom field value: a nested query beside the multi_match', () => {
      const fields = [{ field: 'title' as const, boost: 2 }, { field: 'customFields.value' as const, boost: 1.5 }];
      expect(translate(text({ fields }))).to.deep.equal({
        bool: {
          should: [
            { multi_match: { query: 'login page', type: 'best_fields', fields: ['title^2'], operator: 'or' } },
            { nested: { path: 'customFields', score_mode: 'max', query: { match: { 'customFields.value': { query: 'login page', operator: 'or', boost: 1.5 } } } } },
          ],
          minimum_should_match: 1,
        },
      });
      expect(translate(text({ fields: [{ field: 'customFields.value', boost: 1 }], phrase: true }))).to.deep.equal({
        nested: { path: 'customFields', score_mode: 'max', query: { match_phrase: { 'customFields.value': { query: 'login page', boost: 1 } } } },
      });
    });

    it('terms, range, prefix (a text prefix lowercased, a keyword one literal), all', () => {
      expect(translate({ kind: 'terms', field: 'tags', values: ['a', 'B'] })).to.deep.equal({ terms: { tags: ['a', 'B'] } });
      expect(translate({ kind: 'terms', field: 'customFields.name', values: ['Priority'] }))
        .to.deep.equal({ nested: { path: 'customFields', score_mode: 'max', query: { terms: { 'customFields.name': ['Priority'] } } } });
      expect(translate({ kind: 'range', field: 'createdAt', gte: '2024-01-01', lt: '2024-02-01' })).to.deep.equal({ range: { createdAt: { gte: '2024-01-01', lt: '2024-02-01' } } });
      expect(translate({ kind: 'prefix', field: 'title', value: 'Expo' })).to.deep.equal({ prefix: { title: { value: 'expo' } } });
      expect(translate({ kind: 'prefix', field: 'folder', value: 'Web /' })).to.deep.equal({ prefix: { folder: { value: 'Web /' } } });
      expect(translate({ kind: 'prefix', field: 'customFields.value', value: 'Auth' }))
        .to.deep.equal({ nested: { path: 'customFields', score_mode: 'max', query: { prefix: { 'customFields.value': { value: 'auth' } } } } });
      expect(translate({ kind: 'all' })).to.deep.equal({ match_all: {} });
    });

    it('bool: must, should, filter, must_not and minimum_should_match, recursively; empty parts left out', () => {
      const t: Clause = { kind: 'terms', field: 'state', values: ['Active'] };
      expect(translate({ kind: 'bool', must: [t], should: [t, t], filter: [t], mustNot: [{ kind: 'bool', must: [], should: [t], filter: [], mustNot: [] }], minimumShouldMatch: 2 }))
        .to.deep.equal({
          bool: {
            must: [{ terms: { state: ['Active'] } }], should: [{ terms: { state: ['Active'] } }, { terms: { state: ['Active'] } }],
            filter: [{ terms: { state: ['Active'] } }], must_not: [{ bool: { should: [{ terms: { state: ['Active'] } }] } }], minimum_should_match: 2,
          },
        });
      expect(translate({ kind: 'bool', must: [], should: [], filter: [], mustNot: [] })).to.deep.equal({ bool: {} });
    });
  });

  describe('search and facet bodies', () => {
    it('the query scores, the filters do not; exact total; sort with a tiebreak; from/size; highlight escaped as HTML', () => {
      const body = searchBody(request({
        query: { kind: 'text', query: 'x', fields: [{ field: 'title', boost: 1 }], operator: 'or', phrase: false },
        filter: [{ kind: 'terms', field: 'projectId', values: ['1'] }],
        sort: [{ field: 'createdAt', order: 'desc' }, { field: '_score', order: 'desc' }],
        highlight: ['title', 'content'], from: 50, size: 10,
      })) as any;
      expect(body.query).to.deep.equal({
        bool: { must: [{ multi_match: { query: 'x', type: 'best_fields', fields: ['title'], operator: 'or' } }], filter: [{ terms: { projectId: ['1'] } }] },
      });
      expect(body).to.include({ from: 50, size: 10, track_total_hits: true });
      expect(body.sort).to.deep.equal([
        { createdAt: { order: 'desc', missing: '_last', unmapped_type: 'date' } }, { _score: { order: 'desc' } },
        { type: { order: 'asc' } }, { id: { order: 'asc' } },
      ]);
      expect(body.highlight).to.deep.equal({ pre_tags: ['<mark>'], post_tags: ['</mark>'], encoder: 'html', fields: { title: { number_of_fragments: 0 }, content: {} } });
      expect((searchBody(request({})) as any).sort[0]).to.deep.equal({ _score: { order: 'desc' } });
      expect(searchBody(request({})).highlight).to.equal(undefined);
    });

    it('a highlighted custom field value: inner hits of the nested query carry it', () => {
      const body = searchBody(request({
        query: { kind: 'text', query: 'x', fields: [{ field: 'customFields.value', boost: 1 }], operator: 'or', phrase: false },
        highlight: ['customFields.value'],
      })) as any;
      expect(body.highlight).to.equal(undefined);
      const nested = body.query.bool.must[0].nested;
      expect(nested.inner_hits.highlight.fields).to.have.keys('customFields.value');
      expect(nested.inner_hits.highlight.encoder).to.equal('html');
    });

    it('facets: terms aggregations of the asked size with the same query and filter, no hits; a nested field counts documents', () => {
      const body = facetsBody({ types: ['repository_cases'], query: { kind: 'all' }, filter: [{ kind: 'terms', field: 'projectId', values: ['1'] }], fields: ['tags', 'customFields.name'], size: 7 }) as any;
      expect(body.size).to.equal(0);
      expect(body.query).to.deep.equal({ bool: { must: [{ match_all: {} }], filter: [{ terms: { projectId: ['1'] } }] } });
      expect(body.aggs.f0).to.deep.equal({ terms: { field: 'tags', size: 7 } });
      expect(body.aggs.f1).to.deep.equal({ nested: { path: 'customFields' }, aggs: { labels: { terms: { field: 'customFields.name', size: 7 }, aggs: { documents: { reverse_nested: {} } } } } });
    });

    it('parses hits (total as a number or an object, highlights merged from inner hits) and facets', () => {
      const doc = searchDocument('failures', 'f1', { projectId: 'p1' });
      const parsed = parseSearch({
        took: 4,
        hits: {
          total: { value: 12345, relation: 'eq' },
          hits: [{
            _id: 'f1', _score: 1.5, _source: doc, highlight: { title: ['<mark>a</mark>'] },
            inner_hits: { customFields_0: { hits: { hits: [{ highlight: { 'customFields.value': ['<mark>b</mark>'] } }] } } },
          }],
        },
      });
      expect(parsed).to.deep.equal({
        total: 12345, tookMs: 4,
        hits: [{ type: 'failures', id: 'f1', projectId: 'p1', score: 1.5, highlight: { title: ['<mark>a</mark>'], 'customFields.value': ['<mark>b</mark>'] }, document: doc }],
      });
      expect(parseSearch({ took: 1, hits: { total: 3, hits: [] } }).total).to.equal(3);
      const facets = parseFacets({ types: [], query: { kind: 'all' }, filter: [], fields: ['tags', 'customFields.name', 'state'], size: 5 }, {
        aggregations: {
          f0: { buckets: [{ key: 'smoke', doc_count: 2 }] },
          f1: { labels: { buckets: [{ key: 'Priority', doc_count: 5, documents: { doc_count: 3 } }] } },
        },
      });
      expect(facets).to.deep.equal({ tags: { smoke: 2 }, 'customFields.name': { Priority: 3 }, state: {} });
    });
  });

  describe('bulk', () => {
    it('upserts (whole documents) then deletions, each into the versioned index of its type', () => {
      const doc = searchDocument('repository_cases', '7', {});
      expect(bulkBody('t_', 2, [doc], [{ type: 'comments', id: '9' }])).to.deep.equal([
        { index: { _index: 't_repository_cases_v2', _id: '7' } }, doc,
        { delete: { _index: 't_comments_v2', _id: '9' } },
      ]);
    });

    it('with the time the documents were read: each operation carries it as an external version (external_gte), the document itself unchanged', () => {
      const doc = searchDocument('repository_cases', '7', {});
      expect(bulkBody('t_', 2, [doc], [{ type: 'comments', id: '9' }], '1796174550535123')).to.deep.equal([
        { index: { _index: 't_repository_cases_v2', _id: '7', version: 1796174550535123, version_type: 'external_gte' } }, doc,
        { delete: { _index: 't_comments_v2', _id: '9', version: 1796174550535123, version_type: 'external_gte' } },
      ]);
    });

    it('a version conflict (the engine holds the document from a later read) is no failure; any other conflict is', () => {
      const sent = [{ type: 'repository_cases' as const, id: 'a' }, { type: 'repository_cases' as const, id: 'b' }, { type: 'comments' as const, id: 'c' }];
      const outcome = bulkOutcome({
        errors: true,
        items: [
          { index: { _id: 'a', status: 409, error: { type: 'version_conflict_engine_exception', reason: '[a]: version conflict, current version [20] is higher than the one provided [10]' } } },
          { delete: { _id: 'b', status: 409, error: { type: 'version_conflict_engine_exception', reason: 'version conflict' } } },
          { index: { _id: 'c', status: 409, error: { type: 'document_already_exists_exception', reason: 'exists' } } },
        ],
      }, sent);
      expect(outcome).to.deep.equal({ retry: [], failed: [{ position: 2, type: 'comments', id: 'c', status: 409, reason: 'document_already_exists_exception: exists' }] });
    });

    it('a partial failure: refused items named, busy ones (429/503) to retry, a missing deletion is no failure', () => {
      const sent = [
        { type: 'repository_cases' as const, id: 'a' }, { type: 'repository_cases' as const, id: 'b' },
        { type: 'failures' as const, id: 'c' }, { type: 'comments' as const, id: 'd' }, { type: 'comments' as const, id: 'e' },
      ];
      const outcome = bulkOutcome({
        errors: true,
        items: [
          { index: { _id: 'a', status: 201 } },
          { index: { _id: 'b', status: 400, error: { type: 'mapper_parsing_exception', reason: 'failed to parse field [createdAt]' } } },
          { index: { _id: 'c', status: 429, error: { type: 'es_rejected_execution_exception', reason: 'queue full' } } },
          { delete: { _id: 'd', status: 404, result: 'not_found' } },
          { delete: { _id: 'e', status: 503, error: { type: 'unavailable_shards_exception', reason: 'primary shard is not active' } } },
        ],
      }, sent);
      expect(outcome.failed).to.deep.equal([{ position: 1, type: 'repository_cases', id: 'b', status: 400, reason: 'mapper_parsing_exception: failed to parse field [createdAt]' }]);
      expect(outcome.retry.map((o) => [o.position, o.id, o.status])).to.deep.equal([[2, 'c', 429], [4, 'e', 503]]);
      expect(bulkOutcome({ errors: false, items: [{ index: { status: 200 } }] }, sent.slice(0, 1))).to.deep.equal({ retry: [], failed: [] });
    });

    it('an answer without one item per operation acknowledges none of them', () => {
      const outcome = bulkOutcome({ errors: false, items: [] }, [{ type: 'failures', id: 'x' }]);
      expect(outcome.failed.map((o) => o.id)).to.deep.equal(['x']);
    });
  });

  describe('engine detection from GET /', () => {
    const json = { 'content-type': 'application/json; charset=UTF-8' };
    it('OpenSearch by its distribution; Elasticsearch 8/9 by its product header or tagline', () => {
      expect(detectEngine({ status: 200, headers: json, body: { version: { distribution: 'opensearch', number: '2.19.6' }, tagline: 'The OpenSearch Project: https://opensearch.org/' } }))
        .to.deep.equal({ engine: 'opensearch', version: '2.19.6' });
      expect(detectEngine({ status: 200, headers: { ...json, 'x-elastic-product': 'Elasticsearch' }, body: { version: { number: '9.1.0', build_flavor: 'default' }, tagline: 'You Know, for Search' } }))
        .to.deep.equal({ engine: 'elasticsearch', version: '9.1.0' });
      expect(detectEngine({ status: 200, headers: json, body: { version: { number: '8.15.0' }, tagline: 'You Know, for Search' } }))
        .to.deep.equal({ engine: 'elasticsearch', version: '8.15.0' });
    });

    it('Elasticsearch 7, another server or a refused login: no engine, and why', () => {
      const es7 = detectEngine({ status: 200, headers: json, body: { version: { number: '7.10.2' }, tagline: 'You Know, for Search' } });
      expect(es7).to.deep.equal({ engine: null, reason: 'it is Elasticsearch 7.10.2' });
      const other = detectEngine({ status: 200, headers: { 'content-type': 'text/html' }, body: '<html>hello</html>' });
      expect(other.engine).to.equal(null);
      expect((other as { reason: string }).reason).to.contain('200 (text/html)').and.contain('hello');
      expect((detectEngine({ status: 401, headers: json, body: {} }) as { reason: string }).reason).to.contain('SEARCH_USERNAME');
    });
  });

  it('the default settings make a valid index body', () => {
    expect((indexBody(DEFAULT_SEARCH_SETTINGS) as any).settings.index.refresh_interval).to.equal('1s');
  });
});
