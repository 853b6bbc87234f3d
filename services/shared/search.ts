/**
 * The search port: what the indexer (projections/search/) writes and the search API
 * (services/search/) asks, whichever engine answers. Three adapters implement it in infra/search/:
 * PostgreSQL full-text search (the embedded default), OpenSearch and Elasticsearch. They are held
 * to one contract suite (test/infra/search/).
 *
 * Vocabulary:
 * - a *type* is one entity type (`repository_cases`, `failures`, ...): one index per type, named
 *   `<SEARCH_INDEX_PREFIX><type>`; that name is an alias over a *versioned* index
 *   `<prefix><type>_v<N>`, so that a rebuild fills version N+1 side by side and then switches every
 *   alias at once (`switchAlias`);
 * - a *checkpoint* is the indexer's progress in the log for one index version: a key (`search` on
 *   the direct transport, `search#<partition>` on Kafka) and the last position (or offset) applied.
 *   It lives in the engine, next to the documents, and moves only once every write before it was
 *   acknowledged (`write`).
 * - queries reach adapters as a `Clause` tree: the API validated and normalised the caller's query
 *   object (services/search/query.ts), and added the access filter (the projects the caller may read).
 */

/** The entity types one can search (the spec's list, plus comments and test results' failures). */
export const SEARCH_TYPES = [
  'repository_cases', 'shared_steps', 'test_runs', 'sessions', 'projects', 'issues', 'milestones', 'comments', 'failures',
] as const;
export type SearchType = (typeof SEARCH_TYPES)[number];
export const isSearchType = (value: string): value is SearchType => (SEARCH_TYPES as readonly string[]).includes(value);

/** Full-text fields (analysed: standard tokenizer, lowercase, English stop words, snowball stemming). */
export const TEXT_FIELDS = ['title', 'description', 'content', 'customFields.value'] as const;
export type TextField = (typeof TEXT_FIELDS)[number];

/** Exact-value fields (filters, facets, sorting). `title.keyword` is the title as one value. */
export const KEYWORD_FIELDS = [
  'id', 'type', 'projectId', 'title.keyword', 'tags', 'folder', 'template', 'state', 'status', 'creator', 'configuration',
  'branch', 'failureType', 'project', 'runId', 'caseId', 'customFields.name',
] as const;
export type KeywordField = (typeof KEYWORD_FIELDS)[number];

export const DATE_FIELDS = ['createdAt', 'updatedAt', 'executedAt'] as const;
export type DateField = (typeof DATE_FIELDS)[number];

export type SearchField = TextField | KeywordField | DateField;

/** Facets the API offers, and the document field each one counts. */
export const FACETS = { tags: 'tags', folders: 'folder', templates: 'template', states: 'state' } as const;
export type FacetName = keyof typeof FACETS;

/**
 * One indexed document: one row of its entity (a failure: one failed or blocked test result). Every
 * field is present; what a type does not have is null or empty. `projectId` is the project the
 * document belongs to: the access filter reads nothing else.
 */
export interface SearchDocument {
  type: SearchType;
  /** The entity's id as a string. */
  id: string;
  projectId: string;
  /** The project's name. */
  project: string;
  title: string;
  description: string | null;
  /** The body: a case's steps and expected results, a session's mission, a comment's text, a failure's stack trace (its start). */
  content: string | null;
  tags: string[];
  /** A case's folder path, names joined with " / ". */
  folder: string | null;
  template: string | null;
  /** Workflow state. */
  state: string | null;
  /** A result's status (failures), a run case's status. */
  status: string | null;
  /** Creator's name (a failure: who executed it). */
  creator: string | null;
  configuration: string | null;
  branch: string | null;
  failureType: string | null;
  runId: string | null;
  caseId: string | null;
  customFields: { name: string; value: string }[];
  createdAt: string;
  updatedAt: string | null;
  /** When the result was executed (failures), a run's completion (test runs). */
  executedAt: string | null;
}

export interface DocumentKey { type: SearchType; id: string }

/**
 * Documents to index and to delete, read from the read model in one snapshot. `readAt` is when
 * (PostgreSQL's statement_timestamp(), microseconds since the epoch, projections/search/documents.ts):
 * an engine that may apply a request late (a client that retried it after a timeout while the
 * engine still held the first) keeps, of two writes of one document, the one read later.
 */
export interface DocumentWrites {
  upsert: readonly SearchDocument[];
  remove: readonly DocumentKey[];
  readAt?: string;
}

