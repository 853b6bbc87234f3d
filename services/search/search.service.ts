import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { resolveProjectAccess } from '../access/projectAccess';
import type { AuthenticatedUser } from '../shared/context';
import type { EventStore } from '../shared/eventStore';
import { HttpError } from '../shared/errors';
import { isTransient } from '../shared/faults';
import {
  FACETS, SEARCH_CHECKPOINT_KEY, SearchUnavailable, searchPositionKey, type Clause, type FacetName, type SearchDocument, type SearchEngine, type SearchRequest, type SearchType, type TextField,
} from '../shared/search';
import type { SearchMetrics } from './metrics';
import type { FacetQuery, SearchQuery } from './query';

/**
 * The search API's work between the validated request (query.ts) and the engine: the access
 * filter first (services/access, as the model API), then the caller's filters, read-your-writes
 * against the indexer's checkpoints, and the answer's shape.
 */

export interface SearchDeps {
  /** The engine now (a getter: the engine may be swapped while the process runs). */
  engine: () => SearchEngine;
  knex: Knex;
  /** How long a request carrying X-Event-Position / `after` waits for the indexer (WRITE_TIMEOUT_MS). */
  writeTimeoutMs: number;
  logger: Logger;
  /**
   * Which of the indexer's checkpoints must reach a position. Default (direct transport): the one
   * checkpoint `search`. On Kafka: `kafkaCheckpointKeys(...)`, the written stream's partition's `search@<partition>`.
   */
  checkpointKeys?: (position: bigint) => Promise<string[]>;
  /** Where each answer is counted (the search administration's metrics; the composition root's one recorder). */
  metrics?: SearchMetrics;
}

/** Stands for every partition's `search@<partition>` (see kafkaCheckpointKeys). */
const PARTITION_PREFIX = searchPositionKey(0).slice(0, -1);
const EVERY_PARTITION = `${PARTITION_PREFIX}*`;

/** Most labels per facet, the most frequent first. */
export const FACET_SIZE = 100;

/** The types whose documents carry each facet's field: a facet counts these only (a comment has no folder). */
export const FACET_TYPES: Readonly<Record<FacetName, readonly SearchType[]>> = {
  tags: ['repository_cases', 'test_runs', 'sessions'],
  folders: ['repository_cases'],
  templates: ['repository_cases', 'sessions'],
  states: ['repository_cases', 'test_runs', 'sessions'],
};

export interface SearchAnswerHit {
  type: SearchType;
  id: string;
  projectId: string;
  score: number | null;
  title: string;
  highlight: Partial<Record<TextField, string[]>>;
  source: SearchDocument;
}
export interface SearchAnswer { total: number; took: number; hits: SearchAnswerHit[] }
export type FacetAnswer = { facets: Record<FacetName, Record<string, number>> };

/** The projects whose documents the caller may see: every one for administrators, else their ids. */
export async function readableProjects(knex: Knex, user: AuthenticatedUser): Promise<'all' | string[]> {
  const access = await resolveProjectAccess(knex, user);
  return access.all ? 'all' : [...access.projects.keys()].map(String);
}

/**
 * The filter clauses of a request, access first: a `terms` on projectId of the readable projects
 * (none for administrators), then project, one `terms` per tag (every tag must be present) and
 * the date range. Null when nothing can match (no readable project, or a project filter outside
 * them: an empty answer, like a filter that matches nothing, never a 403 that tells it exists).
 */
export function filtersOf(readable: 'all' | readonly string[], wanted: Pick<SearchQuery, 'projectId' | 'tags' | 'dateRange'>): Clause[] | null {
  const filter: Clause[] = [];
  if (readable !== 'all') {
    if (readable.length === 0) return null;
    filter.push({ kind: 'terms', field: 'projectId', values: [...readable] });
  }
  if (wanted.projectId !== null) {
    if (readable !== 'all' && !readable.includes(wanted.projectId)) return null;
    filter.push({ kind: 'terms', field: 'projectId', values: [wanted.projectId] });
  }
  for (const tag of wanted.tags) filter.push({ kind: 'terms', field: 'tags', values: [tag] });
  if (wanted.dateRange) {
    const { field, from, to } = wanted.dateRange;
    filter.push({ kind: 'range', field, ...(from !== undefined && { gte: from }), ...(to !== undefined && { lte: to }) });
  }
  return filter;
}

/** The engine's SearchRequest of a validated query under the caller's filters. */
export function searchRequestOf(q: SearchQuery, filter: Clause[]): SearchRequest {
  return { types: q.types, query: q.query, filter, sort: q.sort, highlight: q.highlight, from: q.page.offset, size: q.page.limit };
}

/**
 * The engine's calls, with its unavailability as 503 `search-unavailable` (logged with the
 * correlation id), never a 500: a SearchUnavailable, or an error that says the engine's
 * connection is away (an adapter that did not wrap it).
 */
async function ask<T>(deps: SearchDeps, correlationId: string, call: (engine: SearchEngine) => Promise<T>): Promise<T> {
  let engine: SearchEngine | null = null;
  try {
    // Inside: no engine yet (the connection still opening) is a SearchUnavailable too, not a 500.
    engine = deps.engine();
    return await call(engine);
  } catch (err) {
    if (!(err instanceof SearchUnavailable) && !(engine !== null && isTransient(err))) throw err;
    const name = err instanceof SearchUnavailable ? err.engine : engine!.engine;
    deps.logger.warn({ err, correlationId, engine: name }, 'search engine unavailable');
    throw new HttpError(503, 'search-unavailable', 'The search engine does not answer; try again shortly', { engine: name });
  }
}

