import { eventStoreContract } from '../../infra/eventStoreContract';
import { MemoryEventStore } from '../../support/memoryEventStore';

// The fake the unit tests lean on passes the same contract as the real adapters.
describe('MemoryEventStore (test fake)', () => {
  eventStoreContract(async () => ({ store: new MemoryEventStore(), dispose: async () => undefined }));
});
