import type { EventMetadata } from '../../contracts/envelope';
import type { AccessLevel, UniqueValueClaimed } from '../../contracts/events';
import { handleCommand, loadAggregate } from '../shared/decider';
import { ConcurrencyError, DomainError } from '../shared/errors';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { apiTokenDecider, apiTokenStream } from './apiToken.decider';
import { hashPassword, issueToken } from './secrets';
import { emailReservationStream, normaliseEmail, userDecider, userStream } from './user.decider';

export interface TokenView {
  id: number; name: string; prefix: string; expiresAt: string | null; createdAt: string;
  lastUsedAt: string | null; revokedAt: string | null;
}

/** Registers a user. The e-mail is claimed first on its own stream, so two registrations cannot share it. */
export async function registerUser(
  deps: CommandDeps,
  input: { email: string; name: string; password: string; access: AccessLevel },
  metadata: EventMetadata,
): Promise<number> {
  const userId = await deps.ids.next('user', metadata);
  const claim: UniqueValueClaimed = { type: 'UniqueValueClaimed', data: { scope: 'user.email', value: normaliseEmail(input.email), ownerId: userId } };
  try {
    await deps.store.append(emailReservationStream(input.email), [claim], { expectedRevision: 'no-stream', metadata });
  } catch (error) {
    if (error instanceof ConcurrencyError) throw new DomainError('email-taken', 'A user with this e-mail already exists', { email: input.email });
    throw error;
  }
  const passwordHash = await hashPassword(input.password);
  const outcome = await handleCommand(deps.store, userStream(userId), userDecider, {
    type: 'RegisterUser', userId, email: input.email, name: input.name, passwordHash, access: input.access, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  return userId;
}

/** First start: creates the administrator from ADMIN_EMAIL / ADMIN_PASSWORD when there is no user yet. */
export async function bootstrapAdministrator(
  deps: CommandDeps,
  admin: { email: string; password: string; name: string },
  metadata: EventMetadata,
): Promise<number | null> {
  const existing = await deps.knex('users').count<{ count: string }[]>({ count: '*' });
  if (Number(existing[0].count) > 0) return null;
  const [claim] = await deps.store.readStream(emailReservationStream(admin.email), { maxCount: 1 });
  if (!claim) return registerUser(deps, { ...admin, access: 'ADMIN' }, metadata);
  // The address is claimed: by a start that registered the user (nothing to do), or by one that
  // was killed between the claim and the registration, which this start completes.
  const userId = (claim.data as UniqueValueClaimed['data']).ownerId;
  const { state } = await loadAggregate(deps.store, userStream(userId), userDecider);
  if (state.exists) return null;
  const passwordHash = await hashPassword(admin.password);
  const outcome = await handleCommand(deps.store, userStream(userId), userDecider, {
    type: 'RegisterUser', userId, email: admin.email, name: admin.name, passwordHash, access: 'ADMIN', now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  return userId;
}

export async function createApiToken(
  deps: CommandDeps & { tokenSecret: string },
  input: { userId: number; name: string; expiresAt: string | null },
  metadata: EventMetadata,
): Promise<TokenView & { token: string }> {
  const tokenId = await deps.ids.next('apiToken', metadata);
  const issued = issueToken(deps.tokenSecret);
  const now = deps.clock().toISOString();
  const outcome = await handleCommand(deps.store, apiTokenStream(tokenId), apiTokenDecider, {
    type: 'CreateApiToken', tokenId, userId: input.userId, name: input.name, prefix: issued.prefix,
    tokenHash: issued.hash, expiresAt: input.expiresAt, now,
  }, metadata);
  await readYourWrites(deps, outcome);
  const [view] = await listApiTokens(deps, input.userId, tokenId);
  return { ...view, token: issued.value };
}

export async function revokeApiToken(deps: CommandDeps, input: { tokenId: number; userId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, apiTokenStream(input.tokenId), apiTokenDecider, {
    type: 'RevokeApiToken', tokenId: input.tokenId, requestedBy: input.userId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}

export async function listApiTokens(deps: Pick<CommandDeps, 'knex'>, userId: number, tokenId?: number): Promise<TokenView[]> {
  const q = deps.knex('api_tokens as t')
    .leftJoin('api_token_usage as u', 'u.token_id', 't.id')
    .where('t.user_id', userId)
    .select('t.id', 't.name', 't.prefix', 't.expires_at', 't.created_at', 't.revoked_at', 'u.last_used_at')
    .orderBy('t.id', 'desc');
  if (tokenId !== undefined) q.andWhere('t.id', tokenId);
  const rows = await q;
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return rows.map((r) => ({
    id: r.id, name: r.name, prefix: r.prefix, expiresAt: iso(r.expires_at), createdAt: r.created_at.toISOString(),
    lastUsedAt: iso(r.last_used_at), revokedAt: iso(r.revoked_at),
  }));
}
