import {
  BulkWriteFailed, SEARCH_TYPES, SearchUnavailable,
  type DocumentKey, type EngineInfo, type FacetRequest, type IndexStats, type SearchDocument, type SearchEngine,
  type SearchRequest, type SearchResult, type SearchSettings, type SearchType,
} from '../../services/shared/search';
import {
  bulkBody, bulkOutcome, checkpointDocId, checkpointIndex, checkpointIndexBody, facetsBody, indexBody, parseFacets,
  parseSearch, parseVersionedIndex, searchBody, versionedIndex, writeFailure, type BulkItemOutcome,
} from './engineBodies';

/**
 * The SearchEngine port over an OpenSearch or Elasticsearch REST API. The engines take the same
 * requests; infra/search/opensearch.ts and elasticsearch.ts only provide the transport (their
 * client, its authentication, TLS, time limit and retries).
 */

type Json = Record<string, unknown>;
export type DocumentEngineName = Exclude<EngineInfo['engine'], 'postgres'>;

export interface EngineRequest {
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'DELETE';
  path: string;
  body?: Json;
  /** NDJSON lines (`_bulk`). */
  bulk?: Json[];
  /** Retries of this request instead of the client's SEARCH_MAX_RETRIES (0 for a search a user waits on). */
  maxRetries?: number;
  querystring?: Record<string, string | number | boolean>;
  /** Statuses answered instead of thrown. */
  ignore?: number[];
}

export interface EngineResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  headers: Record<string, unknown>;
}

/**
 * One engine's client. `request` throws SearchUnavailable when the engine does not answer (after
 * the client's retries: connection refused, timeout, 5xx, 429) and SearchRequestFailed when it
 * refuses the request (other 4xx not in `ignore`).
 */
export interface EngineTransport {
  request(request: EngineRequest): Promise<EngineResponse>;
  close(): Promise<void>;
}

/** The engine refused a request (a 4xx): a bug in the request or a mapping conflict, not an outage. */
export class SearchRequestFailed extends Error {
  constructor(readonly status: number, readonly errorType: string, reason: string, readonly path: string) {
    super(`the search engine refused ${path} (${status} ${errorType}): ${reason}`);
    this.name = 'SearchRequestFailed';
  }
}

/** `http://user:secret@host:9200/` → `http://host:9200/`: for messages and logs. */
export function urlWithoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(an invalid URL)';
  }
}

const OUTAGE_ERRORS = ['ConnectionError', 'TimeoutError', 'NoLivingConnectionsError', 'RequestAbortedError'];

/**
 * A client's error as the port's: SearchUnavailable (no answer, 5xx, 429), SearchRequestFailed
 * (another 4xx), or the error itself (a client misuse, a refused product).
 */
