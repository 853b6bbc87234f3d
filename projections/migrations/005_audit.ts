import type { Knex } from 'knex';

/** The audit trail (projections/audit.ts): one row per event, and the project of every project-scoped entity. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.bigInteger('position').primary();
    t.uuid('event_id').notNullable();
    t.text('stream_id').notNullable();
    t.text('type').notNullable();
    /** The stream's category: the catalogue entity name for an entity stream. */
    t.text('entity').notNullable();
    /** The stream id after the category (`42` of `testRun-42`); '' for a stream without one. */
    t.text('entity_id').notNullable();
    t.integer('project_id');
    t.integer('actor_user_id');
    t.integer('token_id');
    t.text('session_ref');
    t.text('via').notNullable();
    t.text('ip');
    t.text('correlation_id').notNullable();
    t.text('causation_id');
    t.timestamp('recorded_at', { useTz: true }).notNullable();
    t.specificType('changed_fields', 'text[]').notNullable();
  });
  // GET /api/audit reads newest first under one filter (or a project scope): each index ends in position.
  await knex.raw('CREATE INDEX audit_events_project ON audit_events (project_id, position)');
  await knex.raw('CREATE INDEX audit_events_entity ON audit_events (entity, position)');
  await knex.raw('CREATE INDEX audit_events_entity_id ON audit_events (entity, entity_id, position)');
  await knex.raw('CREATE INDEX audit_events_actor ON audit_events (actor_user_id, position)');
  await knex.raw('CREATE INDEX audit_events_token ON audit_events (token_id, position) WHERE token_id IS NOT NULL');
  await knex.raw('CREATE INDEX audit_events_type ON audit_events (type, position)');
  await knex.raw('CREATE INDEX audit_events_via ON audit_events (via, position)');
  await knex.raw('CREATE INDEX audit_events_correlation ON audit_events (correlation_id)');
  await knex.raw('CREATE INDEX audit_events_recorded_at ON audit_events (recorded_at)');

  // The projection's own map of which project an entity belongs to, filled from earlier events.
  await knex.schema.createTable('audit_entity_projects', (t) => {
    t.text('entity').notNullable();
    t.integer('entity_id').notNullable();
    t.integer('project_id');
    /** The first hop of the entity's projectPath (`testRun` 7 for a test run case), when not the project itself. */
    t.text('parent_entity');
    t.integer('parent_id');
    t.primary(['entity', 'entity_id']);
  });
  // Audit rows whose project could not be resolved yet: on Kafka a child's partition may run ahead of its parent's.
  await knex.schema.createTable('audit_pending_projects', (t) => {
    t.bigInteger('position').primary();
    t.text('entity').notNullable();
    t.integer('entity_id').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['audit_pending_projects', 'audit_entity_projects', 'audit_events']) await knex.schema.dropTableIfExists(table);
}
