// The broker stopped (infra/kafka/down.sh) and started again (up.sh) in the middle of a burst:
// the relay and the projector ride it out; nothing is lost, nothing is applied twice.
// Exclusive with Kafka: it stops the broker every other Kafka suite uses (without a broker it skips at once, beside another file)
// Slow: stops the Kafka broker (infra/kafka/down.sh) mid-burst and starts it again (up.sh), then waits for the relay and every consumer group to catch up
import { expect } from 'chai';
import { readModelProjection } from '../../projections/readModel';
import { SESSION_TIMEOUT_MS } from '../../projections/runtime/kafkaProjector';
import {
  Gate, KAFKA_BROKERS, RECORDER, appliedCount, brokerAnswers, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder,
  expectReadModelMatchesStore, failures, kafkaScript, openTransportTest, projectionsUnderTest, relayPosition, requireKafka, startBurst,
  waitForConsumers, waitForRelay, waitUntil, printLogsIfFailed, type TransportTest,
} from '../support/kafka';

const PROJECTIONS = [readModelProjection.name, RECORDER];

describe('Kafka transport: broker restarted mid-burst (real broker)', function () {
  this.timeout(300_000);
  let t: TransportTest | undefined;
  let stopped = false;

  before(async function () {
    await requireKafka(this, 'Kafka transport broker restart');
  });
  afterEach(function () {
    printLogsIfFailed(this, t);
  });
  after(async function () {
    this.timeout(200_000);
    // Whatever happened, leave the broker this suite stopped running (for the clean-up and the next suite).
    if (stopped && !(await brokerAnswers(KAFKA_BROKERS[0]))) await kafkaScript('up');
    await t?.close();
  });

  it('down.sh then up.sh while writers append: every event applied once, in stream order', async () => {
    t = await openTransportTest();
    const tt = t;
    const relay = tt.startRelay();
    const projector = tt.startProjector(projectionsUnderTest());
    const gates = [new Gate(400), new Gate(800)];
    const burst = startBurst(tt.store, { streams: 40, eventsPerStream: 30, writers: 8, gates });
    await waitUntil(async () => burst.appended() >= 400 && (await appliedCount(tt.knex)) >= 200, 'events to flow to the projection');

    stopped = true;
    await kafkaScript('down');
    expect(await brokerAnswers(KAFKA_BROKERS[0]), 'broker stopped').to.equal(false);
    gates[0].open();
    await waitUntil(() => burst.appended() >= 800, 'writers to append while the broker is down');
    // /readyz reads these states: a consumer the broker cannot answer is not running, though kafkajs has not given up on it yet.
    await waitUntil(() => projector.status().every((s) => s.state === 'failing'), 'the projections to say they are not consuming', SESSION_TIMEOUT_MS + 10_000)
      .catch((error: Error) => {
        error.message += `; projector: ${JSON.stringify(projector.status().map(({ name, state, lastError }) => ({ name, state, lastError })))}`;
        throw error;
      });
    expect(Number(await relayPosition(tt.knex, tt.topic)), 'relay cannot publish without the broker').to.be.lessThan(Number(await tt.store.headPosition()));

    await kafkaScript('up');
    gates[1].open();
    await burst.done;
    await waitForRelay(tt, 150_000);
    await waitForConsumers(tt, PROJECTIONS, 150_000).catch((error: Error) => {
      error.message += `; projector: ${JSON.stringify(projector.status().map(({ name, state, lastError }) => ({ name, state, lastError })))}`;
      throw error;
    });
    await expectEachEventAppliedOnceInOrder(tt);
    await expectReadModelMatchesStore(tt);
    await expectCheckpointsAtPartitionHeads(tt, PROJECTIONS);
    expect(await failures(tt.knex)).to.deep.equal([]);
    expect(relay.status().state).to.equal('running');
    expect(projector.status().map((s) => s.state)).to.deep.equal(['running', 'running']);
  });
});
