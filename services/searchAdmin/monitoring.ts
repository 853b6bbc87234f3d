import type { Knex } from 'knex';
import type { SearchType } from '../shared/search';

/**
 * The search administration's monitoring reads: the indexing rate and indexer state the indexer
 * publishes (projections/search/indexingRate.ts, tables search_indexing_rate and
 * search_indexer_state), and the indexer's error log (search_failures). Reads only: no event.
 */

export const RATE_MINUTES = { default: 15, max: 60 } as const;
/** An indexer whose state was not refreshed for this long (it publishes every 10 s while it runs) is `stale`: stopped or unreachable. */
export const STALE_AFTER_SECONDS = 60;

export interface RatePoint {
  /** The minute's start. */
  minute: string;
  documents: number;
  /** Documents per second in that minute (the current minute: over its seconds so far). */
  documentsPerSecond: number;
}

export interface IndexerStateView {
  indexer: string;
  host: string;
  pid: number;
  state: string;
  engine: string | null;
  version: number | null;
  position: string;
  lastError: string | null;
  documentsWritten: number;
  startedAt: string;
  updatedAt: string;
  /** Not refreshed for STALE_AFTER_SECONDS: the process stopped or cannot reach the database. */
  stale: boolean;
}

export interface IndexingRate {
  minutes: number;
  from: string;
  to: string;
  documents: number;
  /** Average over the window, from its first minute's start to now. */
  documentsPerSecond: number;
  /** Every minute of the window, oldest first (no document written: 0). */
  points: RatePoint[];
  indexers: IndexerStateView[];
}

const perSecond = (documents: number, seconds: number) => Math.round((documents / Math.max(seconds, 1)) * 100) / 100;

/** The last `minutes` minutes (the current one included) of documents written, every indexer process added up; times are the database's. */
export async function indexingRate(knex: Knex, minutes: number): Promise<IndexingRate> {
  const { rows } = await knex.raw(`
    SELECT m.minute, now() AS now, coalesce(sum(r.documents), 0)::bigint AS documents
    FROM generate_series(date_trunc('minute', now()) - make_interval(mins => ? - 1), date_trunc('minute', now()), interval '1 minute') AS m(minute)
    LEFT JOIN search_indexing_rate r ON r.minute = m.minute
    GROUP BY m.minute ORDER BY m.minute`, [minutes]) as { rows: { minute: Date; now: Date; documents: string }[] };
  const now = rows[0].now.getTime();
  const points = rows.map((r) => {
    const documents = Number(r.documents);
    return { minute: r.minute.toISOString(), documents, documentsPerSecond: perSecond(documents, Math.min(60, (now - r.minute.getTime()) / 1000)) };
  });
  const documents = points.reduce((sum, p) => sum + p.documents, 0);
  const from = rows[0].minute;
  const states = await knex('search_indexer_state').orderBy('updated_at', 'desc')
    .select('*', knex.raw(`updated_at < now() - make_interval(secs => ?) AS stale`, [STALE_AFTER_SECONDS]));
  return {
    minutes,
    from: from.toISOString(),
    to: new Date(now).toISOString(),
    documents,
    documentsPerSecond: perSecond(documents, (now - from.getTime()) / 1000),
    points,
    indexers: states.map((s): IndexerStateView => ({
      indexer: s.indexer, host: s.host, pid: s.pid, state: s.state, engine: s.engine, version: s.version, position: s.position,
      lastError: s.last_error, documentsWritten: Number(s.documents_written), startedAt: s.started_at.toISOString(),
      updatedAt: s.updated_at.toISOString(), stale: s.stale,
    })),
  };
}

export const FAILURE_PAGE = { default: 50, max: 500 } as const;

/** Where a page starts: after the failure with this time (to the microsecond, as stored: one insert's rows share it) and id. */
export interface FailureCursor { failedAt: string; id: number }

const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export const encodeFailureCursor = (c: FailureCursor): string => Buffer.from(JSON.stringify([c.failedAt, c.id])).toString('base64url');

/** The cursor a page answered as nextCursor; null when it is not one. */
export function decodeFailureCursor(value: string): FailureCursor | null {
  try {
    const [failedAt, id] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as unknown[];
    if (typeof failedAt !== 'string' || !EXACT_TIME.test(failedAt) || Number.isNaN(Date.parse(failedAt))) return null;
    if (!Number.isSafeInteger(id) || (id as number) < 1) return null;
    return { failedAt, id: id as number };
  } catch {
    return null;
  }
}

export interface FailureListQuery {
  take: number;
  /** Either a cursor (a previous page's nextCursor: the last failure's time and id) or a number of failures to skip. */
  after: FailureCursor | null;
  skip: number;
  /** true: written at last (or replaced by a rebuild); false: still failing. */
  resolved: boolean | null;
  type: SearchType | null;
}

export interface FailureView {
  id: number;
  engine: string;
  /** The index version the document was written to. */
  version: number;
  type: string;
  documentId: string;
  /** The log position (direct) or `partition:offset` (Kafka) of the batch that wrote it. */
  position: string;
  reason: string;
  failedAt: string;
  resolvedAt: string | null;
}

/** The documents the engine refused after the indexer's retries, newest first (time, then id); keyset pages. */
export async function listFailures(knex: Knex, query: FailureListQuery): Promise<{ data: FailureView[]; nextCursor: string | null }> {
  const q = knex('search_failures')
    .select('*', knex.raw(`to_char(failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS failed_at_exact`))
    .orderBy([{ column: 'failed_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    .limit(query.take + 1)
    .offset(query.skip);
  if (query.after) q.whereRaw('(failed_at, id) < (?::timestamptz, ?)', [query.after.failedAt, query.after.id]);
  if (query.resolved === true) q.whereNotNull('resolved_at');
  if (query.resolved === false) q.whereNull('resolved_at');
  if (query.type !== null) q.where('type', query.type);
  const rows = await q;
  const page = rows.slice(0, query.take);
  const data = page.map((r): FailureView => ({
    id: Number(r.id), engine: r.engine, version: r.version, type: r.type, documentId: r.doc_id, position: r.position, reason: r.reason,
    failedAt: r.failed_at.toISOString(), resolvedAt: r.resolved_at ? r.resolved_at.toISOString() : null,
  }));
  const last = page[page.length - 1];
  return { data, nextCursor: rows.length > query.take ? encodeFailureCursor({ failedAt: last.failed_at_exact, id: Number(last.id) }) : null };
}
