import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { SEARCH_CHECKPOINT_KEY, type SearchEngine, type SearchType } from '../../services/shared/search';
import { countDocuments, INDEXED_TYPES, isIndexedType, scanDocuments, type IndexedType } from './documents';
import { writeDocuments } from './writer';

/** The projections whose rows documents are built from: the indexer waits for them, a rebuild starts from where they are. */
export const SOURCE_PROJECTIONS = ['readModel', 'identity'] as const;

/** The checkpoint key of the indexer on the direct transport. */
export const DIRECT_KEY = SEARCH_CHECKPOINT_KEY;

export interface SearchRebuildResult {
  version: number;
  documents: Record<IndexedType, number>;
  checkpoints: Record<string, string>;
  dropped: number[];
  seconds: number;
}

/**
 * The direct transport's checkpoint for a new version: the lowest position both source projections
 * applied (the rows read next are at least that new). '0' before either applied anything.
 */
export async function directReadModelCheckpoints(knex: Knex): Promise<Record<string, string>> {
  const rows: { name: string; position: string }[] = await knex('projection_checkpoints').whereIn('name', SOURCE_PROJECTIONS).select('name', 'position');
  const positions = SOURCE_PROJECTIONS.map((name) => BigInt(rows.find((r) => r.name === name)?.position ?? '0'));
  const min = positions.reduce((a, b) => (b < a ? b : a));
  return { [DIRECT_KEY]: min.toString() };
}

/** A full build of a version (this rebuild, a full reindex job) is under way for the same indices: 409 `reindex-running`. */
export class SearchBuildRunning extends Error {
  readonly code = 'reindex-running';
  constructor() {
    super('another search version is being built for these indices (npm run rebuild -- search, or a reindex job); try again when it has finished');
    this.name = 'SearchBuildRunning';
  }
}

export interface SearchBuildLock { release(): Promise<void> }

/** The advisory lock namespace of search version builds ("5ea6": search), the second key the indices' prefix. */
const BUILD_LOCK_SPACE = 0x5ea6;

/**
 * The lock that lets one build of a new version run at a time for an engine's indices, across
 * processes: a PostgreSQL advisory lock held on a connection of its own (a killed process loses it
 * with its connection). `wait`: until it is free; otherwise null when someone holds it.
 */
export async function searchBuildLock(knex: Knex, engine: SearchEngine, wait: boolean): Promise<SearchBuildLock | null> {
  const key = `${engine.engine}:${engine.aliasOf('projects')}`;
  const connection = await knex.client.acquireConnection();
  try {
    const { rows } = await connection.query(`SELECT ${wait ? 'pg_advisory_lock' : 'pg_try_advisory_lock'}($1, hashtext($2)) AS locked`, [BUILD_LOCK_SPACE, key]);
    if (!wait && rows[0].locked !== true) {
      await knex.client.releaseConnection(connection);
      return null;
    }
  } catch (error) {
    await knex.client.releaseConnection(connection);
    throw error;
  }
  return {
    async release() {
      try {
        await connection.query('SELECT pg_advisory_unlock($1, hashtext($2))', [BUILD_LOCK_SPACE, key]);
      } finally {
        await knex.client.releaseConnection(connection);
      }
    },
  };
}

/**
 * The version a new build fills: the one after every version there is; before any version is live
 * (the first build), a version a failed try left behind is built again rather than a new one
 * beside it (an engine that timed out while creating its indices would otherwise get a new set at
 * every retry).
 */
export async function nextSearchVersion(engine: SearchEngine): Promise<{ version: number; live: number | null }> {
  const existing = await engine.versions();
  const live = await engine.liveVersion();
  const version = live === null && existing.length > 0 ? Math.max(...existing) : Math.max(0, live ?? 0, ...existing) + 1;
  return { version, live };
}

/**
 * The end of a build: the captured checkpoints written to the new version, refreshed, every alias
 * switched to it, the older versions dropped (their unresolved search_failures resolved: replaced).
 * A version live already (a build that stopped after its switch) keeps the checkpoints the
 * indexer has moved since. Answers the versions dropped.
 */
export async function makeVersionLive(deps: { engine: SearchEngine; knex: Knex }, version: number, checkpoints: Record<string, string>): Promise<number[]> {
  const { engine, knex } = deps;
  if ((await engine.liveVersion()) !== version) {
    await engine.write(version, { upsert: [], remove: [] }, checkpoints);
    await engine.refresh(version);
    await engine.switchAlias(version);
  }
  const dropped: number[] = [];
  for (const older of await engine.versions()) {
    if (older >= version) continue;
    await engine.dropVersion(older);
    dropped.push(older);
  }
  if (dropped.length > 0) {
    await knex('search_failures').where({ engine: engine.engine }).whereIn('version', dropped).whereNull('resolved_at').update({ resolved_at: knex.fn.now() });
  }
  return dropped;
}

