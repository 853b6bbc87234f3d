import type { Knex } from 'knex';

/** Users' notifications (projections/notifications.ts): one row per notification stream. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('notifications', (t) => {
    t.integer('id').primary();
    /** The recipient: only they list it and mark it read. */
    t.integer('user_id').notNullable();
    t.text('kind').notNullable();
    t.text('title').notNullable();
    t.text('body').notNullable();
    t.text('link');
    t.text('subject_type');
    t.integer('subject_id');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('read_at', { useTz: true });
    t.bigInteger('revision').notNullable();
  });
  // GET /api/notifications' order (unread first, then newest) and its keyset, per recipient; and the unread ones alone (their count, ?unread=true).
  await knex.raw('CREATE INDEX notifications_inbox ON notifications (user_id, (read_at IS NULL) DESC, created_at DESC, id DESC)');
  await knex.raw('CREATE INDEX notifications_unread ON notifications (user_id, created_at DESC, id DESC) WHERE read_at IS NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('notifications');
}
