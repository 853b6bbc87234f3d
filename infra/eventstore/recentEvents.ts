import type { EventEnvelope } from '../../contracts/envelope';

/** An event as a subscription's page read it: its stored data size, and the types it was read with shallow. */
export interface ReadEvent {
  event: EventEnvelope;
  /** Stored bytes of its data (ReadAllOptions.maxBytes counts these). */
  size: number;
}

interface Entry extends ReadEvent {
  position: bigint;
  shallow: ReadonlySet<string>;
}

/**
 * The end of the log as a store's subscriptions last read it, shared by all of them.
 *
 * A process following the log holds many subscriptions (the direct transport: one per projection,
 * nine, and the search indexer's), woken together by each append and each reading the same new
 * events: nine reads, nine transfers and nine decodings of every event (bench/README.md, "One
 * read of the log per process"). The first subscription to read a page records it here; the
 * others are served from it, as long as they are within what it holds.
 *
 * What it holds is exactly what the log holds over `(from, to]` (contiguous pages as read), the
 * newest `limits.events` events and `limits.bytes` stored bytes at most. An event read with
 * other types shallow than a reader asks for is served to it only when its type is read the same
 * way by both; otherwise the reader reads it itself. It also remembers the last read that found
 * nothing, and the notification count when that read began: a reader at that position that has
 * seen no later notification knows there is nothing new without reading.
 *
 * The events are shared objects, as the Kafka projector's decoded messages are: readers never
 * change them.
 */
export class RecentEvents {
  private entries: Entry[] = [];
  private bytes = 0;
  /** Covers (from, to]: meaningful only while entries is not empty. */
  private from = 0n;
  private to = 0n;
  /** A read after `position`, begun when the notification count was `seq`, found nothing. */
  private end: { position: bigint; seq: number } | null = null;

  constructor(private readonly limits: { events: number; bytes: number }) {}

  /**
   * The events after `after` it can serve to a reader of `shallow` (at most `maxCount`, and no
   * more than `maxBytes` of stored data past the first); [] when a read begun at notification
   * `seq` or later found nothing after `after`; null when the reader must read the log.
   */
  serve(after: bigint, shallow: ReadonlySet<string>, seq: number, maxCount: number, maxBytes: number): EventEnvelope[] | null {
    if (this.end !== null && this.end.position === after && this.end.seq >= seq) return [];
    if (this.entries.length === 0 || after < this.from || after >= this.to) return null;
    let i = this.indexAfter(after);
    const page: EventEnvelope[] = [];
    let bytes = 0;
    for (; i < this.entries.length && page.length < maxCount && (page.length === 0 || bytes < maxBytes); i++) {
      const entry = this.entries[i];
      if (!sameShape(entry.event.type, entry.shallow, shallow)) break;
      page.push(entry.event);
      bytes += entry.size;
    }
    return page.length > 0 ? page : null;
  }

  /** Records what a read after `after` with `shallow`, begun at notification `seq`, returned. */
  record(after: bigint, shallow: ReadonlySet<string>, seq: number, page: readonly ReadEvent[]): void {
    if (page.length === 0) {
      if (this.end === null || after > this.end.position || (after === this.end.position && seq > this.end.seq)) this.end = { position: after, seq };
      return;
    }
    const contiguous = this.entries.length > 0 && after === this.to;
    if (!contiguous) {
      // A reader behind what is held (or one that had to read within it) leaves the end of the log alone.
      if (this.entries.length > 0 && after < this.to) return;
      this.entries = [];
      this.bytes = 0;
      this.from = after;
    }
    for (const read of page) {
      this.entries.push({ ...read, position: BigInt(read.event.position), shallow });
      this.bytes += read.size;
    }
    this.to = this.entries[this.entries.length - 1].position;
    this.trim();
  }

  clear(): void {
    this.entries = [];
    this.bytes = 0;
    this.end = null;
  }

  /** Events and stored bytes held (tests, and the bound they keep). */
  held(): { events: number; bytes: number } {
    return { events: this.entries.length, bytes: this.bytes };
  }

  private trim(): void {
    let drop = 0;
    let bytes = this.bytes;
    while (drop < this.entries.length && (this.entries.length - drop > this.limits.events || bytes > this.limits.bytes)) {
      bytes -= this.entries[drop].size;
      drop++;
    }
    if (drop === 0) return;
    this.from = this.entries[drop - 1].position;
    this.entries = this.entries.slice(drop);
    this.bytes = bytes;
  }

  /** Index of the first entry past `after` (from ≤ after < to). */
  private indexAfter(after: bigint): number {
    let low = 0;
    let high = this.entries.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.entries[middle].position > after) high = middle;
      else low = middle + 1;
    }
    return low;
  }
}

/** The events of a page read with `readWith` shallow, up to the first whose data a reader of `shallow` would get otherwise. */
export function sameShapePrefix(page: readonly ReadEvent[], readWith: ReadonlySet<string>, shallow: ReadonlySet<string>): EventEnvelope[] {
  const events: EventEnvelope[] = [];
  for (const read of page) {
    if (!sameShape(read.event.type, readWith, shallow)) break;
    events.push(read.event);
  }
  return events;
}

/** The event's data is the same read with either set of types shallow. */
function sameShape(type: string, a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a === b || a.has(type) === b.has(type);
}
