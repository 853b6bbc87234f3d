import { Router } from 'express';
import type { Knex } from 'knex';
import { administeredProjectIds, resolveProjectAccess } from '../access/projectAccess';
import { asyncHandler } from '../shared/http';
import { HttpError } from '../shared/errors';
import { findAuditEntries, parseAuditQuery } from './audit.query';

/**
 * GET /api/audit: the audit trail, newest first. Administrators read all of it; project
 * administrators the events of the projects they administer (a projectId filter outside them
 * answers an empty page, as reads filter silently elsewhere; events without a project stay
 * hidden from them); everyone else gets 403.
 */
export function auditRoutes(deps: { knex: Knex }): Router {
  const router = Router();
  router.get('/api/audit', asyncHandler(async (req, res) => {
    const projects = administeredProjectIds(await resolveProjectAccess(deps.knex, req.auth!.user));
    if (projects !== 'all' && projects.length === 0)
      throw new HttpError(403, 'forbidden', 'Only administrators and project administrators may read the audit trail');
    const query = parseAuditQuery(req.query as Record<string, unknown>);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await findAuditEntries(deps.knex, query, projects));
  }));
  return router;
}
