import { Router, type RequestHandler } from 'express';
import { asyncHandler } from '../shared/http';
import { type CommandDeps, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { HttpError, badRequest } from '../shared/errors';
import { TOKEN_PAGE, decodeCursor, listAllApiTokens, revokeAnyApiToken, type TokenListQuery } from './tokens';
import { parseId } from '../shared/validate';

/** Every /api/admin route: 401 without authentication, 403 `forbidden` below ADMIN access. */
export const requireAdmin: RequestHandler = (req, _res, next) => {
  if (!req.auth) return next(new HttpError(401, 'unauthenticated', 'Authentication required: a bearer token or a session'));
  if (req.auth.user.access !== 'ADMIN') return next(new HttpError(403, 'forbidden', 'Administrators only', { required: 'ADMIN' }));
  next();
};

const LIST_PARAMETERS = ['take', 'skip', 'cursor', 'userId', 'active'];

const invalid = (path: string, message: string) => badRequest('invalid-argument', message, { path });

export function integerParameter(value: string, path: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) throw invalid(path, `${path} must be an integer between ${min} and ${max}`);
  return n;
}

/** GET /api/admin/tokens' query string, strictly: unknown or repeated parameters are refused. */
function parseTokenListQuery(query: Record<string, unknown>, now: Date): TokenListQuery {
  for (const [name, value] of Object.entries(query)) {
    if (!LIST_PARAMETERS.includes(name)) throw invalid(name, `Unknown parameter ${name}; expected one of ${LIST_PARAMETERS.join(', ')}`);
    if (typeof value !== 'string') throw invalid(name, `${name} must be given once, as a plain value`);
  }
  const q = query as Partial<Record<string, string>>;
  if (q.cursor !== undefined && q.skip !== undefined) throw invalid('skip', 'Give either cursor or skip, not both');
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor);
  if (q.cursor !== undefined && after === null) throw invalid('cursor', 'cursor must be the nextCursor of a previous page');
  if (q.active !== undefined && q.active !== 'true' && q.active !== 'false') throw invalid('active', 'active must be true or false');
  return {
    take: q.take === undefined ? TOKEN_PAGE.default : integerParameter(q.take, 'take', 1, TOKEN_PAGE.max),
    skip: q.skip === undefined ? 0 : integerParameter(q.skip, 'skip', 0),
    after,
    userId: q.userId === undefined ? null : parseId('userId', q.userId),
    active: q.active === undefined ? null : q.active === 'true',
    now,
  };
}

/** Administration: /api/admin/*. requireAdmin guards every /api/admin path that passes through this router. */
export function adminRoutes(deps: CommandDeps): Router {
  const router = Router();
  router.use('/api/admin', requireAdmin);

  router.get('/api/admin/tokens', asyncHandler(async (req, res) => {
    res.json(await listAllApiTokens(deps.knex, parseTokenListQuery(req.query, deps.clock())));
  }));

  router.delete('/api/admin/tokens/:id', asyncHandler(async (req, res) => {
    const tokenId = parseId('id', req.params.id);
    await revokeAnyApiToken(withPositionHeader(deps, res), { tokenId, administratorId: req.auth!.user.id }, metadataFor(req.auth!, req));
    res.status(204).end();
  }));
  return router;
}
