import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/**
 * Result import, identity and retries (docs/imports.md): a repository case's identity (the key
 * the next import finds it by, and the scope a rename derives its new key from), the keys a
 * renamed case keeps as aliases, whether a result was retried (a later attempt replaces it), and
 * suite-level output per run. Cases imported before have no identity: an import adopts them by
 * source, title and class (services/imports/importJob.saga.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('repository_cases', (t) => {
    t.text('identity_key');
    t.text('identity_scope');
  });
  await knex.raw(`CREATE INDEX repository_cases_by_identity ON repository_cases (project_id, source, identity_key) WHERE identity_key IS NOT NULL AND NOT is_deleted`);
  await knex.schema.createTable('repository_case_aliases', (t) => {
    t.integer('project_id').notNullable();
    t.text('source').notNullable();
    t.text('identity_key').notNullable();
    t.integer('repository_case_id').notNullable().index();
    t.text('title').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.primary(['project_id', 'source', 'identity_key']);
  });
  // test_run_results.retried is a catalogue field (read-only): added with the catalogue's other new columns.
  await syncCatalogueTables(knex);
  await knex.schema.createTable('test_run_suite_outputs', (t) => {
    t.increments('id').primary();
    t.integer('test_run_id').notNullable().index();
    t.integer('import_job_id').notNullable();
    t.integer('folder_id');
    t.text('suite').notNullable();
    t.text('system_out');
    t.text('system_err');
    t.timestamp('created_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('test_run_suite_outputs');
  await knex.schema.alterTable('test_run_results', (t) => t.dropColumn('retried'));
  await knex.schema.dropTable('repository_case_aliases');
  await knex.raw('DROP INDEX repository_cases_by_identity');
  await knex.schema.alterTable('repository_cases', (t) => {
    t.dropColumn('identity_key');
    t.dropColumn('identity_scope');
  });
}
