import type { Knex } from 'knex';
import type { EventStore } from '../shared/eventStore';
import { HttpError, ReadModelWaitFailed, badRequest } from '../shared/errors';
import { isIsoTime } from '../shared/validate';

/**
 * `asOf` on the model API's reads (docs/history.md): a point of the log, given as an event position
 * or as a time (the last position recorded at or before it), turned into the position the read is
 * made at. The rows come from the history tables the read model keeps beside its tables
 * (projections/migrations/023_history.ts); query.ts reads them.
 */

/** A point of the log: a position, or a time. */
export type AsOf = { position: string } | { time: string };

const MAX_POSITION = 9_223_372_036_854_775_807n;
const POLL_MS = 50;

function invalid(reason: string): HttpError {
  return badRequest('invalid-argument', `asOf ${reason}`, { path: 'asOf' });
}

/** An event position (a non-negative integer, or its decimal digits) or an ISO 8601 date-time with a zone. */
export function parseAsOf(value: unknown): AsOf {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw invalid('must be a position (a non-negative integer) or an ISO 8601 date-time with a time zone');
    return { position: String(value) };
  }
  if (typeof value !== 'string') throw invalid('must be a position (a non-negative integer) or an ISO 8601 date-time with a time zone');
  if (/^(0|[1-9][0-9]{0,18})$/.test(value) && BigInt(value) <= MAX_POSITION) return { position: value };
  if (isIsoTime(value)) return { time: new Date(value).toISOString() };
  throw invalid('must be a position (a non-negative integer) or an ISO 8601 date-time with a time zone, e.g. 2026-06-01T12:00:00Z');
}

/**
 * Where the read model is: the last position it applied everywhere (on Kafka, the least of its
 * partitions' checkpoints), and the first from which it keeps history.
 */
export async function historyBounds(knex: Knex): Promise<{ applied: bigint; keptSince: bigint }> {
  const { rows } = await knex.raw(`SELECT
      (SELECT CASE WHEN bool_or(name LIKE 'readModel#%') THEN min(position) FILTER (WHERE name LIKE 'readModel#%') ELSE max(position) END
        FROM projection_checkpoints WHERE name = 'readModel' OR name LIKE 'readModel#%') AS applied,
      (SELECT max(since) FROM history_kept) AS kept_since`);
  return { applied: BigInt(rows[0].applied ?? 0), keptSince: BigInt(rows[0].kept_since ?? 0) };
}

/**
 * Refuses (400 invalid-argument, `details.head`) a position past the log's head: no read model will
 * ever apply it, so waiting for it is pointless. `path` names the parameter that gave it. Used by
 * `asOf` and by search's `after` / X-Event-Position.
 */
export async function refusePastHead(store: Pick<EventStore, 'headPosition'>, position: bigint, path: string): Promise<void> {
  const head = BigInt(await store.headPosition());
  if (position > head) throw badRequest('invalid-argument', `${path} ${position} is past the log's head (${head})`, { path, head: head.toString() });
}

/**
 * The position a read as of `asOf` is made at. Refused (400) past the log's head, or before the
 * read model kept history; a point the read model has not applied yet (a time of a moment ago) is
 * waited for up to `waitMs`, then 503 read-model-lagging.
 */
export async function resolveAsOf(deps: { knex: Knex; store: EventStore; waitMs: number }, asOf: AsOf): Promise<string> {
  const position = 'position' in asOf ? asOf.position : await deps.store.positionAt(asOf.time);
  await refusePastHead(deps.store, BigInt(position), 'asOf');
  const deadline = Date.now() + deps.waitMs;
  for (;;) {
    const { applied, keptSince } = await historyBounds(deps.knex);
    if (BigInt(position) < keptSince) {
      throw badRequest('history-not-kept', `The read model keeps history from position ${keptSince} on (since it was upgraded); asOf ${position} is before. `
        + 'An administrator can rebuild it (npm run rebuild -- readModel) to keep all of it', { path: 'asOf', since: keptSince.toString(), position });
    }
    if (BigInt(position) <= applied) return position;
    if (Date.now() >= deadline) {
      throw new ReadModelWaitFailed('read-model-lagging', `The read model has applied the log up to ${applied}, not yet ${position}: read again shortly`, { position });
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
