import { expect } from 'chai';
import { HttpError } from '../../../services/shared/errors';
import { MAX_RESULT_WINDOW, SEARCH_TYPES, TEXT_FIELDS, type Clause } from '../../../services/shared/search';
import {
  DEFAULT_TEXT_FIELDS, MAX_QUERY_CLAUSES, MAX_QUERY_DEPTH, isoInstant, parseDateRange, parseFacetParameters, parseHighlight, parsePage,
  parsePosition, parseProjectId, parseQuery, parseSearchBody, parseSearchParameters, parseSort, parseTags, parseTypes,
} from '../../../services/search/query';

/** The refusal `fn` throws: its status, code and path. */
function refusal(fn: () => unknown): { status: number; code: string; path: unknown; details: Record<string, unknown>; message: string } {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof HttpError)) throw e;
    return { status: e.status, code: e.code, path: e.details.path, details: e.details, message: e.message };
  }
  throw new Error('expected a refusal');
}
const refusedQuery = (query: unknown, path: string) => {
  const r = refusal(() => parseQuery(query));
  expect(r, JSON.stringify(query)).to.include({ status: 400, code: 'invalid-search-query', path });
  return r;
};

describe('search query subset (services/search/query.ts)', () => {
  describe('accepted clauses, normalised to the port\'s Clause', () => {
    it('multi_match: fields with ^n boosts, type, operator; default fields title^3 description^2 content customFields.value', () => {
      expect(parseQuery({ multi_match: { query: 'login fails', fields: ['title^3', 'description^1.5', 'content'], operator: 'AND' } })).to.deep.equal({
        kind: 'text', query: 'login fails', operator: 'and', phrase: false,
        fields: [{ field: 'title', boost: 3 }, { field: 'description', boost: 1.5 }, { field: 'content', boost: 1 }],
      });
      expect(parseQuery({ multi_match: { query: 'x' } })).to.deep.equal({ kind: 'text', query: 'x', operator: 'or', phrase: false, fields: [...DEFAULT_TEXT_FIELDS] });
      expect(DEFAULT_TEXT_FIELDS).to.deep.equal([{ field: 'title', boost: 3 }, { field: 'description', boost: 2 }, { field: 'content', boost: 1 }, { field: 'customFields.value', boost: 1 }]);
      expect(parseQuery({ multi_match: { query: 'a b', type: 'phrase', fields: ['customFields.value'] } }))
        .to.include({ phrase: true }).and.to.have.deep.property('fields', [{ field: 'customFields.value', boost: 1 }]);
      expect(parseQuery({ multi_match: { query: 'a', type: 'best_fields', operator: 'or' } })).to.include({ phrase: false, operator: 'or' });
    });

    it('match and match_phrase: text or {query, operator}; on an exact-value field, its value (terms)', () => {
      expect(parseQuery({ match: { title: 'login' } })).to.deep.equal({ kind: 'text', query: 'login', fields: [{ field: 'title', boost: 1 }], operator: 'or', phrase: false });
      expect(parseQuery({ match: { content: { query: 'a b', operator: 'and' } } })).to.include({ operator: 'and', query: 'a b' });
      expect(parseQuery({ match_phrase: { description: 'exact words' } })).to.include({ phrase: true, query: 'exact words' });
      expect(parseQuery({ match_phrase: { title: { query: 'x y' } } })).to.include({ phrase: true, query: 'x y' });
      expect(parseQuery({ match: { state: 'Draft' } })).to.deep.equal({ kind: 'terms', field: 'state', values: ['Draft'] });
    });

    it('term and terms: exact values (numbers as their digits), values deduplicated', () => {
      expect(parseQuery({ term: { 'title.keyword': 'Login page' } })).to.deep.equal({ kind: 'terms', field: 'title.keyword', values: ['Login page'] });
      expect(parseQuery({ term: { projectId: 7 } })).to.deep.equal({ kind: 'terms', field: 'projectId', values: ['7'] });
      expect(parseQuery({ term: { tags: { value: 'smoke' } } })).to.deep.equal({ kind: 'terms', field: 'tags', values: ['smoke'] });
      expect(parseQuery({ terms: { status: ['failed', 'blocked', 'failed'] } })).to.deep.equal({ kind: 'terms', field: 'status', values: ['failed', 'blocked'] });
    });

    it('range on a date field: ISO dates and date-times as UTC instants', () => {
      expect(parseQuery({ range: { createdAt: { gte: '2026-01-01', lt: '2026-02-01T10:00:00+02:00' } } })).to.deep.equal({
        kind: 'range', field: 'createdAt', gte: '2026-01-01T00:00:00.000Z', lt: '2026-02-01T08:00:00.000Z',
      });
      expect(parseQuery({ range: { executedAt: { gt: '2026-03-04T05:06:07', lte: '2026-03-05T00:00:00.5Z' } } }))
        .to.deep.equal({ kind: 'range', field: 'executedAt', gt: '2026-03-04T05:06:07.000Z', lte: '2026-03-05T00:00:00.500Z' });
    });

    it('prefix on exact-value and text fields', () => {
      expect(parseQuery({ prefix: { folder: 'Checkout /' } })).to.deep.equal({ kind: 'prefix', field: 'folder', value: 'Checkout /' });
      expect(parseQuery({ prefix: { title: { value: 'log' } } })).to.deep.equal({ kind: 'prefix', field: 'title', value: 'log' });
    });

    it('bool: arrays or single clauses, minimum_should_match; nested; an empty bool and match_all are every document', () => {
      const q = parseQuery({
        bool: {
          must: { match: { title: 'login' } },
          should: [{ term: { tags: 'smoke' } }, { term: { tags: 'regression' } }],
          filter: [{ range: { createdAt: { gte: '2026-01-01' } } }],
          must_not: [{ bool: { must: [{ term: { state: 'Draft' } }] } }],
          minimum_should_match: 1,
        },
      });
      expect(q).to.deep.equal({
        kind: 'bool',
        must: [{ kind: 'text', query: 'login', fields: [{ field: 'title', boost: 1 }], operator: 'or', phrase: false }],
        should: [{ kind: 'terms', field: 'tags', values: ['smoke'] }, { kind: 'terms', field: 'tags', values: ['regression'] }],
        filter: [{ kind: 'range', field: 'createdAt', gte: '2026-01-01T00:00:00.000Z' }],
        mustNot: [{ kind: 'bool', must: [{ kind: 'terms', field: 'state', values: ['Draft'] }], should: [], filter: [], mustNot: [] }],
        minimumShouldMatch: 1,
      } satisfies Clause);
      expect(parseQuery({ bool: { should: [{ match: { title: 'a' } }], minimum_should_match: '1' } })).to.have.property('minimumShouldMatch', 1);
      expect(parseQuery({ bool: {} })).to.deep.equal({ kind: 'all' });
      expect(parseQuery({ match_all: {} })).to.deep.equal({ kind: 'all' });
    });

    it('accepts nesting down to the depth limit and exactly the clause limit', () => {
      let deep: unknown = { match: { title: 'x' } };
      for (let i = 1; i < MAX_QUERY_DEPTH; i++) deep = { bool: { must: [deep] } };
      expect(() => parseQuery(deep)).not.to.throw();
      const many = { bool: { should: Array.from({ length: MAX_QUERY_CLAUSES - 1 }, (_, i) => ({ term: { tags: `t${i}` } })) } };
      expect(() => parseQuery(many)).not.to.throw();
    });
  });

  describe('refusals name the JSON path', () => {
    it('scripts, query_string, wildcard, regexp, function_score, raw passthrough and unknown clauses', () => {
      refusedQuery({ bool: { must: [{ match: { title: 'a' } }, { script: { script: 'doc.x' } }] } }, 'query.bool.must[1].script');
      refusedQuery({ query_string: { query: 'title:x' } }, 'query.query_string');
      refusedQuery({ wildcard: { title: 'lo*' } }, 'query.wildcard');
      refusedQuery({ regexp: { title: '.*' } }, 'query.regexp');
      refusedQuery({ function_score: { query: { match_all: {} } } }, 'query.function_score');
      refusedQuery({ wrapper: { query: 'eyJtYXRjaF9hbGwiOnt9fQ==' } }, 'query.wrapper');
      refusedQuery({ script_score: {} }, 'query.script_score');
      refusedQuery({ bool: { filter: { nested: { path: 'x' } } } }, 'query.bool.filter.nested');
      refusedQuery({ frobnicate: {} }, 'query.frobnicate');
      const r = refusedQuery({ bool: { should: { script: {} } } }, 'query.bool.should.script');
      expect(r.message).to.match(/scripts are not accepted/);
    });

    it('a clause with two kinds, an extra key beside the kind, or none', () => {
      refusedQuery({ match: { title: 'a' }, script: {} }, 'query.script');
      refusedQuery({ match: { title: 'a' }, term: { tags: 'x' } }, 'query');
      refusedQuery({}, 'query');
      refusedQuery({ bool: { must: [{}] } }, 'query.bool.must[0]');
    });

    it('unknown keys inside a clause: boost, fuzziness, analyzer, format, minimum_should_match as a percentage', () => {
      refusedQuery({ multi_match: { query: 'a', fuzziness: 'AUTO' } }, 'query.multi_match.fuzziness');
      refusedQuery({ match: { title: { query: 'a', analyzer: 'x' } } }, 'query.match.title.analyzer');
      refusedQuery({ match_phrase: { title: { query: 'a', operator: 'and' } } }, 'query.match_phrase.title.operator');
      refusedQuery({ term: { tags: { value: 'a', boost: 2 } } }, 'query.term.tags.boost');
      refusedQuery({ range: { createdAt: { gte: '2026-01-01', format: 'yyyy' } } }, 'query.range.createdAt.format');
      refusedQuery({ prefix: { title: { value: 'a', case_insensitive: true } } }, 'query.prefix.title.case_insensitive');
      refusedQuery({ bool: { must: [], boost: 2 } }, 'query.bool.boost');
      refusedQuery({ bool: { should: [{ match: { title: 'a' } }], minimum_should_match: '50%' } }, 'query.bool.minimum_should_match');
      refusedQuery({ bool: { should: [{ match: { title: 'a' } }], minimum_should_match: 2 } }, 'query.bool.minimum_should_match');
      refusedQuery({ match_all: { boost: 1 } }, 'query.match_all.boost');
    });

    it('fields outside the mapping, or of the wrong kind for the clause, with a hint', () => {
      expect(refusedQuery({ term: { title: 'Login' } }, 'query.term.title').message).to.match(/title\.keyword/);
      refusedQuery({ term: { description: 'x' } }, 'query.term.description');
      refusedQuery({ terms: { password: ['x'] } }, 'query.terms.password');
      refusedQuery({ match: { secret: 'x' } }, 'query.match.secret');
      refusedQuery({ match: { createdAt: '2026-01-01' } }, 'query.match.createdAt');
      expect(refusedQuery({ multi_match: { query: 'a', fields: ['title', 'tags'] } }, 'query.multi_match.fields[1]').message).to.match(/term/);
      refusedQuery({ multi_match: { query: 'a', fields: ['*'] } }, 'query.multi_match.fields[0]');
      refusedQuery({ multi_match: { query: 'a', fields: ['title^0'] } }, 'query.multi_match.fields[0]');
      refusedQuery({ multi_match: { query: 'a', fields: ['title^1000'] } }, 'query.multi_match.fields[0]');
      refusedQuery({ multi_match: { query: 'a', fields: ['title', 'title^2'] } }, 'query.multi_match.fields[1]');
      refusedQuery({ multi_match: { query: 'a', fields: [] } }, 'query.multi_match.fields');
      refusedQuery({ multi_match: { query: 'a', fields: [3] } }, 'query.multi_match.fields[0]');
      refusedQuery({ range: { title: { gte: 'a' } } }, 'query.range.title');
      refusedQuery({ range: { projectId: { gte: 1 } } }, 'query.range.projectId');
      refusedQuery({ prefix: { createdAt: '2026' } }, 'query.prefix.createdAt');
      expect(refusedQuery({ term: { 'customFields.value': 'x' } }, 'query.term.customFields.value').details.allowed).to.include('customFields.name');
    });

    it('values of the wrong type, blank, too long or malformed', () => {
      refusedQuery({ multi_match: { fields: ['title'] } }, 'query.multi_match.query');
      refusedQuery({ multi_match: { query: '   ' } }, 'query.multi_match.query');
      refusedQuery({ multi_match: { query: 5 } }, 'query.multi_match.query');
      refusedQuery({ multi_match: { query: 'x'.repeat(1001) } }, 'query.multi_match.query');
      refusedQuery({ multi_match: { query: 'a', type: 'cross_fields' } }, 'query.multi_match.type');
      refusedQuery({ multi_match: { query: 'a', operator: 'xor' } }, 'query.multi_match.operator');
      refusedQuery({ match: { title: { operator: 'and' } } }, 'query.match.title.query');
      refusedQuery({ match: { title: ['a'] } }, 'query.match.title');
      refusedQuery({ match: {} }, 'query.match');
      refusedQuery({ match: { title: 'a', content: 'b' } }, 'query.match');
      refusedQuery({ term: { tags: true } }, 'query.term.tags');
      refusedQuery({ term: { tags: null } }, 'query.term.tags');
      refusedQuery({ term: { tags: '' } }, 'query.term.tags');
      refusedQuery({ term: { tags: {} } }, 'query.term.tags.value');
      refusedQuery({ terms: { tags: [] } }, 'query.terms.tags');
      refusedQuery({ terms: { tags: 'smoke' } }, 'query.terms.tags');
      refusedQuery({ terms: { tags: ['a', { b: 1 }] } }, 'query.terms.tags[1]');
      refusedQuery({ terms: { tags: Array.from({ length: 1001 }, (_, i) => `t${i}`) } }, 'query.terms.tags');
      refusedQuery({ range: { createdAt: {} } }, 'query.range.createdAt');
      refusedQuery({ range: { createdAt: '2026-01-01' } }, 'query.range.createdAt');
      refusedQuery({ range: { createdAt: { gte: 'yesterday' } } }, 'query.range.createdAt.gte');
      refusedQuery({ range: { createdAt: { gte: 'now-1d' } } }, 'query.range.createdAt.gte');
      refusedQuery({ range: { createdAt: { lt: '2026-02-30' } } }, 'query.range.createdAt.lt');
      refusedQuery({ range: { createdAt: { gte: 20260101 } } }, 'query.range.createdAt.gte');
      refusedQuery({ range: { createdAt: { gte: '2026-01-01', gt: '2026-01-01' } } }, 'query.range.createdAt.gt');
      refusedQuery({ prefix: { title: '' } }, 'query.prefix.title');
      refusedQuery({ prefix: { title: { value: 3 } } }, 'query.prefix.title.value');
    });

    it('hostile shapes: not an object, arrays, null, prototype keys, depth and clause count over the limits', () => {
      for (const q of [null, 'title:x', 42, true, [{ match_all: {} }]]) refusedQuery(q, 'query');
      refusedQuery(JSON.parse('{"__proto__": {"match_all": {}}}'), 'query.__proto__');
      refusedQuery(JSON.parse('{"match": {"__proto__": "x"}}'), 'query.match.__proto__');
      refusedQuery({ constructor: {} }, 'query.constructor');
      refusedQuery({ bool: { must: [null] } }, 'query.bool.must[0]');
      refusedQuery({ bool: { must: 'x' } }, 'query.bool.must');
      refusedQuery({ bool: [] }, 'query.bool');
      let deep: unknown = { match: { title: 'x' } };
      for (let i = 0; i < MAX_QUERY_DEPTH; i++) deep = { bool: { must: [deep] } };
      expect(refusal(() => parseQuery(deep)).path).to.match(/^query(\.bool\.must\[0\]){10}$/);
      let veryDeep: unknown = {};
      for (let i = 0; i < 10_000; i++) veryDeep = { bool: { must: veryDeep } };
      expect(refusal(() => parseQuery(veryDeep)).code).to.equal('invalid-search-query');
      const many = { bool: { should: Array.from({ length: MAX_QUERY_CLAUSES }, (_, i) => ({ term: { tags: `t${i}` } })) } };
      refusedQuery(many, `query.bool.should[${MAX_QUERY_CLAUSES - 1}]`);
      // Nothing of the caller's object reaches the clause but what was validated.
      const parsed = parseQuery({ match: { title: { query: 'x' } } });
      expect(Object.getPrototypeOf(parsed)).to.equal(Object.prototype);
    });
  });

  describe('sort and highlight', () => {
    it('sort: {field: {order}}, {field: order} or a field name, _score included; default by score', () => {
      expect(parseSort(undefined)).to.deep.equal([{ field: '_score', order: 'desc' }]);
      expect(parseSort([{ createdAt: { order: 'desc' } }, { _score: 'asc' }, 'title.keyword'])).to.deep.equal([
        { field: 'createdAt', order: 'desc' }, { field: '_score', order: 'asc' }, { field: 'title.keyword', order: 'asc' },
      ]);
      expect(parseSort('_score')).to.deep.equal([{ field: '_score', order: 'desc' }]);
      expect(parseSort({ updatedAt: {} })).to.deep.equal([{ field: 'updatedAt', order: 'asc' }]);
    });

    it('sort refusals: text fields (title → title.keyword), unknown fields, scripts, bad orders, repeats', () => {
      expect(refusal(() => parseSort([{ title: 'asc' }]))).to.include({ code: 'invalid-search-query', path: 'sort[0].title' });
      expect(refusal(() => parseSort([{ title: 'asc' }])).message).to.match(/title\.keyword/);
      expect(refusal(() => parseSort([{ content: 'asc' }]))).to.include({ path: 'sort[0].content' });
      expect(refusal(() => parseSort([{ _script: { script: 'x' } }]))).to.include({ path: 'sort[0]._script' });
      expect(refusal(() => parseSort([{ createdAt: { order: 'up' } }]))).to.include({ path: 'sort[0].createdAt.order' });
      expect(refusal(() => parseSort([{ createdAt: { order: 'asc', mode: 'min' } }]))).to.include({ path: 'sort[0].createdAt.mode' });
      expect(refusal(() => parseSort([{ createdAt: 'sideways' }]))).to.include({ path: 'sort[0].createdAt' });
      expect(refusal(() => parseSort([{ createdAt: 'asc', updatedAt: 'asc' }]))).to.include({ path: 'sort[0]' });
      expect(refusal(() => parseSort(['_score', { _score: 'asc' }]))).to.include({ path: 'sort[1]' });
      expect(refusal(() => parseSort([1]))).to.include({ path: 'sort[0]' });
      expect(refusal(() => parseSort(Array.from({ length: 6 }, () => '_score')))).to.include({ path: 'sort' });
    });

    it('highlight: {fields: {<text field>: {}}}; absent: every text field', () => {
      expect(parseHighlight(undefined)).to.deep.equal([...TEXT_FIELDS]);
      expect(parseHighlight({ fields: { title: {}, 'customFields.value': {} } })).to.deep.equal(['title', 'customFields.value']);
      expect(parseHighlight({ fields: {} })).to.deep.equal([]);
      expect(refusal(() => parseHighlight({ fields: { tags: {} } }))).to.include({ code: 'invalid-search-query', path: 'highlight.fields.tags' });
      expect(refusal(() => parseHighlight({ fields: { title: { pre_tags: ['<script>'] } } }))).to.include({ path: 'highlight.fields.title.pre_tags' });
      expect(refusal(() => parseHighlight({ fields: ['title'] }))).to.include({ path: 'highlight.fields' });
      expect(refusal(() => parseHighlight({ fields: { title: {} }, encoder: 'html' }))).to.include({ path: 'highlight.encoder' });
      expect(refusal(() => parseHighlight({}))).to.include({ path: 'highlight.fields' });
    });
  });

  describe('parameters and filters', () => {
    it('types: a list, text with commas, or none (every type); an unknown one is refused by name', () => {
      expect(parseTypes(undefined, 'type')).to.deep.equal([...SEARCH_TYPES]);
      expect(parseTypes('repository_cases,failures', 'type')).to.deep.equal(['repository_cases', 'failures']);
      expect(parseTypes(['sessions', 'sessions'], 'filters.type')).to.deep.equal(['sessions']);
      expect(refusal(() => parseTypes('cases', 'type'))).to.deep.include({ status: 400, code: 'invalid-argument', path: 'type' });
      expect(refusal(() => parseTypes('cases', 'type')).details.type).to.equal('cases');
      expect(refusal(() => parseTypes(['sessions', 3], 'filters.type'))).to.include({ path: 'filters.type[1]' });
      expect(refusal(() => parseTypes('', 'type'))).to.include({ path: 'type' });
      expect(refusal(() => parseTypes([], 'filters.type'))).to.include({ path: 'filters.type' });
    });

    it('paging: limit 25 and offset 0 by default, integers in range, offset + limit within max_result_window', () => {
      expect(parsePage(undefined, undefined)).to.deep.equal({ limit: 25, offset: 0 });
      expect(parsePage('100', '40')).to.deep.equal({ limit: 100, offset: 40 });
      expect(parsePage(1, MAX_RESULT_WINDOW - 1)).to.deep.equal({ limit: 1, offset: MAX_RESULT_WINDOW - 1 });
      expect(parsePage(10, MAX_RESULT_WINDOW - 10)).to.deep.equal({ limit: 10, offset: MAX_RESULT_WINDOW - 10 });
      for (const bad of ['101', '0', 0, '-1', '1.5', 'ten', '', 101, -1, 2.5, null, true]) {
        expect(refusal(() => parsePage(bad, undefined)), String(bad)).to.include({ code: 'invalid-argument', path: 'limit' });
      }
      for (const bad of ['-1', '1e3', 'x', -1, 0.5]) expect(refusal(() => parsePage(undefined, bad)), String(bad)).to.include({ code: 'invalid-argument', path: 'offset' });
      expect(refusal(() => parsePage(10, MAX_RESULT_WINDOW - 9))).to.include({ status: 400, code: 'result-window-too-large', path: 'offset' });
    });

    it('project ids, positions, tags and date ranges', () => {
      expect(parseProjectId('12', 'project')).to.equal('12');
      expect(parseProjectId(12, 'filters.projectId')).to.equal('12');
      for (const bad of ['0', '-1', 'A', '1.0', '99999999999', 0, 1.5, 'x']) expect(refusal(() => parseProjectId(bad, 'project')).path).to.equal('project');
      expect(parsePosition('123', 'after')).to.equal(123n);
      for (const bad of ['-1', 'abc', '1e5', '99999999999999999999', ['1']]) expect(refusal(() => parsePosition(bad, 'after')).path).to.equal('after');
      expect(parseTags(['a', 'b', 'a'], 'filters.tags')).to.deep.equal(['a', 'b']);
      expect(refusal(() => parseTags('a', 'filters.tags')).path).to.equal('filters.tags');
      expect(refusal(() => parseTags(['a', ''], 'filters.tags')).path).to.equal('filters.tags[1]');
      expect(parseDateRange({ field: 'updatedAt', from: '2026-01-01', to: '2026-01-31T23:59:59Z' }, 'filters.dateRange'))
        .to.deep.equal({ field: 'updatedAt', from: '2026-01-01T00:00:00.000Z', to: '2026-01-31T23:59:59.000Z' });
      expect(refusal(() => parseDateRange({ field: 'title', from: '2026-01-01' }, 'filters.dateRange')).path).to.equal('filters.dateRange.field');
      expect(refusal(() => parseDateRange({ field: 'createdAt' }, 'filters.dateRange')).path).to.equal('filters.dateRange');
      expect(refusal(() => parseDateRange({ field: 'createdAt', from: 'soon' }, 'filters.dateRange')).path).to.equal('filters.dateRange.from');
      expect(refusal(() => parseDateRange({ field: 'createdAt', from: '2026-02-01', to: '2026-01-01' }, 'filters.dateRange')).path).to.equal('filters.dateRange.to');
      expect(refusal(() => parseDateRange({ field: 'createdAt', from: '2026-01-01', script: 'x' }, 'filters.dateRange')))
        .to.include({ code: 'invalid-argument', path: 'filters.dateRange.script' });
      expect(isoInstant('2024-02-29', 'x')).to.equal('2024-02-29T00:00:00.000Z');
      expect(refusal(() => isoInstant('2025-02-29', 'x')).path).to.equal('x');
    });

    it('POST body: every part, defaults, unknown fields refused', () => {
      const q = parseSearchBody({
        query: { multi_match: { query: 'login', fields: ['title^2'] } },
        filters: { type: ['repository_cases'], tags: ['smoke'], projectId: '3', dateRange: { field: 'createdAt', from: '2026-01-01' } },
        sort: [{ _score: { order: 'desc' } }], highlight: { fields: { title: {} } }, limit: 5, offset: 10,
      });
      expect(q).to.deep.equal({
        query: { kind: 'text', query: 'login', fields: [{ field: 'title', boost: 2 }], operator: 'or', phrase: false },
        types: ['repository_cases'], projectId: '3', tags: ['smoke'], dateRange: { field: 'createdAt', from: '2026-01-01T00:00:00.000Z' },
        sort: [{ field: '_score', order: 'desc' }], highlight: ['title'], page: { limit: 5, offset: 10 },
      });
      expect(parseSearchBody({})).to.deep.include({ query: { kind: 'all' }, types: [...SEARCH_TYPES], projectId: null, tags: [], dateRange: null, page: { limit: 25, offset: 0 } });
      expect(refusal(() => parseSearchBody({ size: 10 }))).to.include({ code: 'invalid-argument', path: 'size' });
      expect(refusal(() => parseSearchBody({ filters: { owner: 'x' } }))).to.include({ code: 'invalid-argument', path: 'filters.owner' });
      expect(refusal(() => parseSearchBody({ filters: [] }))).to.include({ path: 'filters' });
      expect(refusal(() => parseSearchBody([]))).to.include({ path: '' });
      expect(refusal(() => parseSearchBody({ filters: { type: ['nope'] } }))).to.include({ path: 'filters.type' });
      expect(refusal(() => parseSearchBody({ query: { script: {} } }))).to.include({ code: 'invalid-search-query', path: 'query.script' });
      expect(refusal(() => parseSearchBody({ limit: 60, offset: MAX_RESULT_WINDOW - 50 }))).to.include({ code: 'result-window-too-large' });
    });

    it('GET parameters: q required and not blank, unknown or repeated parameters refused', () => {
      const q = parseSearchParameters({ q: 'login', type: 'sessions', project: '4', limit: '10', offset: '20' });
      expect(q).to.deep.include({ types: ['sessions'], projectId: '4', page: { limit: 10, offset: 20 }, highlight: [...TEXT_FIELDS] });
      expect(q.query).to.deep.equal({ kind: 'text', query: 'login', fields: [...DEFAULT_TEXT_FIELDS], operator: 'or', phrase: false });
      expect(refusal(() => parseSearchParameters({}))).to.include({ code: 'invalid-argument', path: 'q' });
      expect(refusal(() => parseSearchParameters({ q: '  ' }))).to.include({ path: 'q' });
      expect(refusal(() => parseSearchParameters({ q: ['a', 'b'] }))).to.include({ path: 'q' });
      expect(refusal(() => parseSearchParameters({ q: { a: '1' } }))).to.include({ path: 'q' });
      expect(refusal(() => parseSearchParameters({ q: 'a', sort: 'x' }))).to.include({ path: 'sort' });
      expect(refusal(() => parseSearchParameters({ q: 'a', limit: ['1', '2'] }))).to.include({ path: 'limit' });
      expect(parseSearchParameters({ q: 'a', type: ['sessions', 'failures'] }).types).to.deep.equal(['sessions', 'failures']);
      expect(parseFacetParameters({})).to.deep.equal({ query: { kind: 'all' }, types: [...SEARCH_TYPES], projectId: null });
      expect(parseFacetParameters({ q: 'x', type: 'repository_cases' }).query).to.include({ kind: 'text', query: 'x' });
      expect(refusal(() => parseFacetParameters({ limit: '3' }))).to.include({ path: 'limit' });
    });
  });
});
