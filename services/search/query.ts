import { HttpError } from '../shared/errors';
import {
  DATE_FIELDS, KEYWORD_FIELDS, MAX_RESULT_WINDOW, SEARCH_TYPES, TEXT_FIELDS, isSearchType,
  type Clause, type DateField, type KeywordField, type SearchType, type SortKey, type TextField,
} from '../shared/search';
import { parseId } from '../shared/validate';

/**
 * The search API's requests, validated and normalised without I/O: the caller's `query` object (a
 * documented subset of the engines' query DSL, docs/search.md) becomes the port's `Clause`; sort,
 * highlight, filters and paging their plain values. Anything outside the subset is refused with
 * 400 naming its JSON path (`query.bool.must[1].script`): no scripts, no engine passthrough, no
 * field outside the index mapping.
 *
 * The subset:
 *   multi_match  {query, fields?: ["title^3", ...], type?: best_fields|phrase, operator?: or|and}
 *   match        {<field>: "words" | {query, operator?}}
 *   match_phrase {<field>: "words" | {query}}
 *   term         {<field>: value | {value}}
 *   terms        {<field>: [values]}
 *   range        {<date field>: {gte?, gt?, lte?, lt?}}  (ISO 8601 dates)
 *   prefix       {<field>: "start" | {value}}
 *   bool         {must?, should?, filter?, must_not?: clause | [clauses], minimum_should_match?: integer}
 *   match_all    {}
 */

/** Deepest nesting of bool clauses (the top clause is depth 1). */
export const MAX_QUERY_DEPTH = 10;
/** Most clauses in one query, bool clauses included. */
export const MAX_QUERY_CLAUSES = 100;
/** Longest text or value, in characters. */
export const MAX_QUERY_TEXT = 1000;
/** Most values of one `terms` clause. */
export const MAX_TERMS_VALUES = 1000;
/** Highest `^n` boost of a field. */
export const MAX_BOOST = 100;

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;

/** multi_match's fields when it names none, and GET /api/search's: the title counts most. */
export const DEFAULT_TEXT_FIELDS: readonly { field: TextField; boost: number }[] = [
  { field: 'title', boost: 3 }, { field: 'description', boost: 2 }, { field: 'content', boost: 1 }, { field: 'customFields.value', boost: 1 },
];

/** A refused part of the query, sort or highlight: 400 `invalid-search-query`, `details.path` naming it. */
export function refuse(path: string, reason: string, extra: Record<string, unknown> = {}): HttpError {
  return new HttpError(400, 'invalid-search-query', `${path} ${reason}`, { path, ...extra });
}

/** A refused parameter or body field (filters, paging): 400 `invalid-argument`, as elsewhere. */
export function invalidArgument(path: string, reason: string, extra: Record<string, unknown> = {}): HttpError {
  return new HttpError(400, 'invalid-argument', `${path} ${reason}`, { path, ...extra });
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Json, key: string) => Object.prototype.hasOwnProperty.call(o, key);
const isText = (f: string): f is TextField => (TEXT_FIELDS as readonly string[]).includes(f);
const isKeyword = (f: string): f is KeywordField => (KEYWORD_FIELDS as readonly string[]).includes(f);
const isDate = (f: string): f is DateField => (DATE_FIELDS as readonly string[]).includes(f);

/** Keys of an object, each of which must be among `allowed`; the first other one is refused by path. */
function onlyKeys(o: Json, allowed: readonly string[], path: string, refuser = refuse): string[] {
  const keys = Object.keys(o);
  const unknown = keys.find((k) => !allowed.includes(k));
  if (unknown !== undefined) throw refuser(path ? `${path}.${unknown}` : unknown, 'is not supported here', { allowed });
  return keys;
}

function text(value: unknown, path: string): string {
  if (typeof value !== 'string') throw refuse(path, 'must be a string');
  if (value.trim() === '') throw refuse(path, 'must not be blank');
  if (value.length > MAX_QUERY_TEXT) throw refuse(path, `must be at most ${MAX_QUERY_TEXT} characters`);
  return value;
}

/** An exact value: a string, or a number (ids), compared as its decimal text. */
function keywordValue(value: unknown, path: string): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') throw refuse(path, 'must be a string or a number');
  if (value === '') throw refuse(path, 'must not be empty');
  if (value.length > MAX_QUERY_TEXT) throw refuse(path, `must be at most ${MAX_QUERY_TEXT} characters`);
  return value;
}

