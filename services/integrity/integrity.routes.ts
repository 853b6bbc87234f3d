import { Router } from 'express';
import { requireAdmin } from '../admin/admin.routes';
import type { EventStore } from '../shared/eventStore';
import { asyncHandler } from '../shared/http';
import { parseIntegrityQuery, verifyIntegrity } from './integrity';

/** GET /api/admin/integrity?from=&to=: the hash chain of the log checked (administrators). */
export function integrityRoutes(deps: { store: EventStore }): Router {
  const router = Router();
  router.get('/api/admin/integrity', requireAdmin, asyncHandler(async (req, res) => {
    const query = parseIntegrityQuery(req.query as Record<string, unknown>);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await verifyIntegrity(deps.store, query));
  }));
  return router;
}
