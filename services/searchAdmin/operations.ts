import type { DataOf } from '../../contracts/events';
import type { EventMetadata } from '../../contracts/envelope';
import type { CommandDeps } from '../shared/commandBus';

/** The stream of every administrator's operation on the search engine and of the connection settings. */
export const SEARCH_ADMINISTRATION_STREAM = 'searchAdministration';

export type OperationRecord = Omit<DataOf<'SearchOperationPerformed'>, 'performedAt'>;

/**
 * Records an operation the engine was asked to do (succeeded or failed), with its actor: the audit
 * trail of the panel. A refused request (invalid, unconfirmed, forbidden) asked the engine nothing
 * and records nothing. Answers the event's position (the X-Event-Position of the answer).
 */
export async function recordOperation(deps: Pick<CommandDeps, 'store' | 'clock'>, metadata: EventMetadata, record: OperationRecord): Promise<string> {
  const { position } = await deps.store.append(SEARCH_ADMINISTRATION_STREAM, [
    { type: 'SearchOperationPerformed', data: { ...record, performedAt: deps.clock().toISOString() } },
  ], { expectedRevision: 'any', metadata });
  return position;
}
