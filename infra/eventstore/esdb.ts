import { randomUUID } from 'node:crypto';
import {
  ANY, BACKWARDS, END, ErrorType, EventStoreDBClient, FORWARDS, NO_STREAM, START, WrongExpectedVersionError,
  excludeSystemEvents, jsonEvent,
} from '@eventstore/db-client';
import type {
  AllStreamSubscription, AppendExpectedRevision, AppendResult as EsdbAppendResult, CurrentRevision, JSONType, RecordedEvent,
} from '@eventstore/db-client';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';
import { EVENT_TYPES } from '../../contracts/events';
import { ConcurrencyError } from '../../services/shared/errors';
import type {
  AppendResult, EventStore, ExpectedRevision, ReadAllOptions, ReadStreamOptions, Subscription,
} from '../../services/shared/eventStore';

const PAGE = 1000;
const HEAD_PAGE = 64;
const RESUBSCRIBE_DELAY_MS = 1000;

/*
 * Positions. EventStoreDB addresses an event in $all by {commit, prepare}. Since 20.x every write
 * through gRPC is an implicit transaction whose events are each committed at their own log position,
 * so commit == prepare for every event this adapter writes or reads, and the commit position alone
 * is the global position (a 64-bit decimal string, like the PostgreSQL adapter's). Positions are
 * byte offsets in the transaction log: increasing, never contiguous.
 */
function toPosition(p: bigint): { commit: bigint; prepare: bigint } {
  return { commit: p, prepare: p };
}

/** Events of the server itself ($-types, $-streams, links) are not part of the domain log. */
function isSystemEvent(event: RecordedEvent): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

function expectedText(e: ExpectedRevision): string {
  return typeof e === 'bigint' ? e.toString() : e;
}

function toEsdbExpected(e: ExpectedRevision): AppendExpectedRevision {
  if (e === 'any') return ANY;
  if (e === 'no-stream') return NO_STREAM;
  return e;
}

function currentText(c: CurrentRevision): string {
  return c === NO_STREAM || c < 0n ? 'no-stream' : c.toString();
}

function hasType(error: unknown, ...types: ErrorType[]): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return types.some((t) => t === type);
}

/** The commit position of a read event: on the record since 22.6, on the read response before. */
function positionOf(resolved: { commitPosition?: bigint }, event: RecordedEvent): bigint {
  const position = event.position?.commit ?? resolved.commitPosition;
  if (position === undefined) throw new Error(`EventStoreDB reported no position for event ${event.id}; a server >= 22.6 is required`);
  return position;
}

function toEnvelope(event: RecordedEvent, position: bigint): EventEnvelope {
  const stored = event.metadata;
  const { schemaVersion, ...metadata } =
    stored !== null && typeof stored === 'object' && !Array.isArray(stored) && !(stored instanceof Uint8Array)
      ? (stored as Record<string, unknown>)
      : {};
  return {
    id: event.id,
    type: event.type,
    schemaVersion: typeof schemaVersion === 'number' ? schemaVersion : 1,
    streamId: event.streamId,
    revision: event.revision.toString(),
    position: position.toString(),
    recordedAt: event.created.toISOString(),
    data: event.data,
    metadata: metadata as unknown as EventMetadata,
  };
}

/**
 * Event store on EventStoreDB / KurrentDB (the production adapter), over @eventstore/db-client.
 * Passes the same contract suite as the PostgreSQL adapter (test/infra/eventstore.esdb.int.spec.ts).
 */
export class EventStoreDbEventStore implements EventStore {
  readonly kind = 'eventstoredb' as const;
  private readonly subscriptions = new Set<EventStoreDbSubscription>();

  constructor(private readonly client: EventStoreDBClient) {}

