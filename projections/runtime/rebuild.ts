import type { Knex } from 'knex';
import type { EventStore } from '../../services/shared/eventStore';
import { lockCheckpoint, saveCheckpoint } from './checkpoints';
import type { Projection, RebuildSession } from './projection';

export interface RebuildResult { projection: string; events: number; position: string; seconds: number }

/**
 * Rebuilds a read model from position 0 in one transaction: its tables are emptied, every event is
 * applied again, the checkpoint lands on the last position. A crash half-way leaves the old read
 * model as it was. The checkpoint row stays locked meanwhile, so a running projector waits. A
 * projection with a rebuild session (Projection.rebuilding) applies the pages through it.
 */
export async function rebuildProjection(
  projection: Projection,
  deps: {
    store: EventStore; knex: Knex; pageSize?: number; onProgress?: (events: number, position: string) => void;
    /** Apply the events up to this position only (a replay as of a point, projections/runtime/replay.ts). */
    until?: string;
  },
): Promise<RebuildResult> {
  const started = process.hrtime.bigint();
  const pageSize = deps.pageSize ?? 5000;
  let events = 0;
  let after = '0';
  await deps.knex.transaction(async (trx) => {
    await lockCheckpoint(trx, projection.name);
    await trx.raw(`TRUNCATE ${projection.tables.map((t) => `"${t}"`).join(', ')} RESTART IDENTITY`);
    const indexes = await dropSecondaryIndexes(trx, projection.tables);
    const session: RebuildSession = projection.rebuilding?.() ?? { apply: (t, events) => projection.apply(t, events), finish: async () => undefined };
    // The next page is read (on the store's own connections) while this one is applied.
    let next = deps.store.readAll({ after, maxCount: pageSize });
    const until = deps.until === undefined ? null : BigInt(deps.until);
    for (;;) {
      const read = await next;
      const page = until === null ? read : read.filter((e) => BigInt(e.position) <= until);
      if (page.length === 0) break;
      next = deps.store.readAll({ after: page[page.length - 1].position, maxCount: pageSize });
      next.catch(() => undefined); // if applying fails first, this read's failure is not unhandled
      await session.apply(trx, page);
      events += page.length;
      after = page[page.length - 1].position;
      deps.onProgress?.(events, after);
      if (page.length < read.length) break;
    }
    await session.finish(trx);
    for (const definition of indexes) await trx.raw(definition);
    await saveCheckpoint(trx, projection.name, BigInt(after));
    // On the Kafka transport the checkpoints are per partition: everything up to `after` is applied now.
    await trx('projection_checkpoints').where('name', 'like', `${projection.name}#%`).andWhere('position', '<', after).update({ position: after });
    // Every event was applied again from the event store: earlier failures (and parked streams) are resolved.
    await trx('projection_failures').where({ projection: projection.name }).whereNull('resolved_at').update({ resolved_at: trx.fn.now() });
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { projection: projection.name, events, position: after, seconds };
}

/**
 * Secondary indexes (those not backing a constraint) are dropped while the empty tables are
 * filled and built again at the end: one sort per index instead of an index update per row.
 * Inside the rebuild's transaction, so a failed rebuild leaves them as they were.
 */
async function dropSecondaryIndexes(trx: Knex.Transaction, tables: string[]): Promise<string[]> {
  const { rows } = await trx.raw(`
    SELECT i.indexname, i.indexdef FROM pg_indexes i
    WHERE i.schemaname = current_schema() AND i.tablename = ANY(?)
      AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass)`, [tables]);
  for (const { indexname } of rows as { indexname: string }[]) await trx.raw(`DROP INDEX "${indexname}"`);
  return (rows as { indexdef: string }[]).map((r) => r.indexdef);
}
