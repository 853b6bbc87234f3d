import type { Knex } from 'knex';

/**
 * Unique-value claims (projections/claims.ts): one row per claim stream, its last claim or
 * release, and whether the claim's owner was seen written. The claim reconciler
 * (services/claims/claimReconciler.ts) reads the pending ones older than its grace period.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('unique_claims', (t) => {
    t.text('stream_id').primary();
    t.text('scope').notNullable();
    t.text('value').notNullable();
    t.integer('owner_id').notNullable();
    t.text('owner_stream').notNullable();
    /** pending: the owner was not seen yet; settled: it was; released: the claim was given up. */
    t.text('state').notNullable();
    t.timestamp('claimed_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
  await knex.raw(`CREATE INDEX unique_claims_pending ON unique_claims (claimed_at, stream_id) WHERE state = 'pending'`);
  await knex.raw(`CREATE INDEX unique_claims_pending_owner ON unique_claims (owner_stream) WHERE state = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('unique_claims');
}
