import type { Knex } from 'knex';

/**
 * The keys of the secrets events carry sealed (an integration's `settings.apiToken`;
 * contracts/secrets.ts, infra/crypto/secretVault.ts): one random key per secret, itself sealed
 * with the process's SECRETS_KEY. Kept outside the log on purpose, and not a read model (nothing
 * rebuilds it): deleting a row forgets its secret everywhere the sealed value was copied.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('secret_keys', (t) => {
    t.uuid('secret_id').primary();
    /** The secret's own 32-byte key, sealed: v1.<key id of SECRETS_KEY>.<iv>.<tag>.<ciphertext>. */
    t.text('key_sealed').notNullable();
    /** What the secret is (`integration 4 settings.apiToken`), never its value. */
    t.text('label').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('secret_keys');
}
