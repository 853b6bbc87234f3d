import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { SealedSecret } from '../../contracts/secrets';
import type { SecretVault } from '../../services/shared/secretVault';
import { type SecretBox, secretBox } from './secretBox';

/** HKDF's info when SECRETS_KEY is derived from the server secret (another key than the search credentials'). */
export const SECRET_KEYS_INFO = 'testament/secret-keys/v1';

const TABLE = 'secret_keys';
const keyContext = (secretId: string) => `${TABLE}.key_sealed:${secretId}`;
const valueContext = (secretId: string) => `secret:${secretId}`;

/**
 * The secret vault on PostgreSQL (table secret_keys, migration 029): each secret gets a random
 * 32-byte key, which seals its value (AES-256-GCM, its id as additional data, so a value moved
 * under another id does not open); the key is kept sealed with `master` (SECRETS_KEY). Forgetting
 * deletes the key's row: the sealed value, wherever it was copied, no longer opens.
 */
export function postgresSecretVault(knex: Knex, master: SecretBox): SecretVault {
  return {
    async seal(plaintext, label) {
      const secretId = randomUUID();
      const key = randomBytes(32);
      await knex(TABLE).insert({ secret_id: secretId, key_sealed: master.seal(key.toString('base64'), keyContext(secretId)), label });
      return { $sealed: secretBox(key).seal(plaintext, valueContext(secretId)), secretId };
    },
    async open(sealed: SealedSecret) {
      const row = await knex(TABLE).where({ secret_id: sealed.secretId }).first('key_sealed');
      if (!row) return null;
      const key = Buffer.from(master.open(row.key_sealed, keyContext(sealed.secretId)), 'base64');
      return secretBox(key).open(sealed.$sealed, valueContext(sealed.secretId));
    },
    async forget(secretId) {
      return (await knex(TABLE).where({ secret_id: secretId }).delete()) > 0;
    },
  };
}
