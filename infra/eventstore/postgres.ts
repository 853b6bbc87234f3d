import type { ChainedEvent } from '../../contracts/chain';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';
import { ConcurrencyError } from '../../services/shared/errors';
import { listenOn } from '../postgres/listen';
import { RecentEvents, sameShapePrefix, type ReadEvent } from './recentEvents';
import type {
  AppendResult, ChainBreak, ChainReport, EventStore, ExpectedRevision, ReadAllOptions, ReadStreamOptions, Subscription,
} from '../../services/shared/eventStore';

const SCHEMA_SQL = fs.readFileSync(path.join(__dirname, 'postgres.schema.sql'), 'utf8');
const NOTIFY_CHANNEL = 'es_appended';
const MAX_BATCH = 500;
const PAGE = 1000;
/** A subscription's page holds at most this many stored bytes of event data (ReadAllOptions.maxBytes). */
const SUBSCRIPTION_PAGE_BYTES = 256 * 1024;
/** What the subscriptions of a store share of the log's end (RecentEvents): four pages' worth. */
const RECENT_LIMITS = { events: 4 * PAGE, bytes: 4 * SUBSCRIPTION_PAGE_BYTES };

export interface AppendRequest {
  streamId: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
  metadata: EventMetadata;
}

interface Pending {
  request: AppendRequest;
  resolve: (r: AppendResult) => void;
  reject: (e: unknown) => void;
}

type RequestOutcome = { ok: true; revision: string; position: string } | { ok: false; actual: string };

interface EventRow {
  position: string; id: string; stream_id: string; revision: string; type: string;
  schema_version: number; data: unknown; metadata: EventMetadata; recorded_at: string;
}

interface SizedRow extends EventRow {
  /** pg_column_size of the stored data. */
  size: number;
}

/**
 * recorded_at as the envelope gives it (ISO 8601, milliseconds cut, as a Date's toISOString of
 * pg's parse would): a Date per event, built and formatted again, was a tenth of a live
 * projector's reading (bench/README.md, "One read of the log per process").
 */
const COLUMNS = `position, id, stream_id, revision, type, schema_version, data, metadata,
  to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at`;

/** Positions verified per statement (PostgresEventStore.verifyChain), and statements run at once. */
const VERIFY_RANGE = 50_000n;
const VERIFY_PARALLEL = 2;

interface LinkRow {
  position: string; stream_id: string; revision: string; type: string; hash: string | null; computed: string; prev_position: string | null; gap: boolean; ok: boolean | null;
}

/**
 * The links of the chain over positions $1..$2 (the event before $1 read for its hash): each
 * event's recorded hash, the one computed from the previous recorded hash and its content, and
 * whether a position is missing before it. The content is es_event_content's bytes written out
 * (a call of that function per event costs more than half of the verification), each text made
 * once behind the `OFFSET 0` fence; test/infra/chain.int.spec.ts holds the two alike.
 */
const LINKS_SQL = `SELECT * FROM (
  SELECT position, stream_id, revision, type, encode(hash, 'hex') AS hash, encode(computed, 'hex') AS computed, prev_position,
    (prev_position IS DISTINCT FROM position - 1 AND (position > 1 OR prev_position IS NOT NULL)) AS gap, hash = computed AS ok
  FROM (
    SELECT e.position, e.stream_id, e.revision, e.type, e.hash, lag(e.position) OVER w AS prev_position,
      sha256(coalesce(lag(e.hash) OVER w, CASE WHEN lag(e.position) OVER w IS NULL THEN decode(repeat('00', 32), 'hex') END)
        || convert_to(concat(octet_length(e.p), ':', e.p, octet_length(e.i), ':', e.i, octet_length(e.stream_id), ':', e.stream_id, octet_length(e.r), ':', e.r,
             octet_length(e.type), ':', e.type, octet_length(e.v), ':', e.v, octet_length(e.a), ':', e.a, octet_length(e.d), ':', e.d, octet_length(e.m), ':', e.m), 'UTF8')) AS computed
    FROM (SELECT position, stream_id, revision, type, hash, position::text AS p, id::text AS i, revision::text AS r, schema_version::text AS v,
            (extract(epoch FROM recorded_at) * 1000000)::bigint::text AS a, data::text AS d, metadata::text AS m
          FROM es_events WHERE position BETWEEN $1::bigint - 1 AND $2::bigint OFFSET 0) e
    WINDOW w AS (ORDER BY e.position)
  ) links WHERE position >= $1::bigint
) checked`;

