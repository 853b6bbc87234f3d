import type { Knex } from 'knex';
import * as m001 from './001_read_model';
import * as m002 from './002_relay';
import * as m003 from './003_catalogue';
import * as m004 from './004_rate_limits';
import * as m005 from './005_audit';
import * as m006 from './006_accounts';
import * as m007 from './007_imports';
import * as m008 from './008_import_completion';
import * as m010 from './010_case_identity';
import * as m011 from './011_stored_files';
import * as m012 from './012_unique_claims';
import * as m013 from './013_search_failures';
import * as m014 from './014_search_connection_settings';
import * as m015 from './015_search_reindex_jobs';
import * as m016 from './016_search_indexing_rate';
import * as m019 from './019_external_imports';
import * as m017 from './017_notifications';
import * as m018 from './018_job_leases';
import * as m020 from './020_external_import_bulk';
import * as m021 from './021_external_import_rows_indexes';
import * as m022 from './022_case_quarantines';
import * as m023 from './023_history';
import * as m024 from './024_statistics';
import * as m025 from './025_signature_meanings';
import * as m026 from './026_digest_keys';
import * as m027 from './027_parked_events';
import * as m029 from './029_secret_keys';
import * as m030 from './030_run_suite_properties';
import * as m031 from './031_users_email_live';
import * as m032 from './032_statistics_pending';

/** Numbered read-model migrations, listed explicitly so that they run the same from src and dist. */
const MIGRATIONS: Record<string, Knex.Migration> = {
  '001_read_model': m001,
  '002_relay': m002,
  '003_catalogue': m003,
  '004_rate_limits': m004,
  '005_audit': m005,
  '006_accounts': m006,
  '007_imports': m007,
  '008_import_completion': m008,
  '010_case_identity': m010,
  '011_stored_files': m011,
  '012_unique_claims': m012,
  '013_search_failures': m013,
  '014_search_connection_settings': m014,
  '015_search_reindex_jobs': m015,
  '016_search_indexing_rate': m016,
  '019_external_imports': m019,
  '017_notifications': m017,
  '018_job_leases': m018,
  '020_external_import_bulk': m020,
  '021_external_import_rows_indexes': m021,
  '022_case_quarantines': m022,
  '023_history': m023,
  '024_statistics': m024,
  '025_signature_meanings': m025,
  '026_digest_keys': m026,
  '027_parked_events': m027,
  '029_secret_keys': m029,
  '030_run_suite_properties': m030,
  '031_users_email_live': m031,
  '032_statistics_pending': m032,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(MIGRATIONS).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => MIGRATIONS[name],
};

export async function migrateReadModel(knex: Knex): Promise<void> {
  await knex.migrate.latest({ migrationSource, tableName: 'read_model_migrations' });
}
