// One consumer per projector process serves every projection: when one projection fails for good
// the others go on, and the group's offset stays where all had applied, so the process started
// again gives the failed one what it missed (and the others recognise what they hold).
import { expect } from 'chai';
import { consumerGroupOf, startKafkaProjector } from '../../projections/runtime/kafkaProjector';
import type { Projection } from '../../projections/runtime/projection';
import type { ProjectionStatus } from '../../projections/runtime/projector';
import {
  RECORDER, appliedCount, committedLag, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, recordingProjection, transportSuite,
  waitForConsumers, waitUntil,
} from '../support/kafka';

const FLAKY = 'flaky';

/** The recorder under another name, whose database "connection resets" (a transient error) while `away()` says so. */
function flakyProjection(away: () => boolean): Projection {
  const inner = recordingProjection({ name: FLAKY });
  return {
    ...inner,
    async apply(trx, events) {
      if (away()) throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      await inner.apply(trx, events);
    },
  };
}

describe('Kafka transport: one consumer serves every projection of a process (real broker)', function () {
  this.timeout(120_000);
  const suite = transportSuite('Kafka transport one consumer');

  it('one projection fails for good: the other applies everything, the offset stays; started again, the failed one catches up once', async () => {
    const tt = await suite.published();
    let away = true;
    const told: ProjectionStatus[] = [];
    const projector = startKafkaProjector({
      kafka: tt.kafka, knex: tt.knex, topic: tt.topic, projections: [recordingProjection(), flakyProjection(() => away)], contracts: tt.contracts,
      logger: tt.logger, retry: { budgetMs: 2000, firstMs: 100, maxMs: 400 }, onFailed: (s) => told.push(s),
    });
    tt.defer(() => projector.stop());
    const state = (name: string) => projector.status().find((s) => s.name === name)!;
    await waitUntil(() => state(FLAKY).state === 'failed', 'the flaky projection to give up', 60_000, () => JSON.stringify(projector.status()));
    expect(told.map((s) => [s.name, s.state]), 'onFailed, once, for it alone').to.deep.equal([[FLAKY, 'failed']]);
    expect(state(FLAKY).lastError).to.match(/^gave up after \d+ failed attempts in \d+ s: read ECONNRESET/);

    const events = Number(await tt.store.headPosition());
    await waitUntil(async () => (await appliedCount(tt.knex, RECORDER)) === events, 'the recorder to apply every event', 60_000,
      async () => `${await appliedCount(tt.knex, RECORDER)} of ${events}`);
    expect(state(RECORDER).state).to.equal('running');
    await expectEachEventAppliedOnceInOrder(tt);
    expect(await appliedCount(tt.knex, FLAKY), 'nothing applied by the failed projection').to.equal(0);
    // Give the offset committer a few ticks: it must not move the group past what the failed projection applied (nothing).
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const group = consumerGroupOf(tt.topic, [RECORDER, FLAKY]);
    expect(await committedLag(tt.admin, tt.topic, group), 'messages the group would hand out again').to.equal(events);
    await projector.stop();

    away = false;
    tt.startProjector([recordingProjection(), flakyProjection(() => away)]);
    await waitForConsumers(tt, [RECORDER, FLAKY]);
    await expectEachEventAppliedOnceInOrder(tt, FLAKY);
    await expectEachEventAppliedOnceInOrder(tt, RECORDER);
    await expectCheckpointsAtPartitionHeads(tt, [RECORDER, FLAKY]);
  });
});
