import type { Knex } from 'knex';

/**
 * Parked events (docs/architecture.md, "A projection never stops the service"): the events a
 * projection could not apply, and those of their streams held behind them, each with its error
 * and its tries, until a retry or a rebuild resolves them. `projection_failures` becomes
 * `parked_events`; its rows keep their meaning (kind `failed`, or `invalid` for a Kafka message
 * that is not an event; those it recorded as "stream parked after an earlier failure" are `held`).
 * The checkpoints get a generation a retry moves, so every projector re-reads its parked streams.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.renameTable('projection_failures', 'parked_events');
  await knex.schema.alterTable('parked_events', (t) => {
    t.text('kind');
    t.bigInteger('revision');
    t.integer('attempts').notNullable().defaultTo(1);
    t.timestamp('first_attempt_at', { useTz: true });
    t.timestamp('last_attempt_at', { useTz: true });
    t.text('resolution');
    t.bigInteger('notice_id');
  });
  await knex.raw('ALTER TABLE parked_events RENAME COLUMN reason TO error');
  await knex.raw('ALTER TABLE parked_events RENAME COLUMN failed_at TO parked_at');
  await knex.raw('ALTER TABLE parked_events ALTER COLUMN position DROP NOT NULL');
  await knex.raw(`UPDATE parked_events SET
      kind = CASE WHEN error = 'stream parked after an earlier failure' THEN 'held' WHEN error LIKE 'invalid message:%' THEN 'invalid' ELSE 'failed' END,
      position = CASE WHEN position = 0 THEN NULL ELSE position END,
      first_attempt_at = parked_at, last_attempt_at = parked_at,
      resolution = CASE WHEN resolved_at IS NULL THEN NULL ELSE 'rebuilt' END,
      -- Failures recorded before administrators were told of them: not told now, long after.
      notice_id = 0`);
  // An event is parked once per projection while unresolved (a redelivery records nothing new);
  // a message that is not an event, once per partition and offset.
  await knex.raw(`DELETE FROM parked_events p USING parked_events q
    WHERE p.resolved_at IS NULL AND q.resolved_at IS NULL AND p.projection = q.projection AND p.position = q.position AND p.id > q.id`);
  await knex.raw(`ALTER TABLE parked_events ALTER COLUMN kind SET NOT NULL,
    ALTER COLUMN first_attempt_at SET NOT NULL, ALTER COLUMN first_attempt_at SET DEFAULT now(),
    ALTER COLUMN last_attempt_at SET NOT NULL, ALTER COLUMN last_attempt_at SET DEFAULT now(),
    ADD CONSTRAINT parked_events_kind CHECK (kind IN ('failed', 'held', 'invalid')),
    ADD CONSTRAINT parked_events_resolution CHECK (resolution IN ('retried', 'rebuilt'))`);
  await knex.raw('CREATE UNIQUE INDEX parked_events_unresolved ON parked_events (projection, position) WHERE resolved_at IS NULL');
  await knex.raw(`CREATE UNIQUE INDEX parked_events_messages ON parked_events (projection, kafka_partition, kafka_offset)
    WHERE resolved_at IS NULL AND kafka_offset IS NOT NULL`);
  await knex.raw('CREATE INDEX parked_events_streams ON parked_events (projection, stream_id) WHERE resolved_at IS NULL');
  await knex.raw('CREATE INDEX parked_events_unnoticed ON parked_events (id) WHERE notice_id IS NULL');
  await knex.schema.alterTable('projection_checkpoints', (t) => {
    t.bigInteger('parked_generation').notNullable().defaultTo(0);
  });
  // Administrators are told of parked events once per round (services/process/parkingNotices.ts):
  // the notifications' ids are planned here first, so a crash between two of them sends none twice.
  await knex.schema.createTable('parking_notices', (t) => {
    t.bigIncrements('id');
    t.jsonb('summary').notNullable();
    t.jsonb('planned').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('sent_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('parking_notices');
  await knex.schema.alterTable('projection_checkpoints', (t) => t.dropColumn('parked_generation'));
  await knex.raw('DROP INDEX parked_events_unresolved, parked_events_messages, parked_events_streams, parked_events_unnoticed');
  await knex.raw('ALTER TABLE parked_events DROP CONSTRAINT parked_events_kind, DROP CONSTRAINT parked_events_resolution');
  await knex.raw("UPDATE parked_events SET position = 0 WHERE position IS NULL");
  await knex.raw('ALTER TABLE parked_events ALTER COLUMN position SET NOT NULL');
  await knex.raw('ALTER TABLE parked_events RENAME COLUMN parked_at TO failed_at');
  await knex.raw('ALTER TABLE parked_events RENAME COLUMN error TO reason');
  await knex.schema.alterTable('parked_events', (t) => t.dropColumns('kind', 'revision', 'attempts', 'first_attempt_at', 'last_attempt_at', 'resolution', 'notice_id'));
  await knex.schema.renameTable('parked_events', 'projection_failures');
}
