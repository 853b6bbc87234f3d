import type { Knex } from 'knex';
import type { SearchSettings } from '../shared/search';
import { connectionOf, type AppliedSettings, type ConnectionSettings, type ConnectionSource } from './connection';

/**
 * Seals and opens secrets kept at rest (infra/crypto/secretBox.ts, built by the composition root
 * with SEARCH_SECRETS_KEY or a key derived from the session secret).
 */
export interface SecretSealer {
  readonly keyId: string;
  seal(plaintext: string, context: string): string;
  /** Throws if the value was sealed with another key or altered. */
  open(sealed: string, context: string): string;
}

/** A saved change of the connection: the row of search_connection_settings, its secrets opened. */
export interface SavedConnection {
  id: number;
  source: ConnectionSource;
  /** Null when `source` is `environment`. */
  settings: ConnectionSettings | null;
  changedAt: string;
  changedBy: number | null;
}

/** Saved credentials this process's key cannot open: it refuses to start (services/process/searchSettings.ts). */
export class SavedSecretsUnreadable extends Error {
  constructor(readonly settingsId: number, readonly column: string, readonly keyId: string, cause: unknown) {
    super(`the search connection settings saved by an administrator (search_connection_settings row ${settingsId}, ${column}) cannot be decrypted `
      + `with this process's key (key id ${keyId}): ${cause instanceof Error ? cause.message : String(cause)}. Start it with the SEARCH_SECRETS_KEY `
      + `they were saved with (or, without SEARCH_SECRETS_KEY, the same SESSION_SECRET); see docs/search.md, "Connection"`, { cause });
    this.name = 'SavedSecretsUnreadable';
  }
}

const TABLE = 'search_connection_settings';
const SEALED = { password: 'password_sealed', apiKey: 'api_key_sealed', sslCa: 'ssl_ca_sealed' } as const;

interface Row {
  id: string | number; source: ConnectionSource; engine: string | null; url: string | null; username: string | null;
  password_sealed: string | null; api_key_sealed: string | null; ssl_verify: boolean | null; ssl_ca_path: string | null;
  ssl_ca_sealed: string | null; changed_at: Date; changed_by: number | null;
}

/** search_connection_settings: one row per change, the newest in force. */
export class ConnectionSettingsStore {
  constructor(private readonly knex: Knex, private readonly sealer: SecretSealer) {}

  /** The id of the newest row; null: nothing was ever saved. */
  async latestId(): Promise<number | null> {
    const row = await this.knex(TABLE).max<{ id: string | null }>('id as id').first();
    return row?.id == null ? null : Number(row.id);
  }

  /** The newest row, its secrets opened; throws SavedSecretsUnreadable if this key cannot open them. */
  async latest(): Promise<SavedConnection | null> {
    const row = await this.knex<Row>(TABLE).orderBy('id', 'desc').first();
    return row ? this.opened(row) : null;
  }

  /** Who changed the settings of a row, and when (for the status answer). */
  async changeOf(id: number): Promise<{ changedAt: string; changedBy: { userId: number; name: string | null; email: string | null } | null } | null> {
    const row = await this.knex(`${TABLE} as s`).leftJoin('users as u', 'u.id', 's.changed_by').where('s.id', id)
      .first<{ changed_at: Date; changed_by: number | null; name: string | null; email: string | null } | undefined>('s.changed_at', 's.changed_by', 'u.name', 'u.email');
    if (!row) return null;
    return {
      changedAt: row.changed_at.toISOString(),
      changedBy: row.changed_by === null ? null : { userId: row.changed_by, name: row.name, email: row.email },
    };
  }

  /**
   * Saves a change in `trx` (the caller commits it once the change is recorded as an event):
   * settings sealed where secret; `null` settings: back to the environment. Answers the row's id.
   */
  async save(trx: Knex.Transaction, change: { settings: Readonly<SearchSettings> | null; changedAt: Date; changedBy: number | null }): Promise<number> {
    const s = change.settings === null ? null : connectionOf(change.settings);
    const seal = (field: keyof typeof SEALED, value: string | null) => (value === null ? null : this.sealer.seal(value, contextOf(field)));
    const [{ id }] = await trx(TABLE).insert({
      source: s === null ? 'environment' : 'administrator',
      engine: s?.engine ?? null,
      url: s?.url ?? null,
      username: s?.username ?? null,
      password_sealed: s && seal('password', s.password),
      api_key_sealed: s && seal('apiKey', s.apiKey),
      ssl_verify: s?.sslVerify ?? null,
      ssl_ca_path: s?.sslCaPath ?? null,
      ssl_ca_sealed: s && seal('sslCa', s.sslCa),
      changed_at: change.changedAt,
      changed_by: change.changedBy,
    }).returning('id');
    return Number(id);
  }

  private opened(row: Row): SavedConnection {
    const id = Number(row.id);
    const base = { id, source: row.source, changedAt: row.changed_at.toISOString(), changedBy: row.changed_by };
    if (row.source === 'environment') return { ...base, settings: null };
    const open = (field: keyof typeof SEALED): string | null => {
      const sealed = row[SEALED[field]];
      if (sealed === null) return null;
      try {
        return this.sealer.open(sealed, contextOf(field));
      } catch (error) {
        throw new SavedSecretsUnreadable(id, SEALED[field], this.sealer.keyId, error);
      }
    };
    return {
      ...base,
      settings: {
        engine: row.engine as ConnectionSettings['engine'], url: row.url, username: row.username, password: open('password'), apiKey: open('apiKey'),
        sslVerify: row.ssl_verify ?? true, sslCaPath: row.ssl_ca_path, sslCa: open('sslCa'),
      },
    };
  }
}

/** The additional authenticated data of a sealed column: a value moved to another column does not open. */
const contextOf = (field: keyof typeof SEALED) => `${TABLE}.${SEALED[field]}`;

/** The settings a process runs with: the environment's, with a saved administrator change over them. */
export function appliedSettings(environment: Readonly<SearchSettings>, saved: SavedConnection | null): AppliedSettings {
  if (saved === null) return { settings: environment, source: 'environment', settingsId: null };
  if (saved.settings === null) return { settings: environment, source: 'environment', settingsId: saved.id };
  return { settings: Object.freeze({ ...environment, ...saved.settings }), source: 'administrator', settingsId: saved.id };
}
