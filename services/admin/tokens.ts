import type { Knex } from 'knex';
import type { EventMetadata } from '../../contracts/envelope';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand } from '../shared/decider';
import { idOf } from '../shared/validate';
import { apiTokenDecider, apiTokenStream } from '../identity/apiToken.decider';

/** A token as an administrator sees it: never its value nor its hash. */
export interface AdminTokenView {
  id: number;
  owner: { id: number; email: string; name: string };
  name: string; prefix: string; createdAt: string; expiresAt: string | null; lastUsedAt: string | null; revokedAt: string | null;
}

/** Page size of the list: ?take= (default, maximum). */
export const TOKEN_PAGE = { default: 50, max: 500 } as const;

/** Where a page starts: after the token with this creation time and id, in the list's order. */
export interface TokenCursor { createdAt: string; id: number }

export interface TokenListQuery {
  take: number;
  /** Either a cursor (from a previous page's nextCursor) or a number of tokens to skip. */
  after: TokenCursor | null;
  skip: number;
  userId: number | null;
  /** true: neither revoked nor expired at `now`; false: revoked or expired. */
  active: boolean | null;
  now: Date;
}

export const encodeCursor = (c: TokenCursor): string => Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');

/** The cursor a page answered as nextCursor; null when it is not one. */
export function decodeCursor(value: string): TokenCursor | null {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as unknown[];
    if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt)) || idOf(id, 'json') === null) return null;
    return { createdAt: new Date(createdAt).toISOString(), id: id as number };
  } catch {
    return null;
  }
}

/**
 * Every user's tokens, newest first (creation time, then id: ids come in blocks per process, so
 * they alone do not follow time). Keyset pagination: nextCursor continues after the last row.
 */
export async function listAllApiTokens(knex: Knex, query: TokenListQuery): Promise<{ data: AdminTokenView[]; nextCursor: string | null }> {
  const q = knex('api_tokens as t')
    .join('users as u', 'u.id', 't.user_id')
    .leftJoin('api_token_usage as us', 'us.token_id', 't.id')
    .select('t.id', 't.name', 't.prefix', 't.created_at', 't.expires_at', 't.revoked_at', 'us.last_used_at',
      'u.id as owner_id', 'u.email as owner_email', 'u.name as owner_name')
    .orderBy([{ column: 't.created_at', order: 'desc' }, { column: 't.id', order: 'desc' }])
    .limit(query.take + 1)
    .offset(query.skip);
  if (query.after) q.whereRaw('(t.created_at, t.id) < (?::timestamptz, ?)', [query.after.createdAt, query.after.id]);
  if (query.userId !== null) q.where('t.user_id', query.userId);
  if (query.active === true) q.whereNull('t.revoked_at').where((w) => w.whereNull('t.expires_at').orWhere('t.expires_at', '>', query.now));
  if (query.active === false) q.where((w) => w.whereNotNull('t.revoked_at').orWhere('t.expires_at', '<=', query.now));
  const rows = await q;
  const page = rows.slice(0, query.take);
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  const data = page.map((r): AdminTokenView => ({
    id: r.id,
    owner: { id: r.owner_id, email: r.owner_email, name: r.owner_name },
    name: r.name, prefix: r.prefix, createdAt: r.created_at.toISOString(), expiresAt: iso(r.expires_at),
    lastUsedAt: iso(r.last_used_at), revokedAt: iso(r.revoked_at),
  }));
  const last = page[page.length - 1];
  return { data, nextCursor: rows.length > query.take ? encodeCursor({ createdAt: last.created_at.toISOString(), id: last.id }) : null };
}

/**
 * An administrator revokes anyone's token: the owner's command, with the administrator as
 * requester and actor. Revoking a revoked token changes nothing; an unknown one is api-token-not-found.
 */
export async function revokeAnyApiToken(deps: CommandDeps, input: { tokenId: number; administratorId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, apiTokenStream(input.tokenId), apiTokenDecider, {
    type: 'RevokeApiToken', tokenId: input.tokenId, requestedBy: input.administratorId, byAdministrator: true, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}
