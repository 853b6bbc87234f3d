import type { Knex } from 'knex';

/**
 * The external-tool migration (services/migration):
 * - `external_import_jobs`: the jobs as the administration lists them (projections/externalImports.ts), one row per job stream;
 * - `external_import_rows`: every row a job planned, with its provenance (source id, key, creator, time): POST /api/lookup by
 *   `{type, externalId}` reads it, so old ids keep resolving (same projection);
 * - `external_import_staging`: not a projection: the rows of an export being imported, copied out of the uploaded file once
 *   so each dataset is read in the order the import needs (and its children by parent); deleted when the job ends.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('external_import_jobs', (t) => {
    t.integer('job_id').primary();
    /** uploaded → analysing → analysed → configured → queued → importing → completed | failed | cancelled → rollingBack → rolledBack */
    t.text('phase').notNullable();
    t.text('file_name').notNullable();
    t.bigInteger('file_size').notNullable();
    t.text('sha256').notNullable();
    t.text('container').notNullable();
    t.boolean('file_deleted').notNullable().defaultTo(false);
    /** The ended job was tidied up (ExternalImportClosed); a rollback reopens it. */
    t.boolean('closed').notNullable().defaultTo(false);
    t.jsonb('datasets');
    t.jsonb('ignored');
    t.jsonb('warnings');
    t.jsonb('errors');
    t.jsonb('totals');
    t.jsonb('sources');
    t.jsonb('suggestions');
    t.jsonb('mappings');
    t.text('duration_unit');
    /** [{dataset, rows}] in the order written. */
    t.jsonb('plan');
    /** Per dataset: { lastRow, created, skipped }. */
    t.jsonb('progress').notNullable().defaultTo('{}');
    t.text('current_dataset');
    t.jsonb('counts');
    t.jsonb('deleted');
    t.jsonb('error');
    t.boolean('cancel_requested').notNullable().defaultTo(false);
    t.integer('created_by_id');
    t.integer('token_id');
    t.text('via').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('analysed_at', { useTz: true });
    t.timestamp('configured_at', { useTz: true });
    t.timestamp('queued_at', { useTz: true });
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.timestamp('rolled_back_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
  await knex.raw(`CREATE INDEX external_import_jobs_runnable ON external_import_jobs (job_id)
    WHERE phase IN ('uploaded', 'analysing', 'queued', 'importing', 'rollingBack') OR NOT closed`);

  await knex.schema.createTable('external_import_rows', (t) => {
    t.integer('job_id').notNullable();
    t.text('dataset').notNullable();
    t.text('source_id').notNullable();
    t.text('entity').notNullable();
    /** Null: the row was skipped (`skip_reason`). */
    t.integer('entity_id');
    t.text('source_key');
    t.text('source_created_by');
    t.text('source_created_at');
    t.text('skip_reason');
    /** An existing entity the row was matched to (a project of the same name): never written, never rolled back. */
    t.boolean('mapped').notNullable().defaultTo(false);
    t.boolean('rolled_back').notNullable().defaultTo(false);
    t.primary(['job_id', 'dataset', 'source_id']);
  });
  await knex.raw('CREATE INDEX external_import_rows_by_entity ON external_import_rows (entity, entity_id) WHERE entity_id IS NOT NULL');
  await knex.raw('CREATE INDEX external_import_rows_by_source ON external_import_rows (dataset, source_id)');
  await knex.raw('CREATE INDEX external_import_rows_by_key ON external_import_rows (dataset, source_key) WHERE source_key IS NOT NULL');

  await knex.schema.createTable('external_import_staging', (t) => {
    t.integer('job_id').notNullable();
    t.text('dataset').notNullable();
    /** 1, 2, … per dataset, in file order. */
    t.integer('row_index').notNullable();
    t.text('source_id');
    /** The row's parent in its dataset's main reference (a step's case, a result's run test), for reading children with their parent. */
    t.text('parent_id');
    t.jsonb('row').notNullable();
    t.primary(['job_id', 'dataset', 'row_index']);
  });
  await knex.raw('CREATE INDEX external_import_staging_by_parent ON external_import_staging (job_id, dataset, parent_id)');
  await knex.schema.createTable('external_import_staged', (t) => {
    t.integer('job_id').primary();
    t.jsonb('counts').notNullable();
    t.timestamp('staged_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('external_import_staged');
  await knex.schema.dropTable('external_import_staging');
  await knex.schema.dropTable('external_import_rows');
  await knex.schema.dropTable('external_import_jobs');
}
