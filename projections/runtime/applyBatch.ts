import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { lockCheckpointRow, passCheckpoint, saveCheckpoint } from './checkpoints';
import { heldError, parkingOf, recordParked, type ParkedStreams, type Parking } from './parking';
import type { Projection } from './projection';

/** What a projector parks with a batch (projections/runtime/parking.ts). */
export interface BatchParking {
  /** The projection's parked streams: their events in the batch are held, recorded instead of applied. */
  streams: ParkedStreams;
  /** Events or messages to record as parked with the batch (an event past its tries, a message that is not an event). */
  park?: Parking[];
  /** Moves the checkpoint at least this far (the last position of the messages handled). */
  through?: bigint;
  /** Kafka: where each event came from, recorded with those held. */
  messageOf?: (event: EventEnvelope) => { partition: number; offset: string } | undefined;
}

/**
 * Applies a batch in one transaction with the checkpoint: events at or below the checkpoint (and
 * repeats inside the batch) are dropped first, so a redelivered event changes nothing.
 * `checkpointKey` is the projection's name on the direct transport, and `<name>#<partition>` on
 * Kafka, where each partition carries an increasing subsequence of the global order. With
 * `parking`, events of parked streams are recorded as held instead of applied, in the same
 * transaction, as are the batch's own parked events.
 * Events of types the projection does not act on (Projection.types) are passed over: the
 * checkpoint moves past them, and a batch of nothing else moves it with one statement
 * (passCheckpoint) instead of a transaction: most projections act on a few types, and the live
 * path applies small batches (bench/README.md, "The live projector").
 * Returns the checkpoint after the batch.
 */
export async function applyBatch(knex: Knex, projection: Projection, events: EventEnvelope[], checkpointKey = projection.name, parking?: BatchParking): Promise<bigint> {
  const types = projection.types;
  const last = events.length > 0 ? BigInt(events[events.length - 1].position) : 0n;
  const through = parking?.through !== undefined && parking.through > last ? parking.through : last;
  const acted = types ? events.filter((e) => types.has(e.type)) : events;
  if (acted.length === 0 && events.length > 0 && !parking?.park?.length) return passCheckpoint(knex, checkpointKey, through);
  return knex.transaction(async (trx) => {
    const locked = await lockCheckpointRow(trx, checkpointKey);
    if (parking) await parking.streams.sync(trx, checkpointKey, locked.generation);
    let checkpoint = locked.position;
    const fresh: EventEnvelope[] = [];
    const held: Parking[] = [];
    for (const event of acted) {
      const position = BigInt(event.position);
      if (position <= checkpoint) continue;
      checkpoint = position;
      const behind = parking?.streams.behind(checkpointKey, event.streamId);
      if (behind === undefined) fresh.push(event);
      else held.push(parkingOf(event, 'held', heldError(event.streamId, behind), undefined, parking!.messageOf?.(event)));
    }
    // An event parked again after a redelivery is past the checkpoint already: recorded once. (A message that is not an event has no position to trust: the partition and offset recognise it.)
    const parked = [...(parking?.park ?? []).filter((p) => p.kind === 'invalid' || p.position === null || BigInt(p.position) > locked.position), ...held];
    if (through > checkpoint) checkpoint = through;
    if (fresh.length > 0) await projection.apply(trx, fresh);
    if (parked.length > 0) await recordParked(trx, projection.name, parked);
    if (checkpoint > locked.position) await saveCheckpoint(trx, checkpointKey, checkpoint);
    return checkpoint;
  });
}
