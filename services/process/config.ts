import path from 'node:path';
import type { RateLimitSettings } from '../shared/rateLimitStore';
import { DEFAULT_PREPARED_STATEMENTS } from '../../infra/postgres/preparedStatements';
import { DEFAULT_MAX_ROWS } from '../model/query';
import { DEFAULT_RETRY_BUDGET_MS } from '../shared/faults';
import { DEFAULT_SEARCH_SETTINGS, type SearchSettings } from '../shared/search';

/** Everything the processes read from the environment, validated once, typed and frozen. */
export interface Config {
  host: string;
  port: number;
  /** Embedded PostgreSQL data and generated secrets live here. */
  dataDir: string;
  /** External PostgreSQL; when null an embedded server runs under dataDir. */
  databaseUrl: string | null;
  /** Statement names the model API's reads may take per process (named prepared statements); 0: none. */
  preparedStatements: number;
  /** Most rows one model API answer may hold, included rows counted; more is a 400 too-many-rows (MODEL_MAX_ROWS). */
  modelMaxRows: number;
  /** Null: a free port, chosen at the first start and kept in dataDir/postgres.port while it stays free. */
  embeddedPostgresPort: number | null;
  /** Loads pg_stat_statements into the embedded PostgreSQL (EMBEDDED_POSTGRES_STATEMENT_STATS): a diagnostic. */
  embeddedPostgresStatementStats: boolean;
  /** EventStoreDB connection string; when null the PostgreSQL event store is used. */
  eventstoreUrl: string | null;
  /** Null means: generate one and keep it in dataDir/secrets.json. */
  sessionSecret: string | null;
  tokenSecret: string | null;
  adminEmail: string | null;
  adminPassword: string | null;
  adminName: string;
  logLevel: string;
  /** HEAP_GROWTH_PERCENT (services/process/heap.ts); 0: V8's own policy. */
  heapGrowthPercent: number;
  /** How long a write waits for the read model before answering 503 read-model-lagging. */
  writeTimeoutMs: number;
  /** No request for this long ends a session (SESSION_IDLE_TIMEOUT_MS; formerly SESSION_MAX_AGE_MS). */
  sessionIdleTimeoutMs: number;
  /** This long after login a session ends, whatever the activity. */
  sessionAbsoluteTimeoutMs: number;
  trustProxy: boolean;
  /** Other origins (scheme://host[:port]) whose pages may send cookie-authenticated unsafe requests. */
  allowedOrigins: readonly string[];
  shutdownTimeoutMs: number;
  /** Kafka transport when set: the relay publishes the log, each projector process is one consumer serving every projection. */
  kafka: { brokers: string[]; topic: string; partitions: number; clientId: string } | null;
  /** Uploaded files, one per upload under its own key (default dataDir/uploads). */
  uploadDir: string;
  /** Where runs' evidence bundles are archived before their result files go for retention (ARCHIVE_DIR; `off`: null). */
  archiveDir: string | null;
  /** Largest file POST /api/files/upload accepts, in bytes. */
  maxUploadBytes: number;
  /** Bytes one user's stored files (uploads and import files) may take together; 0: no limit (USER_STORAGE_QUOTA_BYTES). */
  userStorageQuotaBytes: number;
  /** Days a completed import's files are kept as its run's evidence; 0: removed at the next sweep (IMPORT_FILE_RETENTION_DAYS). */
  importFileRetentionDays: number;
  /** Result import: cases per chunk event, and where long outputs and stack traces are cut. */
  imports: { chunkSize: number; maxOutputChars: number; finalizeTimeoutMs: number };
  /**
   * The external-tool migration: the largest export accepted (EXTERNAL_IMPORT_MAX_BYTES), whether the
   * uploaded file stays after the job ends (EXTERNAL_IMPORT_KEEP_FILES), rows per chunk, and the ZIP
   * bomb limits (EXTERNAL_IMPORT_MAX_EXPANDED_BYTES, EXTERNAL_IMPORT_MAX_COMPRESSION_RATIO).
   */
  externalImports: { maxBytes: number; keepFiles: boolean; chunkSize: number; bulkChunkSize: number; maxExpandedBytes: number; maxCompressionRatio: number };
  /**
   * Integrity anchors (docs/compliance.md): how often the log's head hash is recorded
   * (INTEGRITY_ANCHOR_INTERVAL_MS, 0: never), and where it is copied besides the log
   * (INTEGRITY_ANCHOR_FILE, INTEGRITY_ANCHOR_URL with INTEGRITY_ANCHOR_TOKEN).
   */
  integrityAnchor: { intervalMs: number; file: string | null; url: string | null; token: string | null };
  /** The worker role: jobs run at once per worker, how often it looks for jobs, and how long its lease on a job lasts unrenewed. */
  worker: { concurrency: number; pollMs: number; leaseTtlMs: number };
  /**
   * How long a background loop (projector, relay, saga) may retry a run of transient failures (a
   * database, event store or broker away) before it stops and reports itself failed (RETRY_BUDGET_MS).
   */
  retryBudgetMs: number;
  /** Request rate limits (RATE_LIMIT_*, LOGIN_RATE_LIMIT_*); null when RATE_LIMIT_ENABLED=false. */
  rateLimits: Readonly<RateLimitSettings> | null;
  /** The search engine (SEARCH_*): PostgreSQL full-text search without SEARCH_URL. */
  search: Readonly<SearchSettings>;
  /**
   * The key the search connection's saved credentials are encrypted with (SEARCH_SECRETS_KEY, 32
   * bytes); null: derived from the session secret (docs/search.md, "Connection").
   */
  searchSecretsKey: Buffer | null;
  /**
   * The key that seals each secret's own key (SECRETS_KEY, 32 bytes): secrets in events, such as an
   * integration's `settings.apiToken`; null: derived from the session secret (docs/compliance.md, "Secrets").
   */
  secretsKey: Buffer | null;
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  return n;
}