/** Why a field cannot be used where it was, with the field to use instead when there is one. */
function fieldHint(field: string, wanted: 'text' | 'keyword' | 'date' | 'keyword-or-text'): string {
  if (isText(field) && wanted === 'keyword') {
    return field === 'title' ? 'is a full-text field: use title.keyword for the exact title, or match for words'
      : 'is a full-text field: use match or match_phrase for its words';
  }
  if (isKeyword(field) && wanted === 'text') return 'is an exact-value field: use term or terms';
  if (isDate(field) && wanted !== 'date') return 'is a date field: use range';
  if ((isText(field) || isKeyword(field)) && wanted === 'date') return 'is not a date field: range takes one of createdAt, updatedAt, executedAt';
  return 'is not a field of the index';
}

function allowedFields(wanted: 'text' | 'keyword' | 'date' | 'keyword-or-text'): readonly string[] {
  if (wanted === 'text') return TEXT_FIELDS;
  if (wanted === 'keyword') return KEYWORD_FIELDS;
  if (wanted === 'date') return DATE_FIELDS;
  return [...KEYWORD_FIELDS, ...TEXT_FIELDS];
}

/** `{<field>: body}` with exactly one field: the field and its body. */
function singleField(o: unknown, path: string): [string, unknown] {
  if (!isObject(o)) throw refuse(path, 'must be an object naming one field');
  const keys = Object.keys(o);
  if (keys.length !== 1) throw refuse(path, keys.length === 0 ? 'must name a field' : 'must name exactly one field', { fields: keys });
  return [keys[0], o[keys[0]]];
}

function checkField<W extends 'text' | 'keyword' | 'date' | 'keyword-or-text'>(field: string, wanted: W, path: string): void {
  const ok = wanted === 'text' ? isText(field) : wanted === 'keyword' ? isKeyword(field) : wanted === 'date' ? isDate(field) : isKeyword(field) || isText(field);
  if (!ok) throw refuse(path, fieldHint(field, wanted), { allowed: allowedFields(wanted) });
}

function operatorOf(value: unknown, path: string): 'or' | 'and' {
  if (typeof value === 'string' && ['or', 'and'].includes(value.toLowerCase())) return value.toLowerCase() as 'or' | 'and';
  throw refuse(path, 'must be or or and', { allowed: ['or', 'and'] });
}

const FIELD_WITH_BOOST = /^([A-Za-z][A-Za-z.]*)(?:\^(\d{1,3}(?:\.\d{1,3})?))?$/;

function multiMatch(body: unknown, path: string): Clause {
  if (!isObject(body)) throw refuse(path, 'must be an object');
  onlyKeys(body, ['query', 'fields', 'type', 'operator'], path);
  if (!has(body, 'query')) throw refuse(`${path}.query`, 'is required');
  const query = text(body.query, `${path}.query`);
  let fields = [...DEFAULT_TEXT_FIELDS];
  if (has(body, 'fields')) {
    const list = body.fields;
    if (!Array.isArray(list) || list.length === 0) throw refuse(`${path}.fields`, 'must be a non-empty list of fields');
    fields = list.map((entry, i) => {
      const at = `${path}.fields[${i}]`;
      if (typeof entry !== 'string') throw refuse(at, 'must be a field name, with an optional ^boost');
      const m = FIELD_WITH_BOOST.exec(entry);
      if (!m) throw refuse(at, 'must be a field name, with an optional ^boost (title^3)', { allowed: TEXT_FIELDS });
      checkField(m[1], 'text', at);
      const boost = m[2] === undefined ? 1 : Number(m[2]);
      if (!(boost > 0) || boost > MAX_BOOST) throw refuse(at, `has a boost outside (0, ${MAX_BOOST}]`);
      return { field: m[1] as TextField, boost };
    });
    const names = fields.map((f) => f.field);
    const twice = names.findIndex((n, i) => names.indexOf(n) !== i);
    if (twice >= 0) throw refuse(`${path}.fields[${twice}]`, 'names a field twice');
  }
  let phrase = false;
  if (has(body, 'type')) {
    if (body.type !== 'best_fields' && body.type !== 'phrase') throw refuse(`${path}.type`, 'must be best_fields or phrase', { allowed: ['best_fields', 'phrase'] });
    phrase = body.type === 'phrase';
  }
  const operator = has(body, 'operator') ? operatorOf(body.operator, `${path}.operator`) : 'or';
  return { kind: 'text', query, fields, operator, phrase };
}

