import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf } from '../contracts/events';
import type { Projection } from './runtime/projection';
import { type ColumnTypes, RowBatch } from './runtime/rowBatch';

/** Users and API tokens, as authentication needs them. */
const USER_COLUMNS: ColumnTypes = {
  id: 'integer', email: 'text', name: 'text', access: 'text', password_hash: 'text', is_active: 'boolean', created_at: 'timestamptz', revision: 'bigint',
};
const TOKEN_COLUMNS: ColumnTypes = {
  id: 'integer', user_id: 'integer', name: 'text', prefix: 'text', token_hash: 'text',
  expires_at: 'timestamptz', created_at: 'timestamptz', revoked_at: 'timestamptz', revision: 'bigint',
};

export const identityProjection: Projection = {
  name: 'identity',
  tables: ['users', 'api_tokens'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    const users = new RowBatch('users', USER_COLUMNS);
    const tokens = new RowBatch('api_tokens', TOKEN_COLUMNS);
    const relevant = events.filter((e) => e.type === 'UserRegistered' || e.type === 'ApiTokenCreated' || e.type === 'ApiTokenRevoked');
    if (relevant.length === 0) return;
    for (const e of relevant) {
      if (e.type === 'UserRegistered') users.want((e.data as DataOf<'UserRegistered'>).userId);
      else tokens.want((e.data as { tokenId: number }).tokenId);
    }
    await users.load(trx);
    await tokens.load(trx);
    for (const e of relevant) {
      if (e.type === 'UserRegistered') {
        const d = e.data as DataOf<'UserRegistered'>;
        users.apply(d.userId, e, () => ({
          id: d.userId, email: d.email, name: d.name, access: d.access, password_hash: d.passwordHash, is_active: true, created_at: d.createdAt,
        }));
      } else if (e.type === 'ApiTokenCreated') {
        const d = e.data as DataOf<'ApiTokenCreated'>;
        tokens.apply(d.tokenId, e, () => ({
          id: d.tokenId, user_id: d.userId, name: d.name, prefix: d.prefix, token_hash: d.tokenHash,
          expires_at: d.expiresAt, created_at: d.createdAt, revoked_at: null,
        }));
      } else {
        const d = e.data as DataOf<'ApiTokenRevoked'>;
        tokens.apply(d.tokenId, e, (row) => row && { ...row, revoked_at: d.revokedAt });
      }
    }
    await users.flush(trx);
    await tokens.flush(trx);
  },
};

