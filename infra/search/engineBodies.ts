import {
  DATE_FIELDS, KEYWORD_FIELDS, MAX_RESULT_WINDOW, SEARCH_TYPES, TEXT_FIELDS,
  type Clause, type DocumentKey, type FacetRequest, type SearchDocument, type SearchHit, type SearchRequest,
  type SearchResult, type SearchSettings, type SearchType, type SortKey, type TextField, type WriteFailure,
} from '../../services/shared/search';

/**
 * What OpenSearch and Elasticsearch are sent and answer, shared by both adapters (the request
 * bodies of the two engines are the same; only their clients differ). Pure: no I/O.
 */

type Json = Record<string, unknown>;

/** The analyzer of every text field: standard tokenizer, lowercase, English stop words, English snowball stemming. */
export const TEXT_ANALYZER = 'testament_text';

/** `<prefix><type>_v<N>`: one versioned index per type. */
export const versionedIndex = (prefix: string, type: SearchType, version: number) => `${prefix}${type}_v${version}`;
/** The one index holding every version's checkpoints: one document per version (`v<N>`), key → position. */
export const checkpointIndex = (prefix: string) => `${prefix}checkpoints`;
export const checkpointDocId = (version: number) => `v${version}`;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Reads `<prefix><type>_v<N>` back; null for any other name (another prefix's, the checkpoints). */
export function parseVersionedIndex(prefix: string, name: string): { type: SearchType; version: number } | null {
  const match = new RegExp(`^${escapeRegExp(prefix)}(${SEARCH_TYPES.join('|')})_v(\\d+)$`).exec(name);
  return match ? { type: match[1] as SearchType, version: Number(match[2]) } : null;
}

/** Settings and mapping of a versioned index. */
export function indexBody(settings: Pick<SearchSettings, 'shards' | 'replicas' | 'refreshInterval'>): Json {
  const text = { type: 'text', analyzer: TEXT_ANALYZER };
  const keyword = { type: 'keyword' };
  const properties: Json = {
    title: { ...text, fields: { keyword: { type: 'keyword', ignore_above: 2048 } } },
    description: text,
    content: text,
    customFields: { type: 'nested', properties: { name: keyword, value: text } },
  };
  for (const field of KEYWORD_FIELDS) if (!field.includes('.')) properties[field] = keyword;
  for (const field of DATE_FIELDS) properties[field] = { type: 'date' };
  return {
    settings: {
      index: {
        number_of_shards: settings.shards,
        number_of_replicas: settings.replicas,
        max_result_window: MAX_RESULT_WINDOW,
        refresh_interval: settings.refreshInterval,
      },
      analysis: {
        char_filter: {
          // The standard tokenizer keeps `java.lang.NullPointerException` as one token: a dot next
          // to a letter separates words, so the class name is found on its own (`2.4` stays whole).
          testament_dotted_names: { type: 'pattern_replace', pattern: '(?<=\\p{L})\\.|\\.(?=\\p{L})', replacement: ' ' },
        },
        filter: {
          testament_stop: { type: 'stop', stopwords: '_english_' },
          testament_snowball: { type: 'snowball', language: 'English' },
        },
        analyzer: {
          [TEXT_ANALYZER]: {
            type: 'custom', char_filter: ['testament_dotted_names'], tokenizer: 'standard', filter: ['lowercase', 'testament_stop', 'testament_snowball'],
          },
        },
      },
    },
    // strict: a document with a field the mapping does not know is refused, not silently mapped.
    mappings: { dynamic: 'strict', properties },
  };
}

/** The index template of a prefix's versioned indices (see indexTemplateBody). */
export const indexTemplateName = (prefix: string) => `${prefix}versioned_indices`;

/**
 * An index template giving any versioned index of this prefix (`<prefix><type>_v*`) created
 * without a body the settings and mapping of indexBody: the indexer's bulk write into an index
 * that was just deleted (an administrator's delete, by hand or through the API) auto-creates it
 * with the custom analyzer and the strict mapping, never with dynamic mappings. No alias: an
 * alias in a template would make a version being built live before its switch.
 */
export function indexTemplateBody(prefix: string, settings: Pick<SearchSettings, 'shards' | 'replicas' | 'refreshInterval'>): Json {
  return {
    index_patterns: SEARCH_TYPES.map((type) => `${prefix}${type}_v*`),
    // Above the built-in templates (Elasticsearch: priority 100 and below) that could match a prefix.
    priority: 200,
    template: indexBody(settings),
    _meta: { description: 'Testament search: settings and mapping of every versioned index (infra/search/engineBodies.ts)' },
  };
}

/** A nested settings object as `a.b.c` → value (arrays joined with commas, every value a string, as the engines answer settings). */
export function flattenSettings(value: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (Array.isArray(value)) out[prefix] = value.map(String).join(',');
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) flattenSettings(inner, prefix ? `${prefix}.${key}` : key, out);
  } else out[prefix] = String(value);
  return out;
}

