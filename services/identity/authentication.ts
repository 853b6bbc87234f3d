import 'express-session';
import type { Knex } from 'knex';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import passport from 'passport';
import { Strategy as BearerStrategy } from 'passport-http-bearer';
import type { Logger } from 'pino';
import type { AccessLevel } from '../../contracts/events';
import type { AuthenticatedUser, RequestAuth } from '../shared/context';
import { HttpError } from '../shared/errors';
import { hashToken } from './secrets';

declare module 'express-session' {
  interface SessionData {
    userId?: number;
  }
}

interface UserRow { id: number; email: string; name: string; access: AccessLevel; is_active: boolean }

const toUser = (r: UserRow): AuthenticatedUser => ({ id: r.id, email: r.email, name: r.name, access: r.access });

const LAST_USE_INTERVAL_MS = 60_000;

/**
 * Records a token's last use directly in api_token_usage, at most once a minute per token and
 * process: a request is never an event store write.
 */
export class TokenUsageRecorder {
  private readonly recent = new Map<number, number>();
  constructor(private readonly knex: Knex, private readonly logger: Logger) {}

  touch(tokenId: number, now: Date): void {
    const last = this.recent.get(tokenId);
    if (last !== undefined && now.getTime() - last < LAST_USE_INTERVAL_MS) return;
    this.recent.set(tokenId, now.getTime());
    this.knex('api_token_usage')
      .insert({ token_id: tokenId, last_used_at: now })
      .onConflict('token_id')
      .merge()
      .catch((err) => this.logger.warn({ err, tokenId }, 'cannot record token use'));
  }
}

export interface AuthDeps {
  knex: Knex; tokenSecret: string; clock: () => Date; usage: TokenUsageRecorder;
  /** Changes whenever the identity read model changes (see CheckpointWatcher.generation). */
  identityGeneration?: () => string;
}

interface CachedToken { auth: RequestAuth; expiresAt: number | null; generation: string; cachedAt: number }

/** How long a token's lookup is reused at most, even if no identity change is noticed. */
const TOKEN_CACHE_MS = 5_000;
const TOKEN_CACHE_SIZE = 10_000;

/** The bearer strategy: the token's HMAC is looked up; revoked, expired or deactivated → refused. */
export function bearerStrategy(deps: AuthDeps): passport.Strategy {
  // Repeated requests with the same token skip the lookup, until the identity read model changes
  // (a revocation, an expiry set, a user deactivated) or a few seconds pass, whichever is first.
  const cache = new Map<string, CachedToken>();
  return new BearerStrategy((token, done) => {
    const now = deps.clock();
    const hash = hashToken(deps.tokenSecret, token);
    const generation = deps.identityGeneration?.();
    const cached = generation === undefined ? undefined : cache.get(hash);
    if (cached && cached.generation === generation && Date.now() - cached.cachedAt < TOKEN_CACHE_MS && (cached.expiresAt === null || cached.expiresAt > now.getTime())) {
      deps.usage.touch(cached.auth.tokenId!, now);
      return done(null, cached.auth);
    }
    deps.knex('api_tokens as t')
      .join('users as u', 'u.id', 't.user_id')
      .where('t.token_hash', hash)
      .whereNull('t.revoked_at')
      .where((q) => q.whereNull('t.expires_at').orWhere('t.expires_at', '>', now))
      .where('u.is_active', true)
      .first('t.id as token_id', 't.expires_at', 'u.id', 'u.email', 'u.name', 'u.access', 'u.is_active')
      .then((row: (UserRow & { token_id: number; expires_at: Date | null }) | undefined) => {
        if (!row) return done(null, false);
        deps.usage.touch(row.token_id, now);
        const auth: RequestAuth = { user: toUser(row), tokenId: row.token_id, via: 'api' };
        if (generation !== undefined) {
          if (cache.size >= TOKEN_CACHE_SIZE) cache.clear();
          cache.set(hash, { auth, expiresAt: row.expires_at ? row.expires_at.getTime() : null, generation, cachedAt: Date.now() });
        }
        return done(null, auth);
      }, done);
  });
}

export async function findActiveUser(knex: Knex, where: { id: number } | { email: string }): Promise<(AuthenticatedUser & { passwordHash: string }) | null> {
  const row = await knex('users').where({ ...where, is_active: true }).first();
  return row ? { ...toUser(row), passwordHash: row.password_hash } : null;
}

declare module 'express-serve-static-core' {
  interface Request {
    auth?: RequestAuth;
    correlationId: string;
  }
}

/**
 * Every /api route but login passes here: a bearer token when the Authorization header is given
 * (a bad one is a 401 even if a session cookie is present), otherwise the session cookie.
 */
export function requireAuthentication(deps: AuthDeps): RequestHandler {
  // An authenticator of its own: passport's default one is shared by the whole process, where a
  // second app (tests, benchmarks) would replace this app's strategy, and with it its database.
  // No initialize(): only authenticate is used (bearer tokens, no passport sessions), and it sets up the request itself.
  const authenticator = new passport.Passport();
  authenticator.use(bearerStrategy(deps));
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.headers.authorization !== undefined) {
      if (!/^Bearer\s+\S+$/i.test(req.headers.authorization))
        return next(new HttpError(401, 'invalid-authorization-header', 'Authorization must be "Bearer <token>"'));
      // passport's custom callback receives (err, user, info, status); adapt it to ours.
      return authenticator.authenticate('bearer', { session: false }, (err: unknown, auth: RequestAuth | false) => {
        if (err) return next(err);
        if (!auth) return next(new HttpError(401, 'invalid-token', 'The bearer token is invalid, expired or revoked'));
        req.auth = auth;
        return next();
      })(req, res, next);
    }
    const userId = req.session?.userId;
    if (userId === undefined) return next(new HttpError(401, 'unauthenticated', 'Authentication required: a bearer token or a session'));
    findActiveUser(deps.knex, { id: userId }).then((user) => {
      if (!user) return next(new HttpError(401, 'unauthenticated', 'The session is no longer valid'));
      req.auth = { user: { id: user.id, email: user.email, name: user.name, access: user.access }, via: 'session' };
      next();
    }, next);
  };
}
