import type { Knex } from 'knex';
import type { CheckpointWatcher } from '../../projections/runtime/checkpointWatcher';
import type { EventStore } from './eventStore';
import { IdAllocator } from './ids';

/** What every command handler needs: the store, ids, the read model and read-your-writes. */
export interface CommandDeps {
  store: EventStore;
  ids: IdAllocator;
  knex: Knex;
  watcher: CheckpointWatcher;
  writeTimeoutMs: number;
  clock: () => Date;
}

/** Waits until the read models have applied `position` (null: nothing was written). */
export function readYourWrites(deps: CommandDeps, position: string | null): Promise<void> {
  return deps.watcher.waitFor(position, deps.writeTimeoutMs);
}
