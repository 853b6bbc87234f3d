import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { EVENT_TYPES } from '../../contracts/events';
import { redactEventData } from '../../contracts/secrets';
import { parseId, invalidArgument, queryParameters } from '../shared/validate';
import type { EventStore } from '../shared/eventStore';

/**
 * GET /api/events: the log itself, paged by position, for analysts' own tools (the same envelopes
 * the Kafka topic carries, docs/events.md). Administrators read all of it; project administrators
 * the events of the projects they administer (the project of an event is the audit projection's:
 * its own, or along its entity's project path); such a page ends before the first event whose
 * project that projection does not know yet, so it never skips one.
 */

export const DEFAULT_LIMIT = 1000;
export const MAX_LIMIT = 10_000;
/** A page stops once its events hold this many bytes of JSON (a run of import chunks is large). */
const MAX_PAGE_BYTES = 16 * 1024 * 1024;
/** …or once this many events were read for it (a filter that matches little must still answer soon). */
const MAX_SCANNED = 50_000;
const READ_BATCH = 500;
/** Credentials in derived form (docs/events.md, "Access"): the topic carries them, this answer does not. */
const REDACTED_FIELDS = ['passwordHash', 'tokenHash'];

export interface EventLogQuery { after: string; limit: number; types: ReadonlySet<string> | null; project: number | null }


const PARAMETERS = ['after', 'limit', 'types', 'project'];

export function parseEventLogQuery(query: Record<string, unknown>): EventLogQuery {
  const given = queryParameters(query, PARAMETERS);
  if (given.after !== undefined && (!/^(0|[1-9][0-9]{0,18})$/.test(given.after) || BigInt(given.after) > 9_223_372_036_854_775_807n)) {
    throw invalidArgument('after', 'must be a position: a non-negative integer (0: from the start)');
  }
  if (given.limit !== undefined && (!/^[1-9][0-9]{0,4}$/.test(given.limit) || Number(given.limit) > MAX_LIMIT)) throw invalidArgument('limit', `must be an integer from 1 to ${MAX_LIMIT}`);
  let types: Set<string> | null = null;
  if (given.types !== undefined) {
    types = new Set(given.types.split(','));
    const unknown = [...types].filter((t) => !EVENT_TYPES.includes(t));
    if (unknown.length > 0) throw invalidArgument('types', `names event types that do not exist: ${unknown.slice(0, 5).join(', ')} (docs/events.md lists them)`, { unknown: unknown.slice(0, 20) });
  }
  return { after: given.after ?? '0', limit: given.limit === undefined ? DEFAULT_LIMIT : Number(given.limit), types, project: given.project === undefined ? null : parseId('project', given.project) };
}

/** Derived credentials read "redacted"; secrets in an entity's values by reference (or redacted, if recorded in clear). */
function redacted(event: EventEnvelope): EventEnvelope {
  const data = redactEventData(event.type, event.data) as Record<string, unknown> | null;
  if (!data || typeof data !== 'object' || !REDACTED_FIELDS.some((f) => f in data)) return data === event.data ? event : { ...event, data };
  return { ...event, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, REDACTED_FIELDS.includes(k) ? 'redacted' : v])) };
}

export interface EventLogPage {
  /** The events' JSON, one per line. */
  lines: string[];
  /** The `after` of the next page: the last position this page read (or covers). */
  next: string;
  /** The last position of the log when the page was read. */
  head: string;
}

/**
 * One page after `q.after`. `projects`: 'all' (an administrator) or the projects the caller
 * administers; with a project filter (or projects) an event's project comes from the audit projection.
 */
export async function readEventLog(deps: { knex: Knex; store: EventStore }, q: EventLogQuery, projects: 'all' | readonly number[]): Promise<EventLogPage> {
  const head = await deps.store.headPosition();
  const allowed = projects === 'all' ? (q.project === null ? null : [q.project]) : projects.filter((p) => q.project === null || p === q.project);
  if (allowed !== null && allowed.length === 0) return { lines: [], next: q.after, head };
  const wanted = new Set(allowed ?? []);
  const lines: string[] = [];
  let bytes = 0;
  let scanned = 0;
  let next = q.after;
  for (let done = false; !done;) {
    const batch = await deps.store.readAll({ after: next, maxCount: READ_BATCH, maxBytes: MAX_PAGE_BYTES });
    if (batch.length === 0) break;
    // An event's project as the audit projection knows it; none yet (not applied, or on Kafka its parent not yet): the page ends before it.
    let projectOf = new Map<string, number | null>();
    if (allowed !== null) {
      const rows = (await deps.knex('audit_events as a').leftJoin('audit_pending_projects as p', 'p.position', 'a.position')
        .whereRaw('a.position = ANY(?::bigint[])', [batch.map((e) => e.position)]).whereNull('p.position')
        .select('a.position', 'a.project_id')) as { position: string; project_id: number | null }[];
      projectOf = new Map(rows.map((r) => [String(r.position), r.project_id]));
    }
    for (const event of batch) {
      if (allowed !== null && !projectOf.has(event.position)) {
        done = true;
        break;
      }
      next = event.position;
      scanned++;
      if (q.types && !q.types.has(event.type)) continue;
      if (allowed !== null && !wanted.has(projectOf.get(event.position) ?? -1)) continue;
      const line = JSON.stringify(redacted(event));
      lines.push(line);
      bytes += line.length;
      if (lines.length >= q.limit || bytes >= MAX_PAGE_BYTES) {
        done = true;
        break;
      }
    }
    if (scanned >= MAX_SCANNED) break;
  }
  return { lines, next, head };
}
