import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type EntityName, isEntityName, writtenAs } from '../../contracts/entities';
import type { EventEnvelope } from '../../contracts/envelope';
import { streamOf } from '../../contracts/entityEvents';
import { entityStateOf } from '../entities/importedRows';
import { parseFindArgs } from '../model/args';
import { resolveAsOf } from '../model/asOf';
import type { ReadOptions } from '../model/query';
import { DEFAULT_MAX_ROWS, isRowVisible, runFind } from '../model/query';
import { badRequest, notFound } from '../shared/errors';
import type { EventStore } from '../shared/eventStore';
import { parseId, invalidArgument, isIsoTime, queryParameters } from '../shared/validate';
import { quarantineStream } from '../quarantine/quarantine.decider';
import { SIGNED_ENTITIES } from '../signatures/content';
import { signatureStream } from '../signatures/signature.decider';
import type { SignedEntity } from '../../contracts/events';
import { type ImportOrigin, importOriginOf } from './importOrigin';
import { type ChildrenDiff, diffChildren, diffStates, type FieldChange, foldTimeline, stateAfter } from './timeline';

/** GET /api/history/{entity}/{id}: one entity's events, oldest first, each with what it changed. */

export interface HistoryEntry {
  position: string;
  type: string;
  recordedAt: string;
  actor: { userId: number | null; name: string | null; tokenId: number | null; via: string };
  correlationId: string;
  /** Set when an import wrote the row in bulk: the job and the chunk event that created it. */
  import: { kind: 'results' | 'external'; jobId: number; chunk: number } | null;
  changes: FieldChange[];
}

export const DEFAULT_TAKE = 50;
export const MAX_TAKE = 500;

const invalid = invalidArgument;

export interface HistoryQuery { entity: EntityName; id: number; take: number; after: string | null }

const encodeCursor = (position: string) => Buffer.from(`h${position}`).toString('base64url');

function decodeCursor(raw: string): string {
  const decoded = /^[A-Za-z0-9_-]{1,40}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('latin1') : '';
  const position = /^h([1-9][0-9]{0,18})$/.exec(decoded)?.[1];
  if (position === undefined) throw invalid('cursor', 'is not a cursor this endpoint gave out');
  return position;
}

/** The path's entity and id and the query's take and cursor; anything else is a 400 naming it. */
export function parseHistoryQuery(params: { entity: string; id: string }, query: Record<string, unknown>): HistoryQuery {
  if (!isEntityName(params.entity)) throw invalid('entity', `is not a catalogue entity (e.g. testRun, repositoryCase)`, { entity: params.entity });
  const entity = ENTITIES[params.entity];
  if (writtenAs(entity) === 'owned') {
    const parent = Object.values(ENTITIES).find((e) => Object.values(e.relations).some((r) => r.owned && r.target === entity.name));
    throw badRequest('not-an-aggregate', `A ${entity.name} changes only as part of its ${parent?.name ?? 'parent'}: read the ${parent?.name ?? 'parent'}'s history`, { entity: entity.name, parent: parent?.name ?? null });
  }
  if (writtenAs(entity) === 'projected') throw badRequest('not-an-aggregate', `${entity.name} rows are derived from other entities' events and have no history of their own`, { entity: entity.name });
  const id = parseId('id', params.id);
  const given = queryParameters(query, ['take', 'cursor']);
  if (given.take !== undefined && (!/^[0-9]{1,4}$/.test(given.take) || Number(given.take) < 1 || Number(given.take) > MAX_TAKE)) throw invalid('take', `must be an integer from 1 to ${MAX_TAKE}`);
  const take = given.take === undefined ? DEFAULT_TAKE : Number(given.take);
  const after = given.cursor === undefined ? null : decodeCursor(given.cursor);
  return { entity: params.entity, id, take, after };
}

/**
 * One page of the entity's history, after the cursor. The caller must see the row now (the model
 * API's scope: `read`), else 404, as for a row that never existed. The stream is read and folded
 * from its start up to one event past the page (a change's `before` is the state the events before
 * it left): the first pages of a long history cost what they show, a late page what precedes it.
 */
