import type { Knex } from 'knex';

/** Search reindex jobs as the administration lists them (projections/searchReindex.ts): one row per job stream. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('search_reindex_jobs', (t) => {
    t.integer('job_id').primary();
    t.text('mode').notNullable();
    t.jsonb('project_ids');
    t.jsonb('types');
    t.integer('batch_size').notNullable();
    t.timestamp('run_at', { useTz: true });
    t.integer('repeat_every_minutes');
    t.integer('repeat_of').index();
    /** queued → running → completed | cancelled | failed; queued or running ⇄ paused */
    t.text('state').notNullable();
    t.text('engine');
    t.text('target');
    t.integer('version');
    t.integer('replaces_version');
    /** Per type: { documents, total, afterId, done }. */
    t.jsonb('progress').notNullable().defaultTo('{}');
    t.integer('documents').notNullable().defaultTo(0);
    t.integer('total').notNullable().defaultTo(0);
    t.boolean('switched');
    t.jsonb('dropped_versions');
    t.jsonb('error');
    t.integer('created_by_id');
    t.integer('token_id');
    t.text('via').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('started_at', { useTz: true });
    t.timestamp('paused_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
  await knex.raw(`CREATE INDEX search_reindex_jobs_unfinished ON search_reindex_jobs (job_id) WHERE state IN ('queued', 'running', 'paused')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('search_reindex_jobs');
}
