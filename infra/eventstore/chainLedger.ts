import type pg from 'pg';
import { type ChainedEvent, GENESIS_HASH, chainHash } from '../../contracts/chain';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';
import { HttpError } from '../../services/shared/errors';
import { runSetupSql } from './postgres';
import type {
  AppendResult, ChainBreak, ChainReport, EventStore, ExpectedRevision, ReadAllOptions, ReadStreamOptions, Subscription,
} from '../../services/shared/eventStore';
import { RetryBudgetSpent, type RetryPolicy, budgetOf, describeError, isTransient } from '../../services/shared/faults';
import { Pauses } from '../../services/shared/pauses';

/*
 * The hash chain of a log whose store cannot chain its events as it appends them (EventStoreDB):
 * a checkpointed projection (docs/compliance.md). A follower reads the log in its global order,
 * hashes each event as contracts/chain.ts does (its content as the adapter reads it: data and
 * metadata as JSON text, the time to the millisecond) chained to the hash before it, and records
 * the links in PostgreSQL (chain_links, one row per event, numbered without gaps) with the head
 * (chain_head, its checkpoint) in the same transaction. The head moves by compare-and-set, so two
 * followers (two workers) never chain an event twice or fork the chain.
 *
 * LedgerChainedStore puts the ledger behind the event store port: verifyChain recomputes every
 * link from the events read back from the store, chainHead and readChained serve the anchors,
 * signatures and evidence bundles as the PostgreSQL store's chain does. Events appended after the
 * head are not covered until the follower reaches them (within a poll, normally); readChained waits
 * for them, briefly.
 */

const LEDGER_SQL = `
CREATE TABLE IF NOT EXISTS chain_links (
  seq bigint PRIMARY KEY,
  position bigint NOT NULL UNIQUE,
  stream_id text NOT NULL,
  revision bigint NOT NULL,
  type text NOT NULL,
  hash bytea NOT NULL
);
CREATE TABLE IF NOT EXISTS chain_head (
  id int PRIMARY KEY CHECK (id = 1),
  seq bigint NOT NULL,
  position bigint NOT NULL,
  hash bytea
);
INSERT INTO chain_head (id, seq, position, hash) VALUES (1, 0, 0, NULL) ON CONFLICT DO NOTHING;
`;

/** Events read per page by the follower, and events and links compared per page by verification. */
const PAGE = 1000;
const VERIFY_PAGE = 2000;
/** A page of events stops once its data passes this many bytes (PostgreSQL; EventStoreDB reads the page's count). */
const PAGE_BYTES = 16 * 1024 * 1024;
/** How long readChained waits for the follower to chain what it is asked for. */
const CHAINED_WAIT_MS = 15_000;

interface Head { seq: bigint; position: string; hash: string | null }
interface LinkRow { seq: string; position: string; stream_id: string; revision: string; type: string; hash: string }

