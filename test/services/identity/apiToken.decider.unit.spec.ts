import { expect } from 'chai';
import type { ApiTokenCreated, ApiTokenRevoked } from '../../../contracts/events';
import { type ApiTokenCommand, apiTokenDecider, apiTokenStream, evolve, initialState } from '../../../services/identity/apiToken.decider';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const T1 = '2024-03-02T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';
const LATER = '2024-06-01T00:00:00.000Z';
const HASH = 'a'.repeat(64);

// Token 5 belongs to user 3; user 4 is someone else.
const created: ApiTokenCreated = {
  type: 'ApiTokenCreated',
  data: { tokenId: 5, userId: 3, name: 'CI', prefix: 'tst_ab12', tokenHash: HASH, expiresAt: null, createdAt: T0 },
};
const revoked: ApiTokenRevoked = { type: 'ApiTokenRevoked', data: { tokenId: 5, userId: 3, revokedAt: T1 } };

const create = (expiresAt: string | null): ApiTokenCommand => ({
  type: 'CreateApiToken', tokenId: 5, userId: 3, name: 'CI', prefix: 'tst_ab12', tokenHash: HASH, expiresAt, now: NOW,
});
const revokeBy = (requestedBy: number): ApiTokenCommand => ({ type: 'RevokeApiToken', tokenId: 5, requestedBy, now: NOW });
const revokeByAdministrator = (requestedBy: number): ApiTokenCommand => ({ type: 'RevokeApiToken', tokenId: 5, requestedBy, byAdministrator: true, now: NOW });

const token = (...past: (ApiTokenCreated | ApiTokenRevoked)[]) => given(apiTokenDecider, past);

describe('ApiToken decider', () => {
  it('names its stream apiToken-<id>', () => expect(apiTokenStream(5)).to.equal('apiToken-5'));

  describe('CreateApiToken', () => {
    it('creates a token that never expires', () =>
      token().when(create(null)).then([{
        type: 'ApiTokenCreated',
        data: { tokenId: 5, userId: 3, name: 'CI', prefix: 'tst_ab12', tokenHash: HASH, expiresAt: null, createdAt: NOW },
      }]));
    it('creates a token that expires in the future', () =>
      token().when(create(LATER)).then([{
        type: 'ApiTokenCreated',
        data: { tokenId: 5, userId: 3, name: 'CI', prefix: 'tst_ab12', tokenHash: HASH, expiresAt: LATER, createdAt: NOW },
      }]));
    it('refuses an expiry in the past', () => token().when(create(T1)).thenFailsWith('token-expiry-in-past'));
    it('refuses an expiry equal to now', () => token().when(create(NOW)).thenFailsWith('token-expiry-in-past'));
    it('refuses to create it twice', () => token(created).when(create(null)).thenFailsWith('token-exists'));
    it('refuses to create a revoked token again', () => token(created, revoked).when(create(null)).thenFailsWith('token-exists'));
  });

  describe('RevokeApiToken', () => {
    it('the owner revokes it', () =>
      token(created).when(revokeBy(3)).then([{ type: 'ApiTokenRevoked', data: { tokenId: 5, userId: 3, revokedAt: NOW } }]));
    it('revoking twice changes nothing', () => token(created, revoked).when(revokeBy(3)).thenNothing());
    it("someone else's token is reported as missing", () => token(created).when(revokeBy(4)).thenFailsWith('api-token-not-found'));
    it("someone else's revoked token is reported as missing too", () => token(created, revoked).when(revokeBy(4)).thenFailsWith('api-token-not-found'));
    it('refuses an unknown token', () => token().when(revokeBy(3)).thenFailsWith('api-token-not-found'));
    it("an administrator revokes someone else's token; the event names the owner", () =>
      token(created).when(revokeByAdministrator(4)).then([{ type: 'ApiTokenRevoked', data: { tokenId: 5, userId: 3, revokedAt: NOW } }]));
    it('an administrator revoking a revoked token changes nothing', () => token(created, revoked).when(revokeByAdministrator(4)).thenNothing());
    it('an administrator is refused an unknown token too', () => token().when(revokeByAdministrator(4)).thenFailsWith('api-token-not-found'));
  });

  describe('evolve', () => {
    it('folds every event into the state', () => {
      const afterCreate = evolve(initialState, created);
      expect([initialState, afterCreate, evolve(afterCreate, revoked)]).to.deep.equal([
        { exists: false, userId: null, revoked: false },
        { exists: true, userId: 3, revoked: false },
        { exists: true, userId: 3, revoked: true },
      ]);
    });
  });
});
