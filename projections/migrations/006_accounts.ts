import type { Knex } from 'knex';

/**
 * Users as an aggregate of their own: global role, soft delete, last change. Rows written before
 * have no role (UserRegistered v1 has none), are not deleted, and last changed when created —
 * exactly what their events say, so no rebuild is needed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.integer('role_id').index();
    t.boolean('is_deleted').notNullable().defaultTo(false);
    t.timestamp('updated_at', { useTz: true });
  });
  await knex('users').update({ updated_at: knex.ref('created_at') });
  await knex.raw('ALTER TABLE users ALTER COLUMN updated_at SET NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', (t) => {
    t.dropColumn('updated_at');
    t.dropColumn('is_deleted');
    t.dropColumn('role_id');
  });
}
