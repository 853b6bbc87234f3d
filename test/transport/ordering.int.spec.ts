// Kafka transport against the real broker: per-stream order and exactly-once application under
// concurrent writers, across a consumer-group rebalance, and with a backlog bigger than one fetch.
import { expect } from 'chai';
import { readModelProjection } from '../../projections/readModel';
import { consumerGroupOf } from '../../projections/runtime/kafkaProjector';
import {
  Gate, RECORDER, appendCase, appliedCount, appliedRows, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder,
  expectNoRedeliveries, expectReadModelMatchesStore, failures, groupsHolding, projectionsUnderTest, recordingProjection, startBurst, transportSuite,
  waitForConsumers, waitForRelay, waitUntil,
} from '../support/kafka';

const PROJECTIONS = [readModelProjection.name, RECORDER];

describe('Kafka transport: per-stream ordering (real broker)', function () {
  this.timeout(120_000);
  const suite = transportSuite('Kafka transport ordering');

  it('40 streams written by 8 concurrent writers: every event applied once, each stream in revision order', async () => {
    const t = await suite.open();
    t.startRelay();
    t.startProjector(projectionsUnderTest());
    const burst = startBurst(t.store, { streams: 40, eventsPerStream: 25, writers: 8 });
    await burst.done;
    expect(burst.appended()).to.equal(1000);
    expect(burst.conflicts(), 'writers raced on the same streams').to.be.greaterThan(0);

    await waitForRelay(t);
    await waitForConsumers(t, PROJECTIONS);
    await expectEachEventAppliedOnceInOrder(t);
    await expectReadModelMatchesStore(t);
    await expectCheckpointsAtPartitionHeads(t, PROJECTIONS);
    expect(await failures(t.knex)).to.deep.equal([]);
    // Without a crash or a rebalance, Kafka hands each message to the projection once.
    for (const projection of PROJECTIONS) expectNoRedeliveries(t, projection);
    // One consumer (one group) fetched each message for both projections, not a group each.
    expect(await groupsHolding(t, PROJECTIONS)).to.deep.equal([{ groupId: consumerGroupOf(t.topic, PROJECTIONS), held: [...PROJECTIONS].sort() }]);
  });

  it('a second projector joins mid-burst and the first leaves: partitions move, order and exactly-once hold', async () => {
    const tt = await suite.open();
    const gates = [new Gate(300), new Gate(600), new Gate(850)];
    const groups = [consumerGroupOf(tt.topic, PROJECTIONS)];
    const members = async () => (await tt.admin.describeGroups(groups)).groups.map((g) => (g.state === 'Stable' ? g.members.length : -1));
    tt.startRelay();
    const first = tt.startProjector([readModelProjection, recordingProjection({ consumer: 'first' })]);
    const burst = startBurst(tt.store, { streams: 40, eventsPerStream: 25, writers: 8, gates });

    await waitUntil(async () => burst.appended() >= 300 && (await appliedCount(tt.knex, RECORDER, 'first')) >= 100, 'the first projector to apply events');
    const second = tt.startProjector([readModelProjection, recordingProjection({ consumer: 'second' })]);
    gates[0].open();
    await waitUntil(async () => (await members()).every((n) => n === 2), 'both projectors in the group', 60_000, async () => JSON.stringify(await members()));
    expect(burst.appended(), 'rebalanced in the middle of the burst').to.be.lessThan(burst.total);
    gates[1].open();
    await waitUntil(async () => (await appliedCount(tt.knex, RECORDER, 'second')) > 0, 'the second projector to apply events');

    const leaving = first.stop();
    gates[2].open();
    await leaving;
    const byFirst = await appliedCount(tt.knex, RECORDER, 'first');
    expect(burst.appended(), 'the first projector left in the middle of the burst').to.be.lessThan(burst.total);
    await burst.done;

    await waitForRelay(tt);
    await waitUntil(async () => (await members()).every((n) => n === 1), 'the second projector alone in the group', 60_000, async () => JSON.stringify(await members()));
    await waitForConsumers(tt, PROJECTIONS);
    const rows = await expectEachEventAppliedOnceInOrder(tt);
    await expectReadModelMatchesStore(tt);
    await expectCheckpointsAtPartitionHeads(tt, PROJECTIONS);
    expect(await failures(tt.knex)).to.deep.equal([]);
    expect(await appliedCount(tt.knex, RECORDER, 'first'), 'nothing applied by the first projector after it stopped').to.equal(byFirst);
    const handedOver = new Set(rows.filter((r) => r.consumer === 'first').map((r) => r.stream_id));
    const continued = rows.filter((r) => r.consumer === 'second' && handedOver.has(r.stream_id)).map((r) => r.stream_id);
    expect(new Set(continued).size, 'streams continued by the second projector after the first').to.be.greaterThan(0);
    await second.stop();
  });

  it('a backlog larger than one fetch (1 MB a partition) is consumed to the end, each batch once', async () => {
    const tt = await suite.open({ partitions: 1 });
    // 2500 events of about 700 bytes on one partition: 1.7 MB, more than kafkajs fetches at once.
    const description = 'x'.repeat(400);
    for (let caseId = 1; caseId <= 50; caseId++) await appendCase(tt.store, caseId, 1);
    await Promise.all(Array.from({ length: 50 }, (_, i) => tt.store.append(`repositoryCase-${i + 1}`,
      Array.from({ length: 49 }, (_, k) => ({ type: 'RepositoryCaseUpdated', data: { caseId: i + 1, changes: { description: `${k} ${description}` }, updatedAt: '2026-01-02T00:00:00.000Z' } })),
      { expectedRevision: 0n, metadata: { actor: { userId: 1, via: 'api' }, correlationId: 'backlog', causationId: null } })));
    tt.startRelay();
    await waitForRelay(tt);
    tt.startProjector([recordingProjection()]);
    await waitForConsumers(tt, [RECORDER], 30_000);
    expect(await appliedRows(tt.knex)).to.have.length(2500);
    await expectEachEventAppliedOnceInOrder(tt);
    expectNoRedeliveries(tt, RECORDER);
  });
});
