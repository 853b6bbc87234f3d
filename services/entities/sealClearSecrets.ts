import { ENTITIES, type EntityName } from '../../contracts/entities';
import type { EventMetadata } from '../../contracts/envelope';
import type { IdBlockReserved } from '../../contracts/events';
import { streamOf } from '../../contracts/entityEvents';
import { holdsClearSecret, secretFieldsOf } from '../../contracts/secrets';
import type { CommandDeps } from '../shared/commandBus';
import { loadAggregate } from '../shared/decider';
import { asWritten } from './entitySecrets';
import { deciderOf, updateEntity } from './entity.handlers';

/**
 * The one-time migration run at start-up (services/process/roles.ts, the API role): every row
 * whose current values still hold a secret in clear (written before secrets were sealed) gets an
 * update by the system that seals it (the event log is append-only: the old event keeps the
 * value; answers show it redacted, and docs/compliance.md says to rotate it). Deleted rows stay
 * as they are. Idempotent: a row without a clear secret is left alone, so later starts change
 * nothing. Answers the rows sealed.
 */
export async function sealClearSecrets(deps: CommandDeps, metadata: EventMetadata): Promise<Array<{ entity: EntityName; id: number }>> {
  const sealed: Array<{ entity: EntityName; id: number }> = [];
  for (const entity of Object.values(ENTITIES)) {
    const fields = secretFieldsOf(entity);
    if (fields.length === 0) continue;
    // Every id ever handed out for the entity (the allocator's blocks): the log, not a read model that may lag.
    const [last] = await deps.store.readStream(`ids-${entity.name}`, { direction: 'backwards', maxCount: 1 });
    const highest = last ? (last.data as IdBlockReserved['data']).to : 0;
    for (let id = 1; id <= highest; id++) {
      const { state } = await loadAggregate(deps.store, streamOf(entity, id), deciderOf(entity));
      if (!state.exists || state.isDeleted) continue;
      const clear = fields.filter((f) => holdsClearSecret(state.values[f]));
      if (clear.length === 0) continue;
      // Sealed secrets as references (kept), clear ones as values (sealed by the update).
      await updateEntity(deps, entity.name, id, { data: Object.fromEntries(clear.map((f) => [f, asWritten(state.values[f])])), connect: {} }, metadata);
      sealed.push({ entity: entity.name, id });
    }
  }
  return sealed;
}
