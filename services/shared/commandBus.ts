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
  /** Told the position of every write of this request (the API echoes it as X-Event-Position). */
  onWrite?: (position: string) => void;
}

/** Waits until the read models have applied a write's last event (position null: nothing was written). */
export function readYourWrites(deps: CommandDeps, write: { position: string | null; streamId: string }): Promise<void> {
  if (write.position === null) return Promise.resolve();
  deps.onWrite?.(write.position);
  return deps.watcher.waitFor({ position: write.position, streamId: write.streamId }, deps.writeTimeoutMs);
}

/** Per-request deps whose writes set `X-Event-Position`, for clients that read from another replica. */
export function withPositionHeader<D extends CommandDeps>(deps: D, res: { setHeader(name: string, value: string): unknown }): D {
  return { ...deps, onWrite: (position: string) => res.setHeader('X-Event-Position', position) };
}
