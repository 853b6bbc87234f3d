import { randomUUID } from 'node:crypto';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';
import { ConcurrencyError } from '../../services/shared/errors';
import type {
  AppendResult, EventStore, ExpectedRevision, ReadAllOptions, ReadStreamOptions, Subscription,
} from '../../services/shared/eventStore';

export type StoreCall =
  | { method: 'append'; streamId: string; events: NewEvent[]; expectedRevision: ExpectedRevision; outcome: 'ok' | 'conflict' | 'error' }
  | { method: 'readStream'; streamId: string; options: ReadStreamOptions }
  | { method: 'readAll'; options: ReadAllOptions };

/**
 * The EventStore port in memory, for unit tests: revisions per stream from 0, positions from 1,
 * the same expected-revision rules and ConcurrencyError as the adapters. Records every call.
 */
export class MemoryEventStore implements EventStore {
  readonly kind = 'postgres' as const;
  readonly calls: StoreCall[] = [];
  private readonly log: EventEnvelope[] = [];
  private readonly streams = new Map<string, EventEnvelope[]>();
  private readonly subscriptions = new Map<() => void, () => Promise<void>>();
  private hook: ((streamId: string) => Promise<void> | void) | null = null;
  private inHook = false;

  /**
   * Runs `fn` at the start of every append (not of the appends `fn` makes itself): a test slips a
   * competing writer or a failure in between a handler's read and its write.
   */
  beforeAppend(fn: ((streamId: string) => Promise<void> | void) | null): void {
    this.hook = fn;
  }

  /** Only the calls of one kind, for assertions. */
  callsOf<M extends StoreCall['method']>(method: M): Extract<StoreCall, { method: M }>[] {
    return this.calls.filter((c): c is Extract<StoreCall, { method: M }> => c.method === method);
  }

  async append(
    streamId: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision; metadata: EventMetadata },
  ): Promise<AppendResult> {
    const call: Extract<StoreCall, { method: 'append' }> = {
      method: 'append', streamId, events: structuredClone(events), expectedRevision: options.expectedRevision, outcome: 'error',
    };
    this.calls.push(call);
    if (this.hook && !this.inHook) {
      this.inHook = true;
      try {
        await this.hook(streamId);
      } finally {
        this.inHook = false;
      }
    }
    if (events.length === 0) throw new Error('append needs at least one event');
    const stream = this.streams.get(streamId) ?? [];
    const actual = stream.length === 0 ? 'no-stream' : String(stream.length - 1);
    const expected = options.expectedRevision;
    const ok = expected === 'any' || (expected === 'no-stream' ? stream.length === 0 : stream.length > 0 && BigInt(stream.length - 1) === expected);
    if (!ok) {
      call.outcome = 'conflict';
      throw new ConcurrencyError(streamId, String(expected), actual);
    }
    for (const e of events) {
      const envelope: EventEnvelope = {
        id: e.id ?? randomUUID(),
        type: e.type,
        schemaVersion: e.schemaVersion ?? 1,
        streamId,
        revision: String(stream.length),
        position: String(this.log.length + 1),
        recordedAt: new Date().toISOString(),
        data: structuredClone(e.data),
        metadata: structuredClone(options.metadata),
      };
      stream.push(envelope);
      this.log.push(envelope);
    }
    this.streams.set(streamId, stream);
    call.outcome = 'ok';
    for (const wake of this.subscriptions.keys()) wake();
    return { nextRevision: BigInt(stream.length - 1), position: String(this.log.length) };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<EventEnvelope[]> {
    this.calls.push({ method: 'readStream', streamId, options: { ...options } });
    const stream = this.streams.get(streamId) ?? [];
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision;
    const selected = backwards
      ? stream.filter((e) => from === undefined || BigInt(e.revision) <= from).reverse()
      : stream.filter((e) => from === undefined || BigInt(e.revision) >= from);
    return structuredClone(selected.slice(0, options.maxCount ?? selected.length));
  }

  async readAll(options: ReadAllOptions = {}): Promise<EventEnvelope[]> {
    this.calls.push({ method: 'readAll', options: { ...options } });
    const after = BigInt(options.after ?? '0');
    const selected = this.log.filter((e) => BigInt(e.position) > after);
    return structuredClone(selected.slice(0, options.maxCount ?? selected.length));
  }

  subscribeToAll(options: { after?: string } = {}): Subscription {
    let after = BigInt(options.after ?? '0');
    let closed = false;
    let wake: (() => void) | null = null;
    const listener = () => wake?.();
    const close = async () => {
      closed = true;
      this.subscriptions.delete(listener);
      wake?.();
    };
    this.subscriptions.set(listener, close);
    const log = this.log;
    async function* events(): AsyncGenerator<EventEnvelope> {
      try {
        while (!closed) {
          const next = log.find((e) => BigInt(e.position) > after);
          if (next) {
            after = BigInt(next.position);
            yield structuredClone(next);
          } else {
            await new Promise<void>((resolve) => (wake = resolve));
            wake = null;
          }
        }
      } finally {
        await close();
      }
    }
    return Object.assign(events(), { close });
  }

  async headPosition(): Promise<string> {
    return String(this.log.length);
  }

  async positionAt(time: string): Promise<string> {
    const limit = Date.parse(time);
    const at = this.log.filter((e) => Date.parse(e.recordedAt) <= limit);
    return at.length === 0 ? '0' : at[at.length - 1].position;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions.values()].map((close) => close()));
  }
}