/**
 * COLUMNS with the data of the types in parameter $n (text[]) read shallow: top-level keys and
 * scalars kept, nested objects and arrays emptied. A large event's shallow form was stored when it
 * was appended (es_events.shallow); an older or small one's is made from its data.
 */
const shallowColumns = (n: number) => COLUMNS.replace('data', `CASE WHEN type = ANY($${n}::text[])
  THEN COALESCE(shallow, (SELECT jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) IN ('object', 'array') THEN '{}'::jsonb ELSE value END) FROM jsonb_each(data)))
  ELSE data END AS data`);

/** Names a list of shallow types whatever its order. */
function shallowKey(types: readonly string[] | undefined): string {
  return types?.length ? [...types].sort().join(',') : '';
}

function toEnvelope(r: EventRow): EventEnvelope {
  return {
    id: r.id, type: r.type, schemaVersion: r.schema_version, streamId: r.stream_id, revision: r.revision,
    position: r.position, recordedAt: r.recorded_at, data: r.data, metadata: r.metadata,
  };
}

function expectedText(e: ExpectedRevision): string {
  return typeof e === 'bigint' ? e.toString() : e;
}

/** Runs set-up SQL under an advisory lock: two processes starting together must not race on CREATE OR REPLACE. */
export async function runSetupSql(pool: pg.Pool, lock: number, sql: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [lock]);
    await client.query(sql);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [lock]).catch(() => undefined);
    client.release();
  }
}

/** Creates the event store tables and the append function if they are missing. Idempotent. */
export async function setupPostgresEventStore(pool: pg.Pool): Promise<void> {
  await runSetupSql(pool, 7362001, SCHEMA_SQL);
}

/**
 * Event store on PostgreSQL tables (the default adapter).
 *
 * Appends issued concurrently in this process are written together, one transaction a batch
 * (application-level group commit); each request keeps its own expected-revision check.
 */
