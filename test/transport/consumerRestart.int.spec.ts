// kafkajs gives up on a consumer after an error it does not count as retriable (here a TypeError
// thrown in a batch, as a bug would): the projector starts the consumer again, with backoff, and
// the batch it failed is delivered again and applied once.
import { expect } from 'chai';
import type { ProjectionStatus } from '../../projections/runtime/projector';
import {
  RECORDER, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, failures, recordingProjection, transportSuite,
  waitForConsumers, waitUntil,
} from '../support/kafka';

describe('Kafka transport: a consumer kafkajs gives up on (real broker)', function () {
  this.timeout(120_000);
  const suite = transportSuite('Kafka transport consumer restart');

  it('is started again after a TypeError in a batch: reported as failing meanwhile, then every event applied once', async () => {
    const tt = await suite.published();

    let thrown = 0;
    const seen: ProjectionStatus['state'][] = [];
    const projector = tt.startProjector([recordingProjection()], {
      async afterApply() {
        if (thrown++ === 0) {
          // Not a KafkaJS error and not retriable for kafkajs (TypeError is "unrecoverable" to its retrier).
          throw new TypeError('a bug in the batch handler');
        }
      },
    });
    await waitUntil(() => {
      const [s] = projector.status();
      if (seen.at(-1) !== s.state) seen.push(s.state);
      return s.state === 'failing';
    }, 'the projector to report the given-up consumer as failing', 30_000);
    expect(projector.status()[0].lastError).to.contain('a bug in the batch handler');

    await waitForConsumers(tt, [RECORDER]);
    await expectEachEventAppliedOnceInOrder(tt);
    await expectCheckpointsAtPartitionHeads(tt, [RECORDER]);
    expect(await failures(tt.knex)).to.deep.equal([]);
    await waitUntil(() => projector.status()[0].state === 'running', 'the projector to report the consumer running again', 10_000);
    expect(seen).to.deep.equal(['running', 'failing']);
    expect(thrown, 'batches handled: the failed one again, and the rest').to.be.greaterThan(1);
  });
});
