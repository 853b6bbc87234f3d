import type { Request, Response } from 'express';
import type { EventType, SearchOperation } from '../../contracts/events';
import { metadataFor } from '../shared/context';
import type { EventStore } from '../shared/eventStore';
import { HttpError, badRequest } from '../shared/errors';
import { describeError, isTransient } from '../shared/faults';
import {
  IndexNotFound, MappingNeedsReindex, OperationNotSupported, SEARCH_CHECKPOINT_KEY, SearchUnavailable, searchPositionKey,
  type IndexStats, type SearchEngine,
} from '../shared/search';
import { recordOperation } from './operations';
import type { SearchAdminDeps } from './searchAdmin.deps';

/**
 * The indices and maintenance part of the search administration (docs/search.md, "Indices and
 * maintenance"): the list of indices with the indexer's progress in each version, and the
 * operations that ask the engine to do something, each recorded as SearchOperationPerformed.
 */

/** At most this many events are read to count a lag the event store cannot subtract (EventStoreDB positions, Kafka partitions). */
export const LAG_COUNT_LIMIT = 10_000;
const LAG_PAGE = 1000;
/** Read shallow when counting: a lag is counted by position and stream, never by data. */
const BULKY_EVENTS: EventType[] = ['TestResultsImported', 'ExternalImportRowsWritten'];

export interface IndexProgress {
  /**
   * `position`: every event of the log at or before it is applied to this version (direct: the
   * `search` checkpoint; Kafka: the lowest `search@<partition>`); null when nothing is. `keys`:
   * the checkpoints as the indexer wrote them.
   */
  checkpoint: { position: string | null; keys: Record<string, string> };
  /** Events of the log not yet applied to this version; `exact: false` when counting stopped at LAG_COUNT_LIMIT. */
  lag: { events: number; exact: boolean };
}

export interface IndexEntry extends IndexProgress {
  name: string;
  alias: string;
  type: IndexStats['type'];
  version: number;
  live: boolean;
  documents: number;
  sizeBytes: number;
  health: IndexStats['health'];
}

export interface IndexList {
  engine: SearchEngine['engine'];
  /** The version search answers from; null before the first switch. */
  liveVersion: number | null;
  /** The event log's head when the list was made: lags are counted up to it. */
  head: string;
  indices: IndexEntry[];
}

const positionOf = (value: string | undefined) => (value !== undefined && /^\d+$/.test(value) ? BigInt(value) : null);

/**
 * Where the indexer is in one version and how far behind the log's head. Direct transport: the
 * `search` checkpoint; the lag is head − checkpoint on the PostgreSQL event store (positions count
 * events one by one), counted by reading on EventStoreDB (positions are log offsets). Kafka
 * (`partitionOf` given): each partition's `search@<partition>`; an event is behind when its
 * stream's partition has not reached its position, counted by reading from the lowest one.
 */
export async function progressOf(
  store: Pick<EventStore, 'kind' | 'readAll'>, checkpoints: Readonly<Record<string, string>>, head: bigint,
  partitionOf?: (streamId: string) => number,
): Promise<IndexProgress> {
  const keys = { ...checkpoints };
  if (!partitionOf) {
    const applied = positionOf(checkpoints[SEARCH_CHECKPOINT_KEY]);
    const from = applied ?? 0n;
    if (store.kind === 'postgres') {
      return { checkpoint: { position: applied?.toString() ?? null, keys }, lag: { events: Number(head > from ? head - from : 0n), exact: true } };
    }
    return { checkpoint: { position: applied?.toString() ?? null, keys }, lag: await countBehind(store, from, head, () => true) };
  }
  const partitionKey = searchPositionKey(0).slice(0, -1);
  const perPartition = new Map<number, bigint>();
  for (const [key, value] of Object.entries(checkpoints)) {
    const position = positionOf(value);
    if (key.startsWith(partitionKey) && position !== null) perPartition.set(Number(key.slice(partitionKey.length)), position);
  }
  const lowest = perPartition.size ? [...perPartition.values()].reduce((a, b) => (a < b ? a : b)) : null;
  const behind = (streamId: string, position: bigint) => position > (perPartition.get(partitionOf(streamId)) ?? 0n);
  return { checkpoint: { position: lowest?.toString() ?? null, keys }, lag: await countBehind(store, lowest ?? 0n, head, behind) };
}

/** Events after `from` up to `head` for which `behind` holds, reading at most LAG_COUNT_LIMIT of them. */
async function countBehind(
  store: Pick<EventStore, 'readAll'>, from: bigint, head: bigint, behind: (streamId: string, position: bigint) => boolean,
): Promise<{ events: number; exact: boolean }> {
  let after = from;
  let read = 0;
  let events = 0;
  while (after < head) {
    if (read >= LAG_COUNT_LIMIT) return { events, exact: false };
    const page = await store.readAll({ after: after.toString(), maxCount: Math.min(LAG_PAGE, LAG_COUNT_LIMIT - read), shallow: BULKY_EVENTS });
    if (page.length === 0) break;
    for (const event of page) {
      const position = BigInt(event.position);
      if (position > head) return { events, exact: true };
      if (behind(event.streamId, position)) events++;
      after = position;
    }
    read += page.length;
  }
  return { events, exact: true };
}

