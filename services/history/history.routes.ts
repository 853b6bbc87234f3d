import { Router } from 'express';
import type { Knex } from 'knex';
import { administeredProjectIds, resolveProjectAccess } from '../access/projectAccess';
import { policyFor } from '../model/policy';
import { HttpError } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import type { EventStore } from '../shared/eventStore';
import { parseEventLogQuery, readEventLog } from './eventLog';
import { findDiff, findHistory, parseDiffQuery, parseHistoryQuery } from './history.query';

/**
 * GET /api/history/{entity}/{id}: the entity's timeline, oldest first, for whoever may read the
 * row now through the model API (others get 404, as for a row that does not exist). Access is
 * decided by the caller's rights now, not by what they could see when each event happened.
 * GET /api/events: the log itself for analysts (administrators; project administrators their projects' events).
 */
export function historyRoutes(deps: { knex: Knex; store: EventStore }): Router {
  const router = Router();
  router.get('/api/history/diff', asyncHandler(async (req, res) => {
    const query = parseDiffQuery(req.query as Record<string, unknown>);
    const policy = await policyFor(deps.knex, req.auth!.user);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ data: await findDiff(deps, query, policy.read) });
  }));
  router.get('/api/history/:entity/:id', asyncHandler(async (req, res) => {
    const query = parseHistoryQuery({ entity: req.params.entity, id: req.params.id }, req.query as Record<string, unknown>);
    const policy = await policyFor(deps.knex, req.auth!.user);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await findHistory(deps, query, policy.read));
  }));
  /**
   * GET /api/events: the log as NDJSON, one envelope per line, oldest first; the next page's
   * `after` in X-Next-After, the log's head in X-Head-Position.
   */
  router.get('/api/events', asyncHandler(async (req, res) => {
    const projects = administeredProjectIds(await resolveProjectAccess(deps.knex, req.auth!.user));
    if (projects !== 'all' && projects.length === 0) throw new HttpError(403, 'forbidden', 'Only administrators and project administrators may read the event log');
    const query = parseEventLogQuery(req.query as Record<string, unknown>);
    const page = await readEventLog(deps, query, projects);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
    res.setHeader('X-Next-After', page.next);
    res.setHeader('X-Head-Position', page.head);
    res.end(page.lines.length === 0 ? '' : `${page.lines.join('\n')}\n`);
  }));
  return router;
}
