import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf } from '../contracts/events';
import type { Projection } from './runtime/projection';
import { type ColumnTypes, RowBatch } from './runtime/rowBatch';

/** Users (what the model API reads, plus the password hash for login) and API tokens, as authentication needs them. */
const USER_COLUMNS: ColumnTypes = {
  id: 'integer', email: 'text', name: 'text', access: 'text', password_hash: 'text', role_id: 'integer', is_active: 'boolean', is_deleted: 'boolean',
  created_at: 'timestamptz', updated_at: 'timestamptz', revision: 'bigint',
};
const USER_EVENTS: ReadonlySet<string> = new Set(['UserRegistered', 'UserUpdated', 'UserDeactivated', 'UserReactivated', 'UserPasswordChanged', 'UserDeleted']);
const TOKEN_EVENTS: ReadonlySet<string> = new Set(['ApiTokenCreated', 'ApiTokenRevoked']);

const IDENTITY_EVENTS: ReadonlySet<string> = new Set([...USER_EVENTS, ...TOKEN_EVENTS]);

type UserRow = Record<string, unknown> & { id: number };

/** A user's row after one of the user's events (undefined: nothing to change). */
function nextUser(e: EventEnvelope, row: UserRow | undefined): UserRow | undefined {
  switch (e.type) {
    case 'UserRegistered': {
      const d = e.data as DataOf<'UserRegistered'>;
      return {
        id: d.userId, email: d.email, name: d.name, access: d.access, password_hash: d.passwordHash, role_id: d.roleId ?? null,
        is_active: true, is_deleted: false, created_at: d.createdAt, updated_at: d.createdAt,
      };
    }
    case 'UserUpdated': {
      const { changes, updatedAt } = e.data as DataOf<'UserUpdated'>;
      return row && {
        ...row,
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.access !== undefined && { access: changes.access }),
        ...(changes.roleId !== undefined && { role_id: changes.roleId }),
        updated_at: updatedAt,
      };
    }
    case 'UserDeactivated':
      return row && { ...row, is_active: false, updated_at: (e.data as DataOf<'UserDeactivated'>).at };
    case 'UserReactivated':
      return row && { ...row, is_active: true, updated_at: (e.data as DataOf<'UserReactivated'>).at };
    case 'UserPasswordChanged': {
      const d = e.data as DataOf<'UserPasswordChanged'>;
      return row && { ...row, password_hash: d.passwordHash, updated_at: d.at };
    }
    case 'UserDeleted':
      return row && { ...row, is_active: false, is_deleted: true, updated_at: (e.data as DataOf<'UserDeleted'>).at };
    default:
      return undefined;
  }
}
const TOKEN_COLUMNS: ColumnTypes = {
  id: 'integer', user_id: 'integer', name: 'text', prefix: 'text', token_hash: 'text',
  expires_at: 'timestamptz', created_at: 'timestamptz', revoked_at: 'timestamptz', revision: 'bigint',
};

export const identityProjection: Projection = {
  name: 'identity',
  types: IDENTITY_EVENTS,
  // An import chunk's columns are the read model's business: this projection reads their summary.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten', 'ExternalImportChunkPlanned'],
  tables: ['users', 'api_tokens'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    const users = new RowBatch('users', USER_COLUMNS);
    const tokens = new RowBatch('api_tokens', TOKEN_COLUMNS);
    const relevant = events.filter((e) => IDENTITY_EVENTS.has(e.type));
    if (relevant.length === 0) return;
    for (const e of relevant) {
      if (USER_EVENTS.has(e.type)) users.want((e.data as { userId: number }).userId);
      else tokens.want((e.data as { tokenId: number }).tokenId);
    }
    await users.load(trx);
    await tokens.load(trx);
    for (const e of relevant) {
      if (USER_EVENTS.has(e.type)) {
        users.apply((e.data as { userId: number }).userId, e, (row) => nextUser(e, row));
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

