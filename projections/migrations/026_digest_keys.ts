import type { Knex } from 'knex';

/**
 * Long text is never a btree key (issue 35): an index row holds at most 2,704 bytes, and a case's
 * title and class (2,000 characters each, up to 4 bytes a character, more in events written
 * before the limits) or an old folder name can outgrow it, which stopped the read model. The
 * lookups by name index an md5 digest of the text instead; the queries compare the digest (the
 * index) and the text itself (the answer). Statistics that sum durations are kept in bigint columns.
 * Rebuilt in place on a database with data: each index
 * is made beside the old one, then the old one goes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX repository_cases_identity_digest ON repository_cases (project_id, source, md5(title)) WHERE NOT is_deleted`);
  await knex.raw('DROP INDEX IF EXISTS repository_cases_identity');
  await knex.raw('ALTER INDEX repository_cases_identity_digest RENAME TO repository_cases_identity');
  await knex.raw(`CREATE INDEX repository_folders_by_name_digest ON repository_folders (project_id, parent_id, md5(name)) WHERE NOT is_deleted`);
  await knex.raw('DROP INDEX IF EXISTS repository_folders_by_name');
  await knex.raw('ALTER INDEX repository_folders_by_name_digest RENAME TO repository_folders_by_name');
  // Durations summed over a run's cases or a day's executions outgrow integer (10,000 cases of 5 minutes: 3e9 ms).
  await knex.raw('ALTER TABLE test_run_statistics ALTER COLUMN duration_ms TYPE bigint');
  await knex.raw('ALTER TABLE case_daily_statistics ALTER COLUMN duration_ms TYPE bigint');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE case_daily_statistics ALTER COLUMN duration_ms TYPE integer');
  await knex.raw('ALTER TABLE test_run_statistics ALTER COLUMN duration_ms TYPE integer');
  await knex.raw('DROP INDEX repository_folders_by_name');
  await knex.raw(`CREATE INDEX repository_folders_by_name ON repository_folders (project_id, parent_id, name) WHERE NOT is_deleted`);
  await knex.raw('DROP INDEX repository_cases_identity');
  await knex.raw(`CREATE INDEX repository_cases_identity ON repository_cases (project_id, source, title, class_name) WHERE NOT is_deleted`);
}
