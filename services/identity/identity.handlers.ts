import type { Knex } from 'knex';
import type { EventMetadata } from '../../contracts/envelope';
import type { AccessLevel } from '../../contracts/events';
import { activeClaim, claimRevisionAfter, lastEventOf, writeWithClaims } from '../claims/uniqueClaims';
import { factOf } from '../entities/entity.handlers';
import { type CommandOutcome, handleCommand, loadAggregate } from '../shared/decider';
import { DomainError } from '../shared/errors';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { apiTokenDecider, apiTokenStream } from './apiToken.decider';
import { hashPassword, issueToken } from './secrets';
import {
  PASSWORD_LENGTH, type RoleFact, type UserCommand, emailReservationStream, normaliseEmail, userDecider, userStream,
} from './user.decider';

export interface TokenView {
  id: number; name: string; prefix: string; expiresAt: string | null; createdAt: string;
  lastUsedAt: string | null; revokedAt: string | null;
}

function checkPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length < PASSWORD_LENGTH.min || password.length > PASSWORD_LENGTH.max) {
    throw new DomainError('invalid-argument', `data.password: must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`, { path: 'data.password' });
  }
  return password;
}

/** What the role's own stream says about it (never the read model, which may lag). */
async function roleFact(deps: CommandDeps, roleId: number): Promise<RoleFact> {
  const fact = await factOf(deps, 'role', roleId);
  return { id: roleId, exists: fact.exists, isDeleted: fact.isDeleted };
}

export interface NewUser {
  email: string; name: string; password: string; access: AccessLevel;
  /** The user's global role (must exist and not be deleted). */
  roleId?: number | null;
  /** false: registered and deactivated at once (one append). */
  isActive?: boolean;
}

/**
 * Registers a user. The command is decided, and its events checked against their contracts,
 * before anything is written (a refused one appends nothing); then the e-mail is claimed on its
 * own stream, so two registrations cannot share it, and released again when the user's own
 * append fails (services/claims/uniqueClaims.ts). The password is hashed here; only the hash
 * reaches an event.
 */
/** `plannedId`: an id reserved ahead (an external import plans its rows' ids before writing them). */
export async function registerUser(deps: CommandDeps, input: NewUser, metadata: EventMetadata, plannedId?: number): Promise<number> {
  const password = checkPassword(input.password);
  const roleId = input.roleId ?? null;
  const role = roleId === null ? undefined : await roleFact(deps, roleId);
  const command = (userId: number, passwordHash: string): UserCommand => ({
    type: 'RegisterUser', userId, email: input.email, name: input.name, passwordHash, access: input.access, roleId, role,
    isActive: input.isActive, now: deps.clock().toISOString(),
  });
  userDecider.decide(command(1, ''), userDecider.initialState);
  const email = normaliseEmail(input.email);
  const taken = () => new DomainError('email-taken', 'A user with this e-mail already exists', { path: 'data.email', email });
  const streamId = emailReservationStream(email);
  // The claim appended below decides (at the revision read here); this read spares an id when the address is known to be taken.
  const last = await lastEventOf(deps.store, streamId);
  if (activeClaim(last)) throw taken();
  // Hashed before the claim, so that little can fail between the claim and the registration.
  const passwordHash = await hashPassword(password);
  // The events as they will be appended (but for the id) meet their contracts before an id or the e-mail is taken.
  deps.store.validate?.(userDecider.decide(command(1, passwordHash), userDecider.initialState));
  const userId = plannedId ?? (await deps.ids.next('user', metadata));
  const outcome = await writeWithClaims(
    deps.store, [{ claim: { streamId, scope: 'user.email', value: email, ownerId: userId }, expectedRevision: claimRevisionAfter(last) }],
    () => handleCommand(deps.store, userStream(userId), userDecider, command(userId, passwordHash), metadata), taken, metadata,
  );
  await readYourWrites(deps, outcome);
  return userId;
}

export interface UserChanges {
  userId: number;
  name?: string;
  access?: AccessLevel;
  /** A role id, or null to take the role away. */
  roleId?: number | null;
  isActive?: boolean;
  password?: string;
}