  async append(
    streamId: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision; metadata: EventMetadata },
  ): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    const proposed = events.map((e) => {
      const metadata: Record<string, unknown> = { ...options.metadata, schemaVersion: e.schemaVersion ?? 1 };
      return jsonEvent({ id: e.id ?? randomUUID(), type: e.type, data: e.data as JSONType, metadata });
    });
    const conflict = (actual: string) =>
      new ConcurrencyError(streamId, expectedText(options.expectedRevision), actual);
    let result: EsdbAppendResult;
    try {
      result = await this.client.appendToStream(streamId, proposed, { expectedRevision: toEsdbExpected(options.expectedRevision) });
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) throw conflict(currentText(error.actualVersion));
      throw error;
    }
    // Only with throwOnAppendFailure=false in the connection string (the client then reports the
    // current revision unreliably); by default a conflict is thrown above.
    if (!result.success) throw conflict(currentText(result.nextExpectedRevision));
    // The server answers with the position of the last event of the write. An idempotent repeat of
    // an earlier write (same event ids) may come back without one: look it up.
    const position = result.position?.commit ?? (await this.positionOfRevision(streamId, result.nextExpectedRevision));
    return { nextRevision: result.nextExpectedRevision, position: position.toString() };
  }

  private async positionOfRevision(streamId: string, revision: bigint): Promise<bigint> {
    const [event] = await this.readStream(streamId, { fromRevision: revision, maxCount: 1 });
    if (!event) throw new Error(`EventStoreDB reported a write to ${streamId} that cannot be read back`);
    return BigInt(event.position);
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<EventEnvelope[]> {
    if (options.maxCount !== undefined && options.maxCount <= 0) return [];
    const backwards = options.direction === 'backwards';
    const read = this.client.readStream(streamId, {
      direction: backwards ? BACKWARDS : FORWARDS,
      fromRevision: options.fromRevision ?? (backwards ? END : START),
      ...(options.maxCount !== undefined ? { maxCount: options.maxCount } : {}),
    });
    const envelopes: EventEnvelope[] = [];
    try {
      for await (const resolved of read) {
        if (resolved.event) envelopes.push(toEnvelope(resolved.event, positionOf(resolved, resolved.event)));
      }
    } catch (error) {
      if (hasType(error, ErrorType.STREAM_NOT_FOUND)) return [];
      throw error;
    }
    return envelopes;
  }

  async readAll(options: ReadAllOptions = {}): Promise<EventEnvelope[]> {
    const limit = options.maxCount ?? PAGE;
    if (limit <= 0) return [];
    let after = options.after === undefined || options.after === '0' ? null : BigInt(options.after);
    const envelopes: EventEnvelope[] = [];
    for (;;) {
      // Reading forwards from a position includes the event at it: ask for one more and drop it.
      // System events are skipped, so a page may yield fewer than it read; read on until full.
      const want = limit - envelopes.length + 1;
      let read = 0;
      for await (const resolved of this.client.readAll({
        direction: FORWARDS, fromPosition: after === null ? START : toPosition(after), maxCount: want,
      })) {
        read++;
        const event = resolved.event;
        if (!event) continue;
        const position = positionOf(resolved, event);
        if (after !== null && position <= after) continue;
        after = position;
        if (!isSystemEvent(event) && envelopes.length < limit) envelopes.push(toEnvelope(event, position));
      }
      if (envelopes.length >= limit || read < want) return envelopes;
    }
  }

  /** The whole log read forwards, each event shallow: EventStoreDB has no index by time. */
  async positionAt(time: string): Promise<string> {
    const limit = Date.parse(time);
    let after = '0';
    let found = '0';
    for (;;) {
      const page = await this.readAll({ after, maxCount: 5000, shallow: EVENT_TYPES });
      if (page.length === 0) return found;
      for (const event of page) if (Date.parse(event.recordedAt) <= limit && BigInt(event.position) > BigInt(found)) found = event.position;
      after = page[page.length - 1].position;
    }
  }

  async headPosition(): Promise<string> {
    // The newest events may be the server's own ($stats, $settings, ...): page backwards past them.
    let before: bigint | null = null;
    for (;;) {
      let read = 0;
      let found: bigint | null = null;
      for await (const resolved of this.client.readAll({
        direction: BACKWARDS, fromPosition: before === null ? END : toPosition(before), maxCount: HEAD_PAGE,
      })) {
        read++;
        const event = resolved.event;
        if (!event) continue;
        const position = positionOf(resolved, event);
        if (before !== null && position >= before) continue;
        before = position;
        if (found === null && !isSystemEvent(event)) found = position;
      }
      if (found !== null) return found.toString();
      if (read < HEAD_PAGE || before === null) return '0';
    }
  }

  /** `shallow` is not applied here: EventStoreDB hands over whole events. */
  subscribeToAll(options: { after?: string; shallow?: readonly string[] } = {}): Subscription {
    const after = options.after === undefined || options.after === '0' ? null : BigInt(options.after);
    const sub = new EventStoreDbSubscription(this.client, after, () => this.subscriptions.delete(sub));
    this.subscriptions.add(sub);
    return sub;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    await this.client.dispose();
  }
}

