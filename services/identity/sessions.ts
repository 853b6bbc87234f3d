import type { Request, RequestHandler, Response } from 'express';
import session, { type SessionData } from 'express-session';
import connectPgSimple from 'connect-pg-simple';
import type pg from 'pg';
import type { Logger } from 'pino';
import { HttpError } from '../shared/errors';

export const SESSION_COOKIE = 'testament.sid';
const SESSION_TABLE = 'http_sessions';

declare module 'express-session' {
  interface SessionData {
    /** When the user logged in and when the session last served a request (ms, from deps.clock()). */
    loginAt?: number;
    lastSeenAt?: number;
  }
}

export interface SessionSettings {
  sessionSecret: string;
  /** No request for this long ends the session. */
  sessionIdleTimeoutMs: number;
  /** This long after login the session ends, whatever the activity. */
  sessionAbsoluteTimeoutMs: number;
  trustProxy: boolean;
  /** Origins besides the API's own that may send cookie-authenticated unsafe requests (normalised: scheme://host[:port]). */
  allowedOrigins: readonly string[];
}

export interface SessionDeps extends SessionSettings {
  /** Pool for the session store (table http_sessions). */
  pool: pg.Pool;
  clock: () => Date;
  /** Where the store reports what fails in the background (its periodic pruning of expired rows). */
  logger: Pick<Logger, 'warn'>;
}

const PgStore = connectPgSimple(session);

/**
 * connect-pg-simple, except that only a login inserts a row: every other save updates the row if
 * it still exists. Otherwise a request still running while its session is destroyed (logout,
 * expiry, a new login) would write the session back when it ends, and the old cookie would work again.
 */
export class SessionStore extends PgStore {
  private readonly logins = new Set<string>();
  constructor(private readonly db: pg.Pool, logger: Pick<Logger, 'warn'>) {
    // The pruning of expired rows runs in the background: its failures go to the service's log
    // (with the pool's own message), not to the console.
    super({ pool: db, tableName: SESSION_TABLE, createTableIfMissing: true, errorLog: (...args: unknown[]) => logger.warn({ err: args.find((a) => a instanceof Error) }, 'session store: ' + args.filter((a) => typeof a === 'string').join(' ')) });
  }

  /** The next save of this session id may insert it (startSession). */
  expectLogin(sid: string): void {
    this.logins.add(sid);
  }

  override set(sid: string, data: SessionData, callback?: (err?: unknown) => void): void {
    if (this.logins.delete(sid)) return super.set(sid, data, callback);
    // As connect-pg-simple computes it: the cookie's expiry, in seconds.
    const expire = Math.ceil(new Date(data.cookie.expires ?? Date.now() + 86_400_000).getTime() / 1000);
    this.db.query(`UPDATE ${SESSION_TABLE} SET sess = $1, expire = to_timestamp($2) WHERE sid = $3`, [JSON.stringify(data), expire, sid])
      .then(() => callback?.(), (err) => callback?.(err));
  }
}

/**
 * express-session over connect-pg-simple (SessionStore). The cookie is HttpOnly, SameSite=Lax, Secure when the
 * request came over HTTPS through a trusted proxy, and rolling. Its lifetime and the store's row
 * expiry follow real time; the timeouts that count are checked against deps.clock() by sessionGuard.
 */
export function sessionMiddleware(deps: SessionDeps): RequestHandler {
  const sessions = session({
    name: SESSION_COOKIE,
    secret: deps.sessionSecret,
    store: new SessionStore(deps.pool, deps.logger),
    resave: false,
    saveUninitialized: false,
    rolling: true,
    cookie: {
      httpOnly: true, sameSite: 'lax', secure: deps.trustProxy ? 'auto' : false,
      maxAge: Math.min(deps.sessionIdleTimeoutMs, deps.sessionAbsoluteTimeoutMs),
    },
  });
  // A request with a bearer token and no cookie (CI, scripts) has no session to load: skip the store.
  return (req, res, next) =>
    req.headers.authorization?.startsWith('Bearer ') && req.headers.cookie === undefined && req.path !== '/auth/login' ? next() : sessions(req, res, next);
}

/** Login: a new session id (a cookie planted before login never becomes authenticated), the user and the times. */
export async function startSession(req: Request, userId: number, now: Date): Promise<void> {
  await new Promise<void>((resolve, reject) => req.session.regenerate((err) => (err ? reject(err) : resolve())));
  if (req.sessionStore instanceof SessionStore) req.sessionStore.expectLogin(req.sessionID);
  req.session.userId = userId;
  req.session.loginAt = now.getTime();
  req.session.lastSeenAt = now.getTime();
  await new Promise<void>((resolve, reject) => req.session.save((err) => (err ? reject(err) : resolve())));
}

