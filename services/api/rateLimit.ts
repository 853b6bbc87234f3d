import { isIPv4, isIPv6 } from 'node:net';
import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { emailDigest, type PasswordLimiter } from '../identity/loginAttempts';
import type { RequestAuth } from '../shared/context';
import { HttpError } from '../shared/errors';
import type { CounterWindow, RateLimitSettings, RateLimitStore } from '../shared/rateLimitStore';

/**
 * Request rate limits: per API token and per session user (authenticated /api requests), per
 * client address (requests without credentials, and failed authentications), and a stricter one
 * for every password check (login, signing, revoking a signature) per address, and per address and
 * account's e-mail address (see loginEnforced: never per e-mail address alone, by which anyone could
 * lock its owner out). Counters live behind the
 * RateLimitStore port, shared by every API replica (PostgreSQL: infra/rateLimit/postgres.ts).
 *
 * Windows are fixed: a counter counts the requests of one window and the next window starts from
 * zero, so a client waiting Retry-After seconds is let through. Each key's windows are shifted by
 * an offset derived from the key, so that not every client's counter resets at the same instant.
 */

export interface Limit {
  key: string;
  max: number;
  windowMs: number;
}

// ---------------------------------------------------------------------------------------------
// Pure parts: keys and window arithmetic.

/** Where a key's windows start within the window length: 32-bit FNV-1a of the key, modulo the length. */
export function keyOffset(key: string, windowMs: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % windowMs;
}

/** The window of `key` that holds the instant `nowMs`: start ≤ now < end. */
export function windowOf(key: string, windowMs: number, nowMs: number): { start: number; end: number } {
  const offset = keyOffset(key, windowMs);
  const start = Math.floor((nowMs - offset) / windowMs) * windowMs + offset;
  return { start, end: start + windowMs };
}

/** Whole seconds until `atMs`, at least 1 (what Retry-After and RateLimit-Reset say). */
export function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((atMs - nowMs) / 1000));
}

/**
 * How many counts a replica takes from a shared counter at once for a limit of `max`: one for the
 * small, strict limits (login, anonymous: exact), a twentieth (at most 100) for the large per-caller
 * ones, so that most requests of a busy client need no round trip. Counts taken and not used are
 * lost with their window: a limit can only get stricter by it, never looser, with any number of
 * replicas.
 */
export function leaseSize(max: number): number {
  return max < 100 ? 1 : Math.min(100, Math.floor(max / 20));
}

/**
 * Blocks of counts taken ahead from the shared counters: the block [first, last] of a key's window
 * belongs to this replica alone, and its requests take its numbers in turn. One lease in flight per
 * key: concurrent requests wait for it rather than each taking a block.
 */
export class CountLeases {
  private readonly blocks = new Map<string, { windowStart: number; next: number; last: number }>();
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(private readonly store: RateLimitStore) {}

  /** This request's number in the counter's window (its count, as `hit` would answer it). */
  async take(counter: CounterWindow, size: number): Promise<number> {
    for (;;) {
      const block = this.blocks.get(counter.key);
      if (block && block.windowStart === counter.windowStart.getTime() && block.next <= block.last) return block.next++;
      const pending = this.inFlight.get(counter.key);
      if (pending) {
        await pending;
        continue;
      }
      const lease = this.store.hit([counter], [size]).then(([last]) => {
        this.forgetEnded(counter.windowStart.getTime());
        this.blocks.set(counter.key, { windowStart: counter.windowStart.getTime(), next: last - size + 1, last });
      }).finally(() => this.inFlight.delete(counter.key));
      this.inFlight.set(counter.key, lease);
      await lease;
    }
  }

  /** Blocks of windows that ended long ago are dropped now and then, so the map stays small. */
  private forgetEnded(nowWindowStart: number): void {
    if (this.blocks.size < 10_000) return;
    for (const [key, block] of this.blocks) if (block.windowStart < nowWindowStart) this.blocks.delete(key);
  }
}

/** A limit's state after a hit. */
export interface LimitState {
  limit: Limit;
  counter: CounterWindow;
  count: number;
}

const remainingOf = (s: LimitState) => Math.max(0, s.limit.max - s.count);

/**
 * What the answer says: the limit closest to exhaustion (the one the RateLimit-* headers describe)
 * and, when some are exceeded, the one that ends last (a retry must wait for all of them).
 */
