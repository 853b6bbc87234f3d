import { Router } from 'express';
import { resolveProjectAccess } from '../access/projectAccess';
import { asyncHandler } from '../shared/http';
import type { CommandDeps } from '../shared/commandBus';
import { badRequest, HttpError } from '../shared/errors';
import { parseId } from '../shared/validate';

/** Suite outputs per page: each may hold two outputs of IMPORT_MAX_OUTPUT_CHARS. */
export const SUITE_OUTPUT_PAGE = { default: 20, max: 100 };

/**
 * GET /api/test-runs/{testRunId}/suite-output: the suites' own output (system-out and system-err
 * written outside any test case, where Gradle writes all output) that result imports kept for the
 * run, in the order the files had it, a page at a time. Readable by whoever can see the run's project.
 */
export function suiteOutputRoutes(deps: Pick<CommandDeps, 'knex'>): Router {
  const router = Router();
  router.get('/api/test-runs/:testRunId/suite-output', asyncHandler(async (req, res) => {
    const testRunId = parseId('testRunId', req.params.testRunId);
    const limit = req.query.limit === undefined ? SUITE_OUTPUT_PAGE.default : positive(req.query.limit, 'limit');
    if (limit > SUITE_OUTPUT_PAGE.max) throw badRequest('invalid-argument', `limit is at most ${SUITE_OUTPUT_PAGE.max}`, { path: 'limit' });
    const after = req.query.cursor === undefined ? 0 : parseId('cursor', req.query.cursor);
    const run = await deps.knex('test_runs').where({ id: testRunId }).first('project_id', 'is_deleted');
    const user = req.auth!.user;
    const visible = run && !run.is_deleted && (user.access === 'ADMIN' || (await resolveProjectAccess(deps.knex, user)).projects.has(run.project_id));
    if (!visible) throw new HttpError(404, 'test-run-not-found', `No test run ${testRunId}`, { id: testRunId });
    const rows = await deps.knex('test_run_suite_outputs').where({ test_run_id: testRunId }).where('id', '>', after).orderBy('id').limit(limit + 1)
      .select('id', 'suite', 'folder_id', 'system_out', 'system_err', 'import_job_id', 'created_at');
    const page = rows.slice(0, limit);
    res.json({
      data: page.map((r) => ({
        id: r.id, suite: r.suite, folderId: r.folder_id, systemOut: r.system_out, systemErr: r.system_err, importJobId: r.import_job_id, createdAt: r.created_at,
      })),
      nextCursor: rows.length > limit ? page[page.length - 1].id : null,
    });
  }));
  return router;
}

function positive(raw: unknown, path: string): number {
  const n = typeof raw === 'string' && /^\d{1,10}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > 2147483647) throw badRequest('invalid-argument', `${path} must be a positive integer`, { path });
  return n;
}