function optional(env: NodeJS.ProcessEnv, name: string): string | null {
  const v = env[name];
  return v === undefined || v === '' ? null : v;
}

function secret(env: NodeJS.ProcessEnv, name: string): string | null {
  const v = optional(env, name);
  if (v !== null && v.length < 32) throw new ConfigError(`${name} must be at least 32 characters`);
  return v;
}

/** An optional http(s) URL; null when unset. */
function httpUrl(env: NodeJS.ProcessEnv, name: string): { raw: string; parsed: URL } | null {
  const raw = optional(env, name);
  if (raw === null) return null;
  let parsed: URL | null = null;
  try {
    parsed = new URL(raw);
  } catch { /* reported below */ }
  if (!parsed || !/^https?:$/.test(parsed.protocol)) throw new ConfigError(`${name} must be an http:// or https:// URL, got "${raw}"`);
  return { raw, parsed };
}

function integrityAnchorConfig(env: NodeJS.ProcessEnv): Config['integrityAnchor'] {
  const url = httpUrl(env, 'INTEGRITY_ANCHOR_URL')?.raw ?? null;
  const token = optional(env, 'INTEGRITY_ANCHOR_TOKEN');
  if (token !== null && url === null) throw new ConfigError('INTEGRITY_ANCHOR_TOKEN is sent to INTEGRITY_ANCHOR_URL: set that too');
  return { intervalMs: int(env, 'INTEGRITY_ANCHOR_INTERVAL_MS', 60 * 60_000, 0, 30 * DAY_MS), file: optional(env, 'INTEGRITY_ANCHOR_FILE'), url, token };
}

/** SESSION_IDLE_TIMEOUT_MS, or SESSION_MAX_AGE_MS, its former name (the same rolling lifetime). */
function sessionIdleTimeout(env: NodeJS.ProcessEnv): number {
  const current = optional(env, 'SESSION_IDLE_TIMEOUT_MS');
  const former = optional(env, 'SESSION_MAX_AGE_MS');
  if (current !== null && former !== null) throw new ConfigError('SESSION_MAX_AGE_MS is the former name of SESSION_IDLE_TIMEOUT_MS: set only SESSION_IDLE_TIMEOUT_MS');
  return int(env, former !== null ? 'SESSION_MAX_AGE_MS' : 'SESSION_IDLE_TIMEOUT_MS', 30 * 60 * 1000, 1000);
}

