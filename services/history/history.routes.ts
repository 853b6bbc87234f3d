import { Router } from 'express';
import type { Knex } from 'knex';
import { policyFor } from '../model/policy';
import { asyncHandler } from '../shared/http';
import type { EventStore } from '../shared/eventStore';
import { findHistory, parseHistoryQuery } from './history.query';

/**
 * GET /api/history/{entity}/{id}: the entity's timeline, oldest first, for whoever may read the
 * row now through the model API (others get 404, as for a row that does not exist). Access is
 * decided by the caller's rights now, not by what they could see when each event happened.
 */
export function historyRoutes(deps: { knex: Knex; store: EventStore }): Router {
  const router = Router();
  router.get('/api/history/:entity/:id', asyncHandler(async (req, res) => {
    const query = parseHistoryQuery({ entity: req.params.entity, id: req.params.id }, req.query as Record<string, unknown>);
    const policy = await policyFor(deps.knex, req.auth!.user);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await findHistory(deps, query, policy.read));
  }));
  return router;
}
