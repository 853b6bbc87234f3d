import { Router } from 'express';
import { requireAdmin } from '../admin/admin.routes';
import { connectionRouter } from './connection.routes';
import { indicesRouter } from './indices.routes';
import { monitoringRouter } from './monitoring.routes';
import { reindexRoutes } from './reindex.routes';
import type { SearchAdminDeps } from './searchAdmin.deps';

export type { SearchAdminDeps };

/**
 * The search administration panel's operations (docs/search.md, "Administration"), every one
 * under /api/admin/search/ and for administrators only (401 without authentication, 403 below
 * ADMIN). Each part of the panel has its own router in this folder.
 */
export function searchAdminRouter(deps: SearchAdminDeps): Router {
  const router = Router();
  router.use('/api/admin/search', requireAdmin);
  router.use(connectionRouter(deps));
  router.use(indicesRouter(deps));
  router.use(monitoringRouter(deps));
  router.use(reindexRoutes(deps));
  return router;
}
