import type { Knex } from 'knex';
import * as m001 from './001_read_model';
import * as m002 from './002_relay';
import * as m003 from './003_catalogue';

/** Numbered read-model migrations, listed explicitly so that they run the same from src and dist. */
const MIGRATIONS: Record<string, Knex.Migration> = {
  '001_read_model': m001,
  '002_relay': m002,
  '003_catalogue': m003,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(MIGRATIONS).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => MIGRATIONS[name],
};

export async function migrateReadModel(knex: Knex): Promise<void> {
  await knex.migrate.latest({ migrationSource, tableName: 'read_model_migrations' });
}