/**
 * A catch-up subscription to $all without system events, in global order. A subscription that
 * drops on a connection failure is resumed after the last delivered position; ending the loop
 * (break, return, throw) or calling close() cancels it on the server.
 */
class EventStoreDbSubscription implements Subscription {
  private closed = false;
  private iterated = false;
  private current: AllStreamSubscription | null = null;

  constructor(
    private readonly client: EventStoreDBClient,
    private after: bigint | null,
    private readonly onClose: () => void,
  ) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<EventEnvelope> {
    if (this.iterated) throw new Error('a subscription can be iterated only once');
    this.iterated = true;
    try {
      while (!this.closed) {
        const sub = this.client.subscribeToAll({
          fromPosition: this.after === null ? START : toPosition(this.after),
          filter: excludeSystemEvents(),
        });
        this.current = sub;
        try {
          for await (const resolved of sub) {
            const event = resolved.event;
            if (!event || isSystemEvent(event)) continue;
            const position = positionOf(resolved, event);
            if (this.after !== null && position <= this.after) continue;
            this.after = position;
            yield toEnvelope(event, position);
            if (this.closed) return;
          }
        } catch (error) {
          if (this.closed) return;
          if (!hasType(error, ErrorType.UNAVAILABLE, ErrorType.DEADLINE_EXCEEDED, ErrorType.NOT_LEADER, ErrorType.TIMEOUT)) throw error;
        } finally {
          if (this.current === sub) this.current = null;
          await stop(sub);
        }
        // The server dropped the subscription: resume from the last delivered position.
        if (!this.closed) await new Promise((r) => setTimeout(r, RESUBSCRIBE_DELAY_MS));
      }
    } finally {
      await this.close();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const sub = this.current;
    this.current = null;
    // Ends a pending `for await` on the client's stream; its loop then sees `closed` and returns.
    if (sub) await stop(sub);
    this.onClose();
  }
}

/** Cancels the gRPC call (unsubscribe) and ends the client-side stream (destroy). Idempotent. */
async function stop(sub: AllStreamSubscription): Promise<void> {
  sub.on('error', () => undefined); // nothing listens any more: a late error must not crash the process
  await sub.unsubscribe().catch(() => undefined);
  sub.destroy();
}

/**
 * Opens a client on an `esdb://` (or `kurrentdb://`) connection string and checks the server answers,
 * so a wrong EVENTSTORE_URL fails at start-up rather than on the first request.
 */
export async function connectEventStoreDb(connectionString: string): Promise<EventStoreDbEventStore> {
  // @eventstore/db-client 6.x only knows the esdb scheme; KurrentDB's is the same string otherwise.
  const client = EventStoreDBClient.connectionString(connectionString.replace(/^kurrentdb(\+discover)?:\/\//, 'esdb$1://'));
  try {
    for await (const _event of client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
      // one event or none: only the answer matters
    }
  } catch (error) {
    await client.dispose().catch(() => undefined);
    throw error;
  }
  return new EventStoreDbEventStore(client);
}
