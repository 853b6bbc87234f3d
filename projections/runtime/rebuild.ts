import type { Knex } from 'knex';
import type { EventStore } from '../../services/shared/eventStore';
import type { EventEnvelope } from '../../contracts/envelope';
import { isTransient } from '../../services/shared/faults';
import { lockCheckpoint, saveCheckpoint } from './checkpoints';
import { applyIsolating, heldError, ParkedStreams, parkingOf, recordParked, triesError, type Parking } from './parking';
import type { Projection, RebuildSession } from './projection';

export interface RebuildResult { projection: string; events: number; position: string; seconds: number; parked: number }

/**
 * Rebuilds a read model from position 0 in one transaction: its tables are emptied, every event is
 * applied again, the checkpoint lands on the last position. A crash half-way leaves the old read
 * model as it was. The checkpoint row stays locked meanwhile, so a running projector waits. A
 * projection with a rebuild session (Projection.rebuilding) applies the pages through it.
 *
 * A rebuild parks as the projectors do (projections/runtime/parking.ts): the parked events it
 * starts with are resolved (`rebuilt`: every event is applied again), and an event that still fails
 * is parked with the later events of its stream, in the rebuild's transaction; every page is
 * applied in a savepoint, so a failing page is halved to find the event at fault.
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
  let parked = 0;
  let after = '0';
  await deps.knex.transaction(async (trx) => {
    await lockCheckpoint(trx, projection.name);
    // Every event is applied again from the event store: the events parked before are resolved (and parked again if they still fail).
    await trx('parked_events').where({ projection: projection.name }).whereNull('resolved_at').update({ resolved_at: trx.fn.now(), resolution: 'rebuilt' });
    await trx.raw(`TRUNCATE ${projection.tables.map((t) => `"${t}"`).join(', ')} RESTART IDENTITY`);
    const indexes = await dropSecondaryIndexes(trx, projection.tables);
    const session: RebuildSession = projection.rebuilding?.() ?? { apply: (t, events) => projection.apply(t, events), finish: async () => undefined };
    const streams = new ParkedStreams(projection.name);
    await streams.sync(trx, projection.name, -1n);
    const park = async (rows: Parking[]) => {
      await recordParked(trx, projection.name, rows);
      parked += rows.length;
    };
    /** A page (or a part of one) in a savepoint: all or nothing, the session put back as it was when it fails. */
    const attempt = async (page: EventEnvelope[]) => {
      const restore = session.mark?.();
      try {
        await trx.transaction(async (sp) => {
          const held = page.filter((e) => streams.behind(projection.name, e.streamId) !== undefined);
          const fresh = held.length === 0 ? page : page.filter((e) => streams.behind(projection.name, e.streamId) === undefined);
          if (fresh.length > 0) await session.apply(sp, fresh);
          if (held.length > 0) await recordParked(sp, projection.name, held.map((e) => parkingOf(e, 'held', heldError(e.streamId, streams.behind(projection.name, e.streamId)!))));
          parked += held.length;
        });
      } catch (error) {
        restore?.();
        throw error;
      }
    };
    // The next page is read (on the store's own connections) while this one is applied.
    let next = deps.store.readAll({ after, maxCount: pageSize });
    const until = deps.until === undefined ? null : BigInt(deps.until);
    for (;;) {
      const read = await next;
      const page = until === null ? read : read.filter((e) => BigInt(e.position) <= until);
      if (page.length === 0) break;
      next = deps.store.readAll({ after: page[page.length - 1].position, maxCount: pageSize });
      next.catch(() => undefined); // if applying fails first, this read's failure is not unhandled
      await applyIsolating(page, {
        attempt,
        // The rebuild's one transaction cannot outlast its connection: anything transient ends it (the old read model stays).
        transient: async (error) => isTransient(error),
        pauseAfter: async (error) => {
          throw error;
        },
        pause: async () => true,
        park: async (event, tries) => {
          await park([parkingOf(event, 'failed', triesError(tries), tries)]);
          streams.add(projection.name, event.streamId, event.position);
        },
      }, 2);
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
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { projection: projection.name, events, position: after, seconds, parked };
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
