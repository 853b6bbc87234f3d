import type { Knex } from 'knex';

/**
 * What the read model's batches touched, waiting to be counted into the statistics
 * (projections/statisticsQueue.ts): a row per batch segment, written in the batch's transaction,
 * deleted in the transaction that counts it. `failed_at`: a row whose counting failed with an
 * error that is not transient (a bug), kept with its error and no longer waited for.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE IF NOT EXISTS statistics_pending (
    id bigserial PRIMARY KEY,
    touched jsonb NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now(),
    failed_at timestamptz,
    error text,
    correlation_id text
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS statistics_pending');
}
