import { X509Certificate } from 'node:crypto';
import type { SearchConnectionField } from '../../contracts/events';
import { badRequest } from '../shared/errors';
import type { EngineInfo, SearchSettings } from '../shared/search';

/**
 * The search engine connection as the panel sees it (docs/search.md, "Connection"): what an
 * administrator may set, where the settings in force come from, and the running connection the
 * routes ask (implemented by services/process/searchConnection.ts).
 */

/** What an administrator sets; the rest of SearchSettings (prefix, timeouts, bulk size, index settings) stays SEARCH_*'s. */
export const CONNECTION_FIELDS = ['engine', 'url', 'username', 'password', 'apiKey', 'sslVerify', 'sslCaPath', 'sslCa'] as const satisfies readonly SearchConnectionField[];
export type ConnectionSettings = Pick<SearchSettings, 'engine' | 'url' | 'username' | 'password' | 'apiKey' | 'sslVerify' | 'sslCaPath'> & { sslCa: string | null };
/** The fields of a request body: each one omitted keeps its current value (secrets included); null clears it. */
export type ConnectionChange = Partial<ConnectionSettings>;

export type ConnectionSource = 'environment' | 'administrator';

/** The settings a process runs with, and where they come from (`settingsId`: the saved row; null: SEARCH_* with nothing saved). */
export interface AppliedSettings {
  settings: Readonly<SearchSettings>;
  source: ConnectionSource;
  settingsId: number | null;
}

export interface SearchConnectionStatus {
  /** connecting: the engine has not answered yet (retried within the budget); open; failed: given up (until a restart or a change of settings). */
  state: 'connecting' | 'open' | 'failed';
  engine: EngineInfo['engine'] | null;
  lastError: string | null;
}

/** A connection test: opened an engine with the settings, asked it `info()`, timed that. */
export interface ConnectionProbe {
  reachable: boolean;
  engine: EngineInfo['engine'] | null;
  version: string | null;
  latencyMs: number | null;
  /** Why it is not reachable (never a credential). */
  error: string | null;
}

/** The process's search connection, as the routes need it. */
export interface SearchConnectionControl {
  status(): SearchConnectionStatus;
  /** The settings in force in this process. */
  applied(): AppliedSettings;
  /** The SEARCH_* variables' settings (what DELETE /api/admin/search/connection goes back to). */
  environment(): Readonly<SearchSettings>;
  /** Opens a temporary engine with the settings, asks it info(), closes it. Changes nothing. */
  test(settings: Readonly<SearchSettings>): Promise<ConnectionProbe>;
  /**
   * Opens an engine with the settings and asks it info(); if it answers, calls `save` (which
   * records the change and says under which row), then makes it the engine of search and the
   * indexer and closes the old one. If it does not answer, or `save` throws, the old engine stays
   * and nothing else happens. One switch at a time.
   */
  switchTo(settings: Readonly<SearchSettings>, save: () => Promise<{ settingsId: number; source: ConnectionSource }>): Promise<ConnectionProbe>;
}

/** The settings without any secret: what answers and events show. */
export interface PublicConnectionSettings {
  engine: SearchSettings['engine'];
  url: string | null;
  username: string | null;
  hasPassword: boolean;
  hasApiKey: boolean;
  sslVerify: boolean;
  sslCaPath: string | null;
  hasSslCa: boolean;
}

export function publicSettings(s: Readonly<SearchSettings>): PublicConnectionSettings {
  return {
    engine: s.engine, url: s.url, username: s.username, hasPassword: s.password !== null, hasApiKey: s.apiKey !== null,
    sslVerify: s.sslVerify, sslCaPath: s.sslCaPath, hasSslCa: (s.sslCa ?? null) !== null,
  };
}

export const connectionOf = (s: Readonly<SearchSettings>): ConnectionSettings => ({
  engine: s.engine, url: s.url, username: s.username, password: s.password, apiKey: s.apiKey, sslVerify: s.sslVerify, sslCaPath: s.sslCaPath, sslCa: s.sslCa ?? null,
});

/** The fields whose value differs (secrets compared, never shown). */
export function changedFields(before: Readonly<SearchSettings>, after: Readonly<SearchSettings>): SearchConnectionField[] {
  const a = connectionOf(before);
  const b = connectionOf(after);
  return CONNECTION_FIELDS.filter((field) => a[field] !== b[field]);
}

