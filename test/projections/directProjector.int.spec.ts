// The direct transport's projector (projections follow the event store themselves) when the
// database goes away under it: the read that fails does not stop the projection for good; when it
// stays away past the retry budget the projection ends `failed` once instead of retrying forever;
// an event it cannot apply is parked, and it goes on.
import { expect } from 'chai';
import type { Knex } from 'knex';
import type pg from 'pg';
import pino from 'pino';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { startProjector, type Projector } from '../../projections/runtime/projector';
import type { Platform } from '../../services/process/platform';
import { projectorReadiness } from '../../services/process/roles';
import { createMigratedDatabase, cutConnections, restoreConnections, withApplicationName, type TestDatabase } from '../support/database';
import { RECORDER, appendCase, appliedRows, caseStream, createRecordingTable, recordingProjection, startBurst, waitUntil } from '../support/kafka';

const VICTIM = 'projector-under-test';

/** A throw-away database with the read model, the event store and the recording projection's table. */
async function recordingDatabase(label: string): Promise<{ db: TestDatabase; pool: pg.Pool; knex: Knex; store: PostgresEventStore }> {
  const db = await createMigratedDatabase(label);
  const pool = createPool(db.url);
  const knex = createKnex(db.url);
  await migrateReadModel(knex);
  await setupPostgresEventStore(pool);
  await createRecordingTable(knex);
  return { db, pool, knex, store: new PostgresEventStore(pool, db.url) };
}

describe('direct projector: the database refuses it for a while (PostgreSQL)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  let knex: Knex;
  let store: PostgresEventStore;
  let projector: Projector | undefined;
  const closers: (() => Promise<unknown>)[] = [];

  before(async () => ({ db, pool, knex, store } = await recordingDatabase('direct')));
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

describe('direct projector: what cannot succeed fails once (PostgreSQL)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  let knex: Knex;
  let store: PostgresEventStore;
  const stops: (() => Promise<unknown>)[] = [];

  beforeEach(async () => ({ db, pool, knex, store } = await recordingDatabase('directfail')));
  afterEach(async () => {
    await restoreConnections(db).catch(() => undefined);
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
    await store.close();
    await knex.destroy();
    await pool.end();
    await db.drop();
  });

  it('a handler that throws on one event: tried 3 times, then parked with the later events of its stream; every other event applied; /readyz degraded; another projection goes on', async () => {
    await appendCase(store, 1, 3);
    await appendCase(store, 2, 4);
    await appendCase(store, 3, 2);
    const culprit = (e: { streamId: string; revision: string }) => e.streamId === caseStream(2) && e.revision === '2';
    let triesOnCulprit = 0;
    const refusing = recordingProjection({ name: 'refusing' });
    const projector = startProjector({
      store, knex, logger: pino({ level: 'silent' }),
      projections: [
        { ...refusing, async apply(trx, events) {
          if (events.some(culprit)) {
            if (events.length === 1) triesOnCulprit++;
            throw new TypeError('cannot read properties of undefined (reading \'title\')');
          }
          return refusing.apply(trx, events);
        } },
        recordingProjection({ name: 'other' }),
      ],
    });
    stops.push(() => projector.stop());
    const head = await store.headPosition();
    const stateOf = (name: string) => projector.status().find((s) => s.name === name);

    await waitUntil(() => stateOf('refusing')?.position === head, 'the refusing projection to move past everything', 20_000, () => JSON.stringify(projector.status()));
    await waitUntil(() => stateOf('other')?.position === head, 'the other projection to apply every event', 20_000);

    const events = await store.readAll({ after: '0', maxCount: 100 });
    const culpritEvent = events.find(culprit)!;
    const behind = events.filter((e) => e.streamId === caseStream(2) && BigInt(e.position) > BigInt(culpritEvent.position));
    expect(behind).to.have.length(1);
    const applied = events.filter((e) => e !== culpritEvent && !behind.includes(e)).map((e) => e.position);
    expect((await appliedRows(knex, 'refusing')).map((r) => r.position), 'every event but the culprit and those behind it').to.deep.equal(applied);
    expect(stateOf('refusing')).to.deep.include({ state: 'running', lastError: null });
    const parked = await knex('parked_events').orderBy('position').select('projection', 'kind', 'position', 'event_id', 'stream_id', 'error', 'attempts');
    expect(parked).to.deep.equal([
      { projection: 'refusing', kind: 'failed', position: culpritEvent.position, event_id: culpritEvent.id, stream_id: caseStream(2), error: "cannot read properties of undefined (reading 'title')", attempts: 3 },
      { projection: 'refusing', kind: 'held', position: behind[0].position, event_id: behind[0].id, stream_id: caseStream(2), error: `held behind the parked event at position ${culpritEvent.position} of stream ${caseStream(2)}`, attempts: 0 },
    ]);
    expect(triesOnCulprit, 'tried 3 times alone, then parked').to.equal(3);
    expect(stateOf('other')?.state).to.equal('running');

    // /readyz: ready but degraded, naming the projection and the event at fault.
    const [, , projections] = projectorReadiness(projector, { knex, store } as unknown as Platform);
    const readiness = await projections.check();
    expect(readiness).to.deep.include({ ok: true, degraded: true });
    const details = readiness.details as { projections: { name: string; state: string }[]; parked: unknown[]; recentParked: { eventId: string }[] };
    expect(details.projections.find((p) => p.name === 'refusing')).to.deep.include({ state: 'degraded' });
    expect(details.projections.find((p) => p.name === 'other')).to.deep.include({ state: 'running' });
    expect(details.parked).to.deep.equal([{ projection: 'refusing', failed: 1, held: 1, invalid: 0 }]);
    expect(details.recentParked.map((f) => f.eventId)).to.deep.equal([culpritEvent.id]);
  });

  it('the database stays away longer than the retry budget: the projection ends failed with the last error, and a restart follows on', async () => {
    const url = withApplicationName(db.url, VICTIM);
    const victimPool = createPool(url);
    const logger = pino({ level: 'silent' });
    const victimKnex = createKnex(url, 10, { warn: (m) => logger.warn(m), error: (m) => logger.error(m) });
    const victimStore = new PostgresEventStore(victimPool, url);
    stops.push(() => victimPool.end(), () => victimKnex.destroy(), () => victimStore.close());
    const projector = startProjector({ store: victimStore, knex: victimKnex, projections: [recordingProjection()], logger, retry: { budgetMs: 2000, firstMs: 100, maxMs: 400 } });
    stops.push(() => projector.stop());

    await appendCase(store, 1, 5);
    await waitUntil(async () => (await appliedRows(knex)).length === 5, 'the first events to be applied');

    expect(await cutConnections(db, VICTIM, { keepListeners: true }), 'sessions ended').to.be.greaterThan(0);
    await appendCase(store, 2, 3);
    await waitUntil(() => projector.status()[0].state === 'failed', 'the projection to give up', 30_000, () => JSON.stringify(projector.status()));
    expect(projector.status()[0].lastError).to.match(/^gave up after \d+ failed attempts in \d+ s: .*(not currently accepting connections|terminat)/);
    await projector.stop();
    expect(projector.status()[0].state, 'stop() leaves a failed projection failed').to.equal('failed');

    await restoreConnections(db);
    const restarted = startProjector({ store, knex, projections: [recordingProjection()], logger });
    stops.push(() => restarted.stop());
    await waitUntil(async () => (await appliedRows(knex)).length === 8, 'the restarted projector to apply the rest');
    expect(await knex('parked_events').count({ n: '*' }).first()).to.deep.equal({ n: '0' });
  });
});