/** match / match_phrase: words of one text field; on an exact-value field, its value (as the engines do). */
function match(body: unknown, path: string, phrase: boolean): Clause {
  const [field, spec] = singleField(body, path);
  const at = `${path}.${field}`;
  if (!isText(field) && !isKeyword(field)) throw refuse(at, fieldHint(field, 'text'), { allowed: TEXT_FIELDS });
  let query: unknown = spec;
  let operator: 'or' | 'and' = 'or';
  if (isObject(spec)) {
    onlyKeys(spec, phrase ? ['query'] : ['query', 'operator'], at);
    if (!has(spec, 'query')) throw refuse(`${at}.query`, 'is required');
    query = spec.query;
    if (has(spec, 'operator')) operator = operatorOf(spec.operator, `${at}.operator`);
  }
  const queryPath = isObject(spec) ? `${at}.query` : at;
  if (isKeyword(field)) return { kind: 'terms', field, values: [keywordValue(query, queryPath)] };
  return { kind: 'text', query: text(query, queryPath), fields: [{ field, boost: 1 }], operator, phrase };
}

function term(body: unknown, path: string): Clause {
  const [field, spec] = singleField(body, path);
  const at = `${path}.${field}`;
  checkField(field, 'keyword', at);
  if (isObject(spec)) {
    onlyKeys(spec, ['value'], at);
    if (!has(spec, 'value')) throw refuse(`${at}.value`, 'is required');
    return { kind: 'terms', field: field as KeywordField, values: [keywordValue(spec.value, `${at}.value`)] };
  }
  return { kind: 'terms', field: field as KeywordField, values: [keywordValue(spec, at)] };
}

