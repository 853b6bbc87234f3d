import type { Knex } from 'knex';

/** Read model of the first slice: identity, projects, repository folders and cases. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('projection_checkpoints', (t) => {
    t.text('name').primary();
    t.bigInteger('position').notNullable().defaultTo(0);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('projection_failures', (t) => {
    t.bigIncrements('id');
    t.text('projection').notNullable();
    t.bigInteger('position').notNullable();
    t.uuid('event_id').notNullable();
    t.text('event_type').notNullable();
    t.text('reason').notNullable();
    t.timestamp('failed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('users', (t) => {
    t.integer('id').primary();
    t.text('email').notNullable().unique();
    t.text('name').notNullable();
    t.text('access').notNullable();
    t.text('password_hash').notNullable();
    t.boolean('is_active').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
  await knex.schema.createTable('api_tokens', (t) => {
    t.integer('id').primary();
    t.integer('user_id').notNullable().index();
    t.text('name').notNullable();
    t.text('prefix').notNullable();
    t.text('token_hash').notNullable().unique();
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.bigInteger('revision').notNullable();
  });
  // Not a projection: last use is written by the API directly (throttled) so that a request is
  // never an event store write; a rebuild of the identity read model leaves it alone.
  await knex.schema.createTable('api_token_usage', (t) => {
    t.integer('token_id').primary();
    t.timestamp('last_used_at', { useTz: true }).notNullable();
  });

  await knex.schema.createTable('projects', (t) => {
    t.integer('id').primary();
    t.text('name').notNullable();
    t.boolean('is_deleted').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
  await knex.schema.createTable('repository_folders', (t) => {
    t.integer('id').primary();
    t.integer('project_id').notNullable().index();
    t.integer('parent_id').index();
    t.text('name').notNullable();
    t.boolean('is_deleted').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
  await knex.schema.createTable('repository_cases', (t) => {
    t.integer('id').primary();
    t.integer('project_id').notNullable().index();
    t.integer('folder_id').index();
    t.text('title').notNullable();
    t.text('description');
    t.boolean('is_deleted').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.bigInteger('revision').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['repository_cases', 'repository_folders', 'projects', 'api_token_usage', 'api_tokens', 'users', 'projection_failures', 'projection_checkpoints']) {
    await knex.schema.dropTableIfExists(table);
  }
}