export function classifyClientError(engine: DocumentEngineName, url: string, path: string, error: unknown): Error {
  const e = error as { name?: string; message?: string; meta?: { statusCode?: number | null; body?: unknown }; body?: unknown };
  const where = urlWithoutCredentials(url);
  if (e?.name && OUTAGE_ERRORS.includes(e.name)) {
    return new SearchUnavailable(engine, new Error(`${where}: ${e.name}: ${e.message}`, { cause: error }));
  }
  if (e?.name === 'ResponseError') {
    const status = e.meta?.statusCode ?? 0;
    const body = (e.meta?.body ?? e.body) as { error?: { type?: string; reason?: string } | string } | undefined;
    const type = typeof body?.error === 'object' ? body.error.type ?? 'error' : 'error';
    const reason = typeof body?.error === 'object' ? body.error.reason ?? '' : typeof body?.error === 'string' ? body.error : String(e.message);
    if (status >= 500 || status === 429) {
      return new SearchUnavailable(engine, new Error(`${where}: ${status} ${type}: ${reason}`, { cause: error }));
    }
    return new SearchRequestFailed(status, type, reason, path);
  }
  return error instanceof Error ? error : new Error(String(error));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Operation = { upsert: SearchDocument } | { remove: DocumentKey };
const keyOf = (op: Operation): DocumentKey => ('upsert' in op ? { type: op.upsert.type, id: op.upsert.id } : op.remove);

export class DocumentSearchEngine implements SearchEngine {
  private readonly prefix: string;

  constructor(
    readonly engine: DocumentEngineName,
    private readonly transport: EngineTransport,
    private readonly settings: SearchSettings,
    /** First wait before retrying the bulk items the engine was too busy for; doubled each time. */
    private readonly retryDelayMs = 100,
  ) {
    this.prefix = settings.indexPrefix;
  }

  aliasOf(type: SearchType): string {
    return `${this.prefix}${type}`;
  }

  async info(): Promise<EngineInfo> {
    const { body } = await this.transport.request({ method: 'GET', path: '/' });
    return { engine: this.engine, version: String(body?.version?.number ?? 'unknown') };
  }

  async ensureVersion(version: number): Promise<void> {
    const body = indexBody(this.settings);
    await Promise.all([
      ...SEARCH_TYPES.map((type) => this.createIndex(versionedIndex(this.prefix, type, version), body)),
      this.createIndex(checkpointIndex(this.prefix), checkpointIndexBody(this.settings)),
    ]);
  }

  private async createIndex(name: string, body: Json): Promise<void> {
    const path = `/${encodeURIComponent(name)}`;
    const response = await this.transport.request({ method: 'PUT', path, body, ignore: [400] });
    if (response.status === 400) {
      const error = response.body?.error ?? {};
      if (error.type === 'resource_already_exists_exception') return;
      throw new SearchRequestFailed(400, error.type ?? 'error', error.reason ?? JSON.stringify(response.body), path);
    }
  }

  /** Index → its aliases, for this prefix's indices. */
  private async aliases(): Promise<Map<string, Set<string>>> {
    const { body } = await this.transport.request({ method: 'GET', path: `/${encodeURIComponent(this.prefix)}*/_alias`, ignore: [404] });
    const out = new Map<string, Set<string>>();
    for (const [index, value] of Object.entries((body ?? {}) as Record<string, { aliases?: Json }>)) {
      if (value && typeof value === 'object' && value.aliases) out.set(index, new Set(Object.keys(value.aliases)));
    }
    return out;
  }

  /** Each versioned index: type, version, whether its alias points at it. */
  private async layout(): Promise<{ index: string; type: SearchType; version: number; live: boolean }[]> {
    const aliases = await this.aliases();
    const out: { index: string; type: SearchType; version: number; live: boolean }[] = [];
    for (const [index, names] of aliases) {
      const parsed = parseVersionedIndex(this.prefix, index);
      if (parsed) out.push({ index, ...parsed, live: names.has(this.aliasOf(parsed.type)) });
    }
    return out;
  }

  async liveVersion(): Promise<number | null> {
    const live = (await this.layout()).filter((i) => i.live).map((i) => i.version);
    return live.length ? Math.max(...live) : null;
  }

  async versions(): Promise<number[]> {
    return [...new Set((await this.layout()).map((i) => i.version))].sort((a, b) => a - b);
  }

  async switchAlias(version: number): Promise<void> {
    const layout = await this.layout();
    const actions: Json[] = [];
    for (const type of SEARCH_TYPES) {
      const target = versionedIndex(this.prefix, type, version);
      if (!layout.some((i) => i.index === target)) throw new Error(`cannot switch the search aliases to version ${version}: ${target} does not exist`);
      for (const i of layout) if (i.type === type && i.live && i.index !== target) actions.push({ remove: { index: i.index, alias: this.aliasOf(type) } });
      actions.push({ add: { index: target, alias: this.aliasOf(type) } });
    }
    // One request: the engine applies every action at once.
    await this.transport.request({ method: 'POST', path: '/_aliases', body: { actions } });
  }

  async dropVersion(version: number): Promise<void> {
    if ((await this.liveVersion()) === version) throw new Error(`search index version ${version} is live: switch the aliases away before dropping it`);
    const names = SEARCH_TYPES.map((type) => encodeURIComponent(versionedIndex(this.prefix, type, version)));
    await this.transport.request({ method: 'DELETE', path: `/${names.join(',')}`, querystring: { ignore_unavailable: true }, ignore: [404] });
    await this.transport.request({
      method: 'DELETE', path: `/${encodeURIComponent(checkpointIndex(this.prefix))}/_doc/${checkpointDocId(version)}`, ignore: [404],
    });
  }

  async write(
    version: number,
    ops: { upsert: readonly SearchDocument[]; remove: readonly DocumentKey[] },
    checkpoints?: Readonly<Record<string, string>>,
  ): Promise<void> {
    // Upserts before deletions: a document both written and removed in one call ends removed.
    const all: Operation[] = [...ops.upsert.map((upsert) => ({ upsert })), ...ops.remove.map((remove) => ({ remove }))];
    const size = Math.max(1, this.settings.bulkSize);
    const failed: BulkItemOutcome[] = [];
    for (let start = 0; start < all.length; start += size) failed.push(...await this.bulk(version, all.slice(start, start + size)));
    if (failed.length) throw new BulkWriteFailed(failed.map(writeFailure));
    if (checkpoints && Object.keys(checkpoints).length) {
      await this.transport.request({
        method: 'POST',
        path: `/${encodeURIComponent(checkpointIndex(this.prefix))}/_update/${checkpointDocId(version)}`,
        querystring: { retry_on_conflict: 5 },
        body: { doc: { version, checkpoints }, doc_as_upsert: true },
      });
    }
  }

  /** One bulk request, its busy items retried with backoff: the items still not written. */
  private async bulk(version: number, operations: Operation[]): Promise<BulkItemOutcome[]> {
    const refused: BulkItemOutcome[] = [];
    let pending = operations;
    for (let attempt = 0; ; attempt++) {
      const upsert = pending.flatMap((op) => ('upsert' in op ? [op.upsert] : []));
      const remove = pending.flatMap((op) => ('remove' in op ? [op.remove] : []));
      // In the order of the bulk body: upserts, then deletions.
      const ordered: Operation[] = [...upsert.map((d) => ({ upsert: d })), ...remove.map((k) => ({ remove: k }))];
      const { body } = await this.transport.request({
        method: 'POST', path: '/_bulk', bulk: bulkBody(this.prefix, version, upsert, remove), querystring: { refresh: 'false' },
      });
      const { retry, failed } = bulkOutcome(body ?? {}, ordered.map(keyOf));
      refused.push(...failed);
      if (retry.length === 0) return refused;
      if (attempt >= this.settings.maxRetries) return [...refused, ...retry];
      await sleep(this.retryDelayMs * 2 ** attempt);
      pending = retry.map((o) => ordered[o.position]);
    }
  }

  async readCheckpoints(version: number): Promise<Record<string, string>> {
    const { status, body } = await this.transport.request({
      method: 'GET', path: `/${encodeURIComponent(checkpointIndex(this.prefix))}/_doc/${checkpointDocId(version)}`, ignore: [404],
    });
    if (status === 404 || !body?.found) return {};
    return { ...(body._source?.checkpoints ?? {}) };
  }

  async refresh(version?: number): Promise<void> {
    // Without a version: every version of this prefix (what is written may not be live yet).
    const names = version === undefined
      ? [`${encodeURIComponent(this.prefix)}*`]
      : SEARCH_TYPES.map((type) => encodeURIComponent(versionedIndex(this.prefix, type, version)));
    await this.transport.request({
      method: 'POST', path: `/${names.join(',')}/_refresh`, querystring: { ignore_unavailable: true, allow_no_indices: true },
    });
  }

  private searchPath(types: readonly SearchType[]): string {
    return `/${types.map((type) => encodeURIComponent(this.aliasOf(type))).join(',')}/_search`;
  }

  async search(request: SearchRequest): Promise<SearchResult> {
    if (request.types.length === 0) return { total: 0, tookMs: 0, hits: [] };
    const { body } = await this.transport.request({
      method: 'POST', path: this.searchPath(request.types), body: searchBody(request),
      // A type not indexed yet (no alias) is skipped, not an error.
      querystring: { ignore_unavailable: true, allow_no_indices: true },
      // Someone waits on it: an engine that does not answer is a 503 within SEARCH_REQUEST_TIMEOUT, not after every retry.
      maxRetries: 0,
    });
    return parseSearch(body ?? {});
  }

  async facets(request: FacetRequest): Promise<Record<string, Record<string, number>>> {
    if (request.types.length === 0 || request.fields.length === 0) return parseFacets(request, {});
    const { body } = await this.transport.request({
      method: 'POST', path: this.searchPath(request.types), body: facetsBody(request),
      querystring: { ignore_unavailable: true, allow_no_indices: true },
      maxRetries: 0,
    });
    return parseFacets(request, body ?? {});
  }

  async stats(): Promise<IndexStats[]> {
    const [{ body: rows }, layout] = await Promise.all([
      this.transport.request({
        method: 'GET', path: `/_cat/indices/${encodeURIComponent(this.prefix)}*`,
        querystring: { format: 'json', h: 'index,health,store.size', bytes: 'b' }, ignore: [404],
      }),
      this.layout(),
    ]);
    type CatRow = { index: string; health?: string; 'store.size'?: string };
    const cat = new Map<string, CatRow>((Array.isArray(rows) ? rows as CatRow[] : []).map((row) => [row.index, row]));
    if (layout.length === 0) return [];
    // Documents as search counts them: _cat's docs.count includes every custom field's nested document.
    const { body } = await this.transport.request({
      method: 'POST', path: `/${layout.map((i) => encodeURIComponent(i.index)).join(',')}/_search`,
      querystring: { ignore_unavailable: true, allow_no_indices: true },
      body: { size: 0, track_total_hits: false, aggs: { indices: { terms: { field: '_index', size: layout.length } } } },
    });
    const counts = new Map<string, number>(
      ((body?.aggregations?.indices?.buckets ?? []) as { key: string; doc_count: number }[]).map((b) => [b.key, b.doc_count]),
    );
    return layout
      .sort((a, b) => a.type.localeCompare(b.type) || a.version - b.version)
      .map((i) => {
        const row = cat.get(i.index);
        const health = row?.health === 'green' || row?.health === 'yellow' ? row.health : 'red';
        return {
          alias: this.aliasOf(i.type), index: i.index, type: i.type, version: i.version, live: i.live,
          documents: counts.get(i.index) ?? 0, sizeBytes: Number(row?.['store.size'] ?? 0), health,
        };
      });
  }

  async count(version: number, type: SearchType): Promise<number> {
    const { status, body } = await this.transport.request({
      method: 'POST', path: `/${encodeURIComponent(versionedIndex(this.prefix, type, version))}/_count`, ignore: [404],
    });
    return status === 404 ? 0 : Number(body?.count ?? 0);
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}
