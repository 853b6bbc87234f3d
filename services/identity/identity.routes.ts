import { Router, type RequestHandler } from 'express';
import type { JSONSchemaType } from 'ajv';
import { asyncHandler } from '../shared/http';
import { bodyParser, parseId } from '../shared/validate';
import { type CommandDeps, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { HttpError, badRequest } from '../shared/errors';
import { findActiveUser } from './authentication';
import { createApiToken, listApiTokens, revokeApiToken } from './identity.handlers';
import { checkPassword, findLoginAccount, normaliseEmail, type PasswordLimiter } from './loginAttempts';
import { endSession, startSession } from './sessions';

const parseLogin = bodyParser<{ email: string; password: string }>({
  type: 'object', additionalProperties: false, required: ['email', 'password'],
  properties: { email: { type: 'string', minLength: 1, maxLength: 320 }, password: { type: 'string', minLength: 1, maxLength: 1024 } },
});

const parseNewToken = bodyParser<{ name: string; expiresAt?: string | null }>({
  type: 'object', additionalProperties: false, required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    expiresAt: { type: 'string', format: 'date-time', nullable: true },
  },
} as JSONSchemaType<{ name: string; expiresAt?: string | null }>);

/**
 * POST /api/auth/login: public. A well-formed attempt is a password check (checkPassword: the
 * shared limit, then the password); a refusal is recorded as LoginFailed (never the password).
 */
export function loginRoutes(deps: Pick<CommandDeps, 'knex' | 'clock' | 'store'> & { passwordLimiter: PasswordLimiter | null }): Router {
  const router = Router();
  router.post('/api/auth/login', asyncHandler(async (req, res) => {
    const { email: given, password } = parseLogin(req.body);
    const email = normaliseEmail(given);
    if (email === '') throw badRequest('invalid-argument', 'email must not be blank', { path: 'email' });
    const user = await findActiveUser(deps.knex, { email });
    const ok = await checkPassword(deps, req, res, {
      email, passwordHash: user?.passwordHash ?? null, password,
      // Every refusal takes the same steps (one lookup, one append), whatever its reason.
      refused: async () => {
        const account = await findLoginAccount(deps.knex, email);
        return { userId: account?.id ?? null, reason: !account ? 'unknown-user' : !account.isActive ? 'inactive-user' : 'wrong-password' };
      },
    });
    if (!user || !ok) throw new HttpError(401, 'invalid-credentials', 'E-mail or password is wrong');
    await startSession(req, user.id, deps.clock());
    res.json({ user: { id: user.id, email: user.email, name: user.name, access: user.access } });
  }));
  return router;
}

/** Routes behind authentication: logout, me, tokens. */
export function identityRoutes(deps: CommandDeps & { tokenSecret: string }): Router {
  const router = Router();
  const me: RequestHandler = (req, res) => res.json({ user: req.auth!.user, via: req.auth!.via, ...(req.auth!.tokenId && { tokenId: req.auth!.tokenId }) });

  router.post('/api/auth/logout', asyncHandler(async (req, res) => {
    if (req.session?.userId !== undefined) await endSession(req, res);
    res.status(204).end();
  }));
  router.get('/api/auth/me', me);

  router.post('/api/tokens', asyncHandler(async (req, res) => {
    const input = parseNewToken(req.body);
    const expiresAt = input.expiresAt ? new Date(input.expiresAt).toISOString() : null;
    if (expiresAt !== null && expiresAt <= deps.clock().toISOString())
      throw badRequest('invalid-argument', 'expiresAt must be in the future', { path: 'expiresAt' });
    const created = await createApiToken(withPositionHeader(deps, res), { userId: req.auth!.user.id, name: input.name, expiresAt }, metadataFor(req.auth!, req));
    res.status(201).json({ id: created.id, name: created.name, token: created.token, prefix: created.prefix, expiresAt: created.expiresAt, createdAt: created.createdAt });
  }));

  router.get('/api/tokens', asyncHandler(async (req, res) => {
    res.json({ data: await listApiTokens(deps, req.auth!.user.id) });
  }));

  router.delete('/api/tokens/:id', asyncHandler(async (req, res) => {
    const tokenId = parseId('id', req.params.id);
    await revokeApiToken(withPositionHeader(deps, res), { tokenId, userId: req.auth!.user.id }, metadataFor(req.auth!, req));
    res.status(204).end();
  }));
  return router;
}
