import type { ApiTokenCreated, ApiTokenRevoked } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';

export type ApiTokenEvent = ApiTokenCreated | ApiTokenRevoked;

export type ApiTokenCommand =
  | { type: 'CreateApiToken'; tokenId: number; userId: number; name: string; prefix: string; tokenHash: string; expiresAt: string | null; now: string }
  /** byAdministrator: the requester may revoke anyone's token (checked by the caller: ADMIN access). */
  | { type: 'RevokeApiToken'; tokenId: number; requestedBy: number; byAdministrator?: boolean; now: string };

export interface ApiTokenState { exists: boolean; userId: number | null; revoked: boolean }

export const initialState: ApiTokenState = { exists: false, userId: null, revoked: false };
export const apiTokenStream = (tokenId: number) => `apiToken-${tokenId}`;

export function decide(cmd: ApiTokenCommand, s: ApiTokenState): ApiTokenEvent[] {
  switch (cmd.type) {
    case 'CreateApiToken':
      if (s.exists) throw new DomainError('token-exists', `Token ${cmd.tokenId} already exists`);
      if (cmd.expiresAt !== null && cmd.expiresAt <= cmd.now)
        throw new DomainError('token-expiry-in-past', 'expiresAt must be in the future', { expiresAt: cmd.expiresAt });
      return [{
        type: 'ApiTokenCreated',
        data: {
          tokenId: cmd.tokenId, userId: cmd.userId, name: cmd.name, prefix: cmd.prefix,
          tokenHash: cmd.tokenHash, expiresAt: cmd.expiresAt, createdAt: cmd.now,
        },
      }];
    case 'RevokeApiToken':
      // Someone else's token is reported as missing, so token ids do not leak (administrators see every token).
      if (!s.exists || s.userId === null || (s.userId !== cmd.requestedBy && !cmd.byAdministrator)) throw new DomainError('api-token-not-found', `Token ${cmd.tokenId} does not exist`);
      if (s.revoked) return [];
      return [{ type: 'ApiTokenRevoked', data: { tokenId: cmd.tokenId, userId: s.userId, revokedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: ApiTokenState, e: ApiTokenEvent): ApiTokenState {
  switch (e.type) {
    case 'ApiTokenCreated':
      return { exists: true, userId: e.data.userId, revoked: false };
    case 'ApiTokenRevoked':
      return { ...s, revoked: true };
    default:
      return assertNever(e);
  }
}

export const apiTokenDecider = { initialState, decide, evolve };