/**
 * How an index's analysis settings (as GET /<index>/_settings answers them) differ from the
 * current ones: the analyzer cannot be changed on an open index, only a reindex applies it.
 */
export function analysisConflicts(index: string, current: unknown, settings: Pick<SearchSettings, 'shards' | 'replicas' | 'refreshInterval'>): string[] {
  const wanted = flattenSettings(((indexBody(settings).settings as Json).analysis));
  const have = flattenSettings(current ?? {});
  return Object.entries(wanted)
    .filter(([key, value]) => have[key] !== value)
    .map(([key, value]) => `${index}: analysis ${key} is ${have[key] === undefined ? 'missing' : JSON.stringify(have[key])}, the current setting is ${JSON.stringify(value)}`);
}

/**
 * The update of a version's checkpoints: each key moves to the position given only when it is
 * further on than the one stored (positions and offsets are decimal integers); nothing moved, the
 * update is a no-op.
 */
export const FORWARD_ONLY_CHECKPOINTS = [
  'boolean moved = false;',
  'if (ctx._source.checkpoints == null) { ctx._source.checkpoints = new HashMap(); }',
  'for (def entry : params.checkpoints.entrySet()) {',
  '  def stored = ctx._source.checkpoints[entry.getKey()];',
  '  if (stored == null || Long.parseLong(stored.toString()) < Long.parseLong(entry.getValue())) {',
  '    ctx._source.checkpoints[entry.getKey()] = entry.getValue(); moved = true;',
  '  }',
  '}',
  "if (!moved) { ctx.op = 'noop'; }",
].join('\n');

/** The checkpoint index: positions are stored, never searched. */
export function checkpointIndexBody(settings: Pick<SearchSettings, 'replicas'>): Json {
  return {
    settings: { index: { number_of_shards: 1, number_of_replicas: settings.replicas } },
    mappings: { dynamic: false, properties: { version: { type: 'integer' } } },
  };
}

const NESTED_PATH = 'customFields';
const isNestedField = (field: string) => field.startsWith(`${NESTED_PATH}.`);
const nested = (query: Json, extra: Json = {}): Json => ({ nested: { path: NESTED_PATH, query, score_mode: 'max', ...extra } });

export interface TranslateOptions {
  /** Highlight matches inside custom field values (nested documents: through inner_hits). */
  highlightCustomFields?: boolean;
}

/** The Clause tree as query DSL. Clauses on `customFields.*` become `nested` queries. */
export function translate(clause: Clause, options: TranslateOptions = {}): Json {
  let innerHits = 0;
  const highlightInner = (): Json => options.highlightCustomFields
    ? { inner_hits: { name: `customFields_${innerHits++}`, _source: false, highlight: highlightBody([`${NESTED_PATH}.value` as TextField]) } }
    : {};
  const go = (c: Clause): Json => {
    switch (c.kind) {
      case 'all':
        return { match_all: {} };
      case 'text': {
        const own = c.fields.filter((f) => !isNestedField(f.field));
        const inNested = c.fields.filter((f) => isNestedField(f.field));
        const parts: Json[] = [];
        if (own.length > 0) {
          // A document matches when one field does (`and`: every word in that field); the best field scores.
          const type = c.phrase ? 'phrase' : 'best_fields';
          parts.push({
            multi_match: {
              query: c.query, type, fields: own.map((f) => (f.boost === 1 ? f.field : `${f.field}^${f.boost}`)),
              ...(c.phrase ? {} : { operator: c.operator }),
            },
          });
        }
        for (const f of inNested) {
          const match = c.phrase
            ? { match_phrase: { [f.field]: { query: c.query, boost: f.boost } } }
            : { match: { [f.field]: { query: c.query, operator: c.operator, boost: f.boost } } };
          parts.push(nested(match, highlightInner()));
        }
        if (parts.length === 1) return parts[0];
        if (parts.length === 0) return { match_none: {} };
        return { bool: { should: parts, minimum_should_match: 1 } };
      }
      case 'terms': {
        const query = { terms: { [c.field]: c.values } };
        return isNestedField(c.field) ? nested(query) : query;
      }
      case 'range': {
        const bounds: Json = {};
        for (const key of ['gte', 'gt', 'lte', 'lt'] as const) if (c[key] !== undefined) bounds[key] = c[key];
        return { range: { [c.field]: bounds } };
      }
      case 'prefix': {
        // Text is indexed lowercased (a prefix of a word); a keyword's prefix is literal, case included.
        const isText = (TEXT_FIELDS as readonly string[]).includes(c.field);
        const query = { prefix: { [c.field]: { value: isText ? c.value.toLowerCase() : c.value } } };
        return isNestedField(c.field) ? nested(query) : query;
      }
      case 'bool': {
        // Built as a literal: chai's `should` on Object.prototype shadows `bool.should` in tests' types.
        const bool: Json = {
          ...(c.must.length ? { must: c.must.map(go) } : {}),
          ...(c.should.length ? { should: c.should.map(go) } : {}),
          ...(c.filter.length ? { filter: c.filter.map(go) } : {}),
          ...(c.mustNot.length ? { must_not: c.mustNot.map(go) } : {}),
          ...(c.minimumShouldMatch !== undefined ? { minimum_should_match: c.minimumShouldMatch } : {}),
        };
        return { bool };
      }
      default:
        return assertNever(c);
    }
  };
  return go(clause);
}

