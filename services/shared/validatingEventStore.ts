import { checkAll, type ContractValidator } from '../../contracts/validator';
import type { EventStore } from './eventStore';

/**
 * Every append goes through the event contracts: an event whose data does not match its JSON
 * Schema is a programming error and is never written. The composition root always wraps the
 * adapter with this.
 */
export function withContracts(store: EventStore, contracts: ContractValidator): EventStore {
  return {
    kind: store.kind,
    append: async (streamId, events, options) => store.append(streamId, checkAll(contracts, events), options),
    validate: (events) => void checkAll(contracts, events),
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    subscribeToAll: (options) => store.subscribeToAll(options),
    headPosition: () => store.headPosition(),
    positionAt: (time) => store.positionAt(time),
    ...(store.verifyChain && { verifyChain: (range) => store.verifyChain!(range) }),
    ...(store.chainHead && { chainHead: () => store.chainHead!() }),
    ...(store.readChained && { readChained: (query) => store.readChained!(query) }),
    close: () => store.close(),
  };
}