export function verdict(states: readonly LimitState[]): { shown: LimitState; exceeded: LimitState | null } {
  const latestEnd = (a: LimitState, b: LimitState) => (b.counter.expiresAt.getTime() > a.counter.expiresAt.getTime() ? b : a);
  const shown = states.reduce((a, b) => (remainingOf(b) < remainingOf(a) ? b : remainingOf(b) === remainingOf(a) ? latestEnd(a, b) : a));
  const over = states.filter((s) => s.count > s.limit.max);
  return { shown, exceeded: over.length === 0 ? null : over.reduce(latestEnd) };
}

/** Attempts each address has at an e-mail address while that one is over its own login limit. */
export const LOGIN_TRIES_UNDER_ATTACK = 2;

/**
 * Which of a password check's counters (by address; by e-mail address; by address and e-mail
 * address) may refuse it. The address's: LOGIN_RATE_LIMIT_MAX attempts over every e-mail address, so guessing
 * from one address stops there. The e-mail address's own counter (attempts from every address)
 * refuses nobody, since keyed on it alone anyone could lock its owner out from anywhere; instead,
 * while it is over the limit, each address has only LOGIN_TRIES_UNDER_ATTACK attempts at that
 * e-mail address in its window: guessing it from many addresses slows down, and its owner, from
 * an address of their own, still gets in with the right password.
 */
export function loginEnforced(states: readonly LimitState[]): LimitState[] {
  const [byAddress, byEmail, byAddressAndEmail] = states;
  if (byEmail.count <= byEmail.limit.max) return [byAddress, byAddressAndEmail];
  const max = Math.min(byAddressAndEmail.limit.max, LOGIN_TRIES_UNDER_ATTACK);
  return [byAddress, { ...byAddressAndEmail, limit: { ...byAddressAndEmail.limit, max } }];
}

/** The key of an authenticated caller: its token, or for a session its user. */
export function callerKey(auth: RequestAuth): string {
  return auth.tokenId !== undefined ? `token:${auth.tokenId}` : `user:${auth.user.id}`;
}

/** The eight 16-bit groups of an IPv6 address, or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  const bare = address.split('%')[0];
  if (!isIPv6(bare)) return null;
  let text = bare;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1].split('.').map(Number);
    text = `${text.slice(0, -v4[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === null ? [] : parse(tail);
  return [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The address a limit counts by: IPv4 as it is (also when written IPv4-mapped, ::ffff:a.b.c.d),
 * IPv6 by its /64 prefix, since one client usually holds a whole /64.
 */
export function clientAddress(ip: string | undefined): string {
  if (ip === undefined || ip === '') return 'unknown';
  if (isIPv4(ip)) return ip;
  const groups = ipv6Groups(ip);
  if (groups === null) return ip;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff)
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

// ---------------------------------------------------------------------------------------------
// Middleware.

export interface RateLimitDeps {
  store: RateLimitStore;
  settings: RateLimitSettings;
  clock: () => Date;
  logger: Logger;
  /** Called once per window and key, when a password counter first goes over its limit (LoginFailed, reason rate-limited). */
  onLoginThrottled?: (req: Request, normalisedEmail: string) => Promise<void>;
}

export interface RateLimiters {
  /**
   * Every password check (login, signing, revoking a signature; services/identity/loginAttempts.ts
   * checkPassword): per address, and per address and account (loginEnforced); refuses before the
   * password is checked. A malformed request never gets here, so it never counts.
   */
  passwords: PasswordLimiter;
  /** /api requests that carry no credentials (no Authorization header, no logged-in session): per address. */
  anonymous: RequestHandler;
  /** Right after authentication on /api: a 401 counts for the address; an authenticated request for its token or user. */
  afterAuthentication: [ErrorRequestHandler, RequestHandler];
}

/** Expired counters are deleted at most this often per process, in the background. */
const PRUNE_INTERVAL_MS = 60_000;
/** ...and only this long after their window ended, so that replicas whose clocks differ a little never lose a live one. */
const PRUNE_GRACE_MS = 60_000;

const LIMITED = Symbol('rate limit counted');
const counted = (res: Response) => (res.locals as Record<symbol, boolean>)[LIMITED] === true;