/** The indexer's checkpoint on the direct transport: the last event position applied. */
export const SEARCH_CHECKPOINT_KEY = 'search';
/**
 * On Kafka, `search#<partition>` holds the last offset applied (where the indexer resumes), which
 * says nothing of event positions; `search@<partition>`, written with it, holds the last global
 * event position applied from that partition: read-your-writes compares an X-Event-Position with it.
 */
export const searchPositionKey = (partition: number) => `${SEARCH_CHECKPOINT_KEY}@${partition}`;

/** The validated query, engine-neutral. */
export type Clause =
  /** Words (or a phrase) in any of the fields, each with its boost. `operator: 'and'`: every word must match. */
  | { kind: 'text'; query: string; fields: { field: TextField; boost: number }[]; operator: 'or' | 'and'; phrase: boolean }
  | { kind: 'terms'; field: KeywordField; values: string[] }
  | { kind: 'range'; field: DateField; gte?: string; gt?: string; lte?: string; lt?: string }
  | { kind: 'prefix'; field: KeywordField | TextField; value: string }
  | { kind: 'bool'; must: Clause[]; should: Clause[]; filter: Clause[]; mustNot: Clause[]; minimumShouldMatch?: number }
  /** Every document (a facet request without a query). */
  | { kind: 'all' };

export interface SortKey { field: '_score' | KeywordField | DateField; order: 'asc' | 'desc' }

export interface SearchRequest {
  /** Indices to search (never empty: the API expands "all"). */
  types: readonly SearchType[];
  /** The caller's query; scores come from its text clauses. */
  query: Clause;
  /**
   * Clauses every hit must satisfy, without scoring: the access filter (always: `terms` on
   * projectId, unless the caller is an administrator), type, project, tags and date filters.
   */
  filter: Clause[];
  sort: SortKey[];
  /** Text fields to highlight (with `<mark>`…`</mark>`; the rest of the fragment escaped as HTML). */
  highlight: TextField[];
  from: number;
  size: number;
}

export interface SearchHit {
  type: SearchType;
  id: string;
  projectId: string;
  score: number | null;
  highlight: Partial<Record<TextField, string[]>>;
  document: SearchDocument;
}

export interface SearchResult {
  /** Exact count of the documents matching (not capped). */
  total: number;
  /** The engine's own time for the query, ms. */
  tookMs: number;
  hits: SearchHit[];
}

export interface FacetRequest {
  types: readonly SearchType[];
  query: Clause;
  filter: Clause[];
  /** Document fields to count (see FACETS). */
  fields: readonly KeywordField[];
  /** At most this many labels per field, the most frequent first. */
  size: number;
}

export interface IndexStats {
  /** The alias (`<prefix><type>`). */
  alias: string;
  /** The versioned index behind it. */
  index: string;
  type: SearchType;
  version: number;
  /** Whether the alias points at this index. */
  live: boolean;
  documents: number;
  sizeBytes: number;
  health: 'green' | 'yellow' | 'red';
}

export interface EngineInfo {
  engine: 'postgres' | 'opensearch' | 'elasticsearch';
  version: string;
}

/** One write the engine refused, after the adapter's own retries. */
export interface WriteFailure { type: SearchType; id: string; reason: string; status?: number }

/** A bulk write not acknowledged for every document: the checkpoint did not move. */
export class BulkWriteFailed extends Error {
  constructor(readonly failures: WriteFailure[]) {
    super(`the search engine refused ${failures.length} document write(s): ${failures.slice(0, 3).map((f) => `${f.type}/${f.id}: ${f.reason}`).join('; ')}`);
    this.name = 'BulkWriteFailed';
  }
}

/**
 * The engine does not answer (down, timed out, refused the connection) after the adapter's
 * retries: the API answers 503 `search-unavailable`, the indexer retries within its budget.
 */
export class SearchUnavailable extends Error {
  constructor(readonly engine: EngineInfo['engine'], override readonly cause?: unknown) {
    super(`the search engine (${engine}) does not answer${cause instanceof Error ? `: ${cause.message}` : ''}`);
    this.name = 'SearchUnavailable';
  }
}

/** A SearchEngine administration method the engine has no equivalent of (PostgreSQL: cache clear, refresh). Nothing was asked. */
export class OperationNotSupported extends Error {
  constructor(readonly engine: EngineInfo['engine'], readonly operation: string) {
    super(`${operation} is not supported by the ${engine} search engine`);
    this.name = 'OperationNotSupported';
  }
}

