import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { createKnex } from '../../infra/postgres/database';
import { identityProjection } from '../../projections/identity';
import { migrateReadModel, migrationSource } from '../../projections/migrations';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { createMigratedDatabase, createTestDatabase, emptyTables, type TestDatabase } from '../support/database';
import { at, checkpoints, dateAt, envelope, envelopes, twice } from './envelopes';

const ADA_HASH = '$argon2id$v=19$m=19456,t=2,p=1$YWRh$YWRhYWRh';
const GRACE_HASH = '$argon2id$v=19$m=19456,t=2,p=1$Z3JhY2U$Z3JhY2VncmFjZQ';
const GRACE_NEW_HASH = '$argon2id$v=19$m=19456,t=2,p=1$bmV3$bmV3Z3JhY2U';
const LINUS_HASH = '$argon2id$v=19$m=19456,t=2,p=1$bGludXM$bGludXNsaW51cw';
const CI_HASH = 'a1'.repeat(32);
const LAPTOP_HASH = 'b2'.repeat(32);
const DEPLOY_HASH = 'c3'.repeat(32);

// Ada and Grace register (v1: no role); Ada's CI token is revoked, Grace's laptop token expires,
// Ada's deploy token stays. Grace is renamed and given a role, deactivated, reactivated, gets a
// new password and another access level; Linus registers with a role (v2) and is deleted. Events
// of other models are interleaved, and the last event is one of them.
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
  ['user-2', { type: 'UserUpdated', data: { userId: 2, changes: { name: 'Grace H.', roleId: 4 }, updatedAt: at(8) } }],
  ['user-2', { type: 'UserDeactivated', data: { userId: 2, at: at(9) } }],
  ['user-3', {
    type: 'UserRegistered',
    data: { userId: 3, email: 'linus@example.com', name: 'Linus', passwordHash: LINUS_HASH, access: 'USER', roleId: 4, createdAt: at(10) },
  }],
  ['user-2', { type: 'UserReactivated', data: { userId: 2, at: at(11) } }],
  ['user-2', { type: 'UserPasswordChanged', data: { userId: 2, passwordHash: GRACE_NEW_HASH, at: at(12) } }],
  ['user-3', { type: 'UserDeleted', data: { userId: 3, at: at(13) } }],
  ['user-2', { type: 'UserUpdated', data: { userId: 2, changes: { access: 'PROJECTADMIN' }, updatedAt: at(14) } }],
  ['ids-apiToken', { type: 'IdBlockReserved', data: { category: 'apiToken', from: 51, to: 100 } }],
]);
const LAST = EVENTS[EVENTS.length - 1].position;

const EXPECTED = {
  users: [
    {
      id: 1, email: 'ada@example.com', name: 'Ada', access: 'ADMIN', password_hash: ADA_HASH, role_id: null, is_active: true, is_deleted: false,
      created_at: dateAt(1), updated_at: dateAt(1), revision: '0',
    },
    {
      id: 2, email: 'grace@example.com', name: 'Grace H.', access: 'PROJECTADMIN', password_hash: GRACE_NEW_HASH, role_id: 4, is_active: true,
      is_deleted: false, created_at: dateAt(3), updated_at: dateAt(14), revision: '5',
    },
    {
      id: 3, email: 'linus@example.com', name: 'Linus', access: 'USER', password_hash: LINUS_HASH, role_id: 4, is_active: false, is_deleted: true,
      created_at: dateAt(10), updated_at: dateAt(13), revision: '1',
    },
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
    db = await createMigratedDatabase('identity');
    knex = createKnex(db.url, 4);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });
  beforeEach(() => emptyTables(knex, ['users', 'api_tokens', 'api_token_usage', 'projects', 'repository_folders', 'repository_cases', 'projection_checkpoints']));

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
        await emptyTables(knex, ['users', 'api_tokens', 'projection_checkpoints']);
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

  it('a deactivation leaves the user inactive until the reactivation', async () => {
    const upTo = (type: string, stream: string) => EVENTS.slice(0, EVENTS.findIndex((e) => e.type === type && e.streamId === stream) + 1);
    await apply(upTo('UserDeactivated', 'user-2'));
    expect(await knex('users').where({ id: 2 }).first('is_active', 'updated_at')).to.deep.equal({ is_active: false, updated_at: dateAt(9) });
    await apply(upTo('UserReactivated', 'user-2'));
    expect(await knex('users').where({ id: 2 }).first('is_active', 'updated_at')).to.deep.equal({ is_active: true, updated_at: dateAt(11) });
  });

  it('a change of a user it never saw creates nothing', async () => {
    const [updated, deactivated, deleted] = envelopes([
      ['user-9', { type: 'UserUpdated', data: { userId: 9, changes: { name: 'Ghost' }, updatedAt: at(1) } }],
      ['user-9', { type: 'UserDeactivated', data: { userId: 9, at: at(2) } }],
      ['user-9', { type: 'UserDeleted', data: { userId: 9, at: at(3) } }],
    ]);
    await apply([updated, deactivated, deleted]);
    expect(await rows()).to.deep.equal({ users: [], tokens: [] });
    await checkpointIs(deleted.position);
  });

  it('a revocation of a token it never saw creates nothing', async () => {
    const [revoked] = envelopes([['apiToken-9', { type: 'ApiTokenRevoked', data: { tokenId: 9, userId: 1, revokedAt: at(1) } }]]);
    await apply([revoked]);
    expect(await rows()).to.deep.equal({ users: [], tokens: [] });
    await checkpointIs(revoked.position);
  });
});

describe('migration 006_accounts', () => {
  it('gives the users already there no role, not deleted, last changed when created: what their events say', async () => {
    const db = await createTestDatabase('accounts');
    const knex = createKnex(db.url, 2);
    try {
      const before006 = { ...migrationSource, getMigrations: async () => (await migrationSource.getMigrations([])).filter((name) => name < '006') };
      await knex.migrate.latest({ migrationSource: before006, tableName: 'read_model_migrations' });
      await knex('users').insert({ id: 1, email: 'ada@example.com', name: 'Ada', access: 'ADMIN', password_hash: ADA_HASH, is_active: true, created_at: at(1), revision: 0 });
      await migrateReadModel(knex);
      expect(await knex('users').first('role_id', 'is_deleted', 'updated_at')).to.deep.equal({ role_id: null, is_deleted: false, updated_at: dateAt(1) });
      // The rows a projection of the same UserRegistered (v1) writes.
      await emptyTables(knex, ['users']);
      await applyBatch(knex, identityProjection, EVENTS.slice(0, 2));
      expect(await knex('users').first('role_id', 'is_deleted', 'updated_at')).to.deep.equal({ role_id: null, is_deleted: false, updated_at: dateAt(1) });
    } finally {
      await knex.destroy();
      await db.drop();
    }
  });
});
