import type { ChainedEvent } from '../../contracts/chain';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';

/**
 * What a stream must look like before an append:
 * 'any' (no check), 'no-stream' (must not exist) or an exact revision (a decimal string or bigint).
 */
export type ExpectedRevision = 'any' | 'no-stream' | bigint;

export interface AppendResult {
  /** Revision of the last event written. */
  nextRevision: bigint;
  /** Global position of the last event written (decimal string). */
  position: string;
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  /** Inclusive start; defaults to the start (forwards) or the end (backwards). */
  fromRevision?: bigint;
  maxCount?: number;
  /** Event types read shallow, as ReadAllOptions.shallow (a job folding its stream without its chunks' rows). */
  shallow?: readonly string[];
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. '0' (or omitted) reads from the start. */
  after?: string;
  maxCount?: number;
  /**
   * Stop the page once its events' data passes this many stored bytes (always at least one
   * event), so that a reader behind a run of big events (import chunks) holds a bounded page.
   * An adapter may ignore it (EventStoreDB: its reads stream).
   */
  maxBytes?: number;
  /**
   * Event types to read shallow: their data keeps every top-level key and scalar, but nested
   * objects and arrays come back empty (`{}`). For readers that need a bulky event's summary only
   * (the audit trail of an import chunk). An adapter may ignore it and return the whole data.
   */
  shallow?: readonly string[];
}

export interface Subscription extends AsyncIterable<EventEnvelope> {
  close(): Promise<void>;
}

/** Where the hash chain of the log (docs/compliance.md) first fails to hold. */
export interface ChainBreak {
  /** The position the break is found at (for `missing`: the first position after the gap; for `head`: the head's). */
  position: string;
  /**
   * altered: the event's content no longer gives its recorded hash (the event was changed after it
   * was appended); hash-altered: its recorded hash was changed (the next event was chained to
   * another one); missing: events are gone before this position; unhashed: the event has no hash;
   * head: the head (its position and last hash) does not match the last event; anchor: an anchor
   * recorded another hash at this position (services/integrity/anchors.ts: the chain was recomputed).
   */
  problem: 'altered' | 'hash-altered' | 'missing' | 'unhashed' | 'head' | 'anchor';
  detail: string;
  /** The hash stored with the event (hex), and the one its content and the previous hash give. */
  recordedHash: string | null;
  computedHash: string | null;
}

export interface ChainReport {
  /** The positions checked, inclusive. */
  from: string;
  to: string;
  checked: number;
  intact: boolean;
  firstBreak: ChainBreak | null;
  /** The log's head: its position and last hash (hex). */
  head: { position: string; hash: string | null };
  seconds: number;
}

/** The event store port. Adapters: infra/eventstore/postgres.ts, infra/eventstore/esdb.ts. */
export interface EventStore {
  readonly kind: 'postgres' | 'eventstoredb';
  append(
    streamId: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision; metadata: EventMetadata },
  ): Promise<AppendResult>;
  /**
   * Throws what `append` would throw for events that break their contracts, writing nothing:
   * a handler checks the events it is about to append before it claims anything for them. The
   * contract-checking wrapper (validatingEventStore.ts) has it; a bare adapter need not.
   */
  validate?(events: NewEvent[]): void;
  readStream(streamId: string, options?: ReadStreamOptions): Promise<EventEnvelope[]>;
  readAll(options?: ReadAllOptions): Promise<EventEnvelope[]>;
  /** Catch-up from `after` (exclusive), then live, in global order, until closed. */
  subscribeToAll(options?: { after?: string; shallow?: readonly string[] }): Subscription;
  /** Position of the last event in the global log ('0' when empty). */
  headPosition(): Promise<string>;
  /** The last position recorded at or before `time` (an ISO date-time; '0' when none). */
  positionAt(time: string): Promise<string>;
  /**
   * Recomputes the hash chain over positions `from`..`to` (inclusive; default the whole log) and
   * reports the first break. The PostgreSQL adapter keeps the chain; an adapter without one has no
   * such method (docs/compliance.md).
   */
  verifyChain?(range?: { from?: string; to?: string }): Promise<ChainReport>;
  /**
   * The events of these streams and at these positions, in the order of the log, as the chain
   * covers them (contracts/chain.ts), with `upTo` the last position read. Only an adapter that
   * keeps the chain has it.
   */
  /** The log's head: its position and last hash (hex; null before any event). Only an adapter that keeps the chain has it. */
  chainHead?(): Promise<{ position: string; hash: string | null }>;
  readChained?(query: { streams?: readonly string[]; positions?: readonly string[]; upTo?: string }): Promise<ChainedEvent[]>;
  close(): Promise<void>;
}
