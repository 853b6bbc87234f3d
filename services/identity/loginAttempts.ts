import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import type { EventMetadata } from '../../contracts/envelope';
import type { AccessLevel, DataOf } from '../../contracts/events';
import type { AuthenticatedUser } from '../shared/context';
import type { EventStore } from '../shared/eventStore';
import { DUMMY_PASSWORD_HASH, verifyPassword } from './secrets';

export type LoginFailureReason = DataOf<'LoginFailed'>['reason'];

/** How login compares e-mail addresses (and how the login rate limit keys them). */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/** Names an e-mail address without spelling it: the first 32 hex digits of SHA-256 of its normalised form. */
export const emailDigest = (normalisedEmail: string): string => createHash('sha256').update(normalisedEmail).digest('hex').slice(0, 32);

/** The stream of one address's refused logins. */
export const loginAttemptsStream = (normalisedEmail: string): string => `loginAttempts-${emailDigest(normalisedEmail)}`;

export interface LoginAccount extends AuthenticatedUser {
  passwordHash: string;
  isActive: boolean;
}

/** The account an address belongs to, active or not: an inactive one is refused like a wrong password, but recorded as such. */
export async function findLoginAccount(knex: Knex, normalisedEmail: string): Promise<LoginAccount | null> {
  const row: { id: number; email: string; name: string; access: AccessLevel; password_hash: string; is_active: boolean } | undefined =
    await knex('users').where({ email: normalisedEmail }).orderBy('is_deleted').first('id', 'email', 'name', 'access', 'password_hash', 'is_active');
  return row ? { id: row.id, email: row.email, name: row.name, access: row.access, passwordHash: row.password_hash, isActive: row.is_active } : null;
}

/** Nobody is authenticated yet: the actor is unknown, the way in is the login form. */
function loginMetadata(request: { correlationId: string; ip?: string }): EventMetadata {
  return { actor: { userId: null, via: 'session' }, ...(request.ip && { ip: request.ip }), correlationId: request.correlationId, causationId: null };
}

/**
 * Appends LoginFailed to the address's stream (no expected revision: attempts do not conflict).
 * Awaited by the login route, so that a failure the log cannot record is not answered as an
 * ordinary 401; the rate limiter in front bounds how many a caller can cause.
 */
export async function recordLoginFailure(
  deps: { store: EventStore },
  failure: { email: string; userId: number | null; reason: LoginFailureReason; at: Date },
  request: { correlationId: string; ip?: string },
): Promise<void> {
  const data: DataOf<'LoginFailed'> = {
    email: failure.email, userId: failure.userId, reason: failure.reason, ip: request.ip ? request.ip.slice(0, 100) : null, attemptedAt: failure.at.toISOString(),
  };
  await deps.store.append(loginAttemptsStream(failure.email), [{ type: 'LoginFailed', data }], { expectedRevision: 'any', metadata: loginMetadata(request) });
}

/**
 * The one limit on password checks (services/api/rateLimit.ts implements it): per client address,
 * and per address and account (with the account's own counter deciding how many attempts each
 * address has while it is over; see loginEnforced). Login, signing and revoking a signature all
 * count here, so a password guessed one way is not guessed afresh another way.
 */
export interface PasswordLimiter {
  /**
   * Counts one password check of the account at `normalisedEmail` from the request's address,
   * before the password is looked at: throws 429 rate-limited when over the limit (the headers
   * set on `res`). `succeeded` gives the attempt back: a right password does not count.
   */
  attempt(req: Request, res: Response, normalisedEmail: string): Promise<{ succeeded(): Promise<void> }>;
}

/**
 * Every password check: counted by the limiter first (when it is on), then verified (against a
 * dummy hash when there is no account to check, so the time taken says nothing); a right password
 * is given back to the limiter, a wrong one recorded as LoginFailed with what `refused` says.
 * Only a well-formed request reaches it: a malformed body is no password check.
 */
export async function checkPassword(
  deps: { store: EventStore; clock: () => Date; passwordLimiter: PasswordLimiter | null },
  req: Request, res: Response,
  check: { email: string; passwordHash: string | null; password: string; refused: () => Promise<{ userId: number | null; reason: LoginFailureReason }> },
): Promise<boolean> {
  const attempt = await deps.passwordLimiter?.attempt(req, res, check.email);
  const right = await verifyPassword(check.passwordHash ?? DUMMY_PASSWORD_HASH, check.password);
  if (right && check.passwordHash !== null) {
    await attempt?.succeeded();
    return true;
  }
  const { userId, reason } = await check.refused();
  await recordLoginFailure(deps, { email: check.email, userId, reason, at: deps.clock() }, req);
  return false;
}
