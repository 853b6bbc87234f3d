import type { Knex } from 'knex';

/**
 * Leases of background jobs (services/shared/jobLeases.ts, infra/postgres/jobLeases.ts): the
 * worker that holds an unexpired lease on (kind, job_id) is the one that runs the job. Not a
 * projection: workers write it directly, and no rebuild touches it. Unlike rate_limit_counters
 * (004) it is logged: a database crash that emptied it would let a second worker take a job whose
 * worker is still running it, and a renewal every few seconds per running job costs no WAL worth
 * saving. A released lease is deleted; one left by a worker that died is taken over, row and all.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE job_leases (
      kind text NOT NULL,
      job_id integer NOT NULL,
      owner text NOT NULL,
      expires_at timestamptz NOT NULL,
      acquired_at timestamptz NOT NULL,
      renewed_at timestamptz NOT NULL,
      PRIMARY KEY (kind, job_id)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('job_leases');
}
