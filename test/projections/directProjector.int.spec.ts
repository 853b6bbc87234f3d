// The direct transport's projector (projections follow the event store themselves) when the
// database goes away under it: the read that fails does not stop the projection for good.
import { expect } from 'chai';
import type { Knex } from 'knex';
import type pg from 'pg';
import pino from 'pino';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { startProjector, type Projector } from '../../projections/runtime/projector';
import { createTestDatabase, cutConnections, restoreConnections, withApplicationName, type TestDatabase } from '../support/database';
import { RECORDER, appendCase, appliedRows, createRecordingTable, recordingProjection, startBurst, waitUntil } from '../support/kafka';

const VICTIM = 'projector-under-test';

describe('direct projector: the database refuses it for a while (PostgreSQL)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  let knex: Knex;
  let store: PostgresEventStore;
  let projector: Projector | undefined;
  const closers: (() => Promise<unknown>)[] = [];

  before(async () => {
    db = await createTestDatabase('direct');
    pool = createPool(db.url);
    knex = createKnex(db.url);
    await migrateReadModel(knex);
    await setupPostgresEventStore(pool);
    await createRecordingTable(knex);
    store = new PostgresEventStore(pool, db.url);
  });
  after(async () => {
    await restoreConnections(db).catch(() => undefined);
    await projector?.stop();
    for (const close of closers) await close().catch(() => undefined);
    await store.close();
    await knex.destroy();
    await pool.end();
    await db.drop();
  });

  it('a read that fails is reported as failing; once connections are let in, it follows on and applies every event once, in order', async () => {
    // The projector's own connections carry a name, so the test cuts just them.
    const url = withApplicationName(db.url, VICTIM);
    const victimPool = createPool(url);
    const logger = pino({ level: 'silent' });
    const victimKnex = createKnex(url, 10, { warn: (m) => logger.warn(m), error: (m) => logger.error(m) });
    const victimStore = new PostgresEventStore(victimPool, url);
    closers.push(() => victimStore.close(), () => victimKnex.destroy(), () => victimPool.end());
    projector = startProjector({ store: victimStore, knex: victimKnex, projections: [recordingProjection()], logger });
    const running = projector;

    await startBurst(store, { streams: 10, eventsPerStream: 10, writers: 4 }).done;
    await waitUntil(async () => (await appliedRows(knex)).length === 100, 'the first 100 events to be applied');

    // Its pooled connections end and no new one is let in; its LISTEN session stays, so the next
    // event wakes it and the read that follows is what fails.
    expect(await cutConnections(db, VICTIM, { keepListeners: true }), 'sessions ended').to.be.greaterThan(0);
    await appendCase(store, 11, 5);
    await waitUntil(() => running.status()[0].state === 'failing', 'the projection to report the failed read', 20_000);
    expect(running.status()[0].lastError).to.match(/not currently accepting connections|terminat/);

    await restoreConnections(db);
    await appendCase(store, 12, 3);
    await waitUntil(async () => (await appliedRows(knex)).length === 108, 'every event to be applied', 30_000);
    await waitUntil(() => running.status()[0].state === 'running', 'the projection to report running again', 10_000);

    const rows = await appliedRows(knex, RECORDER);
    expect(new Set(rows.map((r) => r.position)).size, 'each event applied once').to.equal(108);
    const byStream = new Map<string, number[]>();
    for (const r of rows) byStream.set(r.stream_id, [...(byStream.get(r.stream_id) ?? []), Number(r.revision)]);
    for (const [stream, revisions] of byStream) expect(revisions, stream).to.deep.equal(revisions.map((_, i) => i));
    expect(running.status()[0].position).to.equal(await store.headPosition());
  });
});