/** An event as the chain covers it, from its envelope: JSON text as JSON.stringify writes it, the time in ms × 1000. */
export function envelopeContent(e: EventEnvelope): Omit<ChainedEvent, 'hash' | 'previousHash'> {
  return {
    position: e.position, id: e.id, streamId: e.streamId, revision: e.revision, type: e.type, schemaVersion: e.schemaVersion,
    recordedAtMicros: (BigInt(Date.parse(e.recordedAt)) * 1000n).toString(),
    data: JSON.stringify(e.data ?? null), metadata: JSON.stringify(e.metadata ?? null),
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** The ledger's tables in the read model's database. */
export class ChainLedger {
  constructor(private readonly pool: pg.Pool) {}

  /** Creates the tables if they are missing. Idempotent. */
  async setup(): Promise<void> {
    await runSetupSql(this.pool, 7362002, LEDGER_SQL);
  }

  async head(): Promise<Head> {
    const { rows: [r] } = await this.pool.query<{ seq: string; position: string; hash: string | null }>(
      `SELECT seq, position, encode(hash, 'hex') AS hash FROM chain_head WHERE id = 1`);
    // setup() writes the row; without it every extend would lose its compare-and-set, for ever.
    if (!r) throw new Error('The hash chain ledger has no head row (chain_head, id 1): its tables were changed by hand. Restore them from a backup, or empty both (TRUNCATE chain_links, chain_head) and restart the worker to chain the log anew');
    return { seq: BigInt(r.seq), position: r.position, hash: r.hash };
  }

  /**
   * Chains `events` (read in order right after the head `from`) onto it. False when another
   * follower moved the head first: nothing is written, the caller reads the head again.
   */
  async extend(from: Head, events: readonly EventEnvelope[]): Promise<boolean> {
    let previous = from.hash ?? GENESIS_HASH;
    const rows = events.map((e, i) => {
      previous = chainHash(previous, envelopeContent(e));
      return { seq: (from.seq + BigInt(i) + 1n).toString(), position: e.position, streamId: e.streamId, revision: e.revision, type: e.type, hash: previous };
    });
    const last = rows[rows.length - 1];
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const moved = await client.query(
        `UPDATE chain_head SET seq = $1, position = $2, hash = decode($3, 'hex') WHERE id = 1 AND seq = $4`,
        [last.seq, last.position, last.hash, from.seq.toString()]);
      if (moved.rowCount !== 1) {
        await client.query('ROLLBACK');
        return false;
      }
      await client.query(
        `INSERT INTO chain_links (seq, position, stream_id, revision, type, hash)
         SELECT s, p, st, r, t, decode(h, 'hex') FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[]) AS u(s, p, st, r, t, h)`,
        [rows.map((r) => r.seq), rows.map((r) => r.position), rows.map((r) => r.streamId), rows.map((r) => r.revision), rows.map((r) => r.type), rows.map((r) => r.hash)]);
      await client.query('COMMIT');
      return true;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Links in the order of the chain: from number `seq` on, at positions up to `to`. */
  async links(seq: bigint, to: string, limit: number): Promise<LinkRow[]> {
    return (await this.pool.query<LinkRow>(
      `SELECT seq, position, stream_id, revision, type, encode(hash, 'hex') AS hash FROM chain_links
       WHERE seq >= $1 AND position <= $2 ORDER BY seq LIMIT $3`, [seq.toString(), to, limit])).rows;
  }

  /** The link before the first one at or after `position`: its number, position and hash (seq 0: none). */
  async linkBefore(position: string): Promise<{ seq: bigint; position: string; hash: string }> {
    const { rows: [r] } = await this.pool.query<{ seq: string; position: string; hash: string }>(
      `SELECT seq, position, encode(hash, 'hex') AS hash FROM chain_links WHERE position < $1 ORDER BY position DESC LIMIT 1`, [position]);
    return r ? { seq: BigInt(r.seq), position: r.position, hash: r.hash } : { seq: 0n, position: '0', hash: GENESIS_HASH };
  }

  /** The links at these positions, each with the hash and position of the link before it. */
  async at(positions: readonly string[]): Promise<Map<string, { hash: string; previousHash: string; previousPosition: string }>> {
    const { rows } = await this.pool.query<{ position: string; hash: string; previous_hash: string | null; previous_position: string | null; seq: string }>(
      `SELECT l.seq, l.position, encode(l.hash, 'hex') AS hash, encode(p.hash, 'hex') AS previous_hash, p.position AS previous_position
       FROM chain_links l LEFT JOIN chain_links p ON p.seq = l.seq - 1 WHERE l.position = ANY($1::bigint[])`, [positions]);
    return new Map(rows.map((r) => [r.position, {
      hash: r.hash,
      previousHash: r.previous_hash ?? (r.seq === '1' ? GENESIS_HASH : ''),
      previousPosition: r.previous_position ?? '0',
    }]));
  }
}

export interface ChainFollowerStatus { state: 'running' | 'retrying' | 'failed' | 'stopped'; position: string; chained: number; lastError: string | null }

export interface ChainFollower {
  /** Chains everything appended so far; resolves with the chain's head position then. */
  catchUp(): Promise<string>;
  status(): ChainFollowerStatus;
  stop(): Promise<void>;
}

/**
 * The chain's projection: polls the log after the ledger's head and chains what it finds. A
 * failure the store or the database may get over (a restart) is retried within the retry budget;
 * past it, or on any other error, the follower stops as failed (reported by /readyz) and is not
 * retried: the log stays whole, verification reports what is not chained yet.
 */
export function startChainFollower(deps: {
  store: EventStore; ledger: ChainLedger; logger: { info(o: object, m: string): void; error(o: object, m: string): void; warn(o: object, m: string): void };
  pollMs?: number; retry?: RetryPolicy;
}): ChainFollower {
  const pollMs = deps.pollMs ?? 500;
  const budget = budgetOf(deps.retry, { firstMs: 500, maxMs: 30_000 });
  const status: ChainFollowerStatus = { state: 'running', position: '0', chained: 0, lastError: null };
  let stopping = false;
  const pauses = new Pauses();
  let busy: Promise<number> = Promise.resolve(0);

  /** One page: events after the head chained onto it. The number chained, 0 when none was new. */
  const step = async (): Promise<number> => {
    for (;;) {
      const head = await deps.ledger.head();
      status.position = head.position;
      const events = await deps.store.readAll({ after: head.position, maxCount: PAGE, maxBytes: PAGE_BYTES });
      if (events.length === 0) return 0;
      if (await deps.ledger.extend(head, events)) {
        status.position = events[events.length - 1].position;
        status.chained += events.length;
        return events.length;
      }
    }
  };
  /** Steps run one at a time: the loop's and a caller's catchUp. */
  const serial = (work: () => Promise<number>) => {
    const next = busy.then(work, work);
    busy = next.catch(() => 0);
    return next;
  };
  const drain = async () => {
    let total = 0;
    for (let n = await step(); n > 0; n = await step()) total += n;
    return total;
  };

  const loop = (async () => {
    while (!stopping) {
      try {
        await serial(drain);
        budget.reset();
        status.state = 'running';
        status.lastError = null;
        await pauses.sleep(pollMs);
      } catch (err) {
        status.lastError = describeError(err);
        const pause = isTransient(err) ? budget.next() : null;
        if (pause === null) {
          status.state = 'failed';
          const reason = isTransient(err) ? new RetryBudgetSpent(err, budget) : err;
          deps.logger.error({ err: reason, position: status.position }, 'chain follower failed: events after this position are not chained');
          return;
        }
        status.state = 'retrying';
        deps.logger.warn({ err, pauseMs: pause }, 'chain follower: retrying');
        await pauses.sleep(pause);
      }
    }
  })();

  return {
    catchUp: async () => {
      await serial(drain);
      return (await deps.ledger.head()).position;
    },
    status: () => ({ ...status }),
    async stop() {
      stopping = true;
      pauses.close();
      await loop;
      await busy;
      if (status.state !== 'failed') status.state = 'stopped';
    },
  };
}

/**
 * Reads in order a page at a time, the next page asked for as soon as one arrives, so that reading
 * (the store, the database) and hashing (here) overlap.
 */
class Cursor<T> {
  private page: T[] = [];
  private index = 0;
  private next: Promise<T[]> | null;
  constructor(private readonly fetch: (after: T | null) => Promise<T[]>) {
    this.next = this.ask(null);
  }

  private ask(after: T | null): Promise<T[]> {
    const p = this.fetch(after);
    p.catch(() => undefined); // awaited in peek(); a cursor left early must not leave it unhandled
    return p;
  }

  async peek(): Promise<T | null> {
    if (this.index >= this.page.length && this.next) {
      this.page = await this.next;
      this.index = 0;
      this.next = this.page.length > 0 ? this.ask(this.page[this.page.length - 1]) : null;
    }
    return this.page[this.index] ?? null;
  }

  skip(): void {
    this.index++;
  }
}

/**
 * An event store whose chain is kept by the ledger: the adapter's own operations, and the chain's
 * (verifyChain, chainHead, readChained) from the ledger and the events read back.
 */
export class LedgerChainedStore implements EventStore {
  readonly kind: EventStore['kind'];

  constructor(private readonly base: EventStore, private readonly ledger: ChainLedger, private readonly waitMs = CHAINED_WAIT_MS) {
    this.kind = base.kind;
  }

  append(streamId: string, events: NewEvent[], options: { expectedRevision: ExpectedRevision; metadata: EventMetadata }): Promise<AppendResult> {
    return this.base.append(streamId, events, options);
  }
  readStream(streamId: string, options?: ReadStreamOptions): Promise<EventEnvelope[]> {
    return this.base.readStream(streamId, options);
  }
  readAll(options?: ReadAllOptions): Promise<EventEnvelope[]> {
    return this.base.readAll(options);
  }
  subscribeToAll(options?: { after?: string; shallow?: readonly string[] }): Subscription {
    return this.base.subscribeToAll(options);
  }
  headPosition(): Promise<string> {
    return this.base.headPosition();
  }
  positionAt(time: string): Promise<string> {
    return this.base.positionAt(time);
  }
  close(): Promise<void> {
    return this.base.close();
  }

  async chainHead(): Promise<{ position: string; hash: string | null }> {
    const head = await this.ledger.head();
    return { position: head.position, hash: head.hash };
  }

  /**
   * Recomputes the links over positions `from`..`to` (inclusive; default the whole chain) from the
   * events read back in order. The range ends at the chain's head: later events are not chained yet.
   */
  async verifyChain(range: { from?: string; to?: string } = {}): Promise<ChainReport> {
    const from = range.from ?? '1';
    // A range that starts past the chain's head waits for the follower (a 503 chain-behind after a while).
    if (range.from !== undefined) await this.waitChained(from);
    const started = process.hrtime.bigint();
    const head = await this.ledger.head();
    const to = range.to === undefined || BigInt(range.to) > BigInt(head.position) ? head.position : range.to;
    let checked = 0;
    const report = (firstBreak: ChainBreak | null): ChainReport => ({
      from, to, checked, intact: firstBreak === null, firstBreak,
      head: { position: head.position, hash: head.hash }, seconds: Number(process.hrtime.bigint() - started) / 1e9,
    });
    const before = await this.ledger.linkBefore(from);
    const events = new Cursor<EventEnvelope>((last) => this.base.readAll({ after: last?.position ?? before.position, maxCount: VERIFY_PAGE, maxBytes: PAGE_BYTES }));
    const links = new Cursor<LinkRow>((last) => this.ledger.links(last ? BigInt(last.seq) + 1n : before.seq + 1n, to, VERIFY_PAGE));
    let previous = { seq: before.seq, position: before.position, hash: before.hash };
    const notChained = (e: EventEnvelope): ChainBreak => ({
      position: e.position, problem: 'unhashed', recordedHash: null, computedHash: null,
      detail: `the event at position ${e.position} (${e.type} on ${e.streamId}, revision ${e.revision}) is not in the chain: it was added to the log after the events around it were chained`,
    });
    for (let link = await links.peek(); link !== null; link = await links.peek()) {
      if (BigInt(link.seq) !== previous.seq + 1n) {
        return report({
          position: link.position, problem: 'missing', recordedHash: link.hash, computedHash: null,
          detail: `links ${previous.seq + 1n} to ${BigInt(link.seq) - 1n} are missing from the chain before position ${link.position} (the link before it is at ${previous.position})`,
        });
      }
      const event = await events.peek();
      if (event && BigInt(event.position) < BigInt(link.position)) return report(notChained(event));
      if (!event || event.position !== link.position) {
        return report({
          position: link.position, problem: 'missing', recordedHash: link.hash, computedHash: null,
          detail: `the event at position ${link.position} (${link.type} on ${link.stream_id}, revision ${link.revision}) is gone from the log`,
        });
      }
      const computed = chainHash(previous.hash, envelopeContent(event));
      events.skip();
      links.skip();
      if (computed !== link.hash) {
        // The next event still chained to the recorded hash: the event changed; not: the hash did.
        const [next] = (await links.peek()) ? [await links.peek()] : await this.ledger.links(BigInt(link.seq) + 1n, head.position, 1);
        const nextEvent = await events.peek();
        const hashAltered = next != null && nextEvent !== null && nextEvent.position === next.position
          && chainHash(link.hash, envelopeContent(nextEvent)) !== next.hash;
        return report({
          position: link.position, problem: hashAltered ? 'hash-altered' : 'altered', recordedHash: link.hash, computedHash: computed,
          detail: hashAltered
            ? `the hash recorded with the event at position ${link.position} was changed: the event after it was chained to another hash`
            : `the event at position ${link.position} (${event.type} on ${event.streamId}, revision ${event.revision}) no longer gives the hash recorded when it was chained: its content was changed`,
        });
      }
      checked++;
      previous = { seq: BigInt(link.seq), position: link.position, hash: link.hash };
    }
    // Within the range, no event of the log may lie past the last link.
    const after = await events.peek();
    if (after && BigInt(after.position) <= BigInt(to)) return report(notChained(after));
    if (to === head.position && (previous.position !== head.position || (head.seq > 0n && previous.hash !== head.hash) || previous.seq !== head.seq)) {
      return report({
        position: head.position, problem: 'head', recordedHash: head.hash, computedHash: previous.hash,
        detail: `the chain's head (link ${head.seq} at position ${head.position}) does not match its last link (link ${previous.seq} at ${previous.position}): links are missing at the end or the head was rewritten`,
      });
    }
    return report(null);
  }

  /**
   * The events of these streams and at these positions up to `upTo` (default: the log's head, or
   * the last position asked for when no stream is) with their links, once the follower has chained
   * that far (a 503 `chain-behind` after a wait).
   */
  async readChained(query: { streams?: readonly string[]; positions?: readonly string[]; upTo?: string }): Promise<ChainedEvent[]> {
    const upTo = query.upTo
      ?? ((query.streams ?? []).length === 0 ? (query.positions ?? []).reduce((a, b) => (BigInt(b) > BigInt(a) ? b : a), '0') : await this.base.headPosition());
    await this.waitChained(upTo);
    const byPosition = new Map<string, EventEnvelope>();
    for (const stream of query.streams ?? []) {
      for (const e of await this.base.readStream(stream)) if (BigInt(e.position) <= BigInt(upTo)) byPosition.set(e.position, e);
    }
    const wanted = (query.positions ?? []).filter((p) => !byPosition.has(p) && BigInt(p) <= BigInt(upTo));
    const linksAt = await this.ledger.at([...byPosition.keys(), ...wanted]);
    for (const p of wanted) {
      const link = linksAt.get(p);
      if (!link) continue;
      const [e] = await this.base.readAll({ after: link.previousPosition, maxCount: 1 });
      if (e?.position === p) byPosition.set(p, e);
    }
    return [...byPosition.values()]
      .sort((a, b) => (BigInt(a.position) < BigInt(b.position) ? -1 : 1))
      .map((e) => {
        const link = linksAt.get(e.position);
        return { ...envelopeContent(e), hash: link?.hash ?? '', previousHash: link?.previousHash ?? '' };
      });
  }

  private async waitChained(upTo: string): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const head = await this.ledger.head();
      if (BigInt(head.position) >= BigInt(upTo)) return;
      // Nothing to wait for when the log itself ends before upTo and the chain holds all of it.
      const logHead = await this.base.headPosition();
      if (BigInt(head.position) >= BigInt(logHead) && BigInt(logHead) < BigInt(upTo)) return;
      if (Date.now() >= deadline) {
        throw new HttpError(503, 'chain-behind', `The hash chain has reached position ${head.position}, not yet ${upTo}: its follower runs in the worker role; try again shortly`, { chained: head.position, wanted: upTo });
      }
      await sleep(100);
    }
  }
}
