import { Router, type Request } from 'express';
import type { Knex } from 'knex';
import type { CommandDeps } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { badRequest } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import type { ParkedEventsPort } from '../shared/parkedEvents';
import { integerParameter } from '../admin/admin.routes';

export const PARKED_EVENTS_PATH = '/api/admin/parked-events';
/** The stream of administrators' operations on the projections (ParkedEventsRetried). */
export const PROJECTION_ADMINISTRATION_STREAM = 'projectionAdministration';
export const PARKED_PAGE = { default: 100, max: 500 } as const;
/** Most parked events one retry names. */
export const MAX_RETRY_IDS = 1000;

const STATES = ['parked', 'resolved', 'all'] as const;
const KINDS = ['failed', 'held', 'invalid'] as const;
const LIST_PARAMETERS = ['projection', 'state', 'kind', 'take', 'cursor'];

const invalid = (path: string, message: string, details: Record<string, unknown> = {}) => badRequest('invalid-argument', message, { path, ...details });

export interface ParkedEventsDeps extends CommandDeps {
  parkedEvents: ParkedEventsPort;
}

interface ListQuery { projection: string | null; state: (typeof STATES)[number]; kind: (typeof KINDS)[number] | null; take: number; before: number | null }

function oneOf<T extends string>(value: string, path: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw invalid(path, `${path} must be one of ${allowed.join(', ')}`, { allowed });
  return value as T;
}

function parseList(query: Request['query'], projections: readonly string[]): ListQuery {
  for (const [name, value] of Object.entries(query)) {
    if (!LIST_PARAMETERS.includes(name)) throw invalid(name, `Unknown parameter ${name}; expected one of ${LIST_PARAMETERS.join(', ')}`, { parameters: LIST_PARAMETERS });
    if (typeof value !== 'string') throw invalid(name, `${name} must be given once, as a plain value`);
  }
  const q = query as Partial<Record<string, string>>;
  return {
    projection: q.projection === undefined ? null : oneOf(q.projection, 'projection', projections),
    state: q.state === undefined ? 'parked' : oneOf(q.state, 'state', STATES),
    kind: q.kind === undefined ? null : oneOf(q.kind, 'kind', KINDS),
    take: q.take === undefined ? PARKED_PAGE.default : integerParameter(q.take, 'take', 1, PARKED_PAGE.max),
    before: q.cursor === undefined ? null : integerParameter(q.cursor, 'cursor', 1),
  };
}

const iso = (value: unknown) => (value instanceof Date ? value.toISOString() : value === null || value === undefined ? null : String(value));

/** A parked event as the API shows it (never the event's data: GET /api/events shows that, as it shows every event). */
function view(r: Record<string, unknown>) {
  return {
    id: Number(r.id), projection: r.projection, kind: r.kind, position: r.position === null ? null : String(r.position),
    eventId: r.event_id, eventType: r.event_type, streamId: r.stream_id, revision: r.revision === null ? null : String(r.revision),
    kafkaPartition: r.kafka_partition, kafkaOffset: r.kafka_offset, error: r.error, attempts: r.attempts,
    firstAttemptAt: iso(r.first_attempt_at), lastAttemptAt: iso(r.last_attempt_at), parkedAt: iso(r.parked_at),
    resolvedAt: iso(r.resolved_at), resolution: r.resolution,
  };
}

/** What each projection holds parked now: its events at fault, those held behind them, and messages that were not events. */
export async function parkedSummary(knex: Knex): Promise<{ projection: string; failed: number; held: number; invalid: number }[]> {
  const rows: { projection: string; kind: string; n: string }[] = await knex('parked_events').whereNull('resolved_at')
    .groupBy('projection', 'kind').select('projection', 'kind', knex.raw('count(*) AS n'));
  const by = new Map<string, { projection: string; failed: number; held: number; invalid: number }>();
  for (const r of rows) {
    const entry = by.get(r.projection) ?? { projection: r.projection, failed: 0, held: 0, invalid: 0 };
    entry[r.kind as (typeof KINDS)[number]] = Number(r.n);
    by.set(r.projection, entry);
  }
  return [...by.values()].sort((a, b) => a.projection.localeCompare(b.projection));
}

function parseRetry(body: unknown, projections: readonly string[]): { projection?: string; ids?: number[] } {
  const b: unknown = body ?? {};
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw invalid('', 'The body must be a JSON object: {projection?, ids?}');
  const fields = b as Record<string, unknown>;
  const unknown = Object.keys(fields).find((k) => k !== 'projection' && k !== 'ids');
  if (unknown !== undefined) throw invalid(unknown, `${unknown} is not a field of this request (fields: projection, ids)`);
  const chosen: { projection?: string; ids?: number[] } = {};
  if (fields.projection !== undefined) {
    if (typeof fields.projection !== 'string') throw invalid('projection', 'projection must be a string', { allowed: projections });
    chosen.projection = oneOf(fields.projection, 'projection', projections);
  }
  if (fields.ids !== undefined) {
    if (!Array.isArray(fields.ids) || fields.ids.length === 0 || fields.ids.length > MAX_RETRY_IDS) throw invalid('ids', `ids must be an array of 1 to ${MAX_RETRY_IDS} parked event ids`);
    chosen.ids = fields.ids.map((id, i) => {
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw invalid(`ids[${i}]`, 'each id must be a positive integer');
      return id;
    });
  }
  return chosen;
}

/**
 * Parked events (docs/architecture.md, "A projection never stops the service"), administrators
 * only (the /api/admin guard): the list, newest first, with what each projection holds parked,
 * and the retry. A retry is recorded as ParkedEventsRetried with its actor and outcome.
 */
export function parkedEventsRoutes(deps: ParkedEventsDeps): Router {
  const router = Router();

  router.get(PARKED_EVENTS_PATH, asyncHandler(async (req, res) => {
    const q = parseList(req.query, deps.parkedEvents.projections);
    const rows: Record<string, unknown>[] = await deps.knex('parked_events')
      .modify((b) => {
        if (q.projection !== null) b.where({ projection: q.projection });
        if (q.kind !== null) b.where({ kind: q.kind });
        if (q.state === 'parked') b.whereNull('resolved_at');
        if (q.state === 'resolved') b.whereNotNull('resolved_at');
        if (q.before !== null) b.where('id', '<', q.before);
      })
      .orderBy('id', 'desc').limit(q.take + 1).select('*');
    const page = rows.slice(0, q.take).map(view);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ data: page, nextCursor: rows.length > q.take ? String(page[page.length - 1].id) : null, parked: await parkedSummary(deps.knex) });
  }));

  router.post(`${PARKED_EVENTS_PATH}/retry`, asyncHandler(async (req, res) => {
    const name = Object.keys(req.query)[0];
    if (name !== undefined) throw invalid(name, `${name} is not a parameter of ${req.method} ${req.path}`);
    const chosen = parseRetry(req.body, deps.parkedEvents.projections);
    const report = await deps.parkedEvents.retry(chosen);
    const { position } = await deps.store.append(PROJECTION_ADMINISTRATION_STREAM, [{
      type: 'ParkedEventsRetried',
      data: { projection: chosen.projection ?? null, ids: chosen.ids ?? null, resolved: report.resolved, stillParked: report.stillParked.length, retriedAt: deps.clock().toISOString() },
    }], { expectedRevision: 'any', metadata: metadataFor(req.auth!, req) });
    res.setHeader('X-Event-Position', position);
    res.json({ ...report, parked: await parkedSummary(deps.knex) });
  }));

  return router;
}
