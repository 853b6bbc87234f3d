import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { createKnex } from '../../infra/postgres/database';
import { identityProjection } from '../../projections/identity';
import { migrateReadModel } from '../../projections/migrations';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { at, checkpoints, dateAt, envelope, envelopes, twice } from './envelopes';

const ADA_HASH = '$argon2id$v=19$m=19456,t=2,p=1$YWRh$YWRhYWRh';
const GRACE_HASH = '$argon2id$v=19$m=19456,t=2,p=1$Z3JhY2U$Z3JhY2VncmFjZQ';
const CI_HASH = 'a1'.repeat(32);
const LAPTOP_HASH = 'b2'.repeat(32);
const DEPLOY_HASH = 'c3'.repeat(32);

// Ada and Grace register; Ada's CI token is revoked, Grace's laptop token expires, Ada's deploy
// token stays. Events of other models are interleaved, and the last event is one of them.
const EVENTS = envelopes([
  ['uniqueEmail-ada@example.com', { type: 'UniqueValueClaimed', data: { scope: 'user.email', value: 'ada@example.com', ownerId: 1 } }],
  ['user-1', {
    type: 'UserRegistered', data: { userId: 1, email: 'ada@example.com', name: 'Ada', passwordHash: ADA_HASH, access: 'ADMIN', createdAt: at(1) },
  }],
  ['project-1', { type: 'ProjectCreated', data: { projectId: 1, name: 'Checkout', createdAt: at(2) } }],
  ['user-2', {
    type: 'UserRegistered', data: { userId: 2, email: 'grace@example.com', name: 'Grace', passwordHash: GRACE_HASH, access: 'USER', createdAt: at(3) },
  }],
  ['apiToken-5', {
    type: 'ApiTokenCreated',
    data: { tokenId: 5, userId: 1, name: 'CI', prefix: 'tst_a1a1', tokenHash: CI_HASH, expiresAt: null, createdAt: at(4) },
  }],
  ['apiToken-6', {
    type: 'ApiTokenCreated',
    data: { tokenId: 6, userId: 2, name: 'Laptop', prefix: 'tst_b2b2', tokenHash: LAPTOP_HASH, expiresAt: at(50), createdAt: at(5) },
  }],
  ['apiToken-5', { type: 'ApiTokenRevoked', data: { tokenId: 5, userId: 1, revokedAt: at(6) } }],
  ['apiToken-7', {
    type: 'ApiTokenCreated',
    data: { tokenId: 7, userId: 1, name: 'Deploy', prefix: 'tst_c3c3', tokenHash: DEPLOY_HASH, expiresAt: null, createdAt: at(7) },
  }],
  ['ids-apiToken', { type: 'IdBlockReserved', data: { category: 'apiToken', from: 51, to: 100 } }],
]);
const LAST = EVENTS[EVENTS.length - 1].position;

const EXPECTED = {
  users: [
    { id: 1, email: 'ada@example.com', name: 'Ada', access: 'ADMIN', password_hash: ADA_HASH, is_active: true, created_at: dateAt(1), revision: '0' },
    { id: 2, email: 'grace@example.com', name: 'Grace', access: 'USER', password_hash: GRACE_HASH, is_active: true, created_at: dateAt(3), revision: '0' },
  ],
  tokens: [
    {
      id: 5, user_id: 1, name: 'CI', prefix: 'tst_a1a1', token_hash: CI_HASH, expires_at: null, created_at: dateAt(4),
      revoked_at: dateAt(6), revision: '1',
    },
    {
      id: 6, user_id: 2, name: 'Laptop', prefix: 'tst_b2b2', token_hash: LAPTOP_HASH, expires_at: dateAt(50), created_at: dateAt(5),
      revoked_at: null, revision: '0',
    },
    {
      id: 7, user_id: 1, name: 'Deploy', prefix: 'tst_c3c3', token_hash: DEPLOY_HASH, expires_at: null, created_at: dateAt(7),
      revoked_at: null, revision: '0',
    },
  ],
};