function assertNever(value: never): never {
  throw new Error(`unexpected clause ${JSON.stringify(value)}`);
}

/** The query and the filters (which do not score) as one bool query. */
export function queryBody(query: Clause, filter: readonly Clause[], options: TranslateOptions = {}): Json {
  return { bool: { must: [translate(query, options)], filter: filter.map((c) => translate(c)) } };
}

function highlightBody(fields: readonly TextField[]): Json {
  return {
    pre_tags: ['<mark>'], post_tags: ['</mark>'], encoder: 'html',
    // A title is short: highlighted whole.
    fields: Object.fromEntries(fields.map((f) => [f, f === 'title' ? { number_of_fragments: 0 } : {}])),
  };
}

function sortBody(sort: readonly SortKey[]): Json[] {
  const keys: Json[] = (sort.length ? sort : [{ field: '_score', order: 'desc' } as SortKey]).map((key) => {
    if (key.field === '_score') return { _score: { order: key.order } };
    const options: Json = { order: key.order, missing: '_last' };
    if ((DATE_FIELDS as readonly string[]).includes(key.field)) options.unmapped_type = 'date';
    else options.unmapped_type = 'keyword';
    if (isNestedField(key.field)) options.nested = { path: NESTED_PATH };
    return { [key.field]: options };
  });
  // Equal keys: a stable order across pages.
  return [...keys, { type: { order: 'asc' } }, { id: { order: 'asc' } }];
}

export function searchBody(request: SearchRequest): Json {
  const own = request.highlight.filter((f) => !isNestedField(f));
  const body: Json = {
    query: queryBody(request.query, request.filter, { highlightCustomFields: request.highlight.some(isNestedField) }),
    sort: sortBody(request.sort),
    from: request.from,
    size: request.size,
    track_total_hits: true,
    // A score on every hit, sorted by score or not.
    track_scores: true,
  };
  if (own.length) body.highlight = highlightBody(own);
  return body;
}

export function facetsBody(request: FacetRequest): Json {
  const aggs: Json = {};
  request.fields.forEach((field, i) => {
    const terms = { terms: { field, size: request.size } };
    // A nested label counts the documents holding it, not its occurrences.
    aggs[`f${i}`] = isNestedField(field)
      ? { nested: { path: NESTED_PATH }, aggs: { labels: { ...terms, aggs: { documents: { reverse_nested: {} } } } } }
      : terms;
  });
  return { size: 0, track_total_hits: false, query: queryBody(request.query, request.filter), aggs };
}

/**
 * One bulk request's lines: upserts (whole documents), then deletions. With `readAt` (when the
 * documents were read, in microseconds:
 * DocumentWrites) each operation carries it as an external version (`external_gte`): the engine
 * refuses, with a conflict, a write older than the one it holds, so a request it applies late
 * (retried by the client after a timeout) or a reindex's page read before the indexer's write
 * cannot bring an older document back. A document written without one (before this existed) holds
 * an internal version, a small counter below any time.
 */
export function bulkBody(prefix: string, version: number, upsert: readonly SearchDocument[], remove: readonly DocumentKey[], readAt?: string): Json[] {
  const versioned = readAt === undefined ? {} : { version: Number(readAt), version_type: 'external_gte' };
  const lines: Json[] = [];
  for (const doc of upsert) lines.push({ index: { _index: versionedIndex(prefix, doc.type, version), _id: doc.id, ...versioned } }, { ...doc });
  for (const key of remove) lines.push({ delete: { _index: versionedIndex(prefix, key.type, version), _id: key.id, ...versioned } });
  return lines;
}