/** A name stats() does not list as an index. */
export class IndexNotFound extends Error {
  constructor(readonly index: string) {
    super(`no search index is named ${JSON.stringify(index)}`);
    this.name = 'IndexNotFound';
  }
}

/** The current mapping cannot be put on existing indices (a field changed type or analyzer): only a full reindex applies it. Nothing changed. */
export class MappingNeedsReindex extends Error {
  constructor(readonly conflicts: string[]) {
    super(`the current search mapping cannot be applied in place: ${conflicts.slice(0, 5).join('; ')}`);
    this.name = 'MappingNeedsReindex';
  }
}

/**
 * The time limit of a maintenance operation (force merge, cache clear, refresh, mapping update),
 * answered when the engine is done: longer than a search's, and never retried (a merge asked
 * twice works twice).
 */
export const MAINTENANCE_TIMEOUT_MS = 5 * 60_000;

/** What createMissingIndices did. */
export interface CreatedIndices {
  /** The version whose indices were checked: the live one, else 1. */
  version: number;
  /** Indices created (named as stats() names them). */
  created: string[];
  /** Aliases pointed back at the live version's index. */
  aliasesRepaired: string[];
}

/** What a maintenance operation (force merge, cache clear, refresh, mapping update) did. */
export interface MaintenanceResult {
  /** What the engine worked on: index names (OpenSearch, Elasticsearch) or tables (PostgreSQL). */
  targets: string[];
  /** The engine's own account (shards, statements run), for the answer and the audit event. */
  details: Record<string, unknown>;
}

export type HealthStatus = 'green' | 'yellow' | 'red';

export interface ClusterHealth {
  status: HealthStatus;
  /** Why it is not green (unassigned, initializing, relocating shards, with the engine's explanation); what was checked when green. */
  reasons: string[];
  clusterName: string | null;
  nodes: number;
  /** Shard counts; null where the engine has no shards (PostgreSQL). */
  shards: { active: number; initializing: number; relocating: number; unassigned: number } | null;
  /** Engine-specific facts (PostgreSQL: database size, the search tables' live and dead tuples). */
  details: Record<string, unknown>;
}

/** One node of the engine; null for what the engine does not know (PostgreSQL: no heap, no disk, no search count). */
export interface NodeStats {
  id: string;
  name: string;
  heap: { usedBytes: number; maxBytes: number } | null;
  disk: { totalBytes: number; freeBytes: number } | null;
  /** Documents the node holds (OpenSearch/Elasticsearch: Lucene documents, nested custom fields included). */
  documents: number | null;
  /** Documents indexed since the node started (PostgreSQL: rows written to the search tables since the statistics were reset). */
  indexingTotal: number | null;
  /** Search queries served since the node started. */
  searchTotal: number | null;
}

export interface SearchEngine {
  readonly engine: EngineInfo['engine'];
  /** Name of the alias of a type: `<prefix><type>`. */
  aliasOf(type: SearchType): string;
  info(): Promise<EngineInfo>;
  /**
   * Creates the versioned indices of `version` that do not exist (settings: shards, replicas,
   * max_result_window 50000, refresh_interval, the custom analyzer; the shared mapping), and its
   * checkpoint store. Idempotent.
   */
  ensureVersion(version: number): Promise<void>;
  /** The version the aliases point at; null before the first switch. */
  liveVersion(): Promise<number | null>;
  /** Every version that exists (live or being built), ascending. */
  versions(): Promise<number[]>;
  /** Points every alias at `version`, at once where the engine can. */
  switchAlias(version: number): Promise<void>;
  /** Deletes the indices and checkpoints of a version that is not live. */
  dropVersion(version: number): Promise<void>;
  /**
   * Indexes (replaces) `upsert` and deletes `remove` (a missing document is not an error) in
   * `version`, in bulk requests of at most the configured bulk size, then — only if every one of
   * them was acknowledged — moves the checkpoints given forward: a key keeps a position further on
   * than the one given (a request retried after a timeout may be applied after a later one).
   * With `ops.readAt`, a document already written from a later read stays as it is (OpenSearch and
   * Elasticsearch: external versions; PostgreSQL applies its writes in the order they are made).
   * Throws BulkWriteFailed (nothing about the checkpoints changed) or SearchUnavailable.
   */
  write(version: number, ops: DocumentWrites, checkpoints?: Readonly<Record<string, string>>): Promise<void>;
  /** The checkpoints of a version (key → position). */
  readCheckpoints(version: number): Promise<Record<string, string>>;
  /** Makes what was written visible to search (tests, rebuilds; the indexer relies on refresh_interval). */
  refresh(version?: number): Promise<void>;
  /** Searches the live version. */
  search(request: SearchRequest): Promise<SearchResult>;
  /** Counts documents per label of each field over the live version (every label counted once per document). */
  facets(request: FacetRequest): Promise<Record<string, Record<string, number>>>;
  /** One entry per type and version. */
  stats(): Promise<IndexStats[]>;
  /** Documents of one type in a version (tests, the rebuild's report). */
  count(version: number, type: SearchType): Promise<number>;

