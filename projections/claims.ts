import type { Knex } from 'knex';
import { claimOwnerStream } from '../contracts/claims';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf } from '../contracts/events';
import type { Projection } from './runtime/projection';

/**
 * Unique-value claims (contracts/claims.ts), as the claim reconciler needs them: one row per
 * claim stream with its last claim, `pending` until the owner's stream is seen to begin (its
 * first event, revision 0, in the claim's batch or later), `settled` from then on, `released`
 * once given up.
 * A claim whose owner began earlier in the log (an update's new value) stays pending here; the
 * reconciler finds the owner in the store and settles it. Rows carry the claim stream's revision
 * last applied: a redelivered event changes nothing. Claims are few (one per unique value
 * written): one statement per claim event; one per batch for the owners that began.
 */
export const claimsProjection: Projection = {
  name: 'claims',
  // An import chunk's columns are the read model's business: this projection reads no data of theirs.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten', 'ExternalImportChunkPlanned'],
  tables: ['unique_claims'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    const begun: string[] = [];
    for (const e of events) {
      if (e.revision === '0') begun.push(e.streamId);
      if (e.type === 'UniqueValueClaimed') await applyClaim(trx, e);
      else if (e.type === 'UniqueValueReleased') {
        await trx('unique_claims').where({ stream_id: e.streamId }).andWhere('revision', '<', e.revision).update({ state: 'released', revision: e.revision });
      }
    }
    if (begun.length > 0) {
      await trx.raw(`UPDATE unique_claims SET state = 'settled' WHERE state = 'pending' AND owner_stream = ANY(?::text[])`, [begun]);
    }
  },
};

async function applyClaim(trx: Knex.Transaction, e: EventEnvelope): Promise<void> {
  const d = e.data as DataOf<'UniqueValueClaimed'>;
  const ownerStream = claimOwnerStream(d.scope, d.ownerId);
  // An import's upload claim has no owner row: its own rules apply (services/imports/imports.routes.ts).
  if (ownerStream === null) return;
  await trx.raw(
    `INSERT INTO unique_claims (stream_id, scope, value, owner_id, owner_stream, state, claimed_at, revision)
     VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)
     ON CONFLICT (stream_id) DO UPDATE SET scope = EXCLUDED.scope, value = EXCLUDED.value, owner_id = EXCLUDED.owner_id,
       owner_stream = EXCLUDED.owner_stream, state = 'pending', claimed_at = EXCLUDED.claimed_at, revision = EXCLUDED.revision
     WHERE unique_claims.revision < EXCLUDED.revision`,
    [e.streamId, d.scope, d.value, d.ownerId, ownerStream, e.recordedAt, e.revision],
  );
}
