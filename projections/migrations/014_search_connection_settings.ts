import type { Knex } from 'knex';

/**
 * How the service reaches the search engine, as administrators set it (services/searchAdmin/,
 * docs/search.md "Connection"): one row per change, the newest in force; every process follows it
 * (services/process/searchSettings.ts). `source = 'environment'`: back to the SEARCH_* variables
 * (the other columns empty). Credentials are sealed (AES-256-GCM, infra/crypto/secretBox.ts): a
 * `*_sealed` column holds `v1.<key id>.<iv>.<tag>.<ciphertext>`, never the plaintext.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('search_connection_settings', (t) => {
    t.bigIncrements('id').primary();
    t.text('source').notNullable();
    t.text('engine');
    t.text('url');
    t.text('username');
    t.text('password_sealed');
    t.text('api_key_sealed');
    t.boolean('ssl_verify');
    t.text('ssl_ca_path');
    t.text('ssl_ca_sealed');
    t.timestamp('changed_at', { useTz: true }).notNullable();
    /** The administrator who changed it (users.id). */
    t.integer('changed_by');
  });
  await knex.raw(`ALTER TABLE search_connection_settings ADD CONSTRAINT search_connection_settings_source
    CHECK (source IN ('administrator', 'environment'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('search_connection_settings');
}
