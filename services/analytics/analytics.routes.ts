import { Router } from 'express';
import type { Knex } from 'knex';
import { policyFor } from '../model/policy';
import { asyncHandler } from '../shared/http';
import { compareRuns, parseCompareQuery } from './runCompare';

/** Reads for analysts over the read model, through the model API's scope (a run the caller cannot read is a 404). */
export function analyticsRoutes(deps: { knex: Knex }): Router {
  const router = Router();
  router.get('/api/runs/compare', asyncHandler(async (req, res) => {
    const query = parseCompareQuery(req.query as Record<string, unknown>);
    const policy = await policyFor(deps.knex, req.auth!.user);
    res.setHeader('Cache-Control', 'no-store');
    res.json({ data: await compareRuns(deps.knex, query, policy.read) });
  }));
  return router;
}
