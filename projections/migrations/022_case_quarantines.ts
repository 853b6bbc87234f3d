import type { Knex } from 'knex';

/** Quarantined cases (CaseQuarantined / CaseReleased, services/quarantine/): one row per case ever quarantined, its state now. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('case_quarantines', (t) => {
    t.integer('repository_case_id').primary();
    t.integer('project_id').notNullable();
    t.boolean('is_quarantined').notNullable();
    /** The reason of the last quarantine or release. */
    t.text('reason').notNullable();
    t.integer('changed_by_id');
    t.timestamp('changed_at', { useTz: true }).notNullable();
    /** Since when it is quarantined (null once released). */
    t.timestamp('quarantined_since', { useTz: true });
    t.index(['project_id', 'is_quarantined']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('case_quarantines');
}
