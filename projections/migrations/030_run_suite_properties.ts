import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/**
 * A run's suite properties (docs/imports.md, "Suite properties"): `test_runs.suite_properties`, a
 * read-only catalogue field the result import fills (each name with its distinct values), added
 * with its history column by syncCatalogueTables.
 */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('test_runs', (t) => t.dropColumn('suite_properties'));
  await knex.schema.alterTable('test_runs_history', (t) => t.dropColumn('suite_properties'));
}
