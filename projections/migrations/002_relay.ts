import type { Knex } from 'knex';

/** The relay's own checkpoint: the last position acknowledged by the Kafka broker. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('relay_checkpoints', (t) => {
    t.text('name').primary();
    t.bigInteger('position').notNullable().defaultTo(0);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.alterTable('projection_failures', (t) => {
    t.text('stream_id');
    t.integer('kafka_partition');
    t.text('kafka_offset');
    // A rebuild replays the log from the event store: the failures before it are resolved.
    t.timestamp('resolved_at', { useTz: true });
  });
  await knex.schema.alterTable('projection_failures', (t) => {
    t.setNullable('event_id');
    t.setNullable('event_type');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('relay_checkpoints');
  await knex.schema.alterTable('projection_failures', (t) => {
    t.dropColumns('stream_id', 'kafka_partition', 'kafka_offset', 'resolved_at');
  });
}