/**
 * Changes a user: name, access, role, password and active flag in one decision and one append.
 * The acting user (metadata.actor) may not change their own access nor deactivate themselves.
 * Deactivating ends the user's access at once (see endAccessOf); a new password ends their sessions.
 */
export async function updateUser(deps: CommandDeps, input: UserChanges, metadata: EventMetadata): Promise<void> {
  const passwordHash = input.password === undefined ? undefined : await hashPassword(checkPassword(input.password));
  const role = input.roleId == null ? undefined : await roleFact(deps, input.roleId);
  const changes: Extract<UserCommand, { type: 'UpdateUser' }>['changes'] = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.access !== undefined) changes.access = input.access;
  if (input.roleId !== undefined) changes.roleId = input.roleId;
  const outcome = await handleCommand(deps.store, userStream(input.userId), userDecider, {
    type: 'UpdateUser', userId: input.userId, changes, isActive: input.isActive, passwordHash, role,
    requestedBy: metadata.actor.userId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  // Also when the user was inactive already: a repeated deactivation finishes one that failed half-way.
  if (input.isActive === false) await endAccessOf(deps, input.userId, metadata);
  // A new password ends every session opened with the old one (API tokens are separate credentials and stay).
  else if (passwordHash !== undefined && outcome.position !== null) await endSessionsOf(deps.knex, input.userId);
}

/** Soft-deletes a user (marked deleted and inactive; the e-mail stays taken) and ends their access. */
export async function deleteUser(deps: CommandDeps, input: { userId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, userStream(input.userId), userDecider, {
    type: 'DeleteUser', userId: input.userId, requestedBy: metadata.actor.userId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  await endAccessOf(deps, input.userId, metadata);
}

/**
 * A deactivated or deleted user's access ends at once and for good. Authentication already
 * refuses them (it reads users.is_active, which the read model has once the user's events were
 * awaited); on top of that every token of theirs is revoked through its own aggregate, so a
 * reactivation does not bring old tokens back, and their sessions are deleted from the store, so
 * an old cookie stays worthless too. Tokens are read from the read model, which holds every token
 * created before the deactivation once its events were applied.
 */
export async function endAccessOf(deps: CommandDeps, userId: number, metadata: EventMetadata): Promise<void> {
  const tokenIds = (await deps.knex('api_tokens').where({ user_id: userId }).whereNull('revoked_at').orderBy('id').pluck('id')) as number[];
  let last: CommandOutcome<unknown> | null = null;
  for (const tokenId of tokenIds) {
    // The owner's revocation, on the owner's behalf; the metadata names the administrator who caused it.
    const outcome = await handleCommand(deps.store, apiTokenStream(tokenId), apiTokenDecider, {
      type: 'RevokeApiToken', tokenId, requestedBy: userId, now: deps.clock().toISOString(),
    }, metadata);
    if (outcome.position !== null) last = outcome;
  }
  if (last) await readYourWrites(deps, last);
  await endSessionsOf(deps.knex, userId);
}

/** Deletes every stored session of the user (connect-pg-simple: table http_sessions, `sess` JSON with userId). */
export async function endSessionsOf(knex: Knex, userId: number): Promise<number> {
  try {
    return await knex('http_sessions').whereRaw("sess->>'userId' = ?", [String(userId)]).del();
  } catch (error) {
    // The store creates its table with the first session: without it there is nothing to end.
    if ((error as { code?: string }).code === '42P01') return 0;
    throw error;
  }
}

/** First start: creates the administrator from ADMIN_EMAIL / ADMIN_PASSWORD when there is no user yet. */
export async function bootstrapAdministrator(
  deps: CommandDeps,
  admin: { email: string; password: string; name: string },
  metadata: EventMetadata,
): Promise<number | null> {
  const existing = await deps.knex('users').count<{ count: string }[]>({ count: '*' });
  if (Number(existing[0].count) > 0) return null;
  const claim = activeClaim(await lastEventOf(deps.store, emailReservationStream(admin.email)));
  if (!claim) return registerUser(deps, { ...admin, access: 'ADMIN' }, metadata);
  // The address is claimed: by a start that registered the user (nothing to do), or by one that
  // was killed between the claim and the registration, which this start completes.
  const userId = claim.ownerId;
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
