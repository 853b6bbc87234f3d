import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { listenOn } from '../../infra/postgres/listen';
import { EventParked, ReadModelWaitFailed } from '../../services/shared/errors';
import type { ReadModelWatcher } from '../../services/shared/commandBus';
import { LIVE_RETRY_MAX_MS, RetryBudgetSpent, budgetOf, describeError, isTransient, type RetryBudget, type RetryPolicy } from '../../services/shared/faults';
import { CHECKPOINT_CHANNEL, readCheckpoints } from './checkpoints';

interface Waiter { keys: string[]; position: bigint; resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout; parkedMatters: boolean }

/** Which checkpoint row holds a stream's events for a projection: its name (direct), or `<name>#<partition>` (Kafka). */
export type CheckpointKeyOf = (projection: string, streamId: string) => string;
export const directCheckpointKey: CheckpointKeyOf = (projection) => projection;

const SAFETY_POLL_MS = 1000;
/** Parked positions kept in memory for the writes waiting on them: the newest this many. */
const PARKED_KEPT = 50_000;
const RECONNECT_FIRST_MS = 1000;
const RECONNECT_MAX_MS = LIVE_RETRY_MAX_MS;

/** listening; reconnecting: its LISTEN connection was lost and is being replaced; failed: it gave up (until restart). */
export interface WatcherStatus { state: 'listening' | 'reconnecting' | 'failed'; lastError: string | null; correlationId?: string }

/**
 * Read-your-writes: resolves when every named projection has applied a position. Checkpoint moves
 * arrive by LISTEN/NOTIFY from whichever process runs the projector; while anyone waits, the
 * checkpoints are also re-read once a second in case a notification was lost with its connection.
 * A projection that parks an event (projections/runtime/parking.ts) says so on the same channel
 * (`!<projection>:<position>`, before its checkpoint moves past it): a write waiting for that
 * event is then refused with EventParked, naming the projections, as soon as they moved past it.
 */
export class CheckpointWatcher implements ReadModelWatcher {
  private readonly positions = new Map<string, bigint>();
  /** Parked positions (newest PARKED_KEPT) and the projections that parked each. */
  private readonly parked = new Map<bigint, Set<string>>();
  /** The last parked_events row read (the re-read of the checkpoints reads those after it). */
  private parkedSeen: string | null = null;
  private readonly waiters = new Set<Waiter>();
  private client: pg.Client | null = null;
  private poller: NodeJS.Timeout | null = null;
  private reconnecting: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly budget: RetryBudget;
  private current: WatcherStatus = { state: 'listening', lastError: null };

  constructor(
    private readonly knex: Knex,
    private readonly connectionString: string,
    private readonly projectionNames: readonly string[],
    private readonly keyOf: CheckpointKeyOf = directCheckpointKey,
    private readonly opts: { retry?: RetryPolicy; logger?: Logger } = {},
  ) {
    this.budget = budgetOf(opts.retry, { firstMs: RECONNECT_FIRST_MS, maxMs: RECONNECT_MAX_MS });
  }

  status(): WatcherStatus {
    return { ...this.current };
  }

  async start(): Promise<void> {
    await this.connect();
    await this.refresh();
  }

  private async connect(): Promise<void> {
    const client = await listenOn(this.connectionString, CHECKPOINT_CHANNEL, {
      onNotification: (payload) => {
        const colon = payload.lastIndexOf(':');
        if (colon <= 0) return;
        const position = BigInt(payload.slice(colon + 1));
        if (payload.startsWith('!')) this.noteParked(payload.slice(1, colon), position);
        else this.advance(payload.slice(0, colon), position);
      },
      onLost: (lost) => {
        if (this.client === lost) this.client = null;
        this.reconnectLater(null);
      },
    });
    if (this.closed) await client.end().catch(() => undefined);
    else this.client = client;
  }

