import { performance } from 'node:perf_hooks';
import { Router, type Request, type Response } from 'express';
import { refusePastHead } from '../model/asOf';
import { HttpError } from '../shared/errors';
import type { EventStore } from '../shared/eventStore';
import { asyncHandler } from '../shared/http';
import type { QueryKind } from './metrics';
import { invalidArgument, parseFacetParameters, parsePosition, parseSearchBody, parseSearchParameters } from './query';
import { facets, search, waitForIndexer, type SearchDeps } from './search.service';

export type { SearchDeps };

/** The router's dependencies: the service's, and the log's head (a position past it is refused at once). */
export type SearchRouterDeps = SearchDeps & { store: Pick<EventStore, 'headPosition'> };

/**
 * GET and POST /api/search, GET /api/search/facets (docs/search.md). Authenticated like every
 * /api route (the app mounts this after authentication). Every answer counts and shows only
 * documents of projects the caller may read. A request with `X-Event-Position` or `?after=`
 * waits first until the indexer has applied that position (bounded: WRITE_TIMEOUT_MS); one past
 * the log's head is a 400 naming the head, as `asOf` answers (services/model/asOf.ts). Each
 * answer is counted in `deps.metrics` (the search administration's metrics), if given.
 */
export function searchRouter(deps: SearchRouterDeps): Router {
  const router = Router();

  /** The position to wait for: the header's, `after`'s, or the later of both; one past the log's head is refused (400), not waited for. */
  const waitAsked = async (req: Request): Promise<void> => {
    const header = req.header('x-event-position');
    const after = req.query.after;
    let position = -1n;
    let path = '';
    if (header !== undefined) [position, path] = [parsePosition(header, 'X-Event-Position'), 'X-Event-Position'];
    if (after !== undefined) {
      const p = parsePosition(after, 'after');
      if (p > position) [position, path] = [p, 'after'];
    }
    if (position <= 0n) return;
    await refusePastHead(deps.store, position, path);
    await waitForIndexer(deps, position, req.correlationId);
  };

  /** The handler, counted: served with its time taken, or its error's status and code. */
  const measured = (kind: QueryKind, handler: (req: Request, res: Response) => Promise<void>) => asyncHandler(async (req, res) => {
    const started = performance.now();
    try {
      await handler(req, res);
      deps.metrics?.served(kind, performance.now() - started);
    } catch (err) {
      if (err instanceof HttpError) deps.metrics?.failed(err.status, err.code);
      else deps.metrics?.failed(500, 'internal-error');
      throw err;
    }
  });

  router.get('/api/search', measured('search', async (req, res) => {
    const query = parseSearchParameters(req.query as Record<string, unknown>);
    await waitAsked(req);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await search(deps, req.auth!.user, query, req.correlationId));
  }));

  router.post('/api/search', measured('search', async (req, res) => {
    const unknown = Object.keys(req.query).find((name) => name !== 'after');
    if (unknown !== undefined) throw invalidArgument(unknown, 'is not a parameter of POST /api/search (send it in the body)', { parameters: ['after'] });
    const query = parseSearchBody(req.body);
    await waitAsked(req);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await search(deps, req.auth!.user, query, req.correlationId));
  }));

  router.get('/api/search/facets', measured('facets', async (req, res) => {
    const query = parseFacetParameters(req.query as Record<string, unknown>);
    await waitAsked(req);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await facets(deps, req.auth!.user, query, req.correlationId));
  }));

  return router;
}
