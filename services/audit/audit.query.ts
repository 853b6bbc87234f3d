import type { Knex } from 'knex';
import type { ActorVia } from '../../contracts/envelope';
import { badRequest } from '../shared/errors';
import { parseId, timeParameter } from '../shared/validate';

/** The filters of GET /api/audit, parsed. Every filter is optional; they combine with AND. */
export interface AuditQuery {
  entity?: string;
  entityId?: string;
  projectId?: number;
  /** User id of the actor. */
  actor?: number;
  tokenId?: number;
  via?: ActorVia;
  type?: string;
  correlationId?: string;
  /** recordedAt ≥ from. */
  from?: Date;
  /** recordedAt < to. */
  to?: Date;
  take: number;
  /** Only events before this position (the opaque cursor, decoded). */
  before?: string;
}

export interface AuditEntry {
  position: string;
  recordedAt: string;
  type: string;
  streamId: string;
  entity: string;
  entityId: string;
  projectId: number | null;
  actor: { userId: number | null; email: string | null; name: string | null; tokenId: number | null; via: string; ip: string | null; sessionRef: string | null };
  correlationId: string;
  changedFields: string[];
}

export const DEFAULT_TAKE = 50;
export const MAX_TAKE = 500;
const VIAS: readonly ActorVia[] = ['api', 'session', 'cli', 'import', 'system'];
const MAX_INT8 = 9_223_372_036_854_775_807n;

const invalid = (path: string, reason: string, extra: Record<string, unknown> = {}) =>
  badRequest('invalid-argument', `${path} ${reason}`, { path, ...extra });


function name(pattern: RegExp, what: string) {
  return (path: string, raw: string) => {
    if (raw.length > 128 || !pattern.test(raw)) throw invalid(path, `must be ${what}`);
    return raw;
  };
}


/** The cursor is opaque to clients: the position of the last event of the page, encoded. */
export const encodeCursor = (position: string) => Buffer.from(`p${position}`).toString('base64url');

function decodeCursor(path: string, raw: string): string {
  const decoded = /^[A-Za-z0-9_-]{1,40}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('latin1') : '';
  const position = /^p([1-9][0-9]{0,18})$/.exec(decoded)?.[1];
  if (position === undefined || BigInt(position) > MAX_INT8) throw invalid(path, 'is not a cursor this endpoint gave out');
  return position;
}

const PARAMETERS: Record<string, (path: string, raw: string) => unknown> = {
  entity: name(/^[A-Za-z][A-Za-z0-9_]*$/, 'an entity name or stream category, e.g. testRun'),
  entityId: (path, raw) => {
    // eslint-disable-next-line no-control-regex
    if (raw.length > 200 || /[\u0000-\u001f\u007f]/.test(raw)) throw invalid(path, 'must be at most 200 characters, without control characters');
    return raw;
  },
  projectId: parseId,
  actor: parseId,
  tokenId: parseId,
  via: (path, raw) => {
    if (!(VIAS as readonly string[]).includes(raw)) throw invalid(path, `must be one of ${VIAS.join(', ')}`, { allowed: VIAS });
    return raw;
  },
  type: name(/^[A-Z][A-Za-z0-9]*$/, 'an event type, e.g. TestRunCreated'),
  correlationId: name(/^[A-Za-z0-9._:-]+$/, 'a correlation id (letters, digits and . _ : -, at most 128)'),
  from: timeParameter,
  to: timeParameter,
  take: (path, raw) => {
    if (!/^[0-9]{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_TAKE) throw invalid(path, `must be an integer from 1 to ${MAX_TAKE}`);
    return Number(raw);
  },
  cursor: decodeCursor,
};

/** The query parameters GET /api/audit takes. */
export const AUDIT_PARAMETERS: readonly string[] = Object.keys(PARAMETERS);

/** Parses the query string of GET /api/audit; anything unknown, repeated or malformed is a 400 naming the parameter. */
export function parseAuditQuery(query: Record<string, unknown>): AuditQuery {
  const parsed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    const parse = Object.prototype.hasOwnProperty.call(PARAMETERS, key) ? PARAMETERS[key] : undefined;
    if (!parse) throw invalid(key, 'is not a known parameter', { parameters: AUDIT_PARAMETERS });
    if (typeof value !== 'string') throw invalid(key, 'must be given once, as a plain value');
    if (value === '') throw invalid(key, 'must not be empty');
    parsed[key] = parse(key, value);
  }
  const { cursor, take, ...filters } = parsed as Omit<AuditQuery, 'take' | 'before'> & { cursor?: string; take?: number };
  if (filters.from && filters.to && filters.from > filters.to) throw invalid('to', 'must not be before from');
  return { ...filters, take: take ?? DEFAULT_TAKE, ...(cursor !== undefined && { before: cursor }) };
}

interface AuditRow {
  position: string; recorded_at: Date; type: string; stream_id: string; entity: string; entity_id: string; project_id: number | null;
  actor_user_id: number | null; email: string | null; name: string | null; token_id: number | null; via: string; ip: string | null;
  session_ref: string | null; correlation_id: string; changed_fields: string[];
}

/**
 * Newest first, one page. `projects` is the caller's scope: 'all' for administrators, otherwise
 * the projects they administer (events without a project are then never shown).
 */
export async function findAuditEntries(knex: Knex, q: AuditQuery, projects: 'all' | readonly number[]): Promise<{ data: AuditEntry[]; nextCursor: string | null }> {
  if (projects !== 'all' && q.projectId !== undefined && !projects.includes(q.projectId)) return { data: [], nextCursor: null };
  const query = knex('audit_events as a').leftJoin('users as u', 'u.id', 'a.actor_user_id')
    .select('a.position', 'a.recorded_at', 'a.type', 'a.stream_id', 'a.entity', 'a.entity_id', 'a.project_id', 'a.actor_user_id',
      'u.email', 'u.name', 'a.token_id', 'a.via', 'a.ip', 'a.session_ref', 'a.correlation_id', 'a.changed_fields')
    .orderBy('a.position', 'desc')
    .limit(q.take + 1);
  if (projects !== 'all') query.whereIn('a.project_id', projects.length > 0 ? [...projects] : [-1]);
  const equal: [column: string, value: unknown][] = [
    ['a.entity', q.entity], ['a.entity_id', q.entityId], ['a.project_id', q.projectId], ['a.actor_user_id', q.actor],
    ['a.token_id', q.tokenId], ['a.via', q.via], ['a.type', q.type], ['a.correlation_id', q.correlationId],
  ];
  for (const [column, value] of equal) if (value !== undefined) query.where(column, value as Knex.Value);
  if (q.from) query.where('a.recorded_at', '>=', q.from);
  if (q.to) query.where('a.recorded_at', '<', q.to);
  if (q.before) query.where('a.position', '<', q.before);
  const rows = (await query) as AuditRow[];
  const page = rows.slice(0, q.take);
  return {
    data: page.map((r) => ({
      position: r.position,
      recordedAt: r.recorded_at.toISOString(),
      type: r.type,
      streamId: r.stream_id,
      entity: r.entity,
      entityId: r.entity_id,
      projectId: r.project_id,
      actor: { userId: r.actor_user_id, email: r.email, name: r.name, tokenId: r.token_id, via: r.via, ip: r.ip, sessionRef: r.session_ref },
      correlationId: r.correlation_id,
      changedFields: r.changed_fields,
    })),
    nextCursor: rows.length > q.take ? encodeCursor(page[page.length - 1].position) : null,
  };
}