  /**
   * A lost LISTEN connection is replaced (1 s, doubling to 30 s) while the database refuses it,
   * within the retry budget; then the checkpoints are read once, for the notifications missed
   * meanwhile. An attempt that fails for good (not transient, see services/shared/faults.ts) or a
   * budget spent ends it: `failed`, logged once; waits are then resolved by the re-read of the
   * checkpoints once a second alone, until the process restarts. `error` is null for the loss itself.
   */
  private reconnectLater(error: unknown): void {
    if (this.closed || this.reconnecting || this.current.state === 'failed') return;
    this.current = { state: 'reconnecting', lastError: error === null ? 'LISTEN connection lost' : describeError(error) };
    if (error !== null && !isTransient(error)) return this.fail(error);
    const pause = this.budget.next();
    if (pause === null) return this.fail(new RetryBudgetSpent(error, this.budget));
    this.reconnecting = setTimeout(() => {
      void (async () => {
        try {
          await this.connect();
          await this.refresh();
          this.reconnecting = null;
          this.budget.reset();
          this.current = { state: 'listening', lastError: null };
        } catch (e) {
          this.reconnecting = null;
          if (!this.client) this.reconnectLater(e);
        }
      })();
    }, pause);
  }

  private fail(error: unknown): void {
    this.current = { state: 'failed', lastError: describeError(error), correlationId: randomUUID() };
    this.opts.logger?.error({ err: error, correlationId: this.current.correlationId }, 'checkpoint watcher cannot LISTEN; stopped until restarted (writes wait on the once-a-second re-read)');
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
    // Parked events first: a checkpoint read after them is past them already.
    if (this.parkedSeen === null) {
      const [row] = await this.knex('parked_events').max('id as id');
      this.parkedSeen = String(row?.id ?? 0);
    } else {
      const rows: { id: string; projection: string; position: string }[] = await this.knex('parked_events')
        .where('id', '>', this.parkedSeen).whereNotNull('position').orderBy('id').limit(PARKED_KEPT).select('id', 'projection', 'position');
      for (const r of rows) this.noteParked(r.projection, BigInt(r.position));
      if (rows.length > 0) this.parkedSeen = String(rows[rows.length - 1].id);
    }
    for (const [name, position] of await readCheckpoints(this.knex)) this.advance(name, position);
  }

  private noteParked(projection: string, position: bigint): void {
    if (!this.projectionNames.includes(projection)) return;
    const by = this.parked.get(position);
    if (by) return void by.add(projection);
    this.parked.set(position, new Set([projection]));
    if (this.parked.size > PARKED_KEPT) this.parked.delete(this.parked.keys().next().value!);
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
    const parkedBy = error === undefined && w.parkedMatters ? this.parked.get(w.position) : undefined;
    if (parkedBy) error = new EventParked(w.position.toString(), [...parkedBy].sort());
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

  /** The read models that parked the event at this position and hold it parked still (none: []). */
  async parkedBy(write: { position: string }): Promise<string[]> {
    const rows: { projection: string }[] = await this.knex('parked_events')
      .whereIn('projection', this.projectionNames).andWhere({ position: write.position }).whereNull('resolved_at').select('projection');
    return rows.map((r) => r.projection).sort();
  }

  /**
   * Resolves once every read model holds the write's event; rejects with ReadModelWaitFailed
   * `read-model-lagging` after `timeoutMs` (the API answers 503), or with EventParked once they
   * moved past it having parked it (the API answers 500 `event-parked`), unless `ignoreParked`
   * (a reader that needs the checkpoints only, such as the search indexer).
   */
  waitFor(write: { position: string; streamId: string }, timeoutMs: number, opts: { ignoreParked?: boolean } = {}): Promise<void> {
    const { position } = write;
    const target = BigInt(position);
    const keys = this.projectionNames.map((name) => this.keyOf(name, write.streamId));
    const parkedMatters = !opts.ignoreParked;
    if (this.reached(keys, target)) {
      const parkedBy = parkedMatters ? this.parked.get(target) : undefined;
      return parkedBy ? Promise.reject(new EventParked(position, [...parkedBy].sort())) : Promise.resolve();
    }
    // Stopped: no timer and no poller started for a wait nobody ends.
    if (this.closed) return Promise.reject(new ReadModelWaitFailed('shutting-down', 'The server is shutting down'));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        keys, position: target, resolve, reject, parkedMatters,
        timer: setTimeout(() => this.settle(waiter, new ReadModelWaitFailed('read-model-lagging',
          'The change was recorded but the read model has not applied it yet; read again shortly', { position })), timeoutMs),
      };
      this.waiters.add(waiter);
      this.poller ??= setInterval(() => void this.refresh().catch(() => undefined), SAFETY_POLL_MS);
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    for (const w of [...this.waiters]) this.settle(w, new ReadModelWaitFailed('shutting-down', 'The server is shutting down'));
    if (this.poller) clearInterval(this.poller);
    if (this.reconnecting) clearTimeout(this.reconnecting);
    await this.client?.end().catch(() => undefined);
  }
}