export interface BulkItemOutcome {
  /** Index of the operation in the request (upserts first, then deletions). */
  position: number;
  type: SearchType;
  id: string;
  status: number;
  reason: string;
}

/** Statuses of a bulk item worth retrying: the engine was busy, not the document wrong. */
export const RETRYABLE_ITEM_STATUSES: readonly number[] = [429, 502, 503, 504];

/**
 * The items of a bulk answer that did not succeed: `retry` (the engine was busy) and `failed`
 * (refused). Deleting a missing document is a success, and so is a version conflict: the engine
 * holds the document from a later read (bulkBody).
 */
export function bulkOutcome(response: Json, sent: readonly DocumentKey[]): { retry: BulkItemOutcome[]; failed: BulkItemOutcome[] } {
  const retry: BulkItemOutcome[] = [];
  const failed: BulkItemOutcome[] = [];
  const items = (response.items ?? []) as Record<string, { _index?: string; _id?: string; status: number; error?: { type?: string; reason?: string } | string }>[];
  if (!Array.isArray(items) || items.length !== sent.length) {
    // No per-item answer: nothing can be counted as acknowledged.
    const reason = `the bulk answer has ${Array.isArray(items) ? items.length : 0} item(s) for ${sent.length} operation(s)`;
    return { retry: [], failed: sent.map((key, position) => ({ position, ...key, status: 0, reason })) };
  }
  items.forEach((item, position) => {
    const [action, result] = Object.entries(item)[0];
    const status = result.status;
    if (status >= 200 && status < 300) return;
    if (action === 'delete' && status === 404) return;
    const error = result.error;
    if (status === 409 && typeof error === 'object' && error?.type === 'version_conflict_engine_exception') return;
    const reason = typeof error === 'string' ? error : error ? `${error.type ?? 'error'}: ${error.reason ?? ''}` : `status ${status}`;
    const outcome = { position, type: sent[position].type, id: sent[position].id, status, reason };
    (RETRYABLE_ITEM_STATUSES.includes(status) ? retry : failed).push(outcome);
  });
  return { retry, failed };
}

export const writeFailure = (o: BulkItemOutcome): WriteFailure => ({ type: o.type, id: o.id, reason: o.reason, status: o.status });

interface RawHit {
  _id: string;
  _score: number | null;
  _source: SearchDocument;
  highlight?: Record<string, string[]>;
  inner_hits?: Record<string, { hits: { hits: { highlight?: Record<string, string[]> }[] } }>;
}

export function parseSearch(response: Json): SearchResult {
  const hits = (response.hits ?? { total: 0, hits: [] }) as { total: number | { value: number }; hits: RawHit[] };
  const total = typeof hits.total === 'number' ? hits.total : hits.total?.value ?? 0;
  return {
    total,
    tookMs: Number(response.took ?? 0),
    hits: hits.hits.map((hit): SearchHit => {
      const highlight: Partial<Record<TextField, string[]>> = {};
      for (const [field, fragments] of Object.entries(hit.highlight ?? {})) highlight[field as TextField] = fragments;
      for (const inner of Object.values(hit.inner_hits ?? {})) {
        for (const innerHit of inner.hits.hits) {
          for (const [field, fragments] of Object.entries(innerHit.highlight ?? {})) {
            const key = field as TextField;
            highlight[key] = [...(highlight[key] ?? []), ...fragments.filter((f) => !(highlight[key] ?? []).includes(f))];
          }
        }
      }
      const doc = hit._source;
      return { type: doc.type, id: doc.id, projectId: doc.projectId, score: typeof hit._score === 'number' ? hit._score : null, highlight, document: doc };
    }),
  };
}

type Bucket = { key: string | number; key_as_string?: string; doc_count: number; documents?: { doc_count: number } };

export function parseFacets(request: FacetRequest, response: Json): Record<string, Record<string, number>> {
  const aggregations = (response.aggregations ?? {}) as Record<string, { buckets?: Bucket[]; labels?: { buckets: Bucket[] } }>;
  const out: Record<string, Record<string, number>> = {};
  request.fields.forEach((field, i) => {
    const agg = aggregations[`f${i}`];
    const buckets = agg?.buckets ?? agg?.labels?.buckets ?? [];
    out[field] = Object.fromEntries(buckets.map((b) => [b.key_as_string ?? String(b.key), b.documents?.doc_count ?? b.doc_count]));
  });
  return out;
}
