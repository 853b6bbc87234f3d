import type { Knex } from 'knex';
import type { EventStore } from './eventStore';
import { IdAllocator } from './ids';
import type { SecretVault } from './secretVault';

/**
 * The read models' progress, as the command side needs it (a port: the checkpoint watcher of
 * projections/runtime implements it). Positions are strings: 64-bit.
 */
export interface ReadModelWatcher {
  /**
   * Resolves once every read model holds the write's event; rejects with ReadModelWaitFailed after
   * `timeoutMs`, or with EventParked once a read model moved past the event having parked it.
   */
  waitFor(write: { position: string; streamId: string }, timeoutMs: number): Promise<void>;
  /** Whether every read model holds the write's event now (read, not waited for). */
  applied(write: { position: string; streamId: string }): Promise<boolean>;
  /** The read models that parked the event at this position and hold it parked still (none: []). */
  parkedBy(write: { position: string }): Promise<string[]>;
  /** A value that changes whenever the projection's checkpoint moves (a cache key). */
  generation(projection: string): string;
}

/** What every command handler needs: the store, ids, the read model and read-your-writes. */
export interface CommandDeps {
  store: EventStore;
  ids: IdAllocator;
  knex: Knex;
  watcher: ReadModelWatcher;
  writeTimeoutMs: number;
  clock: () => Date;
  /** Told the position of every write of this request (the API echoes it as X-Event-Position). */
  onWrite?: (position: string) => void;
  /**
   * Facts about referenced rows read during one batch of writes (a chunk of an import: thousands of
   * results pointing at the same run and statuses), so each is read once; only rows that exist and
   * are not deleted are kept. Absent: every write reads its own.
   */
  factMemo?: Map<string, Promise<unknown>>;
  /**
   * Seals the secrets a write gives (an integration's `settings.apiToken`) before they enter an
   * event (services/entities/entitySecrets.ts). Absent: a write that gives a secret fails.
   */
  secrets?: SecretVault;
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
