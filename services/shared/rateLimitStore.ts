/**
 * The rate limits' port (services/api/rateLimit.ts applies the limits; infra/rateLimit stores the
 * counters), and the settings the configuration reads for them.
 */

/** The limits, from RATE_LIMIT_* and LOGIN_RATE_LIMIT_* (services/process/config.ts). */
export interface RateLimitSettings {
  /** The window of the token, user and anonymous limits (ms). */
  windowMs: number;
  /** Requests per window of one API token, or of one user's sessions. */
  max: number;
  /** Requests per window from one client address without credentials, failed authentications included. */
  anonymousMax: number;
  /** Login attempts per login window from one address (see loginEnforced); a successful one is given back. */
  loginMax: number;
  loginWindowMs: number;
}

/** One counter in one window. */
export interface CounterWindow {
  key: string;
  windowStart: Date;
  /** The end of the window: after it the counter is no longer read and may be deleted. */
  expiresAt: Date;
}

/** The port: request counters shared by every API replica. */
export interface RateLimitStore {
  /**
   * Adds `by[i]` (default one) to each counter (keys distinct), all in one round trip; answers
   * each count including this hit, in order.
   */
  hit(counters: readonly CounterWindow[], by?: readonly number[]): Promise<number[]>;
  /** Takes one back from each counter, never below zero. */
  refund(counters: readonly CounterWindow[]): Promise<void>;
  /** Deletes the counters whose window ended before `before`; answers how many. */
  prune(before: Date): Promise<number>;
}