export async function findHistory(deps: { knex: Knex; store: EventStore }, q: HistoryQuery, read: ReadOptions): Promise<{ data: HistoryEntry[]; nextCursor: string | null }> {
  const entity = ENTITIES[q.entity];
  if (!(await isRowVisible(deps.knex, entity, q.id, read))) throw notFound(`${entity.name} ${q.id} does not exist`, { entity: entity.name, id: q.id });
  const after = q.after === null ? null : BigInt(q.after);
  const enough = (read: EventEnvelope[]) => read.filter((e) => after === null || BigInt(e.position) > after).length > q.take;
  const { events, initial, origin } = await entityEvents(deps, entity, q.id, enough);
  const steps = foldTimeline(q.entity, events, initial ?? {});
  const rest = steps.filter((s) => after === null || BigInt(s.event.position) > after);
  const page = rest.slice(0, q.take);
  const userIds = [...new Set(page.map((s) => s.event.metadata.actor.userId).filter((u): u is number => u !== null))];
  const names = new Map<number, string>(userIds.length === 0 ? [] : ((await deps.knex('users').whereIn('id', userIds).select('id', 'name')) as { id: number; name: string }[]).map((u) => [u.id, u.name]));
  return {
    data: page.map(({ event, changes }) => ({
      position: event.position,
      type: origin && event.id === origin.event.id ? origin.event.type : event.type,
      recordedAt: event.recordedAt,
      actor: {
        userId: event.metadata.actor.userId, name: event.metadata.actor.userId === null ? null : names.get(event.metadata.actor.userId) ?? null,
        tokenId: event.metadata.actor.tokenId ?? null, via: event.metadata.actor.via,
      },
      correlationId: event.metadata.correlationId,
      import: origin && event.id === origin.event.id ? { kind: origin.kind, jobId: origin.jobId, chunk: origin.chunk } : null,
      changes,
    })),
    nextCursor: rest.length > q.take ? encodeCursor(page[page.length - 1].event.position) : null,
  };
}

/** Events of an entity's stream read first by a timeline page that needs only its start; each further read twice as many. */
const FIRST_CHUNK = 200;

/**
 * An entity's events in order, for folding: its own stream, preceded by the import chunk that
 * created it when an import wrote it in bulk (as the Created event it stands for). `initial`: the
 * state before the first event when that is not a creation (a bulk row whose chunk is not found:
 * the read model's row), else null. With `enough`, the stream is read in chunks from its start
 * until the events read satisfy it (all of them: the whole history).
 */
async function entityEvents(
  deps: { knex: Knex; store: EventStore }, entity: EntityDef, id: number, enough?: (events: EventEnvelope[]) => boolean,
): Promise<{ events: EventEnvelope[]; initial: Record<string, unknown> | null; origin: ImportOrigin | null }> {
  // Its quarantine and its signatures are aggregates of their own (services/quarantine/, services/signatures/): in its timeline, in the order of the log.
  const beside = entity.name === 'repositoryCase' ? await deps.store.readStream(quarantineStream(id)) : [];
  if ((SIGNED_ENTITIES as readonly string[]).includes(entity.name)) beside.push(...await deps.store.readStream(signatureStream(entity.name as SignedEntity, id)));
  const own: EventEnvelope[] = [];
  const read = async (): Promise<EventEnvelope[]> => {
    for (let size = FIRST_CHUNK; ; size *= 2) {
      const chunk = await deps.store.readStream(streamOf(entity, id), enough ? { fromRevision: BigInt(own.length), maxCount: size } : {});
      own.push(...chunk);
      const complete = !enough || chunk.length < size;
      // Events beside the stream up to its last event read (all of them once it is read whole).
      const last = own.length === 0 ? null : BigInt(own[own.length - 1].position);
      const events = [...own, ...beside.filter((e) => complete || (last !== null && BigInt(e.position) < last))];
      events.sort((a, b) => (BigInt(a.position) < BigInt(b.position) ? -1 : 1));
      if (complete || enough!(events)) return events;
    }
  };
  const merged = await read();
  const createdFirst = merged[0] !== undefined && /Created$|Registered$/.test(merged[0].type);
  const origin = createdFirst ? null : await importOriginOf(deps.knex, deps.store, entity, id);
  if (origin) {
    const created = { ...origin.event, type: `${entity.name[0].toUpperCase()}${entity.name.slice(1)}Created`, data: origin.values };
    return { events: [created, ...merged], initial: null, origin };
  }
  if (merged.length > 0 && !createdFirst) {
    const row = (await deps.knex(entity.table).where({ id }).first()) as Record<string, unknown> | undefined;
    if (row) return { events: merged, initial: (await entityStateOf(deps.knex, entity, row)).values, origin: null };
  }
  return { events: merged, initial: null, origin: null };
}