/**
 * `npm run rebuild -- search`: builds version N+1 side by side while search answers from N.
 * 1. captures where the read model is (`checkpointKeys`: by default the direct transport's
 *    position; on Kafka the source projections' committed offsets, see kafkaReadModelCheckpoints);
 * 2. creates version N+1 and fills it from the read model, every type in keyset pages of `bulkSize`;
 * 3. writes the captured checkpoints to N+1, refreshes it, switches the aliases to it;
 * 4. drops the older versions (their unresolved search_failures are resolved: replaced).
 * The running indexer sees the new live version within seconds and replays from the captured
 * checkpoint (idempotent: documents are rebuilt from the rows as they are then).
 * One build at a time per engine's indices (searchBuildLock): `lock: 'refuse'` throws
 * SearchBuildRunning when another (a reindex job) holds it; `'wait'` (the indexer's first build) waits.
 */
export async function rebuildSearch(deps: {
  engine: SearchEngine; knex: Knex; logger: Logger; bulkSize: number;
  checkpointKeys?: () => Promise<Record<string, string>>;
  onProgress?: (type: IndexedType, documents: number) => void;
  lock?: 'wait' | 'refuse';
}): Promise<SearchRebuildResult> {
  const started = process.hrtime.bigint();
  const { engine, knex, logger } = deps;
  const lock = await searchBuildLock(knex, engine, deps.lock !== 'refuse');
  if (lock === null) throw new SearchBuildRunning();
  try {
    const checkpoints = await (deps.checkpointKeys ?? (() => directReadModelCheckpoints(knex)))();
    const { version, live } = await nextSearchVersion(engine);
    await engine.ensureVersion(version);
    logger.info({ version, live, checkpoints }, 'building a search version side by side');
    const documents = Object.fromEntries(INDEXED_TYPES.map((t) => [t, 0])) as Record<IndexedType, number>;
    const position = `rebuild:${Object.values(checkpoints).join(',') || '0'}`;
    for (const type of INDEXED_TYPES) {
      let after = 0;
      for (;;) {
        const page = await scanDocuments(knex, type, after, deps.bulkSize);
        if (page.lastId === null) break;
        after = page.lastId;
        if (page.documents.length > 0) await writeDocuments({ engine, knex, logger, bulkSize: deps.bulkSize }, version, { upsert: page.documents, remove: [], readAt: page.readAt }, position);
        documents[type] += page.documents.length;
        deps.onProgress?.(type, documents[type]);
      }
    }
    const dropped = await makeVersionLive({ engine, knex }, version, checkpoints);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    logger.info({ version, documents, dropped, seconds }, 'search version built and live');
    return { version, documents, checkpoints, dropped, seconds };
  } finally {
    await lock.release();
  }
}

/**
 * What a reindex job (services/searchAdmin/reindex.saga.ts) does to the engine and the read
 * model, batch by batch: the same steps as the rebuild, one keyset page at a time, so that the job
 * records its cursor after each acknowledged page. `checkpointKeys` as for rebuildSearch.
 */
export function searchBuilder(deps: { knex: Knex; logger: Logger; checkpointKeys?: () => Promise<Record<string, string>> }) {
  const { knex, logger } = deps;
  const indexed = (type: SearchType): type is IndexedType => isIndexedType(type);
  return {
    types: INDEXED_TYPES as readonly SearchType[],
    captureCheckpoints: () => (deps.checkpointKeys ?? (() => directReadModelCheckpoints(knex)))(),
    nextVersion: nextSearchVersion,
    count: (type: SearchType, projectIds: readonly number[] | null) => (indexed(type) ? countDocuments(knex, type, projectIds) : Promise.resolve(0)),
    /**
     * Writes the documents of the page after `afterId` (and, `removals`, removes those of its rows
     * that have none: a reindex into the live version) in bulk requests of `limit`. Answers the
     * last row scanned (null: none was), whether the page was the type's last, and the documents written.
     */
    async writeBatch(engine: SearchEngine, version: number, type: SearchType, afterId: number, limit: number, scope: { projectIds: readonly number[] | null; removals: boolean }) {
      if (!indexed(type)) return { lastId: null, last: true, documents: 0 };
      const page = await scanDocuments(knex, type, afterId, limit, scope.projectIds);
      const remove = scope.removals ? page.removed : [];
      let documents = 0;
      if (page.documents.length + remove.length > 0) {
        const written = await writeDocuments({ engine, knex, logger, bulkSize: limit }, version, { upsert: page.documents, remove, readAt: page.readAt }, `reindex:${type}:${afterId}`);
        documents = Math.max(0, written - remove.length);
      }
      return { lastId: page.lastId, last: page.scanned < limit, documents };
    },
    makeLive: (engine: SearchEngine, version: number, checkpoints: Record<string, string>) => makeVersionLive({ engine, knex }, version, checkpoints),
    tryLock: (engine: SearchEngine) => searchBuildLock(knex, engine, false),
  };
}
