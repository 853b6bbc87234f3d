import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  BulkWriteFailed, IndexNotFound, MAINTENANCE_TIMEOUT_MS, MappingNeedsReindex, SEARCH_TYPES, SearchUnavailable,
  type ClusterHealth, type CreatedIndices, type DocumentKey, type DocumentWrites, type EngineInfo, type FacetRequest, type HealthStatus, type IndexStats,
  type MaintenanceResult, type NodeStats, type SearchDocument, type SearchEngine, type SearchRequest, type SearchResult,
  type SearchSettings, type SearchType,
} from '../../services/shared/search';
import {
  analysisConflicts, bulkBody, bulkOutcome, checkpointDocId, checkpointIndex, checkpointIndexBody, facetsBody, FORWARD_ONLY_CHECKPOINTS, indexBody,
  indexTemplateBody, indexTemplateName, parseFacets, parseSearch, parseVersionedIndex, searchBody, versionedIndex, writeFailure,
  type BulkItemOutcome,
} from './engineBodies';

/**
 * The SearchEngine port over an OpenSearch or Elasticsearch REST API. The engines take the same
 * requests; infra/search/opensearch.ts and elasticsearch.ts only provide the transport (their
 * client, its authentication, TLS, time limit and retries).
 */

type Json = Record<string, unknown>;

/**
 * The CA the clients trust: the settings' PEM text, else the file sslCaPath names. A file that
 * cannot be read as a certificate is "not readable", nothing more: the connection test answers
 * the reason to the panel, which must not learn what is on the server's disk (which files exist,
 * what they hold). The cause stays on the error for the log.
 */
export function trustedCa(settings: Pick<SearchSettings, 'sslCa' | 'sslCaPath'>): { ca?: string | Buffer } {
  if (settings.sslCa) return { ca: settings.sslCa };
  if (!settings.sslCaPath) return {};
  try {
    const ca = readFileSync(settings.sslCaPath);
    new X509Certificate(ca);
    return { ca };
  } catch (cause) {
    throw new Error('sslCaPath is not readable', { cause });
  }
}

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
  /** This request's time limit instead of SEARCH_REQUEST_TIMEOUT (maintenance that takes long: a force merge). */
  timeoutMs?: number;
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