const ENGINES: readonly SearchSettings['engine'][] = ['auto', 'postgres', 'opensearch', 'elasticsearch'];
const LIMITS = { url: 2000, username: 200, password: 1000, apiKey: 2000, sslCaPath: 1000, sslCa: 100_000 } as const;

const invalid = (path: string, message: string) => badRequest('invalid-argument', message, { path });

function text(body: Record<string, unknown>, field: keyof typeof LIMITS): string | null | undefined {
  const value = body[field];
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string') throw invalid(field, `${field} must be a string or null`);
  if (value === '') throw invalid(field, `${field} must not be empty (null clears it)`);
  if (value.length > LIMITS[field]) throw invalid(field, `${field} is longer than ${LIMITS[field]} characters`);
  // Never the value in a message: it may be a secret.
  if (field !== 'sslCa' && [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) throw invalid(field, `${field} must not hold control characters`);
  return value;
}

/**
 * A request body of the connection routes, strictly: an object of CONNECTION_FIELDS only, each
 * of its type. No message or detail ever repeats a value given (it may be a secret).
 */
export function parseConnectionChange(body: unknown): ConnectionChange {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('', 'The body must be a JSON object of connection settings');
  const fields = body as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!(CONNECTION_FIELDS as readonly string[]).includes(key)) throw invalid(key, `Unknown field ${key}; expected some of ${CONNECTION_FIELDS.join(', ')}`);
  }
  const change: ConnectionChange = {};
  if (fields.engine !== undefined) {
    if (typeof fields.engine !== 'string' || !ENGINES.includes(fields.engine as SearchSettings['engine'])) throw invalid('engine', `engine must be one of ${ENGINES.join(', ')}`);
    change.engine = fields.engine as SearchSettings['engine'];
  }
  const url = text(fields, 'url');
  if (url !== undefined) change.url = url === null ? null : engineUrl(url);
  for (const field of ['username', 'password', 'apiKey', 'sslCaPath'] as const) {
    const value = text(fields, field);
    if (value !== undefined) change[field] = value;
  }
  if (fields.sslVerify !== undefined) {
    if (typeof fields.sslVerify !== 'boolean') throw invalid('sslVerify', 'sslVerify must be true or false');
    change.sslVerify = fields.sslVerify;
  }
  const ca = text(fields, 'sslCa');
  if (ca !== undefined) change.sslCa = ca === null ? null : certificate(ca);
  return change;
}

function engineUrl(value: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch { /* reported below */ }
  if (!url || !/^https?:$/.test(url.protocol)) throw invalid('url', 'url must be an http:// or https:// URL');
  if (url.username || url.password) throw invalid('url', 'url must not hold credentials: give them as username and password (or apiKey)');
  if (url.search || url.hash) throw invalid('url', 'url must not have a query or a fragment');
  return value.replace(/\/+$/, '');
}

function certificate(pem: string): string {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw invalid('sslCa', 'sslCa must be a PEM certificate (-----BEGIN CERTIFICATE-----)');
  try {
    new X509Certificate(pem);
  } catch {
    throw invalid('sslCa', 'sslCa is not a readable PEM certificate');
  }
  return pem;
}

/** The settings a change leads to from `current`; refuses combinations that name no engine. */
export function applyChange(current: Readonly<SearchSettings>, change: ConnectionChange): SearchSettings {
  const next: SearchSettings = { ...current, ...change };
  if (change.url === null && change.engine === undefined && next.engine !== 'postgres') next.engine = 'auto';
  if (next.engine === 'postgres' && next.url !== null) throw invalid('url', 'engine postgres searches the service\'s own database: url must be null');
  if ((next.engine === 'opensearch' || next.engine === 'elasticsearch') && next.url === null) throw invalid('url', `engine ${next.engine} needs a url`);
  if ((next.username === null) !== (next.password === null)) throw invalid(next.username === null ? 'username' : 'password', 'username and password go together (both, or neither)');
  if (next.url === null && next.indexPrefix.includes('-')) {
    throw invalid('url', `PostgreSQL search names tables after SEARCH_INDEX_PREFIX, which holds a - ("${next.indexPrefix}"): keep a search server`);
  }
  return next;
}
