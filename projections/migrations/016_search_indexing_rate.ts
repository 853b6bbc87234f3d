import type { Knex } from 'knex';

/**
 * What the search indexer publishes for the search administration's "indexing rate", read by the
 * API wherever the indexer runs (projections/search/indexingRate.ts writes, services/searchAdmin
 * reads): documents written per minute and indexer process (old minutes deleted), and each
 * indexer process's last known state (refreshed every few seconds while it runs). And the error
 * log's order (search_failures, newest first).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('search_indexing_rate', (t) => {
    t.timestamp('minute', { useTz: true }).notNullable();
    /** The indexer process (`<host>/<pid>`). */
    t.text('indexer').notNullable();
    t.bigInteger('documents').notNullable();
    t.integer('batches').notNullable();
    t.primary(['minute', 'indexer']);
  });
  await knex.schema.createTable('search_indexer_state', (t) => {
    t.text('indexer').primary();
    t.text('host').notNullable();
    t.integer('pid').notNullable();
    t.text('state').notNullable();
    t.text('engine');
    t.integer('version');
    t.text('position').notNullable();
    t.text('last_error');
    t.bigInteger('documents_written').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw('CREATE INDEX search_failures_newest ON search_failures (failed_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS search_failures_newest');
  await knex.schema.dropTable('search_indexer_state');
  await knex.schema.dropTable('search_indexing_rate');
}