export function rateLimiters(deps: RateLimitDeps): RateLimiters {
  const { settings: s, store, logger } = deps;
  const leases = new CountLeases(store);
  let lastPrune = -Infinity;

  const maybePrune = (nowMs: number) => {
    if (nowMs - lastPrune < PRUNE_INTERVAL_MS) return;
    lastPrune = nowMs;
    store.prune(new Date(nowMs - PRUNE_GRACE_MS)).then(
      (deleted) => deleted > 0 && logger.debug({ deleted }, 'expired rate limit counters deleted'),
      (err) => logger.warn({ err }, 'cannot delete expired rate limit counters'),
    );
  };

  /**
   * Every limit's counter goes up by one (one round trip, or none from a leased block); those
   * `enforced` picks (default: all) decide, and the headers describe the tightest of them.
   */
  const take = async (res: Response, limits: Limit[], enforced = (all: LimitState[]) => all): Promise<{ states: LimitState[]; refused: HttpError | null }> => {
    const nowMs = deps.clock().getTime();
    const counters = limits.map((l) => {
      const w = windowOf(l.key, l.windowMs, nowMs);
      return { key: l.key, windowStart: new Date(w.start), expiresAt: new Date(w.end) };
    });
    const size = limits.length === 1 ? leaseSize(limits[0].max) : 1;
    const counts = size > 1 ? [await leases.take(counters[0], size)] : await store.hit(counters);
    maybePrune(nowMs);
    (res.locals as Record<symbol, boolean>)[LIMITED] = true;
    const states = limits.map((limit, i) => ({ limit, counter: counters[i], count: counts[i] }));
    const { shown, exceeded } = verdict(enforced(states));
    res.setHeader('RateLimit-Limit', String(shown.limit.max));
    res.setHeader('RateLimit-Remaining', String(remainingOf(shown)));
    res.setHeader('RateLimit-Reset', String(secondsUntil(shown.counter.expiresAt.getTime(), nowMs)));
    res.setHeader('RateLimit-Policy', `${shown.limit.max};w=${Math.ceil(shown.limit.windowMs / 1000)}`);
    if (!exceeded) return { states, refused: null };
    const retryAfterSeconds = secondsUntil(exceeded.counter.expiresAt.getTime(), nowMs);
    res.setHeader('Retry-After', String(retryAfterSeconds));
    const { max, windowMs } = exceeded.limit;
    return {
      states,
      refused: new HttpError(429, 'rate-limited', `Too many requests (at most ${max} in ${windowMs / 1000} s); retry in ${retryAfterSeconds} s`,
        { limit: max, windowMs, retryAfterSeconds }),
    };
  };

  /** The general limits let a request through when the store fails: the API stays up, the failure is logged. */
  const limitOpen = (req: Request, res: Response, next: (err?: unknown) => void, limit: Limit, passOn?: unknown) => {
    take(res, [limit]).then(
      ({ refused }) => next(refused ?? passOn),
      (err) => {
        logger.warn({ err, correlationId: req.correlationId, key: limit.key }, 'rate limit store failed: request let through');
        next(passOn);
      },
    );
  };
  const byAddress = (req: Request): Limit => ({ key: `ip:${clientAddress(req.ip)}`, max: s.anonymousMax, windowMs: s.windowMs });

  const passwords: PasswordLimiter = {
    async attempt(req, res, email) {
      const address = clientAddress(req.ip);
      const digest = emailDigest(email);
      const limits: Limit[] = [
        { key: `login-ip:${address}`, max: s.loginMax, windowMs: s.loginWindowMs },
        { key: `login-email:${digest}`, max: s.loginMax, windowMs: s.loginWindowMs },
        { key: `login-ip-email:${address}:${digest}`, max: s.loginMax, windowMs: s.loginWindowMs },
      ];
      // Unlike the others this limit fails closed (the store's error is thrown): password guessing must never run unthrottled.
      const { states, refused } = await take(res, limits, loginEnforced);
      if (refused) {
        if (deps.onLoginThrottled && loginEnforced(states).some((st) => st.count === st.limit.max + 1)) {
          // Recorded or not, the attempt is refused: a failure to record it is logged, the answer stays 429.
          await deps.onLoginThrottled(req, email).catch((err) => logger.error({ err, correlationId: req.correlationId }, 'cannot record a throttled password check'));
        }
        throw refused;
      }
      return {
        succeeded: () => store.refund(states.map((st) => st.counter)).catch((err) => {
          logger.warn({ err, correlationId: req.correlationId }, 'cannot give a right password back to the rate limit');
        }),
      };
    },
  };

  const anonymous: RequestHandler = (req, res, next) => {
    if (req.headers.authorization !== undefined || req.session?.userId !== undefined) return next();
    limitOpen(req, res, next, byAddress(req));
  };

  const authenticationFailed: ErrorRequestHandler = (err, req, res, next) => {
    if (!(err instanceof HttpError) || err.status !== 401 || counted(res)) return next(err);
    // The 401 stands unless the address is over its limit.
    limitOpen(req, res, next, byAddress(req), err);
  };

  const caller: RequestHandler = (req, res, next) => {
    if (!req.auth) return next();
    limitOpen(req, res, next, { key: callerKey(req.auth), max: s.max, windowMs: s.windowMs });
  };

  return { passwords, anonymous, afterAuthentication: [authenticationFailed, caller] };
}
