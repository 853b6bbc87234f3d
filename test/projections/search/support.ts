import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { PostgresSearchEngine } from '../../../infra/search/postgres';
import { startSearchIndexer, type SearchIndexer } from '../../../projections/search/indexer';
import { INDEXED_TYPES, scanDocuments, type IndexedType } from '../../../projections/search/documents';
import { DEFAULT_SEARCH_SETTINGS, type SearchDocument, type SearchEngine } from '../../../services/shared/search';
import type { TestApp } from '../../support/app';
import { waitUntil } from '../../support/wait';

export const quietLogger = () => pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** PostgreSQL full-text search in the app's database, under a prefix of its own. */
export function postgresEngine(app: TestApp): PostgresSearchEngine {
  return new PostgresSearchEngine(app.deps.knex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: `t${randomBytes(4).toString('hex')}_` });
}

/**
 * The engine with one method wrapped (counting, failing, blocking): the indexer's own logic is
 * under test, the engine behind it is the real one.
 */
export function wrapMethod<K extends 'write' | 'readCheckpoints' | 'liveVersion'>(
  engine: SearchEngine, name: K, wrapper: (real: SearchEngine[K], ...args: Parameters<SearchEngine[K]>) => ReturnType<SearchEngine[K]>,
): SearchEngine {
  const real = (engine[name] as (...args: unknown[]) => unknown).bind(engine) as SearchEngine[K];
  return new Proxy(engine, {
    get(target, prop, receiver) {
      if (prop === name) return (...args: Parameters<SearchEngine[K]>) => wrapper(real, ...args);
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The engine with its `write` wrapped. */
export const wrapWrites = (engine: SearchEngine, write: (real: SearchEngine['write'], ...args: Parameters<SearchEngine['write']>) => Promise<void>): SearchEngine =>
  wrapMethod(engine, 'write', write);

export const FAST_RETRY = { budgetMs: 120_000, firstMs: 50, maxMs: 300 };

export function startIndexer(app: TestApp, engine: SearchEngine, opts: { bulkSize?: number } = {}): SearchIndexer {
  return startSearchIndexer({
    engine, knex: app.deps.knex, store: app.deps.store, databaseUrl: app.databaseUrl, logger: quietLogger(), retry: FAST_RETRY, bulkSize: opts.bulkSize ?? 500,
  });
}

/** Until the indexer applied the event store's head (and the engine shows what it wrote). */
export async function caughtUp(app: TestApp, indexer: SearchIndexer, engine: SearchEngine, timeoutMs = 60_000): Promise<void> {
  const head = BigInt(await app.deps.store.headPosition());
  await waitUntil(() => indexer.status().state === 'running' && BigInt(indexer.status().position) >= head, `indexer at ${head}`, timeoutMs,
    () => JSON.stringify(indexer.status()));
  await engine.refresh();
}

/** Every document of a type in the live version, by id. */
export async function documents(engine: SearchEngine, type: IndexedType): Promise<Map<string, SearchDocument>> {
  const result = await engine.search({
    types: [type], query: { kind: 'all' }, filter: [], sort: [{ field: 'id', order: 'asc' }], highlight: [], from: 0, size: 10_000,
  });
  return new Map(result.hits.map((h) => [h.id, h.document]));
}

/** The documents the read model has now, per type (what a correct index holds). */
export async function expected(app: TestApp): Promise<Record<IndexedType, string[]>> {
  const all = {} as Record<IndexedType, string[]>;
  for (const type of INDEXED_TYPES) all[type] = (await scanDocuments(app.deps.knex, type, 0, 100_000)).documents.map((d) => d.id).sort();
  return all;
}

/** The documents each type holds in a version, by id (sorted), read with one search per type. */
export async function indexed(engine: SearchEngine): Promise<Record<IndexedType, string[]>> {
  const all = {} as Record<IndexedType, string[]>;
  for (const type of INDEXED_TYPES) all[type] = [...(await documents(engine, type)).keys()].sort();
  return all;
}
