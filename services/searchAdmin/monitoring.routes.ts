import { Router } from 'express';
import { integerParameter } from '../admin/admin.routes';
import { asyncHandler } from '../shared/http';
import { isSearchType, SEARCH_TYPES } from '../shared/search';
import { invalidArgument } from '../search/query';
import { FAILURE_PAGE, RATE_MINUTES, decodeFailureCursor, indexingRate, listFailures, type FailureListQuery } from './monitoring';
import type { SearchAdminDeps } from './searchAdmin.deps';

/** A query string, strictly: only `known` parameters, each given once. */
function strictQuery(query: Record<string, unknown>, known: readonly string[]): Partial<Record<string, string>> {
  for (const [name, value] of Object.entries(query)) {
    if (!known.includes(name)) throw invalidArgument(name, 'is not a parameter of this endpoint', { parameters: known });
    if (typeof value !== 'string') throw invalidArgument(name, 'must be given once, as text');
  }
  return query as Partial<Record<string, string>>;
}

function parseFailureQuery(query: Record<string, unknown>): FailureListQuery {
  const q = strictQuery(query, ['take', 'skip', 'cursor', 'resolved', 'type']);
  if (q.cursor !== undefined && q.skip !== undefined) throw invalidArgument('skip', 'cannot be given with cursor: one or the other');
  const after = q.cursor === undefined ? null : decodeFailureCursor(q.cursor);
  if (q.cursor !== undefined && after === null) throw invalidArgument('cursor', 'must be the nextCursor of a previous page');
  if (q.resolved !== undefined && q.resolved !== 'true' && q.resolved !== 'false') throw invalidArgument('resolved', 'must be true or false');
  if (q.type !== undefined && !isSearchType(q.type)) throw invalidArgument('type', 'is not a search type', { types: SEARCH_TYPES });
  return {
    take: q.take === undefined ? FAILURE_PAGE.default : integerParameter(q.take, 'take', 1, FAILURE_PAGE.max),
    skip: q.skip === undefined ? 0 : integerParameter(q.skip, 'skip', 0),
    after,
    resolved: q.resolved === undefined ? null : q.resolved === 'true',
    type: q.type === undefined ? null : (q.type as FailureListQuery['type']),
  };
}

/**
 * The panel's monitoring (docs/search.md, "Monitoring"): the search API's metrics (this process's
 * counters), the indexing rate and indexer state (what the indexer publishes, wherever it runs),
 * the indexer's error log. Reads: nothing is appended. Mounted under requireAdmin.
 */
export function monitoringRouter(deps: Pick<SearchAdminDeps, 'knex' | 'searchMetrics'>): Router {
  const router = Router();

  router.get('/api/admin/search/metrics', asyncHandler(async (req, res) => {
    strictQuery(req.query, []);
    res.setHeader('Cache-Control', 'no-store');
    res.json(deps.searchMetrics.snapshot());
  }));

  router.get('/api/admin/search/indexing-rate', asyncHandler(async (req, res) => {
    const q = strictQuery(req.query, ['minutes']);
    const minutes = q.minutes === undefined ? RATE_MINUTES.default : integerParameter(q.minutes, 'minutes', 1, RATE_MINUTES.max);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await indexingRate(deps.knex, minutes));
  }));

  router.get('/api/admin/search/errors', asyncHandler(async (req, res) => {
    const query = parseFailureQuery(req.query);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await listFailures(deps.knex, query));
  }));

  return router;
}
