// A projection that cannot apply an event parks it and goes on (projections/runtime/parking.ts),
// on both transports and in a rebuild: one event made to fail among 10,000, every other event
// applied once, the event parked and reported, then retried once the fault is gone, and nothing
// applied twice. The recording projection keeps no revision guard: an event applied twice shows
// as two rows.
import { expect } from 'chai';
import type { Knex } from 'knex';
import type pg from 'pg';
import pino from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { retryParked } from '../../projections/runtime/parking';
import type { Projection } from '../../projections/runtime/projection';
import { startProjector, type Projector } from '../../projections/runtime/projector';
import { rebuildProjection } from '../../projections/runtime/rebuild';
import type { EventStore } from '../../services/shared/eventStore';
import type { Platform } from '../../services/process/platform';
import { projectorReadiness } from '../../services/process/roles';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import {
  META, RECORDER, appendCase, appliedRows, caseEvent, caseStream, createRecordingTable, recordingProjection, transportSuite, waitForConsumers, waitForRelay, waitUntil,
} from '../support/kafka';

const STREAMS = 1000;
const PER_STREAM = 10;

/** 10,000 events: 10 on each of 1,000 case streams, each stream appended in one go. */
async function appendTenThousand(store: EventStore): Promise<void> {
  for (let id = 1; id <= STREAMS; id++) {
    await store.append(caseStream(id), Array.from({ length: PER_STREAM }, (_, r) => caseEvent(id, r)), { expectedRevision: 'no-stream', metadata: META });
  }
}

async function everyEvent(store: EventStore): Promise<EventEnvelope[]> {
  const events: EventEnvelope[] = [];
  for (let after = '0'; ;) {
    const page = await store.readAll({ after, maxCount: 5000 });
    if (page.length === 0) return events;
    events.push(...page);
    after = page[page.length - 1].position;
  }
}

/** The recording projection, throwing on the events `fault.culprit` picks while `fault.on`. */
function faulty(fault: { on: boolean; culprit: (e: EventEnvelope) => boolean; tries: number }, name = RECORDER): Projection {
  const recorder = recordingProjection({ name });
  return {
    ...recorder,
    async apply(trx, events) {
      if (fault.on && events.some(fault.culprit)) {
        if (events.length === 1) fault.tries++;
        throw new RangeError('index row size 3048 exceeds btree version 4 maximum 2704 for index "recorder_identity"');
      }
      return recorder.apply(trx, events);
    },
  };
}

async function readiness(knex: Knex, store: EventStore, projector: Projector) {
  const [, , projections] = projectorReadiness(projector, { knex, store } as unknown as Platform);
  return projections.check();
}

/** Each event recorded once, in the order of its stream. */
async function expectAppliedOnce(knex: Knex, events: EventEnvelope[]): Promise<void> {
  const rows = await appliedRows(knex);
  expect(rows.length, 'rows recorded').to.equal(events.length);
  expect(new Set(rows.map((r) => String(r.position))).size, 'distinct positions: nothing applied twice').to.equal(events.length);
  const byStream = new Map<string, string[]>();
  for (const r of rows) byStream.set(r.stream_id, [...(byStream.get(r.stream_id) ?? []), String(r.revision)]);
  for (const [stream, revisions] of byStream) expect(revisions, `revisions of ${stream} in order`).to.deep.equal([...revisions].sort((a, b) => Number(a) - Number(b)));
}

