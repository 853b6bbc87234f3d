import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { SEARCH_CHECKPOINT_KEY, type SearchEngine } from '../../services/shared/search';
import { INDEXED_TYPES, scanDocuments, type IndexedType } from './documents';
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

/**
 * `npm run rebuild -- search`: builds version N+1 side by side while search answers from N.
 * 1. captures where the read model is (`checkpointKeys`: by default the direct transport's
 *    position; on Kafka the source projections' committed offsets, see kafkaReadModelCheckpoints);
 * 2. creates version N+1 and fills it from the read model, every type in keyset pages of `bulkSize`;
 * 3. writes the captured checkpoints to N+1, refreshes it, switches the aliases to it;
 * 4. drops the older versions (their unresolved search_failures are resolved: replaced).
 * The running indexer sees the new live version within seconds and replays from the captured
 * checkpoint (idempotent: documents are rebuilt from the rows as they are then).
 */
export async function rebuildSearch(deps: {
  engine: SearchEngine; knex: Knex; logger: Logger; bulkSize: number;
  checkpointKeys?: () => Promise<Record<string, string>>;
  onProgress?: (type: IndexedType, documents: number) => void;
}): Promise<SearchRebuildResult> {
  const started = process.hrtime.bigint();
  const { engine, knex, logger } = deps;
  const checkpoints = await (deps.checkpointKeys ?? (() => directReadModelCheckpoints(knex)))();
  const existing = await engine.versions();
  const live = await engine.liveVersion();
  // Before any version is live (the first build), a version a failed try left behind is built
  // again rather than a new one beside it: an engine that timed out while creating its indices
  // would otherwise get a new set at every retry.
  const version = live === null && existing.length > 0 ? Math.max(...existing) : Math.max(0, live ?? 0, ...existing) + 1;
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
      if (page.documents.length > 0) await writeDocuments({ engine, knex, logger, bulkSize: deps.bulkSize }, version, { upsert: page.documents, remove: [] }, position);
      documents[type] += page.documents.length;
      deps.onProgress?.(type, documents[type]);
    }
  }
  await engine.write(version, { upsert: [], remove: [] }, checkpoints);
  await engine.refresh(version);
  await engine.switchAlias(version);
  const dropped: number[] = [];
  for (const older of await engine.versions()) {
    if (older >= version) continue;
    await engine.dropVersion(older);
    dropped.push(older);
  }
  if (dropped.length > 0) {
    await knex('search_failures').where({ engine: engine.engine }).whereIn('version', dropped).whereNull('resolved_at').update({ resolved_at: knex.fn.now() });
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  logger.info({ version, documents, dropped, seconds }, 'search version built and live');
  return { version, documents, checkpoints, dropped, seconds };
}