function allowedOrigins(env: NodeJS.ProcessEnv): string[] {
  const raw = optional(env, 'ALLOWED_ORIGINS');
  if (raw === null) return [];
  return raw.split(',').map((o) => o.trim()).filter(Boolean).map((o) => {
    let url: URL | null = null;
    try {
      url = new URL(o);
    } catch { /* reported below */ }
    if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username || url.password)
      throw new ConfigError(`ALLOWED_ORIGINS must be a comma-separated list of origins such as https://app.example.com, got "${o}"`);
    return url.origin;
  });
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The limits are checked even when switched off, so that a typo surfaces before they are switched on. */
function rateLimitConfig(env: NodeJS.ProcessEnv): Config['rateLimits'] {
  const enabled = optional(env, 'RATE_LIMIT_ENABLED');
  if (enabled !== null && !['true', 'false', '1', '0'].includes(enabled)) throw new ConfigError(`RATE_LIMIT_ENABLED must be true or false, got "${enabled}"`);
  const limits: RateLimitSettings = {
    windowMs: int(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1000, DAY_MS),
    max: int(env, 'RATE_LIMIT_MAX', 1200, 1, 1_000_000_000),
    anonymousMax: int(env, 'RATE_LIMIT_ANONYMOUS_MAX', 60, 1, 1_000_000_000),
    loginMax: int(env, 'LOGIN_RATE_LIMIT_MAX', 10, 1, 1_000_000_000),
    loginWindowMs: int(env, 'LOGIN_RATE_LIMIT_WINDOW_MS', 15 * 60_000, 1000, DAY_MS),
  };
  return enabled === 'false' || enabled === '0' ? null : Object.freeze(limits);
}

/**
 * Partitions of the topic when Testament creates it. One: the shipped topology runs one projector
 * process, which gains nothing from more; with six, each projection applied every partition's
 * batch in a transaction of its own, three at once, contending for the same statistics rows, and
 * the Kafka path's lag p99 was 4.0–6.4 s against 1.1–1.2 s with one (bench/README.md, "The Kafka
 * topic's partitions"). Several projector processes share the work only with more partitions.
 */
export const DEFAULT_KAFKA_PARTITIONS = 1;

function kafkaConfig(env: NodeJS.ProcessEnv): Config['kafka'] {
  const brokers = optional(env, 'KAFKA_BROKERS');
  if (brokers === null) return null;
  const list = brokers.split(',').map((b) => b.trim()).filter(Boolean);
  if (list.length === 0 || !list.every((b) => /^[\w.:[\]-]+:\d+$/.test(b)))
    throw new ConfigError(`KAFKA_BROKERS must be a comma-separated list of host:port, got "${brokers}"`);
  const topic = optional(env, 'KAFKA_TOPIC') ?? 'testament.events';
  if (!/^[A-Za-z0-9._-]{1,249}$/.test(topic)) throw new ConfigError(`KAFKA_TOPIC is not a valid topic name: "${topic}"`);
  return { brokers: list, topic, partitions: int(env, 'KAFKA_PARTITIONS', DEFAULT_KAFKA_PARTITIONS, 1, 10_000), clientId: optional(env, 'KAFKA_CLIENT_ID') ?? 'testament' };
}

function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === null) return fallback;
  if (!['true', 'false', '1', '0'].includes(raw)) throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  return raw === 'true' || raw === '1';
}

const SEARCH_ENGINES: readonly SearchSettings['engine'][] = ['auto', 'postgres', 'opensearch', 'elasticsearch'];