function terms(body: unknown, path: string): Clause {
  const [field, spec] = singleField(body, path);
  const at = `${path}.${field}`;
  checkField(field, 'keyword', at);
  if (!Array.isArray(spec) || spec.length === 0) throw refuse(at, 'must be a non-empty list of values');
  if (spec.length > MAX_TERMS_VALUES) throw refuse(at, `must hold at most ${MAX_TERMS_VALUES} values`);
  return { kind: 'terms', field: field as KeywordField, values: [...new Set(spec.map((v, i) => keywordValue(v, `${at}[${i}]`)))] };
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * An ISO 8601 date or date-time, as a UTC instant (`2026-01-01T00:00:00.000Z`). A date alone is
 * its first instant, a time without a zone is UTC: every engine reads the bound alike.
 */
export function isoInstant(value: unknown, path: string, refuser = refuse): string {
  if (typeof value !== 'string') throw refuser(path, 'must be an ISO 8601 date (2026-01-31 or 2026-01-31T12:00:00Z)');
  const m = ISO_DATE.exec(value);
  if (!m) throw refuser(path, 'must be an ISO 8601 date (2026-01-31 or 2026-01-31T12:00:00Z)');
  const normal = value.length === 10 ? `${value}T00:00:00Z` : m[1] === undefined ? `${value}Z` : value;
  const ms = Date.parse(normal);
  // Date.parse rolls 2026-02-30 over to March: a date whose day part changed is not a date.
  if (Number.isNaN(ms) || (value.length >= 10 && new Date(ms + offsetMs(m[1])).toISOString().slice(0, 10) !== value.slice(0, 10))) {
    throw refuser(path, 'is not a valid date');
  }
  return new Date(ms).toISOString();
}

function offsetMs(zone: string | undefined): number {
  if (!zone || zone === 'Z') return 0;
  const sign = zone.startsWith('-') ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
}

function range(body: unknown, path: string): Clause {
  const [field, spec] = singleField(body, path);
  const at = `${path}.${field}`;
  checkField(field, 'date', at);
  if (!isObject(spec)) throw refuse(at, 'must be an object of bounds (gte, gt, lte, lt)');
  const keys = onlyKeys(spec, ['gte', 'gt', 'lte', 'lt'], at);
  if (keys.length === 0) throw refuse(at, 'must give at least one bound (gte, gt, lte, lt)');
  if (has(spec, 'gte') && has(spec, 'gt')) throw refuse(`${at}.gt`, 'cannot be given with gte');
  if (has(spec, 'lte') && has(spec, 'lt')) throw refuse(`${at}.lt`, 'cannot be given with lte');
  const clause: Clause & { kind: 'range' } = { kind: 'range', field: field as DateField };
  for (const bound of ['gte', 'gt', 'lte', 'lt'] as const) if (has(spec, bound)) clause[bound] = isoInstant(spec[bound], `${at}.${bound}`);
  return clause;
}

function prefix(body: unknown, path: string): Clause {
  const [field, spec] = singleField(body, path);
  const at = `${path}.${field}`;
  checkField(field, 'keyword-or-text', at);
  let value: unknown = spec;
  let valuePath = at;
  if (isObject(spec)) {
    onlyKeys(spec, ['value'], at);
    if (!has(spec, 'value')) throw refuse(`${at}.value`, 'is required');
    value = spec.value;
    valuePath = `${at}.value`;
  }
  if (typeof value !== 'string') throw refuse(valuePath, 'must be a string');
  if (value.trim() === '') throw refuse(valuePath, 'must not be blank');
  if (value.length > MAX_QUERY_TEXT) throw refuse(valuePath, `must be at most ${MAX_QUERY_TEXT} characters`);
  return { kind: 'prefix', field: field as KeywordField | TextField, value };
}

const OCCURS = { must: 'must', should: 'should', filter: 'filter', must_not: 'mustNot' } as const;

function bool(body: unknown, path: string, depth: number, budget: { left: number }): Clause {
  if (!isObject(body)) throw refuse(path, 'must be an object');
  onlyKeys(body, [...Object.keys(OCCURS), 'minimum_should_match'], path);
  const clause: Clause & { kind: 'bool' } = { kind: 'bool', must: [], should: [], filter: [], mustNot: [] };
  for (const [key, into] of Object.entries(OCCURS) as [keyof typeof OCCURS, (typeof OCCURS)[keyof typeof OCCURS]][]) {
    if (!has(body, key)) continue;
    const value = body[key];
    if (Array.isArray(value)) clause[into] = value.map((c, i) => parseClause(c, `${path}.${key}[${i}]`, depth + 1, budget));
    else clause[into] = [parseClause(value, `${path}.${key}`, depth + 1, budget)];
  }
  if (has(body, 'minimum_should_match')) {
    const at = `${path}.minimum_should_match`;
    const raw = body.minimum_should_match;
    const n = typeof raw === 'string' && /^\d{1,4}$/.test(raw) ? Number(raw) : raw;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw refuse(at, 'must be a non-negative integer (percentages are not supported)');
    if (n > clause.should.length) throw refuse(at, `is more than the ${clause.should.length} should clause(s): nothing could match`);
    clause.minimumShouldMatch = n;
  }
  const empty = clause.must.length + clause.should.length + clause.filter.length + clause.mustNot.length === 0;
  return empty ? { kind: 'all' } : clause;
}

const KINDS = ['multi_match', 'match', 'match_phrase', 'term', 'terms', 'range', 'prefix', 'bool', 'match_all'] as const;

/** Engine features outside the subset that callers are likely to try, named in the refusal. */
const NOT_SUPPORTED: Record<string, string> = {
  script: 'scripts are not accepted', script_score: 'scripts are not accepted', function_score: 'scoring functions are not accepted',
  query_string: 'query_string is not accepted: use multi_match or bool', simple_query_string: 'simple_query_string is not accepted: use multi_match or bool',
  wildcard: 'wildcard is not accepted: use prefix', regexp: 'regexp is not accepted: use prefix', fuzzy: 'fuzzy is not accepted',
  wrapper: 'raw queries are not accepted', exists: 'exists is not accepted', ids: 'ids is not accepted: use terms on id',
  nested: 'nested is not accepted', has_child: 'joins are not accepted', has_parent: 'joins are not accepted',
  more_like_this: 'more_like_this is not accepted', percolate: 'percolate is not accepted', geo_distance: 'geo queries are not accepted',
};

function parseClause(input: unknown, path: string, depth: number, budget: { left: number }): Clause {
  if (depth > MAX_QUERY_DEPTH) throw refuse(path, `nests deeper than ${MAX_QUERY_DEPTH} levels`);
  if (--budget.left < 0) throw refuse(path, `is one clause too many: at most ${MAX_QUERY_CLAUSES} clauses`);
  if (!isObject(input)) throw refuse(path, 'must be a query clause object (multi_match, match, bool, ...)', { allowed: KINDS });
  const keys = Object.keys(input);
  if (keys.length !== 1) {
    const other = keys.find((k) => !(KINDS as readonly string[]).includes(k));
    if (other !== undefined) throw refuse(`${path}.${other}`, NOT_SUPPORTED[other] ?? 'is not a supported query clause', { allowed: KINDS });
    throw refuse(path, keys.length === 0 ? 'is empty: name one clause' : 'must hold exactly one clause (combine clauses with bool)', { allowed: KINDS });
  }
  const kind = keys[0];
  const body = input[kind];
  const at = `${path}.${kind}`;
  switch (kind) {
    case 'multi_match': return multiMatch(body, at);
    case 'match': return match(body, at, false);
    case 'match_phrase': return match(body, at, true);
    case 'term': return term(body, at);
    case 'terms': return terms(body, at);
    case 'range': return range(body, at);
    case 'prefix': return prefix(body, at);
    case 'bool': return bool(body, at, depth, budget);
    case 'match_all':
      if (!isObject(body)) throw refuse(at, 'must be {}');
      onlyKeys(body, [], at);
      return { kind: 'all' };
    default:
      throw refuse(at, NOT_SUPPORTED[kind] ?? 'is not a supported query clause', { allowed: KINDS });
  }
}

/** The caller's query object as a Clause; `path` is where it sits in the request (`query`). */
export function parseQuery(input: unknown, path = 'query'): Clause {
  return parseClause(input, path, 1, { left: MAX_QUERY_CLAUSES });
}

/** GET /api/search's `q`: its words in the default fields, any of them matching. */
export function simpleQuery(q: string): Clause {
  return { kind: 'text', query: q, fields: [...DEFAULT_TEXT_FIELDS], operator: 'or', phrase: false };
}

// ---------------------------------------------------------------------------------------------
// sort and highlight

const SORTABLE = ['_score', ...KEYWORD_FIELDS, ...DATE_FIELDS] as const;

function sortable(field: string, path: string): void {
  if (!(SORTABLE as readonly string[]).includes(field)) {
    const reason = field === 'title' ? 'is a full-text field: sort by title.keyword'
      : isText(field) ? 'is a full-text field and cannot be sorted by' : 'is not a field one can sort by';
    throw refuse(path, reason, { allowed: SORTABLE });
  }
}

function sortKey(field: string, order: unknown, path: string, orderPath = path): SortKey {
  sortable(field, path);
  const o = order === undefined ? (field === '_score' ? 'desc' : 'asc') : order;
  if (o !== 'asc' && o !== 'desc') throw refuse(orderPath, 'must be asc or desc', { allowed: ['asc', 'desc'] });
  return { field: field as SortKey['field'], order: o };
}

/**
 * `sort`: a list (or one) of `{<field>: {order}}`, `{<field>: "asc"|"desc"}` or `"<field>"`
 * (`_score` descending, any other field ascending), `_score` included. Default: by score.
 */
export function parseSort(input: unknown, path = 'sort'): SortKey[] {
  if (input === undefined) return [{ field: '_score', order: 'desc' }];
  const list = Array.isArray(input) ? input : [input];
  if (list.length > 5) throw refuse(path, 'must hold at most 5 keys');
  const keys = list.map((entry, i) => {
    const at = Array.isArray(input) ? `${path}[${i}]` : path;
    if (typeof entry === 'string') return sortKey(entry, undefined, `${at}.${entry}`);
    const [field, spec] = singleField(entry, at);
    const fieldPath = `${at}.${field}`;
    sortable(field, fieldPath);
    if (isObject(spec)) {
      onlyKeys(spec, ['order'], fieldPath);
      return sortKey(field, spec.order, fieldPath, `${fieldPath}.order`);
    }
    if (typeof spec !== 'string') throw refuse(fieldPath, 'must be asc, desc or {order}');
    return sortKey(field, spec, fieldPath);
  });
  const names = keys.map((k) => k.field);
  const twice = names.findIndex((n, i) => names.indexOf(n) !== i);
  if (twice >= 0) throw refuse(Array.isArray(input) ? `${path}[${twice}]` : path, 'sorts by a field twice');
  return keys;
}

/** `highlight: {fields: {<text field>: {}}}`; absent: every text field. `fields: {}` highlights nothing. */
export function parseHighlight(input: unknown, path = 'highlight'): TextField[] {
  if (input === undefined) return [...TEXT_FIELDS];
  if (!isObject(input)) throw refuse(path, 'must be {fields: {<field>: {}}}');
  onlyKeys(input, ['fields'], path);
  if (!has(input, 'fields')) throw refuse(`${path}.fields`, 'is required');
  const fields = input.fields;
  if (!isObject(fields)) throw refuse(`${path}.fields`, 'must be an object of fields ({"title": {}})');
  return Object.keys(fields).map((field) => {
    const at = `${path}.fields.${field}`;
    checkField(field, 'text', at);
    const options = fields[field];
    if (!isObject(options)) throw refuse(at, 'must be {} (highlight options are not supported)');
    onlyKeys(options, [], at);
    return field as TextField;
  });
}

// ---------------------------------------------------------------------------------------------
// types, paging, filters

/** Entity types named by `type` (a list, or text with commas); none: every type. An unknown one is refused by name. */
export function parseTypes(input: unknown, path: string): SearchType[] {
  if (input === undefined) return [...SEARCH_TYPES];
  const parts = (Array.isArray(input) ? input : [input]).flatMap((v, i) => {
    if (typeof v !== 'string') throw invalidArgument(Array.isArray(input) ? `${path}[${i}]` : path, 'must be an entity type', { allowed: SEARCH_TYPES });
    return v.split(',').map((s) => s.trim());
  });
  if (parts.length === 0 || parts.every((p) => p === '')) throw invalidArgument(path, 'must name at least one entity type', { allowed: SEARCH_TYPES });
  const unknown = parts.find((p) => !isSearchType(p));
  if (unknown !== undefined) throw invalidArgument(path, `names an unknown entity type "${unknown}"`, { type: unknown, allowed: SEARCH_TYPES });
  return [...new Set(parts as SearchType[])];
}

/** A non-negative integer parameter: a JSON number, or (query strings) its digits. */
function integer(input: unknown, path: string, min: number, max: number): number {
  const n = typeof input === 'string' && /^\d{1,9}$/.test(input) ? Number(input) : input;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw invalidArgument(path, `must be an integer from ${min} to ${max}`, { min, max });
  return n;
}

export interface Page { limit: number; offset: number }

/**
 * `limit` (1 to MAX_LIMIT, default 25) and `offset` (default 0). `offset + limit` past the
 * indices' max_result_window is 400 `result-window-too-large`: page with filters instead.
 */
export function parsePage(limitInput: unknown, offsetInput: unknown): Page {
  const limit = limitInput === undefined ? DEFAULT_LIMIT : integer(limitInput, 'limit', 1, MAX_LIMIT);
  const offset = offsetInput === undefined ? 0 : integer(offsetInput, 'offset', 0, 999_999_999);
  if (offset + limit > MAX_RESULT_WINDOW) {
    throw new HttpError(400, 'result-window-too-large', `offset + limit must be at most ${MAX_RESULT_WINDOW}: narrow the search with filters instead of paging this deep`,
      { path: 'offset', offset, limit, maxResultWindow: MAX_RESULT_WINDOW });
  }
  return { limit, offset };
}

/** A project filter: a project id (a positive integer, as a number or its digits). */
export const parseProjectId = (input: unknown, path: string): string => String(parseId(path, input, 'either'));

/** A log position to wait for (X-Event-Position, `after`): a decimal 64-bit integer. */
export function parsePosition(input: unknown, path: string): bigint {
  if (typeof input === 'string' && /^\d{1,20}$/.test(input)) {
    const n = BigInt(input);
    if (n <= 2n ** 63n - 1n) return n;
  }
  throw invalidArgument(path, 'must be an event position (the decimal X-Event-Position of a write)');
}

export interface DateRange { field: DateField; from?: string; to?: string }

/** filters.dateRange `{field, from?, to?}`: both bounds included. */
export function parseDateRange(input: unknown, path: string): DateRange {
  if (!isObject(input)) throw invalidArgument(path, 'must be {field, from, to}');
  onlyKeys(input, ['field', 'from', 'to'], path, invalidArgument);
  const field = input.field;
  if (typeof field !== 'string' || !isDate(field)) throw invalidArgument(`${path}.field`, 'must be a date field', { allowed: DATE_FIELDS });
  if (!has(input, 'from') && !has(input, 'to')) throw invalidArgument(path, 'must give from, to or both');
  const range: DateRange = { field };
  if (has(input, 'from')) range.from = isoInstant(input.from, `${path}.from`, invalidArgument);
  if (has(input, 'to')) range.to = isoInstant(input.to, `${path}.to`, invalidArgument);
  if (range.from && range.to && range.from > range.to) throw invalidArgument(`${path}.to`, 'is before from');
  return range;
}

/** filters.tags: tag names, every one of which a hit must carry. */
export function parseTags(input: unknown, path: string): string[] {
  if (!Array.isArray(input)) throw invalidArgument(path, 'must be a list of tag names');
  if (input.length > 50) throw invalidArgument(path, 'must hold at most 50 tags');
  return [...new Set(input.map((t, i) => {
    if (typeof t !== 'string' || t === '' || t.length > MAX_QUERY_TEXT) throw invalidArgument(`${path}[${i}]`, 'must be a tag name');
    return t;
  }))];
}

/** What a search asks, validated: the route turns it into the engine's SearchRequest (search.service.ts). */
export interface SearchQuery {
  query: Clause;
  types: SearchType[];
  projectId: string | null;
  tags: string[];
  dateRange: DateRange | null;
  sort: SortKey[];
  highlight: TextField[];
  page: Page;
}

/** POST /api/search's body. */
export function parseSearchBody(body: unknown): SearchQuery {
  if (body === undefined || body === null) body = {};
  if (!isObject(body)) throw invalidArgument('', 'the body must be a JSON object');
  onlyKeys(body, ['query', 'filters', 'sort', 'highlight', 'limit', 'offset'], '', invalidArgument);
  const filters = has(body, 'filters') ? body.filters : {};
  if (!isObject(filters)) throw invalidArgument('filters', 'must be an object');
  onlyKeys(filters, ['type', 'tags', 'projectId', 'dateRange'], 'filters', invalidArgument);
  return {
    query: has(body, 'query') ? parseQuery(body.query) : { kind: 'all' },
    types: parseTypes(filters.type, 'filters.type'),
    projectId: has(filters, 'projectId') && filters.projectId !== null ? parseProjectId(filters.projectId, 'filters.projectId') : null,
    tags: has(filters, 'tags') ? parseTags(filters.tags, 'filters.tags') : [],
    dateRange: has(filters, 'dateRange') ? parseDateRange(filters.dateRange, 'filters.dateRange') : null,
    sort: parseSort(body.sort),
    highlight: parseHighlight(body.highlight),
    page: parsePage(body.limit, body.offset),
  };
}

/** The query string of a GET: every parameter known, none repeated (`type` may be). */
function queryParameters(query: Record<string, unknown>, known: readonly string[]): void {
  for (const [name, value] of Object.entries(query)) {
    if (!known.includes(name)) throw invalidArgument(name, 'is not a parameter of this endpoint', { parameters: known });
    if (name !== 'type' && typeof value !== 'string') throw invalidArgument(name, 'must be given once, as text');
  }
}

/** GET /api/search: `q` (required), `type`, `project`, `limit`, `offset` (and `after`, read by the route). */
export function parseSearchParameters(query: Record<string, unknown>): SearchQuery {
  queryParameters(query, ['q', 'type', 'project', 'limit', 'offset', 'after']);
  if (query.q === undefined || (query.q as string).trim() === '') throw invalidArgument('q', 'is required: the words to search for');
  if ((query.q as string).length > MAX_QUERY_TEXT) throw invalidArgument('q', `must be at most ${MAX_QUERY_TEXT} characters`);
  return {
    query: simpleQuery(query.q as string),
    types: parseTypes(query.type, 'type'),
    projectId: query.project === undefined ? null : parseProjectId(query.project, 'project'),
    tags: [],
    dateRange: null,
    sort: parseSort(undefined),
    highlight: parseHighlight(undefined),
    page: parsePage(query.limit, query.offset),
  };
}

export interface FacetQuery { query: Clause; types: SearchType[]; projectId: string | null }

/** GET /api/search/facets: `type`, `project`, and optionally `q` (count what those words find). */
export function parseFacetParameters(query: Record<string, unknown>): FacetQuery {
  queryParameters(query, ['q', 'type', 'project', 'after']);
  const q = query.q as string | undefined;
  if (q !== undefined && q.length > MAX_QUERY_TEXT) throw invalidArgument('q', `must be at most ${MAX_QUERY_TEXT} characters`);
  return {
    query: q === undefined || q.trim() === '' ? { kind: 'all' } : simpleQuery(q),
    types: parseTypes(query.type, 'type'),
    projectId: query.project === undefined ? null : parseProjectId(query.project, 'project'),
  };
}
