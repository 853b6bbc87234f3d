import { Router, type Request } from 'express';
import { badRequest } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import { IndexNotFound, type MaintenanceResult, type SearchEngine } from '../shared/search';
import { listIndices, perform, read } from './indices';
import type { SearchAdminDeps } from './searchAdmin.deps';

export const INDICES_PATH = '/api/admin/search/indices';
export const OPERATIONS_PATH = '/api/admin/search/operations';

/** Most segments a force merge may be asked to leave per shard. */
export const MAX_SEGMENTS = 100;

const invalid = (path: string, message: string) => badRequest('invalid-argument', message, { path });

/** The body as an object of the named fields only (absent: `{}`). */
function bodyOf(req: Request, fields: readonly string[]): Record<string, unknown> {
  const body: unknown = req.body ?? {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body', 'The body must be a JSON object');
  const unknown = Object.keys(body).find((key) => !fields.includes(key));
  if (unknown !== undefined) throw invalid(unknown, `${unknown} is not a field of this request${fields.length ? ` (fields: ${fields.join(', ')})` : ' (send {} or nothing)'}`);
  return body as Record<string, unknown>;
}

/** These routes take no query parameter: one is a mistake worth telling. */
function noQuery(req: Request): void {
  const name = Object.keys(req.query)[0];
  if (name !== undefined) throw invalid(name, `${name} is not a parameter of ${req.method} ${req.path}`);
}

/**
 * Indices and maintenance (docs/search.md, "Indices and maintenance"): the indices with the
 * indexer's checkpoint and lag, creating the missing ones, deleting one (confirmed by its name),
 * force merge, cache clear, refresh, mapping update, cluster health and node statistics. Reading
 * appends nothing; every operation the engine is asked to do is a SearchOperationPerformed.
 */
export function indicesRouter(deps: SearchAdminDeps): Router {
  const router = Router();

  router.get(INDICES_PATH, asyncHandler(async (req, res) => {
    noQuery(req);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await read(deps, req, (engine) => listIndices(deps, engine)));
  }));

  router.post(INDICES_PATH, asyncHandler(async (req, res) => {
    noQuery(req);
    bodyOf(req, []);
    const created = await perform(deps, req, res, 'create-indices', async (engine) => {
      const result = await engine.createMissingIndices();
      return { result, targets: [...result.created, ...result.aliasesRepaired], details: { ...result } };
    });
    res.status(created.created.length || created.aliasesRepaired.length ? 201 : 200).json(created);
  }));

  router.delete(`${INDICES_PATH}/:name`, asyncHandler(async (req, res) => {
    noQuery(req);
    const { name } = req.params;
    const { confirm } = bodyOf(req, ['confirm']);
    // Checked before the engine is asked anything: an unconfirmed delete changes nothing and records nothing.
    if (confirm !== name) {
      throw badRequest('confirmation-required', `Deleting an index loses its documents: send { "confirm": ${JSON.stringify(name)} } (the index name) to go ahead`, {
        path: 'confirm', expected: name,
      });
    }
    const deleted = await perform(deps, req, res, 'delete-index', async (engine) => {
      // A name the list does not show: 404, nothing recorded (nothing was done).
      const index = (await engine.stats()).find((s) => s.index === name);
      if (!index) throw new IndexNotFound(name);
      await engine.deleteIndex(name);
      const result = {
        index: name, alias: index.alias, type: index.type, version: index.version, live: index.live, documentsDeleted: index.documents,
        // A live index is back at once, empty, behind its alias: its documents return with a reindex of its type.
        recreated: index.live,
      };
      return { result, targets: [name], details: { alias: index.alias, version: index.version, live: index.live, documentsDeleted: index.documents } };
    }, [name]);
    res.json(deleted);
  }));

  /** `prepare` checks the body (refused: nothing asked, nothing recorded) and answers the engine's call. */
  const maintenance = (operation: 'force-merge' | 'cache-clear' | 'refresh' | 'mapping-update', fields: readonly string[],
    prepare: (body: Record<string, unknown>) => (engine: SearchEngine) => Promise<MaintenanceResult>) => {
    router.post(`${OPERATIONS_PATH}/${operation}`, asyncHandler(async (req, res) => {
      noQuery(req);
      const call = prepare(bodyOf(req, fields));
      const done = await perform(deps, req, res, operation, async (engine) => {
        const result = await call(engine);
        return { result: { operation, engine: engine.engine, ...result }, targets: result.targets, details: result.details };
      });
      res.json(done);
    }));
  };
  maintenance('force-merge', ['maxSegments'], (body) => {
    const maxSegments = maxSegmentsOf(body.maxSegments);
    return (engine) => engine.forceMerge(maxSegments);
  });
  maintenance('cache-clear', [], () => (engine) => engine.clearCache());
  maintenance('refresh', [], () => (engine) => engine.refreshAll());
  maintenance('mapping-update', [], () => (engine) => engine.updateMapping());

  router.get('/api/admin/search/health', asyncHandler(async (req, res) => {
    noQuery(req);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await read(deps, req, async (engine) => ({ engine: engine.engine, ...await engine.clusterHealth() })));
  }));

  router.get('/api/admin/search/nodes', asyncHandler(async (req, res) => {
    noQuery(req);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await read(deps, req, async (engine) => ({ engine: engine.engine, nodes: await engine.nodeStats() })));
  }));

  return router;
}

function maxSegmentsOf(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SEGMENTS) {
    throw invalid('maxSegments', `maxSegments must be an integer from 1 to ${MAX_SEGMENTS}`);
  }
  return value;
}
