import type pg from 'pg';
import type { Knex } from 'knex';
import { listenOn } from '../../infra/postgres/listen';
import { HttpError } from '../../services/shared/errors';
import { CHECKPOINT_CHANNEL, readCheckpoints } from './checkpoints';

interface Waiter { keys: string[]; position: bigint; resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout }

/** Which checkpoint row holds a stream's events for a projection: its name (direct), or `<name>#<partition>` (Kafka). */
export type CheckpointKeyOf = (projection: string, streamId: string) => string;
export const directCheckpointKey: CheckpointKeyOf = (projection) => projection;

const SAFETY_POLL_MS = 1000;

/**
 * Read-your-writes: resolves when every named projection has applied a position. Checkpoint moves
 * arrive by LISTEN/NOTIFY from whichever process runs the projector; while anyone waits, the
 * checkpoints are also re-read once a second in case a notification was lost with its connection.
 */
export class CheckpointWatcher {
  private readonly positions = new Map<string, bigint>();
  private readonly waiters = new Set<Waiter>();
  private client: pg.Client | null = null;
  private poller: NodeJS.Timeout | null = null;
  private reconnecting: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly knex: Knex,
    private readonly connectionString: string,
    private readonly projectionNames: readonly string[],
    private readonly keyOf: CheckpointKeyOf = directCheckpointKey,
  ) {}

  async start(): Promise<void> {
    await this.connect();
    await this.refresh();
  }

  private async connect(): Promise<void> {
    const client = await listenOn(this.connectionString, CHECKPOINT_CHANNEL, {
      onNotification: (payload) => {
        const colon = payload.lastIndexOf(':');
        if (colon > 0) this.advance(payload.slice(0, colon), BigInt(payload.slice(colon + 1)));
      },
      onLost: (lost) => {
        if (this.client === lost) this.client = null;
        this.reconnectLater();
      },
    });
    if (this.closed) await client.end().catch(() => undefined);
    else this.client = client;
  }

  /**
   * A lost LISTEN connection is replaced, every second until the database lets it in; then the
   * checkpoints are read once, for the notifications missed meanwhile.
   */
  private reconnectLater(): void {
    if (this.closed || this.reconnecting) return;
    this.reconnecting = setTimeout(() => {
      void (async () => {
        try {
          await this.connect();
          await this.refresh();
          this.reconnecting = null;
        } catch {
          this.reconnecting = null;
          if (!this.client) this.reconnectLater();
        }
      })();
    }, SAFETY_POLL_MS);
  }

  /**
   * Changes whenever the projection applies anything (any of its checkpoints moves): lets a cache
   * of what that projection holds know it may be stale.
   */
  generation(projection: string): string {
    let sum = 0n;
    for (const [key, position] of this.positions) if (key === projection || key.startsWith(`${projection}#`)) sum += position;
    return sum.toString();
  }

  private async refresh(): Promise<void> {
    for (const [name, position] of await readCheckpoints(this.knex)) this.advance(name, position);
  }

  private advance(name: string, position: bigint): void {
    if (position <= (this.positions.get(name) ?? -1n)) return;
    this.positions.set(name, position);
    for (const w of [...this.waiters]) if (this.reached(w.keys, w.position)) this.settle(w);
  }

  private reached(keys: string[], position: bigint): boolean {
    return keys.every((k) => (this.positions.get(k) ?? 0n) >= position);
  }

  private settle(w: Waiter, error?: Error): void {
    clearTimeout(w.timer);
    this.waiters.delete(w);
    if (this.waiters.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = null;
    }
    if (error) w.reject(error);
    else w.resolve();
  }

  /**
   * Whether every read model holds the write's event now (the checkpoints read from the database,
   * not waited for): for answers that report a state other read models must already show.
   */
  async applied(write: { position: string; streamId: string }): Promise<boolean> {
    const keys = this.projectionNames.map((name) => this.keyOf(name, write.streamId));
    if (this.reached(keys, BigInt(write.position))) return true;
    await this.refresh();
    return this.reached(keys, BigInt(write.position));
  }

  /** Resolves once every read model holds the write's event; a 503 `read-model-lagging` after `timeoutMs`. */
  waitFor(write: { position: string; streamId: string }, timeoutMs: number): Promise<void> {
    const { position } = write;
    const target = BigInt(position);
    const keys = this.projectionNames.map((name) => this.keyOf(name, write.streamId));
    if (this.reached(keys, target)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        keys, position: target, resolve, reject,
        timer: setTimeout(() => this.settle(waiter, new HttpError(503, 'read-model-lagging',
          'The change was recorded but the read model has not applied it yet; read again shortly', { position })), timeoutMs),
      };
      this.waiters.add(waiter);
      this.poller ??= setInterval(() => void this.refresh().catch(() => undefined), SAFETY_POLL_MS);
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    for (const w of [...this.waiters]) this.settle(w, new HttpError(503, 'shutting-down', 'The server is shutting down'));
    if (this.poller) clearInterval(this.poller);
    if (this.reconnecting) clearTimeout(this.reconnecting);
    await this.client?.end().catch(() => undefined);
  }
}
