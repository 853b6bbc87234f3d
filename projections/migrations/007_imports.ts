import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/**
 * Result import: the execution details of results (message, failure type, stack trace, output,
 * file, line, properties), which import created a folder, case, run case or result, the lookups
 * the import saga makes per chunk (a case by project, source, name and class; a folder by parent
 * and name), and the import jobs' own read model (projections/imports.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
  await knex.raw(`CREATE INDEX repository_cases_identity ON repository_cases (project_id, source, title, class_name) WHERE NOT is_deleted`);
  await knex.raw(`CREATE INDEX repository_folders_by_name ON repository_folders (project_id, parent_id, name) WHERE NOT is_deleted`);
  await knex.raw(`CREATE INDEX test_run_cases_by_case ON test_run_cases (test_run_id, repository_case_id)`);
  await knex.schema.createTable('import_jobs', (t) => {
    t.integer('job_id').primary();
    t.integer('project_id').notNullable().index();
    t.integer('test_run_id');
    /** queued → running → completed | failed */
    t.text('state').notNullable();
    t.text('endpoint').notNullable();
    t.text('format').notNullable();
    t.text('test_run_name');
    t.jsonb('options').notNullable();
    t.jsonb('files').notNullable();
    t.integer('total_cases');
    t.integer('processed_cases').notNullable().defaultTo(0);
    t.integer('chunks').notNullable().defaultTo(0);
    t.jsonb('counts');
    t.jsonb('warnings').notNullable();
    t.integer('warning_count').notNullable().defaultTo(0);
    t.jsonb('error');
    t.integer('created_by_id');
    t.integer('token_id');
    t.text('via').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('finished_at', { useTz: true });
    t.bigInteger('revision').notNullable();
  });
  await knex.raw(`CREATE INDEX import_jobs_unfinished ON import_jobs (job_id) WHERE state IN ('queued', 'running')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('import_jobs');
  await knex.raw('DROP INDEX test_run_cases_by_case');
  await knex.raw('DROP INDEX repository_folders_by_name');
  await knex.raw('DROP INDEX repository_cases_identity');
  for (const [table, columns] of [
    ['test_run_results', ['message', 'failure_type', 'stack_trace', 'system_out', 'system_err', 'file', 'line', 'properties', 'import_job_id']],
    ['test_run_cases', ['import_job_id']],
    ['repository_cases', ['import_job_id']],
    ['repository_folders', ['import_job_id']],
  ] as const) {
    await knex.schema.alterTable(table, (t) => { for (const c of columns) t.dropColumn(c); });
  }
}
