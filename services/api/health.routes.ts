import { Router } from 'express';
import { asyncHandler } from '../shared/http';

/** One dependency /readyz looks at: ok, or not with a reason; `degraded`: ok, but not everything is shown (parked events). */
export interface ReadinessCheck {
  name: string;
  check(): Promise<{ ok: boolean; degraded?: boolean; details?: unknown }>;
}

/**
 * GET /healthz: the process answers. GET /readyz: every dependency answers and no projection is
 * stuck: 200 `ready`, or 200 `degraded` when a check says so (a projection parked events it
 * cannot apply: the service answers, and goes on); 503 `not-ready` otherwise.
 */
export function healthRoutes(checks: ReadinessCheck[]): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', asyncHandler(async (_req, res) => {
    const results = await Promise.all(checks.map(async (c) => {
      try {
        return { name: c.name, ...(await c.check()) };
      } catch (error) {
        return { name: c.name, ok: false, details: { error: error instanceof Error ? error.message : String(error) } };
      }
    }));
    const ready = results.every((r) => r.ok);
    const degraded = results.filter((r) => 'degraded' in r && r.degraded).map((r) => r.name);
    res.status(ready ? 200 : 503).json({ status: !ready ? 'not-ready' : degraded.length > 0 ? 'degraded' : 'ready', ...(ready && degraded.length > 0 && { degraded }), checks: results });
  }));
  return router;
}
