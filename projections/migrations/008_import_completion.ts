import type { Knex } from 'knex';

/**
 * Import jobs: the position of the event that finished a job (ImportCompleted or ImportFailed), so
 * that GET /api/imports/{jobId} says `completed` only once the other read models applied it too.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('import_jobs', (t) => {
    t.bigInteger('final_position');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('import_jobs', (t) => {
    t.dropColumn('final_position');
  });
}