describe('identity projection (PostgreSQL)', () => {
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createTestDatabase('identity');
    knex = createKnex(db.url, 4);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });
  beforeEach(() => knex.raw('TRUNCATE users, api_tokens, api_token_usage, projects, repository_folders, repository_cases, projection_checkpoints'));

  const apply = (events: EventEnvelope[]) => applyBatch(knex, identityProjection, events);
  const rows = async () => ({
    users: await knex('users').select('*').orderBy('id'),
    tokens: await knex('api_tokens').select('*').orderBy('id'),
  });
  const checkpointIs = async (position: string) =>
    expect(await checkpoints(knex)).to.deep.equal([{ name: 'identity', position }]);

  it('applies the story: exact rows, and the checkpoint at the last event', async () => {
    expect(await apply(EVENTS)).to.equal(BigInt(LAST));
    expect(await rows()).to.deep.equal(EXPECTED);
    await checkpointIs(LAST);
  });

  it('applies the story one event at a time to the same rows', async () => {
    for (const e of EVENTS) await apply([e]);
    expect(await rows()).to.deep.equal(EXPECTED);
    await checkpointIs(LAST);
  });

  it('leaves token usage (written by the API) and other models alone', async () => {
    await knex('api_token_usage').insert({ token_id: 5, last_used_at: at(5) });
    await apply(EVENTS);
    expect(await knex('api_token_usage').select('*')).to.deep.equal([{ token_id: 5, last_used_at: dateAt(5) }]);
    expect(await knex('projects').select('*')).to.deep.equal([]);
  });

  describe('a redelivered event changes nothing', () => {
    it('every event twice in the same batch', async () => {
      expect(await apply(twice(EVENTS))).to.equal(BigInt(LAST));
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(LAST);
    });

    it('every event twice, one batch each', async () => {
      for (const e of twice(EVENTS)) await apply([e]);
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(LAST);
    });

    it('the whole story again in a second batch', async () => {
      await apply(EVENTS);
      expect(await apply(EVENTS)).to.equal(BigInt(LAST));
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(LAST);
    });

    it('a batch, then a batch that overlaps it (every split point)', async () => {
      for (let split = 1; split < EVENTS.length; split++) {
        await knex.raw('TRUNCATE users, api_tokens, projection_checkpoints');
        await apply(EVENTS.slice(0, split));
        await checkpointIs(EVENTS[split - 1].position);
        await apply(EVENTS.slice(Math.max(0, split - 3)));
        expect(await rows(), `split at ${split}`).to.deep.equal(EXPECTED);
        await checkpointIs(LAST);
      }
    });
  });

  describe('an event older than the row (same stream, lower revision, new position) changes nothing', () => {
    const NEXT = BigInt(LAST) + 2n;

    it('a token creation replayed does not bring a revoked token back', async () => {
      await apply(EVENTS);
      await apply([
        envelope('apiToken-5', 0n, NEXT, {
          type: 'ApiTokenCreated',
          data: { tokenId: 5, userId: 1, name: 'CI', prefix: 'tst_a1a1', tokenHash: CI_HASH, expiresAt: null, createdAt: at(4) },
        }),
      ]);
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(NEXT.toString());
    });

    it('a stale registration or revocation does not overwrite the row', async () => {
      await apply(EVENTS);
      await apply([
        envelope('user-2', 0n, NEXT, {
          type: 'UserRegistered', data: { userId: 2, email: 'grace@example.com', name: 'Stale', passwordHash: ADA_HASH, access: 'ADMIN', createdAt: at(40) },
        }),
        envelope('apiToken-5', 1n, NEXT + 2n, { type: 'ApiTokenRevoked', data: { tokenId: 5, userId: 1, revokedAt: at(41) } }),
        envelope('apiToken-6', 0n, NEXT + 4n, { type: 'ApiTokenRevoked', data: { tokenId: 6, userId: 2, revokedAt: at(42) } }),
      ]);
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs((NEXT + 4n).toString());
    });
  });

  it('a revocation of a token it never saw creates nothing', async () => {
    const [revoked] = envelopes([['apiToken-9', { type: 'ApiTokenRevoked', data: { tokenId: 9, userId: 1, revokedAt: at(1) } }]]);
    await apply([revoked]);
    expect(await rows()).to.deep.equal({ users: [], tokens: [] });
    await checkpointIs(revoked.position);
  });
});
