// The database refuses the relay, or a projector, for a while (its connections cut, new ones
// refused): each says so, and once let in again goes on; nothing is lost or applied twice. When it
// stays away longer than the retry budget, each ends `failed` once instead of retrying forever,
// and a fresh one (the process restarted) goes on from where it stopped.
import { expect } from 'chai';
import { PostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { readModelProjection } from '../../projections/readModel';
import { startKafkaProjector } from '../../projections/runtime/kafkaProjector';
import { startRelay, type RelayStatus } from '../../services/process/relay/relay';
import type { ProjectionStatus } from '../../projections/runtime/projector';
import { cutConnections, restoreConnections, withApplicationName } from '../support/database';
import {
  RECORDER, appendCase, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, expectReadModelMatchesStore, failures,
  projectionsUnderTest, recordingProjection, startBurst, transportSuite, waitForConsumers, waitForRelay, waitUntil, type TransportTest,
} from '../support/kafka';

const VICTIM = 'under-test';

/** knex's messages about the connections it lost or could not get, into the test's log (printed if it fails). */
const knexLogTo = (t: TransportTest) => ({ warn: (m: string) => t.logger.warn(m), error: (m: string) => t.logger.error(m) });

/** A relay whose own connections carry the VICTIM name (so the test cuts just them), stopped and closed with the test. */
function startNamedRelay(tt: TransportTest, options: Pick<Parameters<typeof startRelay>[0], 'retry' | 'onFailed'> = {}) {
  const url = withApplicationName(tt.db.url, VICTIM);
  const pool = createPool(url);
  const knex = createKnex(url, 10, knexLogTo(tt));
  const store = new PostgresEventStore(pool, url);
  const relay = startRelay({ store, knex, kafka: tt.kafka, topic: tt.topic, logger: tt.logger, ...options });
  tt.defer(async () => {
    await relay.stop();
    await store.close();
    await knex.destroy();
    await pool.end();
  });
  return relay;
}

describe('Kafka transport: the database refuses the relay or a projector for a while (real broker)', function () {
  this.timeout(120_000);
  const suite = transportSuite('Kafka transport database outage', { beforeClose: (t) => restoreConnections(t.db) });

  it('the relay: a read that fails is reported (retrying); let in again, it publishes every event once and the projections agree', async () => {
    const tt = await suite.open({ partitions: 3 });
    const relay = startNamedRelay(tt);
    tt.startProjector(projectionsUnderTest());

    await startBurst(tt.store, { streams: 15, eventsPerStream: 10, writers: 4 }).done;
    await waitForRelay(tt);

    // Its pooled connections end and no new one is let in; its LISTEN session stays, so the next
    // event wakes it and the read that follows is what fails.
    expect(await cutConnections(tt.db, VICTIM, { keepListeners: true }), 'sessions ended').to.be.greaterThan(0);
    await appendCase(tt.store, 16, 5);
    await waitUntil(() => relay.status().state === 'retrying', 'the relay to report the failed read', 20_000);
    expect(relay.status().lastError).to.match(/not currently accepting connections|terminat/);

    await restoreConnections(tt.db);
    await appendCase(tt.store, 17, 5);
    await waitForRelay(tt);
    await waitForConsumers(tt, [readModelProjection.name, RECORDER]);
    await waitUntil(() => relay.status().state === 'running', 'the relay to report running again', 10_000);
    expect(relay.status().published, 'each event published once').to.equal(160);
    await expectEachEventAppliedOnceInOrder(tt);
    await expectReadModelMatchesStore(tt);
    await expectCheckpointsAtPartitionHeads(tt, [readModelProjection.name, RECORDER]);
    expect(await failures(tt.knex)).to.deep.equal([]);
  });

  it('a projector: batches that cannot be applied meanwhile are applied again once it is let in; every event applied once, in order, nothing recorded as failing', async () => {
    const tt = await suite.open({ partitions: 3 });
    const url = withApplicationName(tt.db.url, VICTIM);
    const knex = createKnex(url, 10, knexLogTo(tt));
    const projector = startKafkaProjector({ kafka: tt.kafka, knex, topic: tt.topic, projections: projectionsUnderTest(), contracts: tt.contracts, logger: tt.logger });
    tt.defer(async () => {
      await projector.stop();
      await knex.destroy();
    });
    tt.startRelay();

    await startBurst(tt.store, { streams: 15, eventsPerStream: 10, writers: 4 }).done;
    await waitForConsumers(tt, [readModelProjection.name, RECORDER]);

    expect(await cutConnections(tt.db, VICTIM), 'sessions ended').to.be.greaterThan(0);
    await startBurst(tt.store, { streams: 5, eventsPerStream: 10, writers: 2, firstCaseId: 16 }).done;
    await waitForRelay(tt);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await failures(tt.knex), 'nothing recorded while the database refused the projector').to.deep.equal([]);

    await restoreConnections(tt.db);
    await waitForConsumers(tt, [readModelProjection.name, RECORDER], 120_000);
    await expectEachEventAppliedOnceInOrder(tt);
    await expectReadModelMatchesStore(tt);
    await expectCheckpointsAtPartitionHeads(tt, [readModelProjection.name, RECORDER]);
    expect(await failures(tt.knex)).to.deep.equal([]);
  });

  /** A retry budget of 2 s, pauses of 0.1 s doubling to 0.4 s. */
  const SHORT_BUDGET = { budgetMs: 2000, firstMs: 100, maxMs: 400 };

  it('the relay: the database stays away longer than its budget: failed once, with the last error; a fresh relay publishes the rest', async () => {
    const tt = await suite.open({ partitions: 3 });
    const told: RelayStatus[] = [];
    const relay = startNamedRelay(tt, { retry: SHORT_BUDGET, onFailed: (s) => told.push(s) });
    tt.startProjector(projectionsUnderTest());

    await startBurst(tt.store, { streams: 5, eventsPerStream: 10, writers: 2 }).done;
    await waitForRelay(tt);

    expect(await cutConnections(tt.db, VICTIM, { keepListeners: true }), 'sessions ended').to.be.greaterThan(0);
    await appendCase(tt.store, 6, 5);
    await waitUntil(() => relay.status().state === 'failed', 'the relay to give up', 30_000, () => JSON.stringify(relay.status()));
    expect(relay.status().lastError).to.match(/^gave up after \d+ failed attempts in \d+ s: .*(not currently accepting connections|terminat)/);
    expect(told.map((s) => [s.state, s.correlationId]), 'onFailed, once').to.deep.equal([['failed', relay.status().correlationId]]);
    await relay.stop();
    expect(relay.status().state, 'still failed after stop').to.equal('failed');

    await restoreConnections(tt.db);
    tt.startRelay();
    await waitForRelay(tt);
    await waitForConsumers(tt, [readModelProjection.name, RECORDER]);
    await expectEachEventAppliedOnceInOrder(tt);
    await expectReadModelMatchesStore(tt);
    expect(await failures(tt.knex)).to.deep.equal([]);
  });

  it('a projector: the database stays away longer than its budget: failed once, nothing recorded as failing; a fresh projector applies the rest once', async () => {
    const tt = await suite.open({ partitions: 3 });
    const url = withApplicationName(tt.db.url, VICTIM);
    const knex = createKnex(url, 10, knexLogTo(tt));
    const told: ProjectionStatus[] = [];
    const projector = startKafkaProjector({
      kafka: tt.kafka, knex, topic: tt.topic, projections: [recordingProjection()], contracts: tt.contracts, logger: tt.logger,
      retry: SHORT_BUDGET, onFailed: (s) => told.push(s),
    });
    tt.defer(async () => {
      await projector.stop();
      await knex.destroy();
    });
    tt.startRelay();

    await startBurst(tt.store, { streams: 5, eventsPerStream: 10, writers: 2 }).done;
    await waitForConsumers(tt, [RECORDER]);

    expect(await cutConnections(tt.db, VICTIM), 'sessions ended').to.be.greaterThan(0);
    await startBurst(tt.store, { streams: 5, eventsPerStream: 4, writers: 2, firstCaseId: 6 }).done;
    await waitUntil(() => projector.status()[0].state === 'failed', 'the projection to give up', 30_000, () => JSON.stringify(projector.status()));
    expect(projector.status()[0].lastError).to.match(/^gave up after \d+ failed attempts in \d+ s: .*not currently accepting connections/);
    expect(told.map((s) => [s.name, s.state, s.correlationId]), 'onFailed, once').to.deep.equal([[RECORDER, 'failed', projector.status()[0].correlationId]]);
    await projector.stop();
    expect(projector.status()[0].state, 'still failed after stop').to.equal('failed');

    await restoreConnections(tt.db);
    expect(await failures(tt.knex), 'nothing recorded: the database was away, no event was at fault').to.deep.equal([]);
    tt.startProjector([recordingProjection()]);
    await waitForConsumers(tt, [RECORDER]);
    await expectEachEventAppliedOnceInOrder(tt);
    await expectCheckpointsAtPartitionHeads(tt, [RECORDER]);
    expect(await failures(tt.knex)).to.deep.equal([]);
  });
});