/** Every index stats() lists, with its version's checkpoint and lag. */
export async function listIndices(deps: SearchAdminDeps, engine: SearchEngine): Promise<IndexList> {
  // The head first: a lag counted up to a head read later could count events the checkpoint read already covers.
  const head = BigInt(await deps.store.headPosition());
  const [stats, liveVersion] = await Promise.all([engine.stats(), engine.liveVersion()]);
  const progress = new Map<number, IndexProgress>();
  for (const version of [...new Set(stats.map((s) => s.version))]) {
    progress.set(version, await progressOf(deps.store, await engine.readCheckpoints(version), head, deps.indexerPartitionOf));
  }
  return {
    engine: engine.engine, liveVersion, head: head.toString(),
    indices: stats.map((s) => ({
      name: s.index, alias: s.alias, type: s.type, version: s.version, live: s.live, documents: s.documents, sizeBytes: s.sizeBytes,
      health: s.health, ...progress.get(s.version)!,
    })),
  };
}

/** The engine does not answer: 503 `search-unavailable` naming it. */
const unavailable = (engine: SearchEngine['engine'] | null) =>
  new HttpError(503, 'search-unavailable', 'The search engine does not answer; try again shortly', { engine });

const isOutage = (error: unknown) => error instanceof SearchUnavailable || isTransient(error);

/** The engine in use, or 503 when none answers (a connection being switched or never made). */
function engineOf(deps: SearchAdminDeps, correlationId: string): SearchEngine {
  try {
    return deps.engine();
  } catch (error) {
    if (!isOutage(error)) throw error;
    deps.logger.warn({ err: error, correlationId }, 'search engine unavailable');
    throw unavailable(error instanceof SearchUnavailable ? error.engine : null);
  }
}

/** A reading of the panel: appends nothing; the engine away is a 503, logged with the correlation id. */
export async function read<T>(deps: SearchAdminDeps, req: Request, call: (engine: SearchEngine) => Promise<T>): Promise<T> {
  const engine = engineOf(deps, req.correlationId);
  try {
    return await call(engine);
  } catch (error) {
    if (!isOutage(error)) throw error;
    deps.logger.warn({ err: error, correlationId: req.correlationId, engine: engine.engine }, 'search engine unavailable');
    throw unavailable(error instanceof SearchUnavailable ? error.engine : engine.engine);
  }
}

export interface Performed<T> {
  result: T;
  /** What the event names as touched. */
  targets: string[];
  details?: Record<string, unknown>;
}

/** The most an event's error text holds (the schema's limit). */
const ERROR_TEXT = 2000;

/**
 * Asks the engine to do an operation and records SearchOperationPerformed with its outcome and
 * actor (the answer's X-Event-Position): succeeded, or failed with the engine's error (then 409
 * `mapping-needs-reindex`, 503 `search-unavailable`, or the error itself: 500). An operation the
 * engine has no such thing for (OperationNotSupported, thrown before asking anything) is 400
 * `not-supported-by-engine`, and an index the engine does not list (IndexNotFound) 404
 * `search-index-not-found`: both record nothing, as any refused request.
 */
export async function perform<T>(
  deps: SearchAdminDeps, req: Request, res: Response, operation: SearchOperation,
  call: (engine: SearchEngine) => Promise<Performed<T>>, attempted: string[] = [],
): Promise<T> {
  let engine: SearchEngine;
  const record = (outcome: 'succeeded' | 'failed', name: SearchEngine['engine'] | null, targets: string[], error: string | null, details: Record<string, unknown>) =>
    recordOperation(deps, metadataFor(req.auth!, req), { operation, engine: name, targets, outcome, error: error && error.slice(0, ERROR_TEXT), details })
      .then((position) => res.setHeader('X-Event-Position', position));
  try {
    engine = deps.engine();
  } catch (error) {
    if (!isOutage(error)) throw error;
    const name = error instanceof SearchUnavailable ? error.engine : null;
    deps.logger.warn({ err: error, correlationId: req.correlationId, operation }, 'search engine unavailable');
    await record('failed', name, attempted, describeError(error), {});
    throw unavailable(name);
  }
  let performed: Performed<T>;
  try {
    performed = await call(engine);
  } catch (error) {
    if (error instanceof OperationNotSupported) {
      throw badRequest('not-supported-by-engine', `${error.operation} is not supported by the ${error.engine} search engine`, {
        engine: error.engine, operation: error.operation,
      });
    }
    if (error instanceof IndexNotFound) throw indexNotFound(error.index);
    if (error instanceof MappingNeedsReindex) {
      await record('failed', engine.engine, attempted, error.message, { code: 'mapping-needs-reindex', conflicts: error.conflicts.slice(0, 50) });
      throw mappingNeedsReindex(error, engine);
    }
    await record('failed', engine.engine, attempted, describeError(error), {});
    if (!isOutage(error)) throw error;
    deps.logger.warn({ err: error, correlationId: req.correlationId, engine: engine.engine, operation }, 'search engine unavailable');
    throw unavailable(error instanceof SearchUnavailable ? error.engine : engine.engine);
  }
  await record('succeeded', engine.engine, performed.targets.slice(0, 200), null, performed.details ?? {});
  return performed.result;
}

const indexNotFound = (name: string) =>
  new HttpError(404, 'search-index-not-found', `No search index is named ${JSON.stringify(name)} (GET /api/admin/search/indices lists them)`, { index: name });

/** The index prefix of an engine: what a full reindex's confirmation names (reindex.routes.ts). */
const prefixOf = (engine: SearchEngine) => engine.aliasOf('projects').slice(0, -'projects'.length);

function mappingNeedsReindex(error: MappingNeedsReindex, engine: SearchEngine): HttpError {
  const body = { mode: 'full', confirm: prefixOf(engine) };
  return new HttpError(409, 'mapping-needs-reindex',
    `The current mapping cannot be applied to the existing indices; nothing changed. A full reindex builds a new version with it: POST /api/admin/search/reindex ${JSON.stringify(body)}`,
    { conflicts: error.conflicts.slice(0, 50), reindex: { method: 'POST', path: '/api/admin/search/reindex', body } });
}
