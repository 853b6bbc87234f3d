import type { Knex } from 'knex';

/**
 * Stored files (projections/files.ts): one row per upload with what owns it (the project, an
 * import job, an attachment), who stored it and through what, and when it was deleted and why.
 * Indexed for the questions asked of it: a user's storage in use (the quota), a job's or an
 * attachment's files, a run's import files, and the sweep of files whose owner is gone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stored_files', (t) => {
    t.text('key').primary();
    t.integer('project_id').notNullable();
    /** project (uploaded for it, not attached yet) | attachment | importJob */
    t.text('owner').notNullable();
    t.integer('import_job_id');
    t.integer('attachment_id');
    t.text('name').notNullable();
    t.text('mime_type').notNullable();
    t.bigInteger('size').notNullable();
    t.text('sha256').notNullable();
    t.integer('uploaded_by_id');
    t.integer('token_id');
    t.text('via').notNullable();
    t.timestamp('stored_at', { useTz: true }).notNullable();
    t.timestamp('deleted_at', { useTz: true });
    t.text('delete_reason');
    t.bigInteger('revision').notNullable();
  });
  await knex.raw('CREATE INDEX stored_files_in_use ON stored_files (uploaded_by_id) INCLUDE (size) WHERE deleted_at IS NULL');
  await knex.raw('CREATE INDEX stored_files_by_import_job ON stored_files (import_job_id) WHERE import_job_id IS NOT NULL');
  await knex.raw('CREATE INDEX stored_files_by_attachment ON stored_files (attachment_id) WHERE attachment_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('stored_files');
}
