// kafkajs gives up on a consumer after an error it does not count as retriable (here a TypeError
// thrown in a batch, as a bug would). A bug is not transient (services/shared/faults.ts): the
// projection fails once (failed, the error, a correlation id), its consumer leaves the group and
// is not started again; a projector started afresh (the process restarted) applies every event once.
import { expect } from 'chai';
import { startKafkaProjector } from '../../projections/runtime/kafkaProjector';
import type { ProjectionStatus } from '../../projections/runtime/projector';
import {
  RECORDER, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, failures, recordingProjection, transportSuite,
  waitForConsumers, waitUntil,
} from '../support/kafka';

describe('Kafka transport: a consumer kafkajs gives up on (real broker)', function () {
  this.timeout(120_000);
  const suite = transportSuite('Kafka transport consumer restart');

  it('after a TypeError in a batch: the projection fails once and is not started again; a fresh projector applies every event once', async () => {
    const tt = await suite.published();

    let thrown = 0;
    const seen: ProjectionStatus['state'][] = [];
    const told: ProjectionStatus[] = [];
    const projector = startKafkaProjector({
      kafka: tt.kafka, knex: tt.knex, topic: tt.topic, projections: [recordingProjection()], contracts: tt.contracts, logger: tt.logger,
      onFailed: (status) => told.push(status),
      hooks: {
        async afterApply() {
          if (thrown++ === 0) {
            // Not a KafkaJS error and not retriable for kafkajs (TypeError is "unrecoverable" to its retrier).
            throw new TypeError('a bug in the batch handler');
          }
        },
      },
    });
    tt.defer(() => projector.stop());
    await waitUntil(() => {
      const [s] = projector.status();
      if (seen.at(-1) !== s.state) seen.push(s.state);
      return s.state === 'failed';
    }, 'the projection to fail', 30_000, () => JSON.stringify(projector.status()));
    const [failed] = projector.status();
    expect(failed.lastError).to.contain('a bug in the batch handler');
    expect(failed.correlationId).to.be.a('string');
    expect(told.map((s) => [s.name, s.state, s.correlationId]), 'onFailed, once').to.deep.equal([[RECORDER, 'failed', failed.correlationId]]);
    expect(seen.filter((s) => s !== 'failing')).to.deep.equal(['running', 'failed']);
    await projector.stop();
    expect(projector.status()[0].state, 'still failed after stop').to.equal('failed');
    expect(await failures(tt.knex), 'a bug is no event\'s failure').to.deep.equal([]);

    tt.startProjector([recordingProjection()]);
    await waitForConsumers(tt, [RECORDER]);
    await expectEachEventAppliedOnceInOrder(tt);
    await expectCheckpointsAtPartitionHeads(tt, [RECORDER]);
    expect(await failures(tt.knex)).to.deep.equal([]);
  });
});
