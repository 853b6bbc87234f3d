import { createHash } from 'node:crypto';

/**
 * The hash chain of the log (docs/compliance.md), computed outside the database: what an
 * evidence bundle's reader needs to check its events offline. The same bytes as the PostgreSQL
 * event store's `es_event_content` (infra/eventstore/postgres.schema.sql); test/infra/chain.int.spec.ts
 * holds the two alike.
 */

/** An event as the chain covers it: data and metadata as PostgreSQL's jsonb text, the time in microseconds. */
export interface ChainedEvent {
  position: string;
  id: string;
  streamId: string;
  revision: string;
  type: string;
  schemaVersion: number;
  /** Microseconds since 1970-01-01 UTC, as a decimal string. */
  recordedAtMicros: string;
  /** The event's data as jsonb text (`data::text`): hashed as is, never re-serialised. */
  data: string;
  metadata: string;
  /** Its recorded hash and the recorded hash of the event before it in the log (hex). */
  hash: string;
  previousHash: string;
}

/** The hash before the first event. */
export const GENESIS_HASH = '0'.repeat(64);

/** `es_event_content`: each field as its length in UTF-8 bytes, ':' and its text. */
export function eventContent(e: Omit<ChainedEvent, 'hash' | 'previousHash'>): Buffer {
  const fields = [e.position, e.id, e.streamId, e.revision, e.type, String(e.schemaVersion), e.recordedAtMicros, e.data, e.metadata];
  return Buffer.from(fields.map((f) => `${Buffer.byteLength(f, 'utf8')}:${f}`).join(''), 'utf8');
}

/** SHA-256(previous hash ‖ content), hex. */
export function chainHash(previousHash: string, e: Omit<ChainedEvent, 'hash' | 'previousHash'>): string {
  return createHash('sha256').update(Buffer.from(previousHash, 'hex')).update(eventContent(e)).digest('hex');
}

/**
 * The hash of a record's content as of a position (a signature's `contentHash`): SHA-256 of the
 * lines `<position>:<chain hash>\n` of the events behind it, in the order of the log. Each chain
 * hash covers its event whole, so this fixes every byte of them.
 */
export function contentHash(events: readonly Pick<ChainedEvent, 'position' | 'hash'>[]): string {
  const h = createHash('sha256');
  for (const e of events) h.update(`${e.position}:${e.hash}\n`);
  return h.digest('hex');
}
