import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/** The whole domain of the entity catalogue: planning, runs, sessions, customisation, links. */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
  // A plain unique index (not a constraint), so that a rebuild may drop it while it bulk-loads.
  await knex.raw('CREATE UNIQUE INDEX repository_case_versions_case_version ON repository_case_versions (repository_case_id, version)');
}

export async function down(): Promise<void> {
  throw new Error('003_catalogue cannot be undone; rebuild the read model instead');
}
