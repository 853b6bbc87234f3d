import type { Knex } from 'knex';

/**
 * Request counters of the rate limiter (services/api/rateLimit.ts), shared by every API replica.
 * Not a projection: the API writes them directly, one upsert per limited request.
 * UNLOGGED: a commit that touched only this table waits for no WAL flush, which is what keeps the
 * per-request cost at one cheap round trip; a database crash empties it, forgetting at most one
 * window of counts. fillfactor leaves room in each page so that `count = count + 1` stays a HOT
 * update. Expired windows are deleted by the limiter itself (PostgresRateLimitStore.prune).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE UNLOGGED TABLE rate_limit_counters (
      key text NOT NULL,
      window_start timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      count integer NOT NULL,
      PRIMARY KEY (key, window_start)
    ) WITH (fillfactor = 70)`);
  await knex.raw('CREATE INDEX rate_limit_counters_expires_at ON rate_limit_counters (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rate_limit_counters');
}