/** Shards that are not green, listed in the health's reasons. */
const SHARDS_LISTED = 10;

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
    await this.putIndexTemplate();
    await Promise.all([
      ...SEARCH_TYPES.map((type) => this.createIndex(versionedIndex(this.prefix, type, version), body)),
      this.createIndex(checkpointIndex(this.prefix), checkpointIndexBody(this.settings)),
    ]);
  }

  /** Settings and mapping for any versioned index created without a body (indexTemplateBody). Idempotent. */
  private async putIndexTemplate(): Promise<void> {
    await this.transport.request({
      method: 'PUT', path: `/_index_template/${encodeURIComponent(indexTemplateName(this.prefix))}`, body: indexTemplateBody(this.prefix, this.settings),
    });
  }

  /** Creates an index; false when it already exists. */
  private async createIndex(name: string, body: Json): Promise<boolean> {
    const path = `/${encodeURIComponent(name)}`;
    const response = await this.transport.request({ method: 'PUT', path, body, ignore: [400] });
    if (response.status === 400) {
      const error = response.body?.error ?? {};
      if (error.type === 'resource_already_exists_exception') return false;
      throw new SearchRequestFailed(400, error.type ?? 'error', error.reason ?? JSON.stringify(response.body), path);
    }
    return true;
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
    ops: DocumentWrites,
    checkpoints?: Readonly<Record<string, string>>,
  ): Promise<void> {
    // Upserts before deletions: a document both written and removed in one call ends removed.
    const all: Operation[] = [...ops.upsert.map((upsert) => ({ upsert })), ...ops.remove.map((remove) => ({ remove }))];
    const size = Math.max(1, this.settings.bulkSize);
    const failed: BulkItemOutcome[] = [];
    for (let start = 0; start < all.length; start += size) failed.push(...await this.bulk(version, all.slice(start, start + size), ops.readAt));
    if (failed.length) throw new BulkWriteFailed(failed.map(writeFailure));
    if (checkpoints && Object.keys(checkpoints).length) {
      // Forward only (a script compares the positions): a request the client retried after a
      // timeout may still be applied after a later one, and must not move a checkpoint back.
      await this.transport.request({
        method: 'POST',
        path: `/${encodeURIComponent(checkpointIndex(this.prefix))}/_update/${checkpointDocId(version)}`,
        querystring: { retry_on_conflict: 5 },
        body: { script: { source: FORWARD_ONLY_CHECKPOINTS, lang: 'painless', params: { checkpoints } }, upsert: { version, checkpoints } },
      });
    }
  }

  /** One bulk request, its busy items retried with backoff: the items still not written. */
  private async bulk(version: number, operations: Operation[], readAt?: string): Promise<BulkItemOutcome[]> {
    const refused: BulkItemOutcome[] = [];
    let pending = operations;
    for (let attempt = 0; ; attempt++) {
      const upsert = pending.flatMap((op) => ('upsert' in op ? [op.upsert] : []));
      const remove = pending.flatMap((op) => ('remove' in op ? [op.remove] : []));
      // In the order of the bulk body: upserts, then deletions.
      const ordered: Operation[] = [...upsert.map((d) => ({ upsert: d })), ...remove.map((k) => ({ remove: k }))];
      const { body } = await this.transport.request({
        method: 'POST', path: '/_bulk', bulk: bulkBody(this.prefix, version, upsert, remove, readAt), querystring: { refresh: 'false' },
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

  async createMissingIndices(): Promise<CreatedIndices> {
    const layout = await this.layout();
    const live = layout.filter((i) => i.live).map((i) => i.version);
    const liveVersion = live.length ? Math.max(...live) : null;
    const version = liveVersion ?? 1;
    await this.putIndexTemplate();
    await this.createIndex(checkpointIndex(this.prefix), checkpointIndexBody(this.settings));
    const body = indexBody(this.settings);
    const created: string[] = [];
    for (const type of SEARCH_TYPES) {
      const name = versionedIndex(this.prefix, type, version);
      if (!layout.some((i) => i.index === name) && await this.createIndex(name, body)) created.push(name);
    }
    // Aliases only of a live version: pointing them at a version nobody switched to would make it live half-built.
    const actions: Json[] = [];
    const aliasesRepaired: string[] = [];
    if (liveVersion !== null) {
      for (const type of SEARCH_TYPES) {
        const target = versionedIndex(this.prefix, type, liveVersion);
        if (layout.some((i) => i.index === target && i.live)) continue;
        for (const i of layout) if (i.type === type && i.live) actions.push({ remove: { index: i.index, alias: this.aliasOf(type) } });
        actions.push({ add: { index: target, alias: this.aliasOf(type) } });
        aliasesRepaired.push(this.aliasOf(type));
      }
    }
    if (actions.length) await this.transport.request({ method: 'POST', path: '/_aliases', body: { actions } });
    return { version, created, aliasesRepaired };
  }

  async deleteIndex(name: string): Promise<void> {
    const entry = (await this.layout()).find((i) => i.index === name);
    if (!entry) throw new IndexNotFound(name);
    await this.transport.request({ method: 'DELETE', path: `/${encodeURIComponent(name)}`, ignore: [404] });
    if (!entry.live) return;
    // Back at once, empty, behind its alias: search of that type answers (nothing) and the
    // indexer's next write lands in the right mapping (the template covers the moment between).
    await this.createIndex(name, indexBody(this.settings));
    await this.transport.request({ method: 'POST', path: '/_aliases', body: { actions: [{ add: { index: name, alias: this.aliasOf(entry.type) } }] } });
  }

  /** Every index of this prefix the engine holds: each version's, then the checkpoints'. */
  private async ownIndices(): Promise<string[]> {
    const layout = await this.layout();
    if (layout.length === 0) return [];
    const { status } = await this.transport.request({ method: 'HEAD', path: `/${encodeURIComponent(checkpointIndex(this.prefix))}`, ignore: [404] });
    return [...layout.map((i) => i.index).sort(), ...(status === 404 ? [] : [checkpointIndex(this.prefix)])];
  }

  /** One maintenance request over this prefix's indices (none: nothing is sent, or it would reach every index of the cluster). */
  private async maintain(action: string, querystring: Record<string, string | number | boolean> = {}): Promise<MaintenanceResult> {
    const targets = await this.ownIndices();
    if (targets.length === 0) return { targets, details: { shards: { total: 0, successful: 0, failed: 0 } } };
    const { body } = await this.transport.request({
      method: 'POST', path: `/${targets.map(encodeURIComponent).join(',')}/${action}`, querystring, timeoutMs: MAINTENANCE_TIMEOUT_MS, maxRetries: 0,
    });
    const shards = body?._shards ?? {};
    return { targets, details: { shards: { total: shards.total ?? 0, successful: shards.successful ?? 0, failed: shards.failed ?? 0, ...(shards.failures && { failures: shards.failures }) } } };
  }

  async forceMerge(maxSegments?: number): Promise<MaintenanceResult> {
    const result = await this.maintain('_forcemerge', maxSegments === undefined ? {} : { max_num_segments: maxSegments });
    return { ...result, details: { ...result.details, maxSegments: maxSegments ?? null } };
  }

  clearCache(): Promise<MaintenanceResult> {
    return this.maintain('_cache/clear');
  }

  refreshAll(): Promise<MaintenanceResult> {
    return this.maintain('_refresh');
  }

  async updateMapping(): Promise<MaintenanceResult> {
    const targets = (await this.layout()).map((i) => i.index).sort();
    if (targets.length === 0) return { targets, details: { fieldsAdded: {} } };
    const names = targets.map(encodeURIComponent).join(',');
    const [{ body: mappings }, { body: settings }] = await Promise.all([
      this.transport.request({ method: 'GET', path: `/${names}/_mapping` }),
      this.transport.request({ method: 'GET', path: `/${names}/_settings` }),
    ]);
    // The analyzer is a setting of a closed index: a different one needs a reindex, whatever the mapping says.
    const conflicts = targets.flatMap((index) => analysisConflicts(index, settings?.[index]?.settings?.index?.analysis, this.settings));
    if (conflicts.length) throw new MappingNeedsReindex(conflicts);
    const wanted = indexBody(this.settings).mappings as { properties: Json };
    const fieldsAdded: Record<string, string[]> = {};
    for (const index of targets) {
      const have = Object.keys(mappings?.[index]?.mappings?.properties ?? {});
      const added = Object.keys(wanted.properties).filter((field) => !have.includes(field));
      if (added.length) fieldsAdded[index] = added;
    }
    // One request: the engine checks the mapping against every index before changing any, so a refusal changes nothing.
    const path = `/${names}/_mapping`;
    const response = await this.transport.request({ method: 'PUT', path, body: wanted, timeoutMs: MAINTENANCE_TIMEOUT_MS, maxRetries: 0, ignore: [400] });
    if (response.status === 400) {
      const error = response.body?.error ?? {};
      throw new MappingNeedsReindex([`${error.type ?? 'error'}: ${error.reason ?? JSON.stringify(response.body)}`]);
    }
    return { targets, details: { fieldsAdded } };
  }

  async clusterHealth(): Promise<ClusterHealth> {
    const { body: h } = await this.transport.request({ method: 'GET', path: '/_cluster/health' });
    const status: HealthStatus = h?.status === 'green' || h?.status === 'yellow' ? h.status : 'red';
    const shards = {
      active: Number(h?.active_shards ?? 0), initializing: Number(h?.initializing_shards ?? 0),
      relocating: Number(h?.relocating_shards ?? 0), unassigned: Number(h?.unassigned_shards ?? 0),
    };
    const reasons: string[] = [];
    if (status === 'red') reasons.push('at least one primary shard is not assigned: some documents cannot be searched or written');
    if (status === 'yellow') reasons.push('every primary shard is assigned, at least one replica is not');
    if (shards.unassigned) reasons.push(`${shards.unassigned} unassigned shard(s)${h?.delayed_unassigned_shards ? ` (${h.delayed_unassigned_shards} delayed)` : ''}`);
    if (shards.initializing) reasons.push(`${shards.initializing} initializing shard(s)`);
    if (shards.relocating) reasons.push(`${shards.relocating} relocating shard(s)`);
    if (status !== 'green') {
      const { body: rows } = await this.transport.request({
        method: 'GET', path: '/_cat/shards', querystring: { format: 'json', h: 'index,shard,prirep,state,unassigned.reason' },
      });
      type ShardRow = { index: string; shard: string; prirep: string; state: string; 'unassigned.reason'?: string | null };
      const troubled = (Array.isArray(rows) ? rows as ShardRow[] : []).filter((r) => r.state !== 'STARTED');
      for (const r of troubled.slice(0, SHARDS_LISTED)) {
        const why = r['unassigned.reason'] ? ` (${r['unassigned.reason']})` : '';
        reasons.push(`${r.index} shard ${r.shard} ${r.prirep === 'p' ? 'primary' : 'replica'}: ${r.state.toLowerCase()}${why}`);
      }
      if (troubled.length > SHARDS_LISTED) reasons.push(`… and ${troubled.length - SHARDS_LISTED} more shard(s)`);
      if (shards.unassigned) {
        // The engine's own explanation of the first unassigned shard.
        const { status: code, body: explained } = await this.transport.request({ method: 'POST', path: '/_cluster/allocation/explain', ignore: [400, 404] });
        const text = explained?.allocate_explanation ?? explained?.explanation;
        if (code === 200 && text) reasons.push(`${explained.index} shard ${explained.shard}: ${text}`);
      }
    }
    return {
      status, reasons, clusterName: h?.cluster_name ?? null, nodes: Number(h?.number_of_nodes ?? 0), shards,
      details: {
        dataNodes: Number(h?.number_of_data_nodes ?? 0), activePrimaryShards: Number(h?.active_primary_shards ?? 0),
        delayedUnassignedShards: Number(h?.delayed_unassigned_shards ?? 0), pendingTasks: Number(h?.number_of_pending_tasks ?? 0),
        activeShardsPercent: Number(h?.active_shards_percent_as_number ?? 0),
      },
    };
  }

  async nodeStats(): Promise<NodeStats[]> {
    const { body } = await this.transport.request({ method: 'GET', path: '/_nodes/stats/jvm,fs,indices/docs,indexing,search' });
    const nodes = (body?.nodes ?? {}) as Record<string, Json & {
      name?: string; jvm?: { mem?: { heap_used_in_bytes?: number; heap_max_in_bytes?: number } };
      fs?: { total?: { total_in_bytes?: number; available_in_bytes?: number } };
      indices?: { docs?: { count?: number }; indexing?: { index_total?: number }; search?: { query_total?: number } };
    }>;
    const number = (value: unknown) => (typeof value === 'number' ? value : null);
    return Object.entries(nodes).map(([id, n]) => {
      const heapUsed = number(n.jvm?.mem?.heap_used_in_bytes);
      const heapMax = number(n.jvm?.mem?.heap_max_in_bytes);
      const diskTotal = number(n.fs?.total?.total_in_bytes);
      const diskFree = number(n.fs?.total?.available_in_bytes);
      return {
        id, name: n.name ?? id,
        heap: heapUsed !== null && heapMax !== null ? { usedBytes: heapUsed, maxBytes: heapMax } : null,
        // Free: what the node may still use (the file system's available bytes).
        disk: diskTotal !== null && diskFree !== null ? { totalBytes: diskTotal, freeBytes: diskFree } : null,
        documents: number(n.indices?.docs?.count), indexingTotal: number(n.indices?.indexing?.index_total), searchTotal: number(n.indices?.search?.query_total),
      };
    }).sort((a, b) => a.name.localeCompare(b.name));
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}