/** Logout or expiry: the session row is deleted, so the cookie is worth nothing even if replayed. */
export async function endSession(req: Request, res: Response): Promise<void> {
  if (!req.session) return;
  await new Promise<void>((resolve, reject) => req.session.destroy((err) => (err ? reject(err) : resolve())));
  res.clearCookie(SESSION_COOKIE);
}

const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const originOf = (url: string): string | null => {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
};

/**
 * Where a request comes from, by what browsers send: `trusted` (Sec-Fetch-Site same-origin or none;
 * or an Origin, else Referer, that is the request's own origin or an allowed one), `refused`, or
 * `unknown` when none of these headers is present (not a browser, or a very old one).
 * The own origin is the Host header with the protocol express derives (X-Forwarded-Proto only with TRUST_PROXY).
 * An allowed origin is trusted even when Sec-Fetch-Site says same-site or cross-site: that is what it is listed for.
 */
export function requestSource(req: Request, allowedOrigins: ReadonlySet<string>): { verdict: 'trusted' | 'refused' | 'unknown'; site: string | null; origin: string | null } {
  const site = req.get('sec-fetch-site') ?? null;
  const claimed = req.get('origin') ?? req.get('referer');
  const origin = claimed === undefined ? null : originOf(claimed);
  const of = (verdict: 'trusted' | 'refused' | 'unknown') => ({ verdict, site, origin: claimed === undefined ? null : origin ?? claimed });
  if (site === 'same-origin' || site === 'none') return of('trusted');
  if (origin !== null && allowedOrigins.has(origin)) return of('trusted');
  if (site !== null) return of('refused');
  if (claimed === undefined) return of('unknown');
  const host = req.headers.host;
  return of(origin !== null && host !== undefined && origin === originOf(`${req.protocol}://${host}`) ? 'trusted' : 'refused');
}

const csrfRejected = (source: { site: string | null; origin: string | null }) =>
  new HttpError(403, 'csrf-rejected', 'Cross-site request refused: send it from the application\'s own origin, or use a bearer token', {
    secFetchSite: source.site, origin: source.origin,
  });

/**
 * POST /api/auth/login: a login from another site (login CSRF) is refused when the browser says
 * where it comes from; without any of those headers (curl, scripts) it is allowed.
 */
export function loginOriginGuard(deps: Pick<SessionSettings, 'allowedOrigins'>): RequestHandler {
  const allowed = new Set(deps.allowedOrigins);
  return (req, _res, next) => {
    const source = requestSource(req, allowed);
    next(source.verdict === 'refused' ? csrfRejected(source) : undefined);
  };
}

/**
 * Every cookie-authenticated /api request (bearer requests carry no ambient credentials and pass):
 * an unsafe method must come from a trusted origin (403 csrf-rejected), and a session past its idle
 * or absolute timeout is destroyed (401 session-expired). Otherwise the request counts as activity.
 */
export function sessionGuard(deps: Pick<SessionDeps, 'clock' | 'allowedOrigins' | 'sessionIdleTimeoutMs' | 'sessionAbsoluteTimeoutMs'>): RequestHandler {
  const allowed = new Set(deps.allowedOrigins);
  return (req, res, next) => {
    if (req.headers.authorization !== undefined || req.session?.userId === undefined) return next();
    if (UNSAFE_METHODS.has(req.method)) {
      const source = requestSource(req, allowed);
      if (source.verdict !== 'trusted') return next(csrfRejected(source));
    }
    const now = deps.clock().getTime();
    const { loginAt, lastSeenAt } = req.session;
    // A session without the times was made before they were recorded: it ends too.
    const reason = loginAt === undefined || lastSeenAt === undefined ? 'absolute'
      : now - loginAt >= deps.sessionAbsoluteTimeoutMs ? 'absolute'
        : now - lastSeenAt >= deps.sessionIdleTimeoutMs ? 'idle' : null;
    if (reason === null) {
      req.session.lastSeenAt = Math.max(now, lastSeenAt!);
      return next();
    }
    endSession(req, res).then(
      () => next(new HttpError(401, 'session-expired', reason === 'idle' ? 'The session ended after a period without requests; log in again' : 'The session reached its maximum duration; log in again', { reason })),
      next,
    );
  };
}