export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres' as const;
  private queue: Pending[] = [];
  private flushing = false;
  private readonly subscriptions = new Set<Subscription>();
  /** The LISTEN connection its subscriptions share, opened with the first. */
  private sharedListener: SharedListener | null = null;
  /** What its subscriptions read of the log's end, shared (emptied when the last one closes). */
  private readonly recent = new RecentEvents(RECENT_LIMITS);
  /** Subscription reads under way, by `after`: a reader asking the same joins. */
  private readonly reading = new Map<string, { seq: number; shallow: ReadonlySet<string>; page: Promise<ReadEvent[]> }>();
  /** One Set per list of shallow types, so that readers of the same list are recognised at once. */
  private readonly shallowSets = new Map<string, ReadonlySet<string>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly connectionString: string,
    /** Positions per statement of verifyChain (tests make it small to check several ranges at once). */
    private readonly verifyRange: bigint = VERIFY_RANGE,
  ) {}

  append(
    streamId: string,
    events: NewEvent[],
    options: { expectedRevision: ExpectedRevision; metadata: EventMetadata },
  ): Promise<AppendResult> {
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    return new Promise((resolve, reject) => {
      this.queue.push({ request: { streamId, events, ...options }, resolve, reject });
      void this.flush();
    });
  }

  /** Writes many requests in one transaction; each outcome is reported on its own. */
  async appendMany(requests: AppendRequest[]): Promise<RequestOutcome[]> {
    const payload = requests.map((r) => ({
      streamId: r.streamId,
      expected: expectedText(r.expectedRevision),
      events: r.events.map((e) => ({
        id: e.id ?? randomUUID(), type: e.type, schemaVersion: e.schemaVersion ?? 1, data: e.data, metadata: r.metadata,
      })),
    }));
    const { rows } = await this.pool.query<{ es_append: RequestOutcome[] }>('SELECT es_append($1::jsonb)', [
      JSON.stringify(payload),
    ]);
    return rows[0].es_append;
  }

  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        // One turn of the event loop lets the writers whose appends just finished join this batch.
        await new Promise((resolve) => setImmediate(resolve));
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          const outcomes = await this.appendMany(batch.map((p) => p.request));
          batch.forEach((p, i) => this.settle(p, outcomes[i]));
        } catch (error) {
          if (batch.length === 1) batch[0].reject(error);
          // One bad request (a duplicate event id, say) must not fail its neighbours: retry alone.
          else for (const p of batch) await this.appendMany([p.request]).then((o) => this.settle(p, o[0]), p.reject);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private settle(p: Pending, outcome: RequestOutcome): void {
    if (outcome.ok) p.resolve({ nextRevision: BigInt(outcome.revision), position: outcome.position });
    else p.reject(new ConcurrencyError(p.request.streamId, expectedText(p.request.expectedRevision), outcome.actual === '-1' ? 'no-stream' : outcome.actual));
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<EventEnvelope[]> {
    const backwards = options.direction === 'backwards';
    const limit = options.maxCount ?? null;
    const from = options.fromRevision ?? null;
    const shallow = options.shallow?.length ? [...options.shallow] : null;
    const columns = shallow === null ? COLUMNS : shallowColumns(4);
    const sql = backwards
      ? `SELECT ${columns} FROM es_events WHERE stream_id = $1 AND ($2::bigint IS NULL OR revision <= $2) ORDER BY revision DESC LIMIT $3`
      : `SELECT ${columns} FROM es_events WHERE stream_id = $1 AND ($2::bigint IS NULL OR revision >= $2) ORDER BY revision ASC LIMIT $3`;
    const { rows } = await this.pool.query<EventRow>(sql, [streamId, from === null ? null : from.toString(), limit, ...(shallow === null ? [] : [shallow])]);
    return rows.map(toEnvelope);
  }

  /** `maxBytes` counts data as stored (a compressed chunk of import results by its compressed size). */
  async readAll(options: ReadAllOptions = {}): Promise<EventEnvelope[]> {
    const after = options.after ?? '0';
    const limit = options.maxCount ?? PAGE;
    if (options.maxBytes !== undefined) return (await this.readSized(after, limit, options.maxBytes, options.shallow)).map((r) => r.event);
    const shallow = options.shallow?.length ? [...options.shallow] : null;
    const columns = shallow === null ? COLUMNS : shallowColumns(3);
    const { rows } = await this.pool.query<EventRow>(`SELECT ${columns} FROM es_events WHERE position > $1 ORDER BY position ASC LIMIT $2`, [after, limit, ...(shallow === null ? [] : [shallow])]);
    return rows.map(toEnvelope);
  }

  /** A page that stops once its events' stored data passes `maxBytes` (at least one event), each event with its size. */
  private async readSized(after: string, limit: number, maxBytes: number, shallowTypes?: readonly string[]): Promise<ReadEvent[]> {
    const shallow = shallowTypes?.length ? [...shallowTypes] : null;
    const columns = shallow === null ? COLUMNS : shallowColumns(4);
    const { rows } = await this.pool.query<SizedRow>(
      `SELECT ${columns}, size FROM (
         SELECT page.*, pg_column_size(page.data) AS size, sum(pg_column_size(page.data)) OVER (ORDER BY page.position) - pg_column_size(page.data) AS before
         FROM (SELECT * FROM es_events WHERE position > $1 ORDER BY position ASC LIMIT $2) page
       ) sized WHERE before < $3 ORDER BY position ASC`, [after, limit, maxBytes, ...(shallow === null ? [] : [shallow])]);
    return rows.map((r) => ({ event: toEnvelope(r), size: r.size }));
  }

  /**
   * A subscription's next page after `after`: from what the store's subscriptions read last
   * (RecentEvents) when it holds it, else read (joining a read of the same page under way that
   * began at notification `seq` or later); [] when nothing was appended after `after` as of the
   * notification `seq` the reader has seen.
   */
  async readFollowing(after: string, shallowTypes: readonly string[] | undefined, seq: number, currentSeq: () => number): Promise<EventEnvelope[]> {
    const shallow = this.shallowSet(shallowTypes);
    const served = this.recent.serve(BigInt(after), shallow, seq, PAGE, SUBSCRIPTION_PAGE_BYTES);
    if (served) return served;
    const underWay = this.reading.get(after);
    if (underWay && underWay.seq >= seq) {
      const read = await underWay.page;
      // Read with other types shallow: what has the reader's shape up to the first that has not.
      const same = sameShapePrefix(read, underWay.shallow, shallow);
      if (same.length > 0 || read.length === 0) return same;
    }
    const began = currentSeq();
    const page = this.readSized(after, PAGE, SUBSCRIPTION_PAGE_BYTES, shallowTypes);
    const entry = { seq: began, shallow, page };
    if (!underWay) this.reading.set(after, entry);
    const settled = () => {
      if (this.reading.get(after) === entry) this.reading.delete(after);
    };
    page.then((read) => {
      settled();
      if (this.subscriptions.size > 0) this.recent.record(BigInt(after), shallow, began, read);
    }, settled);
    return (await page).map((r) => r.event);
  }

  private shallowSet(types: readonly string[] | undefined): ReadonlySet<string> {
    const key = shallowKey(types);
    let set = this.shallowSets.get(key);
    if (!set) this.shallowSets.set(key, (set = new Set(types ?? [])));
    return set;
  }

  async headPosition(): Promise<string> {
    const { rows } = await this.pool.query<{ position: string }>('SELECT position FROM es_head WHERE id = 1');
    return rows[0]?.position ?? '0';
  }

  /**
   * A binary search on positions: es_append stamps an append's events with one time taken under
   * the head lock, so recorded_at never decreases along the positions (a wall clock set back is
   * the exception: then an earlier time may answer). About 20 primary-key reads for 1,000,000 events.
   * Compared to the millisecond, as recordedAt is given out: an event's own recordedAt finds it.
   */
  async positionAt(time: string): Promise<string> {
    let low = 0n;
    let high = BigInt(await this.headPosition());
    while (low < high) {
      const middle = (low + high + 1n) / 2n;
      const { rows } = await this.pool.query<{ at_or_before: boolean }>(
        'SELECT date_trunc(\'milliseconds\', recorded_at) <= $2::timestamptz AS at_or_before FROM es_events WHERE position <= $1 ORDER BY position DESC LIMIT 1', [middle.toString(), time]);
      if (rows.length === 0 || rows[0].at_or_before) low = middle;
      else high = middle - 1n;
    }
    return low.toString();
  }

  /**
   * The chain recomputed by PostgreSQL (es_event_content, sha256) in ranges of VERIFY_RANGE
   * positions: each event's hash against the hash of the event stored before it and its own
   * content, positions without gaps; then the head against the last event. A link that fails is
   * told apart: when the next event still links to the recorded hash, the content was altered;
   * when it does not, the recorded hash was.
   */
  async verifyChain(range: { from?: string; to?: string } = {}): Promise<ChainReport> {
    const started = process.hrtime.bigint();
    const { rows: [head] } = await this.pool.query<{ position: string; hash: string | null; last: string | null; last_hash: string | null }>(
      `SELECT h.position, encode(h.hash, 'hex') AS hash, l.position AS last, encode(l.hash, 'hex') AS last_hash
       FROM es_head h LEFT JOIN LATERAL (SELECT position, hash FROM es_events ORDER BY position DESC LIMIT 1) l ON true WHERE h.id = 1`);
    const from = BigInt(range.from ?? '1');
    const to = range.to === undefined ? BigInt(head.position) : BigInt(range.to);
    const report = (checked: number, firstBreak: ChainBreak | null): ChainReport => ({
      from: from.toString(), to: to.toString(), checked, intact: firstBreak === null, firstBreak,
      head: { position: head.position, hash: head.hash }, seconds: Number(process.hrtime.bigint() - started) / 1e9,
    });
    let checked = 0;
    // Each range reads the recorded hash before it, so ranges are checked independently, a few at
    // once; the first break in the order of the log is the one reported.
    const count = async (a: bigint, b: bigint) => Number((await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM es_events WHERE position BETWEEN $1 AND $2', [a.toString(), b.toString()])).rows[0].n);
    const checkRange = async (start: bigint) => {
      const end = start + this.verifyRange - 1n < to ? start + this.verifyRange - 1n : to;
      const { rows } = await this.pool.query<LinkRow>(`${LINKS_SQL} WHERE ok IS NOT TRUE OR gap ORDER BY position LIMIT 1`, [start.toString(), end.toString()]);
      return { start, end, bad: rows[0] ?? null };
    };
    for (let start = from; start <= to; start += this.verifyRange * BigInt(VERIFY_PARALLEL)) {
      const starts = Array.from({ length: VERIFY_PARALLEL }, (_, i) => start + this.verifyRange * BigInt(i)).filter((s) => s <= to);
      for (const range of await Promise.all(starts.map(checkRange))) {
        if (range.bad === null) {
          checked += await count(range.start, range.end);
          continue;
        }
        checked += await count(range.start, BigInt(range.bad.position));
        return report(checked, await this.describeBreak(range.bad));
      }
    }
    const endsAtHead = to >= BigInt(head.position);
    if (endsAtHead && (head.last ?? '0') !== head.position) {
      return report(checked, {
        position: head.position, problem: 'head', recordedHash: head.hash, computedHash: head.last_hash,
        detail: `the head is at position ${head.position} but the last event is at ${head.last ?? 'none'}: events are missing at the end`,
      });
    }
    if (endsAtHead && head.last !== null && head.hash !== head.last_hash) {
      return report(checked, {
        position: head.position, problem: 'head', recordedHash: head.hash, computedHash: head.last_hash,
        detail: `the head's hash differs from the last event's: the head or the last event was rewritten`,
      });
    }
    return report(checked, null);
  }

  async chainHead(): Promise<{ position: string; hash: string | null }> {
    const { rows } = await this.pool.query<{ position: string; hash: string | null }>(`SELECT position, encode(hash, 'hex') AS hash FROM es_head WHERE id = 1`);
    return rows[0] ?? { position: '0', hash: null };
  }

  async readChained(query: { streams?: readonly string[]; positions?: readonly string[]; upTo?: string }): Promise<ChainedEvent[]> {
    const { rows } = await this.pool.query<{
      position: string; id: string; stream_id: string; revision: string; type: string; schema_version: number; at: string; data: string; metadata: string; hash: string; previous_hash: string;
    }>(
      `SELECT e.position, e.id, e.stream_id, e.revision, e.type, e.schema_version, (extract(epoch FROM e.recorded_at) * 1000000)::bigint::text AS at,
         e.data::text AS data, e.metadata::text AS metadata, encode(e.hash, 'hex') AS hash,
         encode(CASE WHEN e.position = 1 THEN decode(repeat('00', 32), 'hex') ELSE (SELECT p.hash FROM es_events p WHERE p.position = e.position - 1) END, 'hex') AS previous_hash
       FROM es_events e WHERE (e.stream_id = ANY($1::text[]) OR e.position = ANY($2::bigint[])) AND ($3::bigint IS NULL OR e.position <= $3::bigint)
       ORDER BY e.position`, [query.streams ?? [], query.positions ?? [], query.upTo ?? null]);
    return rows.map((r) => ({
      position: r.position, id: r.id, streamId: r.stream_id, revision: r.revision, type: r.type, schemaVersion: r.schema_version,
      recordedAtMicros: r.at, data: r.data, metadata: r.metadata, hash: r.hash ?? '', previousHash: r.previous_hash ?? '',
    }));
  }

  private async describeBreak(bad: LinkRow): Promise<ChainBreak> {
    const at = { position: bad.position, recordedHash: bad.hash, computedHash: bad.computed };
    if (bad.gap) {
      return { ...at, problem: 'missing', detail: `events are missing before position ${bad.position} (the event before it is at ${bad.prev_position ?? 'none'})` };
    }
    if (bad.hash === null) return { ...at, problem: 'unhashed', detail: `the event at position ${bad.position} has no hash` };
    const next = BigInt(bad.position) + 1n;
    const { rows: [following] } = await this.pool.query<LinkRow>(`${LINKS_SQL} WHERE position = $2`, [bad.position, next.toString()]);
    if (following && following.ok === false && !following.gap) {
      return { ...at, problem: 'hash-altered', detail: `the hash recorded with the event at position ${bad.position} was changed: the event after it was chained to another hash` };
    }
    return { ...at, problem: 'altered', detail: `the event at position ${bad.position} (${bad.type} on ${bad.stream_id}, revision ${bad.revision}) no longer gives the hash recorded when it was appended: its content was changed` };
  }

  subscribeToAll(options: { after?: string; shallow?: readonly string[] } = {}): Subscription {
    const sub = new PostgresSubscription(this, (this.sharedListener ??= new SharedListener(this.connectionString)), options.after ?? '0', options.shallow);
    this.subscriptions.add(sub);
    const close = sub.close.bind(sub);
    sub.close = async () => {
      this.subscriptions.delete(sub);
      if (this.subscriptions.size === 0) this.recent.clear();
      await close();
    };
    return sub;
  }

  async close(): Promise<void> {
    await Promise.all([...this.subscriptions].map((s) => s.close()));
  }
}

/**
 * The one LISTEN connection a store's subscriptions share (a process following the log with nine
 * projections held nine): each subscriber is woken by every notification. Lost, it is replaced at
 * a subscriber's next turn, whose catch-up read covers what was missed; with no subscriber left, it
 * is ended.
 */
class SharedListener {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private readonly subscribers = new Set<() => void>();
  /**
   * Notifications received (and connections lost) so far. A read begun at count `n` sees every
   * event whose notification was counted in `n`: a subscriber that has seen no count past the one
   * its empty read began at has nothing to read.
   */
  seq = 0;

  constructor(private readonly connectionString: string) {}

  add(onNotify: () => void): void {
    this.subscribers.add(onNotify);
  }

  async remove(onNotify: () => void): Promise<void> {
    this.subscribers.delete(onNotify);
    if (this.subscribers.size > 0 || !this.client) return;
    const client = this.client;
    this.client = null;
    await client.end().catch(() => undefined);
  }

  /** Resolves once the connection listens; rejects when it cannot be had (the subscriber's error). */
  async ensure(): Promise<void> {
    while (!this.client && this.subscribers.size > 0) {
      this.connecting ??= this.connect().finally(() => {
        this.connecting = null;
      });
      await this.connecting;
    }
  }

  private async connect(): Promise<void> {
    const client = await listenOn(this.connectionString, NOTIFY_CHANNEL, {
      onNotification: () => this.notifyAll(),
      onLost: (lost) => {
        if (this.client === lost) this.client = null;
        this.notifyAll();
      },
    });
    // Every subscriber left while it connected: nobody else will end this client.
    if (this.subscribers.size === 0) await client.end().catch(() => undefined);
    else {
      this.client = client;
      // Appends while nobody listened were not notified: what was read before now is no proof of an end.
      this.seq++;
    }
  }

  private notifyAll(): void {
    this.seq++;
    for (const notify of this.subscribers) notify();
  }
}

/**
 * Catch-up then live: reads pages after the last delivered position (the store's subscriptions
 * share what they read of the log's end: PostgresEventStore.readFollowing), sleeps on LISTEN
 * between them.
 */
class PostgresSubscription implements Subscription {
  private closed = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly store: PostgresEventStore,
    private readonly listener: SharedListener,
    private after: string,
    private readonly shallow?: readonly string[],
  ) {
    listener.add(this.onNotify);
  }

  private onNotify = () => {
    this.wake?.();
  };

  private readonly currentSeq = () => this.listener.seq;

  async *[Symbol.asyncIterator](): AsyncIterator<EventEnvelope> {
    try {
      yield* this.events();
    } finally {
      await this.close();
    }
  }

  private async *events(): AsyncGenerator<EventEnvelope> {
    while (!this.closed) {
      // A listener that cannot be had (again) ends the subscription with the error: its follower
      // (projector, relay) decides whether and for how long to retry (services/shared/faults.ts).
      await this.listener.ensure();
      const seq = this.listener.seq;
      const page = await this.store.readFollowing(this.after, this.shallow, seq, this.currentSeq);
      for (const event of page) {
        if (this.closed) return;
        this.after = event.position;
        yield event;
      }
      // A page may stop short of PAGE at its byte budget: read on until a page comes back empty.
      if (page.length > 0 || this.listener.seq !== seq) continue;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        if (this.listener.seq !== seq || this.closed) resolve();
      });
      this.wake = null;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake?.();
    await this.listener.remove(this.onNotify);
  }
}
