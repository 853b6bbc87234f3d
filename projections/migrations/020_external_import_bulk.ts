import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/**
 * The external-tool migration writes its large datasets in bulk (ExternalImportRowsWritten): cases,
 * runs, run cases, results, sessions and session results say which job wrote them
 * (`external_import_job_id`), as rows of a result import say theirs (`import_job_id`).
 */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['repository_cases', 'test_runs', 'test_run_cases', 'test_run_results', 'sessions', 'session_results']) {
    await knex.schema.alterTable(table, (t) => t.dropColumn('external_import_job_id'));
  }
}
