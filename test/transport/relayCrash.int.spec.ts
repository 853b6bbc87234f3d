// The relay as its own process (services/process/relay/main.ts), killed with SIGKILL in the middle of a
// burst and restarted: it resumes from its checkpoint, nothing is lost, nothing is applied twice. And
// a relay stopped while it starts ends (it opened its subscription after stop() once, and waited forever).
// Slow: starts the relay as a process of its own (SIGKILLed mid-burst of 3,000 events, restarted behind the broker, stopped while it starts), each time waiting for every consumer group to apply everything
import { expect } from 'chai';
import { readModelProjection } from '../../projections/readModel';
import { startRelay } from '../../services/process/relay/relay';
import { stopOutcome } from '../support/wait';
import {
  Gate, RECORDER, appendCase, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, expectReadModelMatchesStore, failures,
  projectionsUnderTest, relayPosition, startBurst, startRelayProcess, topicMessageCount, transportSuite, waitForConsumers, waitForRelay,
  waitUntil, type TransportTest,
} from '../support/kafka';

const PROJECTIONS = [readModelProjection.name, RECORDER];

async function expectConsistent(t: TransportTest): Promise<void> {
  await expectEachEventAppliedOnceInOrder(t);
  await expectReadModelMatchesStore(t);
  await expectCheckpointsAtPartitionHeads(t, PROJECTIONS);
  expect(await failures(t.knex)).to.deep.equal([]);
}

describe('Kafka transport: relay killed and restarted (real broker, relay process)', function () {
  this.timeout(120_000);
  const suite = transportSuite('Kafka transport relay crash');

  it('SIGKILL mid-burst, restart: every one of 3000 events arrives, once, in stream order', async () => {
    const tt = await suite.open();
    const relay = await startRelayProcess(tt);
    expect(relay.after).to.equal('0');
    tt.startProjector(projectionsUnderTest());
    const gate = new Gate(1500);
    const burst = startBurst(tt.store, { streams: 60, eventsPerStream: 50, writers: 8, gates: [gate] });

    await waitUntil(async () => BigInt(await relayPosition(tt.knex, tt.topic)) >= 600n, 'the relay to publish 600 events');
    await relay.kill();
    const atKill = await relayPosition(tt.knex, tt.topic);
    expect(Number(atKill), 'relay checkpoint when killed').to.be.within(600, burst.total - 1);
    gate.open(); // the rest of the burst is written while the relay is down and restarting

    const restarted = await startRelayProcess(tt);
    expect(restarted.after, 'the restarted relay resumes from its checkpoint').to.equal(atKill);
    await burst.done;
    await waitForRelay(tt);
    await waitForConsumers(tt, PROJECTIONS);
    expect(await topicMessageCount(tt.admin, tt.topic)).to.be.at.least(burst.total);
    await expectConsistent(tt);
  });

  it('a relay restarted behind what the broker acknowledged republishes; consumers apply nothing twice', async () => {
    const tt = await suite.open();
    await startBurst(tt.store, { streams: 20, eventsPerStream: 30, writers: 4 }).done;
    const relay = await startRelayProcess(tt);
    tt.startProjector(projectionsUnderTest());
    await waitForRelay(tt);
    await waitForConsumers(tt, PROJECTIONS);
    await relay.kill();
    // Killed after the broker acked 251..600 but before the checkpoint moved past 250.
    await tt.knex('relay_checkpoints').where({ name: tt.topic }).update({ position: 250 });
    for (let caseId = 1; caseId <= 20; caseId++) await appendCase(tt.store, caseId, 5);

    const restarted = await startRelayProcess(tt);
    expect(restarted.after).to.equal('250');
    await waitForRelay(tt);
    await waitForConsumers(tt, PROJECTIONS);
    expect(await topicMessageCount(tt.admin, tt.topic), '600 published, then 251..700 again').to.equal(600 + 450);
    await expectConsistent(tt);
  });
  it('stopped while it starts (connecting to the broker): stop() ends with nothing published; a relay started again publishes every event once', async () => {
    const tt = await suite.open();
    await appendCase(tt.store, 1, 3);
    const relay = startRelay({ store: tt.store, knex: tt.knex, kafka: tt.kafka, topic: tt.topic, logger: tt.logger });
    const stopping = relay.stop();
    const ended = await stopOutcome(stopping, 'still stopping after 20 s');
    expect(ended).to.equal('stopped');
    expect(relay.status().state).to.equal('stopped');
    expect(await topicMessageCount(tt.admin, tt.topic)).to.equal(0);

    const again = startRelay({ store: tt.store, knex: tt.knex, kafka: tt.kafka, topic: tt.topic, logger: tt.logger });
    tt.defer(() => again.stop());
    await waitForRelay(tt);
    expect(await topicMessageCount(tt.admin, tt.topic)).to.equal(3);
  });
});
