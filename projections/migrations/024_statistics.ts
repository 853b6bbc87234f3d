import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/**
 * The analytics read models (docs/analytics.md): case, daily case, run and daily project
 * statistics, kept by the read model's projection (projections/statistics.ts). Their tables come
 * from the catalogue; here the keys they are recomputed and read by. The case versions get an index
 * by time: a project's cases created and changed per day are counted from them.
 */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
  await knex.schema.alterTable('case_daily_statistics', (t) => t.index(['project_id', 'day']));
  await knex.schema.alterTable('test_run_statistics', (t) => t.unique(['test_run_id']));
  await knex.schema.alterTable('project_daily_statistics', (t) => t.unique(['project_id', 'day']));
  await knex.schema.alterTable('repository_case_versions', (t) => t.index(['created_at']));
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['case_statistics', 'case_daily_statistics', 'test_run_statistics', 'project_daily_statistics']) await knex.schema.dropTableIfExists(table);
  await knex.schema.alterTable('repository_case_versions', (t) => t.dropIndex(['created_at']));
}
