import { Router } from 'express';
import { asyncHandler } from '../shared/http';

/** One dependency /readyz looks at: ok, or not with a reason. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<{ ok: boolean; details?: unknown }>;
}

/** GET /healthz: the process answers. GET /readyz: every dependency answers and no projection is stuck. */
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
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not-ready', checks: results });
  }));
  return router;
}
