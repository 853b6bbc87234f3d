import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { lockCheckpoint, saveCheckpoint } from './checkpoints';
import type { Projection } from './projection';

/**
 * Applies a batch in one transaction with the checkpoint: events at or below the checkpoint (and
 * repeats inside the batch) are dropped first, so a redelivered event changes nothing.
 * `checkpointKey` is the projection's name on the direct transport, and `<name>#<partition>` on
 * Kafka, where each partition carries an increasing subsequence of the global order.
 * Returns the checkpoint after the batch.
 */
export async function applyBatch(knex: Knex, projection: Projection, events: EventEnvelope[], checkpointKey = projection.name): Promise<bigint> {
  return knex.transaction(async (trx) => {
    let checkpoint = await lockCheckpoint(trx, checkpointKey);
    const fresh: EventEnvelope[] = [];
    for (const event of events) {
      const position = BigInt(event.position);
      if (position <= checkpoint) continue;
      fresh.push(event);
      checkpoint = position;
    }
    if (fresh.length === 0) return checkpoint;
    await projection.apply(trx, fresh);
    await saveCheckpoint(trx, checkpointKey, checkpoint);
    return checkpoint;
  });
}