describe('parking: one event among 10,000 that a projection cannot apply (direct transport, PostgreSQL)', function () {
  this.timeout(180_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  let knex: Knex;
  let store: PostgresEventStore;
  let events: EventEnvelope[];
  const stops: (() => Promise<unknown>)[] = [];

  before(async () => {
    db = await createMigratedDatabase('parking');
    pool = createPool(db.url);
    knex = createKnex(db.url);
    await migrateReadModel(knex);
    await setupPostgresEventStore(pool);
    await createRecordingTable(knex);
    store = new PostgresEventStore(pool, db.url);
    await appendTenThousand(store);
  });
  beforeEach(async () => {
    events = await everyEvent(store);
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop().catch(() => undefined);
    await knex('transport_applied').delete();
    await knex('parked_events').delete();
    await knex('projection_checkpoints').delete();
  });
  after(async () => {
    await store.close();
    await knex.destroy();
    await pool.end();
    await db.drop();
  });

  it('every other event is applied, the one parked, /readyz degraded; retried once the fault is gone, nothing applied twice', async () => {
    // The last event of a stream in the middle of the log: nothing of its stream behind it.
    const culpritEvent = events.find((e) => e.streamId === caseStream(617) && e.revision === String(PER_STREAM - 1))!;
    const fault = { on: true, culprit: (e: EventEnvelope) => e.id === culpritEvent.id, tries: 0 };
    const projection = faulty(fault);
    const projector = startProjector({ store, knex, projections: [projection], logger: pino({ level: 'silent' }) });
    stops.push(() => projector.stop());
    const head = await store.headPosition();
    await waitUntil(() => projector.status()[0].position === head, 'the projection to move past every event', 120_000, () => JSON.stringify(projector.status()));

    await expectAppliedOnce(knex, events.filter((e) => e !== culpritEvent));
    const parked = await knex('parked_events').select('projection', 'kind', 'position', 'event_id', 'event_type', 'stream_id', 'attempts', 'error', 'first_attempt_at', 'last_attempt_at', 'resolved_at');
    expect(parked).to.have.length(1);
    expect(parked[0]).to.deep.include({
      projection: RECORDER, kind: 'failed', position: culpritEvent.position, event_id: culpritEvent.id, event_type: culpritEvent.type, stream_id: caseStream(617),
      attempts: 3, error: 'index row size 3048 exceeds btree version 4 maximum 2704 for index "recorder_identity"', resolved_at: null,
    });
    expect(parked[0].last_attempt_at.getTime()).to.be.greaterThan(parked[0].first_attempt_at.getTime());
    expect(fault.tries, 'tried 3 times alone').to.equal(3);
    expect(projector.status()[0].state).to.equal('running');
    const degraded = await readiness(knex, store, projector);
    expect(degraded).to.deep.include({ ok: true, degraded: true });
    expect((degraded.details as { projections: { state: string }[] }).projections[0].state).to.equal('degraded');

    // A retry while the fault is still there: the event stays parked, tried once more.
    expect(await retryParked({ knex, store, projections: [projection] }, {})).to.deep.include({ resolved: 0 });
    expect(await knex('parked_events').whereNull('resolved_at').first('attempts')).to.deep.equal({ attempts: 4 });

    fault.on = false;
    const report = await retryParked({ knex, store, projections: [projection] }, { projection: RECORDER });
    expect(report).to.deep.equal({ resolved: 1, stillParked: [] });
    await expectAppliedOnce(knex, events);
    expect(await knex('parked_events').select('resolution', 'attempts')).to.deep.equal([{ resolution: 'retried', attempts: 5 }]);
    expect(await readiness(knex, store, projector)).to.deep.include({ ok: true, degraded: false });

    // The stream is not parked any more: its next event is applied, by the same projector.
    await appendCase(store, 617, 1);
    const newHead = await store.headPosition();
    await waitUntil(() => projector.status()[0].position === newHead, 'the next event of the stream');
    expect((await appliedRows(knex)).filter((r) => r.stream_id === caseStream(617)).map((r) => String(r.revision))).to.deep.equal(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    // Again from the start (a redelivery of everything): the checkpoint recognises it all.
    await projector.stop();
    await knex('projection_checkpoints').where({ name: RECORDER }).update({ position: 0 });
    await knex('transport_applied').delete();
    const again = startProjector({ store, knex, projections: [projection], logger: pino({ level: 'silent' }) });
    stops.push(() => again.stop());
    await waitUntil(() => again.status()[0].position === newHead, 'the replay');
    expect(await knex('parked_events').count({ n: '*' }).first(), 'nothing parked again').to.deep.equal({ n: '1' });
  });

  it('the events behind a parked one stay held in order; a retry applies them in their order', async () => {
    const stream = caseStream(42);
    const ofStream = events.filter((e) => e.streamId === stream);
    expect(ofStream).to.have.length(PER_STREAM);
    const fault = { on: true, culprit: (e: EventEnvelope) => e.id === ofStream[3].id, tries: 0 };
    const projection = faulty(fault);
    const projector = startProjector({ store, knex, projections: [projection], logger: pino({ level: 'silent' }) });
    stops.push(() => projector.stop());
    const head = await store.headPosition();
    await waitUntil(() => projector.status()[0].position === head, 'the projection to move past every event', 120_000);

    const parked = await knex('parked_events').orderBy('position').select('kind', 'position');
    expect(parked).to.deep.equal(ofStream.slice(3).map((e, i) => ({ kind: i === 0 ? 'failed' : 'held', position: e.position })));
    expect((await appliedRows(knex)).filter((r) => r.stream_id === stream).map((r) => String(r.revision))).to.deep.equal(['0', '1', '2']);

    fault.on = false;
    expect(await retryParked({ knex, store, projections: [projection] }, { ids: [Number((await knex('parked_events').orderBy('id').first('id')).id)] })).to.deep.equal({ resolved: 7, stillParked: [] });
    expect((await appliedRows(knex)).filter((r) => r.stream_id === stream).map((r) => String(r.revision))).to.deep.equal(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    await expectAppliedOnce(knex, events);
  });

  it('a rebuild parks too: the rest is rebuilt, what was parked before is resolved, the event at fault parked again', async () => {
    const culpritEvent = events.find((e) => e.streamId === caseStream(5) && e.revision === '9')!;
    const fault = { on: true, culprit: (e: EventEnvelope) => e.id === culpritEvent.id, tries: 0 };
    await knex('parked_events').insert({ projection: RECORDER, kind: 'failed', position: '1', stream_id: caseStream(1), error: 'before', notice_id: 0 });
    const result = await rebuildProjection(faulty(fault), { store, knex, pageSize: 1000 });
    expect(result).to.deep.include({ events: events.length, parked: 1, position: events.at(-1)!.position });
    await expectAppliedOnce(knex, events.filter((e) => e !== culpritEvent));
    expect(await knex('parked_events').orderBy('id').select('kind', 'position', 'resolution')).to.deep.equal([
      { kind: 'failed', position: '1', resolution: 'rebuilt' },
      { kind: 'failed', position: culpritEvent.position, resolution: null },
    ]);
    expect(fault.tries, 'tried twice in the rebuild').to.equal(2);
  });
});

describe('parking: one event among 10,000 that a projection cannot apply (Kafka transport, real broker)', function () {
  this.timeout(240_000);
  const suite = transportSuite('parking on the Kafka transport');

  it('every other event is applied, the one parked, /readyz degraded; retried once the fault is gone, nothing applied twice', async () => {
    const tt = await suite.open({ partitions: 3 });
    await appendTenThousand(tt.store);
    const culpritEvent = (await tt.store.readStream(caseStream(617)))[PER_STREAM - 1];
    const fault = { on: true, culprit: (e: EventEnvelope) => e.id === culpritEvent.id, tries: 0 };
    const projection = faulty(fault);
    tt.startRelay();
    const projector = tt.startProjector([projection]);
    await waitForRelay(tt);
    await waitForConsumers(tt, [RECORDER], 180_000);

    const all = await everyEvent(tt.store);
    expect(all).to.have.length(STREAMS * PER_STREAM);
    await expectAppliedOnce(tt.knex, all.filter((e) => e.id !== culpritEvent.id));
    expect(await tt.knex('parked_events').select('kind', 'position', 'attempts', 'kafka_partition')).to.deep.equal([
      { kind: 'failed', position: culpritEvent.position, attempts: 3, kafka_partition: (await tt.knex('parked_events').first('kafka_partition')).kafka_partition },
    ]);
    expect(await readiness(tt.knex, tt.store, projector)).to.deep.include({ ok: true, degraded: true });

    fault.on = false;
    expect(await retryParked({ knex: tt.knex, store: tt.store, projections: [projection] }, {})).to.deep.equal({ resolved: 1, stillParked: [] });
    await expectAppliedOnce(tt.knex, all);
    expect(await readiness(tt.knex, tt.store, projector)).to.deep.include({ ok: true, degraded: false });
    // The stream is not parked any more for the consumer either.
    await appendCase(tt.store, 617, 1);
    await waitForRelay(tt);
    await waitForConsumers(tt, [RECORDER]);
    expect((await appliedRows(tt.knex)).filter((r) => r.stream_id === caseStream(617))).to.have.length(PER_STREAM + 1);
  });
});
