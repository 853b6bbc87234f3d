import type { Knex } from 'knex';

/**
 * Search indexing (projections/search/): documents the engine refused after the indexer's retries,
 * one row each, recorded instead of skipped silently (resolved when a later write of the same
 * document succeeds or a rebuild replaces the version). And the indexes the indexer finds an
 * import chunk's rows by (their job id and the chunk's time, projections/search/affected.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('search_failures', (t) => {
    t.bigIncrements('id').primary();
    t.text('engine').notNullable();
    t.integer('version').notNullable();
    t.text('type').notNullable();
    t.text('doc_id').notNullable();
    /** The log position (direct) or partition:offset (Kafka) of the batch that wrote it. */
    t.text('position').notNullable();
    t.text('reason').notNullable();
    t.timestamp('failed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('resolved_at', { useTz: true });
  });
  await knex.raw('CREATE INDEX search_failures_open ON search_failures (engine, version, type, doc_id) WHERE resolved_at IS NULL');
  await knex.raw('CREATE INDEX repository_cases_by_import_chunk ON repository_cases (import_job_id, created_at) WHERE import_job_id IS NOT NULL');
  await knex.raw('CREATE INDEX test_run_results_by_import_chunk ON test_run_results (import_job_id, created_at) WHERE import_job_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS test_run_results_by_import_chunk');
  await knex.raw('DROP INDEX IF EXISTS repository_cases_by_import_chunk');
  await knex.schema.dropTable('search_failures');
}
