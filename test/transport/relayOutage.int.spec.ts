// The database refuses the relay for a while (its connections cut, new ones refused): the relay
// reports it, and once let in again follows on from what the broker acknowledged.
import { expect } from 'chai';
import { PostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { readModelProjection } from '../../projections/readModel';
import { startRelay } from '../../services/relay/relay';
import { cutConnections, restoreConnections, withApplicationName } from '../support/database';
import {
  RECORDER, appendCase, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, expectReadModelMatchesStore, failures,
  openTransportTest, printLogsIfFailed, projectionsUnderTest, requireKafka, startBurst, waitForConsumers, waitForRelay, waitUntil,
  type TransportTest,
} from '../support/kafka';

const VICTIM = 'relay-under-test';

describe('Kafka transport: the database refuses the relay for a while (real broker)', function () {
  this.timeout(120_000);
  let t: TransportTest | undefined;

  before(async function () {
    await requireKafka(this, 'Kafka transport relay outage');
  });
  afterEach(async function () {
    printLogsIfFailed(this, t);
    if (t) await restoreConnections(t.db).catch(() => undefined);
    await t?.close();
    t = undefined;
  });

  it('a read that fails is reported (retrying); let in again, it publishes every event once and the projections agree', async () => {
    t = await openTransportTest({ partitions: 3 });
    const tt = t;
    // The relay's own connections carry a name, so the test cuts just them.
    const url = withApplicationName(tt.db.url, VICTIM);
    const pool = createPool(url);
    const knex = createKnex(url);
    const store = new PostgresEventStore(pool, url);
    const relay = startRelay({ store, knex, kafka: tt.kafka, topic: tt.topic, logger: tt.logger });
    tt.defer(async () => {
      await relay.stop();
      await store.close();
      await knex.destroy();
      await pool.end();
    });
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
});
