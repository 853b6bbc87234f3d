import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/**
 * Import jobs: the position of the event that finished a job (ImportCompleted or ImportFailed), so
 * that GET /api/imports/{jobId} says `completed` only once the other read models applied it too;
 * the CI context a job was requested with. Test runs: where they came from (branch, commit, build
 * URL, CI job id and attempt: new catalogue fields).
 */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
  await knex.schema.alterTable('import_jobs', (t) => {
    t.bigInteger('final_position');
    t.jsonb('ci');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('import_jobs', (t) => {
    t.dropColumn('ci');
    t.dropColumn('final_position');
  });
  await knex.schema.alterTable('test_runs', (t) => {
    for (const column of ['branch', 'commit_sha', 'build_url', 'ci_job_id', 'ci_attempt']) t.dropColumn(column);
  });
}