/** SEARCH_*: checked even without SEARCH_URL, so that a typo surfaces before the engine is switched. */
function searchConfig(env: NodeJS.ProcessEnv): SearchSettings {
  const d = DEFAULT_SEARCH_SETTINGS;
  const given = httpUrl(env, 'SEARCH_URL');
  const url = given?.raw ?? null;
  if (given) {
    const { parsed } = given;
    if (parsed.username || parsed.password) throw new ConfigError('SEARCH_URL must not hold credentials: set SEARCH_USERNAME and SEARCH_PASSWORD (or SEARCH_API_KEY)');
  }
  const engine = (optional(env, 'SEARCH_ENGINE') ?? 'auto') as SearchSettings['engine'];
  if (!SEARCH_ENGINES.includes(engine)) throw new ConfigError(`SEARCH_ENGINE must be one of ${SEARCH_ENGINES.join(', ')}, got "${engine}"`);
  if (engine === 'postgres' && url !== null) throw new ConfigError('SEARCH_ENGINE=postgres searches the service\'s own database: unset SEARCH_URL');
  if ((engine === 'opensearch' || engine === 'elasticsearch') && url === null) throw new ConfigError(`SEARCH_ENGINE=${engine} needs SEARCH_URL`);
  const indexPrefix = optional(env, 'SEARCH_INDEX_PREFIX') ?? d.indexPrefix;
  if (!/^[a-z][a-z0-9_-]{0,39}$/.test(indexPrefix)) throw new ConfigError(`SEARCH_INDEX_PREFIX must be lowercase letters, digits, _ or - (at most 40, starting with a letter), got "${indexPrefix}"`);
  if (url === null && indexPrefix.includes('-')) throw new ConfigError(`SEARCH_INDEX_PREFIX names PostgreSQL tables without SEARCH_URL: letters, digits and _ only, got "${indexPrefix}"`);
  const username = optional(env, 'SEARCH_USERNAME');
  const password = optional(env, 'SEARCH_PASSWORD');
  if ((username === null) !== (password === null)) throw new ConfigError('SEARCH_USERNAME and SEARCH_PASSWORD must be set together');
  const sslCaPath = optional(env, 'SEARCH_SSL_CA_PATH');
  const refreshInterval = optional(env, 'SEARCH_REFRESH_INTERVAL') ?? d.refreshInterval;
  if (!/^(-1|\d+(ms|s|m))$/.test(refreshInterval)) throw new ConfigError(`SEARCH_REFRESH_INTERVAL must be a time such as 1s or 500ms (or -1), got "${refreshInterval}"`);
  return {
    url: url === null ? null : url.replace(/\/+$/, ''),
    engine,
    indexPrefix,
    username,
    password,
    apiKey: optional(env, 'SEARCH_API_KEY'),
    sslVerify: flag(env, 'SEARCH_SSL_VERIFY', d.sslVerify),
    sslCaPath: sslCaPath === null ? null : path.resolve(sslCaPath),
    requestTimeoutMs: int(env, 'SEARCH_REQUEST_TIMEOUT', d.requestTimeoutMs, 100, 10 * 60_000),
    maxRetries: int(env, 'SEARCH_MAX_RETRIES', d.maxRetries, 0, 20),
    bulkSize: int(env, 'SEARCH_BULK_SIZE', d.bulkSize, 1, 10_000),
    shards: int(env, 'SEARCH_SHARDS', d.shards, 1, 1024),
    replicas: int(env, 'SEARCH_REPLICAS', d.replicas, 0, 100),
    refreshInterval,
  };
}