  // Administration (services/searchAdmin/). Each throws SearchUnavailable when the engine does not answer.

  /**
   * Creates the indices of the live version (version 1 when none is live) that do not exist, with
   * ensureVersion's settings and mapping, and points a live version's missing aliases back at it.
   */
  createMissingIndices(): Promise<CreatedIndices>;
  /**
   * Deletes one index stats() lists (else IndexNotFound). An index of the live version is
   * recreated empty at once behind its alias (its documents come back with a reindex), so that
   * search and the indexer go on with the right settings and mapping.
   */
  deleteIndex(name: string): Promise<void>;
  /** Merges segments (PostgreSQL: VACUUM (ANALYZE) of the search tables). */
  forceMerge(maxSegments?: number): Promise<MaintenanceResult>;
  /** Clears the query, request and field data caches (OperationNotSupported on PostgreSQL). */
  clearCache(): Promise<MaintenanceResult>;
  /** Refreshes every index of every version (OperationNotSupported on PostgreSQL: committed rows are searchable at once). */
  refreshAll(): Promise<MaintenanceResult>;
  /**
   * Puts the current mapping on every index (PostgreSQL: recreates missing indexes, then REINDEX
   * TABLE). MappingNeedsReindex when it cannot be applied in place; then nothing changed.
   */
  updateMapping(): Promise<MaintenanceResult>;
  clusterHealth(): Promise<ClusterHealth>;
  nodeStats(): Promise<NodeStats[]>;
  close(): Promise<void>;
}

/** How to reach and shape the engine (SEARCH_* variables; services/process/config.ts reads them). */
export interface SearchSettings {
  /** Null: PostgreSQL full-text search in the service's own database. */
  url: string | null;
  /** `auto`: detected from the server's answer to `GET /` (SEARCH_ENGINE forces one). */
  engine: 'auto' | EngineInfo['engine'];
  /** Prefix of every index (and alias) name, e.g. `testament_` (SEARCH_INDEX_PREFIX). */
  indexPrefix: string;
  username: string | null;
  password: string | null;
  /** Sent as `Authorization: ApiKey <key>` (SEARCH_API_KEY). */
  apiKey: string | null;
  /** Verify the server's TLS certificate (SEARCH_SSL_VERIFY, default true). */
  sslVerify: boolean;
  /** A CA certificate file (PEM) to trust (SEARCH_SSL_CA_PATH). */
  sslCaPath: string | null;
  /** A CA certificate (PEM text) to trust, set by an administrator (services/searchAdmin); taken before sslCaPath. */
  sslCa?: string | null;
  /** Each request's time limit, ms (SEARCH_REQUEST_TIMEOUT). */
  requestTimeoutMs: number;
  /** Retries of a request that failed for a transient reason (SEARCH_MAX_RETRIES). */
  maxRetries: number;
  /** Documents per bulk request (SEARCH_BULK_SIZE). */
  bulkSize: number;
  /** Index settings (SEARCH_SHARDS, SEARCH_REPLICAS, SEARCH_REFRESH_INTERVAL). */
  shards: number;
  replicas: number;
  refreshInterval: string;
}

/** max_result_window of every index: `from + size` beyond it is refused (400 by the API). */
export const MAX_RESULT_WINDOW = 50_000;

export const DEFAULT_SEARCH_SETTINGS: Readonly<SearchSettings> = {
  url: null, engine: 'auto', indexPrefix: 'testament_', username: null, password: null, apiKey: null, sslVerify: true,
  sslCaPath: null, requestTimeoutMs: 10_000, maxRetries: 3, bulkSize: 100, shards: 1, replicas: 0, refreshInterval: '1s',
};
