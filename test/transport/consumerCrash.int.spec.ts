// A projector that dies after its read-model transaction committed and before it committed the
// Kafka offset gets the batch again (itself, or whoever takes the partition over) and recognises
// it by position: nothing is applied twice.
import { expect } from 'chai';
import { partitionOf } from '../../infra/kafka';
import { consumerGroupOf } from '../../projections/runtime/kafkaProjector';
import type { Projector } from '../../projections/runtime/projector';
import {
  RECORDER, appliedRows, expectCheckpointsAtPartitionHeads, expectEachEventAppliedOnceInOrder, recordingProjection, transportSuite,
  waitForConsumers, waitUntil,
} from '../support/kafka';

interface Batch { partition: number; lastOffset: string }

const offsetsUpTo = (b: Batch) => Array.from({ length: Number(b.lastOffset) + 1 }, (_, o) => `${b.partition}:${o}`);

describe('Kafka transport: consumer dies between applying and committing (real broker)', function () {
  this.timeout(90_000);
  const suite = transportSuite('Kafka transport consumer crash');

  it('dies after its DB commit, before its offset commit: a fresh projector gets the batch again and applies nothing twice', async () => {
    const tt = await suite.published();
    let crashed: Batch | undefined;
    let leaving: Promise<void> | undefined;
    const first: Projector = tt.startProjector([recordingProjection({ consumer: 'first' })], {
      async afterApply(_projection, partition, lastOffset) {
        // Dead from the first applied batch on: it leaves the group and no batch of it gets further.
        if (crashed) throw new Error('already dead');
        crashed = { partition, lastOffset };
        leaving = first.stop();
        // Let the stop take effect (kafkajs no longer running) before the error reaches it: no retry, no commit.
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error('died after the read-model commit, before the offset commit');
      },
    });
    await waitUntil(() => leaving !== undefined, 'the first projector to apply a batch');
    await leaving;
    const batch = crashed!;

    const applied = await appliedRows(tt.knex);
    const ofBatch = applied.filter((r) => partitionOf(r.stream_id, tt.partitions) === batch.partition);
    expect(ofBatch, 'the batch applied before dying').to.have.length(Number(batch.lastOffset) + 1);
    const checkpoint = await tt.knex('projection_checkpoints').where({ name: `${RECORDER}#${batch.partition}` }).first('position');
    expect(String(checkpoint.position)).to.equal(ofBatch.at(-1)!.position);
    const [committed] = await tt.admin.fetchOffsets({ groupId: consumerGroupOf(tt.topic, RECORDER), topics: [tt.topic] });
    expect(committed.partitions.filter((p) => p.offset !== '-1'), 'offsets committed by the dead projector').to.deep.equal([]);

    tt.startProjector([recordingProjection({ consumer: 'second' })]);
    await waitForConsumers(tt, [RECORDER]);
    await expectEachEventAppliedOnceInOrder(tt);
    expect((await appliedRows(tt.knex)).filter((r) => r.consumer === 'first'), 'rows of the dead projector').to.have.length(applied.length);
    // Everything the first applied (at least the crashed batch) was handed to the second again, once.
    const again = tt.redeliveries(RECORDER);
    expect(Object.keys(again)).to.include.members(offsetsUpTo(batch));
    expect(Object.keys(again)).to.have.length(applied.length);
    expect(Object.values(again).every((n) => n === 2), 'each handed over twice').to.equal(true);
    await expectCheckpointsAtPartitionHeads(tt, [RECORDER]);
  });

  it('throws after the DB commit: kafkajs hands the batch over again and it changes nothing', async () => {
    const tt = await suite.published();
    const calls: Batch[] = [];
    tt.startProjector([recordingProjection()], {
      async afterApply(_projection, partition, lastOffset) {
        calls.push({ partition, lastOffset });
        if (calls.length === 1) throw new Error('crash after the read-model commit');
      },
    });
    await waitForConsumers(tt, [RECORDER]);
    const [thrown] = calls;
    expect(calls.filter((c) => c.partition === thrown.partition && c.lastOffset === thrown.lastOffset), 'the failed batch handled again').to.have.length(2);
    await expectEachEventAppliedOnceInOrder(tt);
    const again = tt.redeliveries(RECORDER);
    expect(Object.keys(again), 'redelivered').to.include.members(offsetsUpTo(thrown));
    expect(Object.values(again).every((n) => n === 2), 'each redelivered once').to.equal(true);
    await expectCheckpointsAtPartitionHeads(tt, [RECORDER]);
  });
});