/** A point of the log: a position, or a time (the events recorded at or before it). */
export type Point = { position: string } | { time: string };

export interface DiffQuery { entity: EntityName; id: number; from: Point; to: Point | null }

function pointOf(path: string, raw: string): Point {
  if (/^[1-9][0-9]{0,18}$/.test(raw) && BigInt(raw) <= 9_223_372_036_854_775_807n) return { position: raw };
  if (isIsoTime(raw)) return { time: new Date(raw).toISOString() };
  throw invalid(path, 'must be a position (a positive integer) or an ISO 8601 date-time with a time zone, e.g. 2026-06-01T12:00:00Z');
}

/** GET /api/history/diff?entity=&id=&from=&to=: the parameters, each checked (400 naming the one at fault). */
export function parseDiffQuery(query: Record<string, unknown>): DiffQuery {
  const given = queryParameters(query, ['entity', 'id', 'from', 'to']);
  for (const required of ['entity', 'id', 'from']) if (given[required] === undefined) throw invalid(required, 'is required');
  const { entity, id } = parseHistoryQuery({ entity: given.entity, id: given.id }, {});
  const from = pointOf('from', given.from);
  const to = given.to === undefined ? null : pointOf('to', given.to);
  return { entity, id, from, to };
}

const upTo = (point: Point) => (event: EventEnvelope) =>
  'position' in point ? BigInt(event.position) <= BigInt(point.position) : Date.parse(event.recordedAt) <= Date.parse(point.time);

/**
 * What changed in the entity between two points (`to` absent: now): its fields, and its owned
 * children (a case's steps, a result's step results and field values) item by item. Whether it
 * existed at each point is said: before its creation, every field was null.
 */
export async function findDiff(deps: { knex: Knex; store: EventStore; writeTimeoutMs?: number }, q: DiffQuery, read: ReadOptions) {
  const entity = ENTITIES[q.entity];
  if (!(await isRowVisible(deps.knex, entity, q.id, read))) throw notFound(`${entity.name} ${q.id} does not exist`, { entity: entity.name, id: q.id });
  const { events, initial } = await entityEvents(deps, entity, q.id);
  const before = events.filter(upTo(q.from));
  const after = q.to === null ? events : events.filter(upTo(q.to));
  const from = stateAfter(q.entity, before, initial);
  const to = stateAfter(q.entity, after, initial);
  const { changes, children } = diffStates(q.entity, from.values, to.values);
  const point = (p: Point | null, list: EventEnvelope[], state: { exists: boolean }) =>
    ({ ...(p ?? { position: events.at(-1)?.position ?? null }), exists: state.exists, events: list.length });
  if (q.entity === 'testRun') Object.assign(children, await runChildrenDiff(deps, q, read));
  return { entity: entity.name, id: q.id, from: point(q.from, before, from), to: point(q.to, after, to), changes, children };
}

/** What a run's diff adds: its run cases and results, each their own aggregate, compared as the read model held them at both points (`asOf`). */
const RUN_CHILDREN = [['testRunCases', 'testRunCase'], ['results', 'testRunResult']] as const;

async function runChildrenDiff(deps: { knex: Knex; store: EventStore; writeTimeoutMs?: number }, q: DiffQuery, read: ReadOptions) {
  const at = async (p: Point | null) => (p === null ? undefined : resolveAsOf({ knex: deps.knex, store: deps.store, waitMs: deps.writeTimeoutMs ?? 5000 }, p));
  const [from, to] = [await at(q.from), await at(q.to)];
  const rows = (entity: EntityName, asOf: string | undefined) => runFind(deps.knex, ENTITIES[entity], 'findMany',
    parseFindArgs(ENTITIES[entity], 'findMany', { where: { testRunId: q.id }, orderBy: { id: 'asc' } }), { ...read, maxRows: DEFAULT_MAX_ROWS, ...(asOf !== undefined && { asOf }) });
  const children: Record<string, ChildrenDiff> = {};
  for (const [name, entity] of RUN_CHILDREN) children[name] = diffChildren(await rows(entity, from), await rows(entity, to));
  return children;
}
