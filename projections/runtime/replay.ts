import type { Knex } from 'knex';
import { createKnex } from '../../infra/postgres/database';
import type { EventStore } from '../../services/shared/eventStore';
import { migrateReadModel } from '../migrations';
import type { Projection } from './projection';
import { type RebuildResult, rebuildProjection } from './rebuild';

/**
 * A replay for analysts (`npm run replay`): projections built as of a point of the log into a
 * PostgreSQL schema of their own, for SQL analysis, without touching the live read model. The
 * schema gets every read-model table (the migrations, run with the schema first on the search
 * path; functions and extensions still come from `public`), the named projections are applied
 * from position 0 up to the point, and a table `replay` records what was built as of when.
 */

/** A point of the log: a position, or a time (the last position recorded at or before it). */
export type ReplayPoint = { position: string } | { time: string };

const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;
const RESERVED = new Set(['public', 'information_schema']);

export class ReplayError extends Error {}

export interface ReplayResult { schema: string; until: string; projections: RebuildResult[] }

/**
 * Builds `projections` as of `until` (absent: the head) into `schema` on the database at
 * `databaseUrl`. Refuses a schema that exists unless `replace` (then it is dropped first), and
 * `public` always. A failure drops the schema it created: a half-built replay is never left behind.
 */
export async function replayIntoSchema(projections: readonly Projection[], deps: {
  store: EventStore; databaseUrl: string; schema: string; until: ReplayPoint | null; replace?: boolean;
  onProgress?: (projection: string, events: number, position: string) => void;
}): Promise<ReplayResult> {
  if (!SCHEMA.test(deps.schema) || RESERVED.has(deps.schema) || deps.schema.startsWith('pg_')) {
    throw new ReplayError(`--schema "${deps.schema}" must be a lower-case PostgreSQL name (a-z, 0-9, _; not public, not pg_…)`);
  }
  if (projections.length === 0) throw new ReplayError('name at least one projection, or --all');
  const admin = createKnex(deps.databaseUrl, 1);
  let schemaKnex: Knex | null = null;
  let created = false;
  try {
    const live = (await admin.raw('SELECT current_schema() AS s')).rows[0].s as string;
    if (deps.schema === live) throw new ReplayError(`--schema "${deps.schema}" is the live read model's schema`);
    const exists = (await admin.raw('SELECT 1 FROM pg_namespace WHERE nspname = ?', [deps.schema])).rows.length > 0;
    if (exists && !deps.replace) throw new ReplayError(`schema "${deps.schema}" exists: give --replace to drop it and build it again, or another name`);
    const head = await deps.store.headPosition();
    const until = deps.until === null ? head : 'position' in deps.until ? deps.until.position : await deps.store.positionAt(deps.until.time);
    if (BigInt(until) > BigInt(head)) throw new ReplayError(`--until ${until} is past the log's head (${head})`);
    if (exists) await admin.raw(`DROP SCHEMA "${deps.schema}" CASCADE`);
    await admin.raw(`CREATE SCHEMA "${deps.schema}"`);
    created = true;
    schemaKnex = createKnex(deps.databaseUrl, 2, undefined, { searchPath: [deps.schema, 'public'] });
    await migrateReadModel(schemaKnex);
    const results: RebuildResult[] = [];
    for (const projection of projections) {
      results.push(await rebuildProjection(projection, {
        store: deps.store, knex: schemaKnex, until,
        onProgress: (events, position) => deps.onProgress?.(projection.name, events, position),
      }));
    }
    await schemaKnex.schema.createTable('replay', (t) => {
      t.bigInteger('until_position').notNullable();
      t.specificType('projections', 'text[]').notNullable();
      t.timestamp('replayed_at', { useTz: true }).notNullable().defaultTo(schemaKnex!.fn.now());
    });
    await schemaKnex('replay').insert({ until_position: until, projections: projections.map((p) => p.name) });
    return { schema: deps.schema, until, projections: results };
  } catch (err) {
    if (created) await admin.raw(`DROP SCHEMA IF EXISTS "${deps.schema}" CASCADE`).catch(() => undefined);
    throw err;
  } finally {
    await schemaKnex?.destroy();
    await admin.destroy();
  }
}