export async function search(deps: SearchDeps, user: AuthenticatedUser, q: SearchQuery, correlationId: string): Promise<SearchAnswer> {
  const filter = filtersOf(await readableProjects(deps.knex, user), q);
  if (filter === null) return { total: 0, took: 0, hits: [] };
  const result = await ask(deps, correlationId, (engine) => engine.search(searchRequestOf(q, filter)));
  return {
    total: result.total,
    took: result.tookMs,
    hits: result.hits.map((h) => ({
      type: h.type, id: h.id, projectId: h.projectId, score: h.score, title: h.document.title, highlight: h.highlight, source: h.document,
    })),
  };
}

/**
 * Facet counts: each facet over the requested types that have its field only (none of them: `{}`),
 * under the same access filter as a search. Facets over the same types share one engine request.
 */
export async function facets(deps: SearchDeps, user: AuthenticatedUser, q: FacetQuery, correlationId: string): Promise<FacetAnswer> {
  const answer: FacetAnswer = { facets: { tags: {}, folders: {}, templates: {}, states: {} } };
  const filter = filtersOf(await readableProjects(deps.knex, user), { projectId: q.projectId, tags: [], dateRange: null });
  if (filter === null) return answer;
  const groups = new Map<string, { types: SearchType[]; names: FacetName[] }>();
  for (const name of Object.keys(FACETS) as FacetName[]) {
    const types = FACET_TYPES[name].filter((t) => q.types.includes(t));
    if (types.length === 0) continue;
    const key = types.join(',');
    const group = groups.get(key) ?? { types, names: [] };
    group.names.push(name);
    groups.set(key, group);
  }
  await Promise.all([...groups.values()].map(async ({ types, names }) => {
    const counted = await ask(deps, correlationId, (engine) => engine.facets({ types, query: q.query, filter, fields: names.map((n) => FACETS[n]), size: FACET_SIZE }));
    for (const name of names) answer.facets[name] = { ...counted[FACETS[name]] };
  }));
  return answer;
}

// ---------------------------------------------------------------------------------------------
// read-your-writes

const FIRST_PAUSE_MS = 20;
const MAX_PAUSE_MS = 250;

function positionOf(value: string | undefined): bigint {
  if (value === undefined || !/^\d+$/.test(value)) return -1n;
  return BigInt(value);
}

/** Whether the checkpoints have reached the position at every key (`search@*`: every partition's, at least one). */
export function reached(checkpoints: Readonly<Record<string, string>>, keys: readonly string[], position: bigint): boolean {
  return keys.every((key) => {
    if (key !== EVERY_PARTITION) return positionOf(checkpoints[key]) >= position;
    const partitions = Object.keys(checkpoints).filter((k) => k.startsWith(PARTITION_PREFIX));
    return partitions.length > 0 && partitions.every((k) => positionOf(checkpoints[k]) >= position);
  });
}

/**
 * Kafka: the indexer records per partition the last global position applied from it
 * (`search@<partition>`, beside the offset it resumes from), and a position says nothing of its
 * partition. The event at the position names its stream, whose partition carried it: that
 * partition's position must reach it. A position that names no event (beyond the log's head,
 * say) waits for every partition's.
 */
export function kafkaCheckpointKeys(store: Pick<EventStore, 'readAll'>, partitionOf: (streamId: string) => number): (position: bigint) => Promise<string[]> {
  return async (position) => {
    if (position <= 0n) return [EVERY_PARTITION];
    const [event] = await store.readAll({ after: (position - 1n).toString(), maxCount: 1, maxBytes: 1 });
    if (!event || BigInt(event.position) !== position) return [EVERY_PARTITION];
    return [searchPositionKey(partitionOf(event.streamId))];
  };
}

/**
 * Waits until the indexer has applied `position` in the live index version: the engine's
 * checkpoints are read with a short backoff (20 ms doubling to 250 ms) for at most
 * `writeTimeoutMs`; then 503 `search-lagging`. Before the first index version is live nothing has
 * been applied. Once applied, the live version is refreshed, so that the documents are searchable
 * (on OpenSearch and Elasticsearch they otherwise are at the index's next refresh).
 */
export async function waitForIndexer(deps: SearchDeps, position: bigint, correlationId: string): Promise<void> {
  const keys = await (deps.checkpointKeys ?? (async () => [SEARCH_CHECKPOINT_KEY]))(position);
  const deadline = Date.now() + deps.writeTimeoutMs;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    let live: number | null = null;
    const checkpoints = await ask(deps, correlationId, async (engine) => {
      live = await engine.liveVersion();
      return live === null ? {} : engine.readCheckpoints(live);
    });
    if (reached(checkpoints, keys, position)) {
      // OpenSearch and Elasticsearch show what was written at their next refresh (refresh_interval):
      // a reader who waits for their own write gets one now. PostgreSQL's is a no-op.
      const version: number = live!;
      await ask(deps, correlationId, (engine) => engine.refresh(version));
      return;
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new HttpError(503, 'search-lagging', 'The search index has not applied that change yet; search again shortly',
        { position: position.toString(), timeoutMs: deps.writeTimeoutMs });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}
