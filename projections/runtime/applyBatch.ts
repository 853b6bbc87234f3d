import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { lockCheckpoint, saveCheckpoint } from './checkpoints';
import type { Projection } from './projection';

/**
 * Applies a batch in one transaction with the checkpoint: events at or below the checkpoint (and
 * repeats inside the batch) are dropped first, so a redelivered event changes nothing.
 * Returns the checkpoint after the batch.
 */
export async function applyBatch(knex: Knex, projection: Projection, events: EventEnvelope[]): Promise<bigint> {
  return knex.transaction(async (trx) => {
    let checkpoint = await lockCheckpoint(trx, projection.name);
    const fresh: EventEnvelope[] = [];
    for (const event of events) {
      const position = BigInt(event.position);
      if (position <= checkpoint) continue;
      fresh.push(event);
      checkpoint = position;
    }
    if (fresh.length === 0) return checkpoint;
    await projection.apply(trx, fresh);
    await saveCheckpoint(trx, projection.name, checkpoint);
    return checkpoint;
  });
}