/** SEARCH_SECRETS_KEY, SECRETS_KEY: 32 bytes, as 64 hex digits or base64 (`openssl rand -base64 32`). The value is never shown. */
function secretKey(env: NodeJS.ProcessEnv, name: 'SEARCH_SECRETS_KEY' | 'SECRETS_KEY'): Buffer | null {
  const raw = optional(env, name);
  if (raw === null) return null;
  const value = raw.trim();
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(value)) key = Buffer.from(value, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) key = Buffer.from(value, value.includes('-') || value.includes('_') ? 'base64url' : 'base64');
  if (key === null || key.length !== 32) {
    throw new ConfigError(`${name} must be 32 bytes written as 64 hex digits or in base64 (openssl rand -base64 32); the value given has ${raw.length} characters`);
  }
  return key;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Readonly<Config> {
  const dataDir = path.resolve(optional(env, 'DATA_DIR') ?? './.data');
  const databaseUrl = optional(env, 'DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  const eventstoreUrl = optional(env, 'EVENTSTORE_URL');
  if (eventstoreUrl && !/^(esdb|kurrentdb)(\+discover)?:\/\//.test(eventstoreUrl)) throw new ConfigError('EVENTSTORE_URL must be an esdb:// connection string');
  const adminEmail = optional(env, 'ADMIN_EMAIL');
  const adminPassword = optional(env, 'ADMIN_PASSWORD');
  if ((adminEmail === null) !== (adminPassword === null)) throw new ConfigError('ADMIN_EMAIL and ADMIN_PASSWORD must be set together');
  if (adminPassword !== null && adminPassword.length < 8) throw new ConfigError('ADMIN_PASSWORD must be at least 8 characters');
  const config: Config = {
    host: optional(env, 'HOST') ?? '127.0.0.1',
    port: int(env, 'PORT', 3000, 0, 65535),
    dataDir,
    databaseUrl,
    embeddedPostgresPort: optional(env, 'EMBEDDED_POSTGRES_PORT') === null ? null : int(env, 'EMBEDDED_POSTGRES_PORT', 0, 1, 65535),
    embeddedPostgresStatementStats: flag(env, 'EMBEDDED_POSTGRES_STATEMENT_STATS', false),
    eventstoreUrl,
    sessionSecret: secret(env, 'SESSION_SECRET'),
    tokenSecret: secret(env, 'TOKEN_SECRET'),
    adminEmail,
    adminPassword,
    adminName: optional(env, 'ADMIN_NAME') ?? 'Administrator',
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    heapGrowthPercent: int(env, 'HEAP_GROWTH_PERCENT', 50, 0, 1000),
    writeTimeoutMs: int(env, 'WRITE_TIMEOUT_MS', 10_000, 1),
    sessionIdleTimeoutMs: sessionIdleTimeout(env),
    sessionAbsoluteTimeoutMs: int(env, 'SESSION_ABSOLUTE_TIMEOUT_MS', 12 * 60 * 60 * 1000, 1000),
    trustProxy: optional(env, 'TRUST_PROXY') === 'true' || optional(env, 'TRUST_PROXY') === '1',
    allowedOrigins: Object.freeze(allowedOrigins(env)),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0),
    kafka: kafkaConfig(env),
    uploadDir: path.resolve(optional(env, 'UPLOAD_DIR') ?? path.join(dataDir, 'uploads')),
    archiveDir: optional(env, 'ARCHIVE_DIR') === 'off' ? null : path.resolve(optional(env, 'ARCHIVE_DIR') ?? path.join(dataDir, 'archive')),
    maxUploadBytes: int(env, 'MAX_UPLOAD_BYTES', 50 * 1024 * 1024, 1),
    userStorageQuotaBytes: int(env, 'USER_STORAGE_QUOTA_BYTES', 10 * 1024 ** 3, 0),
    importFileRetentionDays: int(env, 'IMPORT_FILE_RETENTION_DAYS', 30, 0, 36_500),
    rateLimits: rateLimitConfig(env),
    preparedStatements: int(env, 'PG_PREPARED_STATEMENTS', DEFAULT_PREPARED_STATEMENTS, 0, 10_000),
    retryBudgetMs: int(env, 'RETRY_BUDGET_MS', DEFAULT_RETRY_BUDGET_MS, 1000, 7 * DAY_MS),
    externalImports: {
      maxBytes: int(env, 'EXTERNAL_IMPORT_MAX_BYTES', 1024 * 1024 * 1024, 1),
      keepFiles: flag(env, 'EXTERNAL_IMPORT_KEEP_FILES', false),
      chunkSize: int(env, 'EXTERNAL_IMPORT_CHUNK_SIZE', 200, 1, 5000),
      bulkChunkSize: int(env, 'EXTERNAL_IMPORT_BULK_CHUNK_SIZE', 2000, 1, 5000),
      maxExpandedBytes: int(env, 'EXTERNAL_IMPORT_MAX_EXPANDED_BYTES', 4 * 1024 ** 3, 1),
      maxCompressionRatio: int(env, 'EXTERNAL_IMPORT_MAX_COMPRESSION_RATIO', 100, 2, 100_000),
    },
    integrityAnchor: integrityAnchorConfig(env),
    worker: {
      concurrency: int(env, 'WORKER_CONCURRENCY', 2, 1, 64),
      pollMs: int(env, 'WORKER_POLL_MS', 2000, 50, 600_000),
      leaseTtlMs: int(env, 'WORKER_LEASE_TTL_MS', 30_000, 1000, 3_600_000),
    },
    imports: {
      chunkSize: int(env, 'IMPORT_CHUNK_SIZE', 500, 1, 5000),
      maxOutputChars: int(env, 'IMPORT_MAX_OUTPUT_CHARS', 64 * 1024, 0),
      finalizeTimeoutMs: int(env, 'IMPORT_FINALIZE_TIMEOUT_MS', 10 * 60_000, 1000),
    },
    modelMaxRows: int(env, 'MODEL_MAX_ROWS', DEFAULT_MAX_ROWS, 1, 10_000_000),
    search: Object.freeze(searchConfig(env)),
    searchSecretsKey: secretKey(env, 'SEARCH_SECRETS_KEY'),
    secretsKey: secretKey(env, 'SECRETS_KEY'),
  };
  return Object.freeze(config);
}
