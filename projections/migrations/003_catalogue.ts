import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/** The whole domain of the entity catalogue: planning, runs, sessions, customisation, links. */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
  await knex.schema.alterTable('repository_case_versions', (t) => t.unique(['repository_case_id', 'version']));
}

export async function down(): Promise<void> {
  throw new Error('003_catalogue cannot be undone; rebuild the read model instead');
}
