import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { EventMetadata } from '../../contracts/envelope';
import type { AccessLevel, DataOf } from '../../contracts/events';
import type { AuthenticatedUser } from '../shared/context';
import type { EventStore } from '../shared/eventStore';

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
    await knex('users').where({ email: normalisedEmail }).first('id', 'email', 'name', 'access', 'password_hash', 'is_active');
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
