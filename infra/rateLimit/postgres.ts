import type pg from 'pg';
import type { CounterWindow, RateLimitStore } from '../../services/shared/rateLimitStore';

/**
 * Rate limit counters in the UNLOGGED table rate_limit_counters (read-model migration
 * 004_rate_limits), shared by every API replica on the database. A hit is one prepared upsert for
 * all of a request's counters; the row lock of `ON CONFLICT DO UPDATE` makes concurrent hits from
 * any number of processes count exactly.
 */
const HIT = `
  INSERT INTO rate_limit_counters AS c (key, window_start, expires_at, count)
  SELECT k, s, e, n FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::int[]) AS t(k, s, e, n)
  ON CONFLICT (key, window_start) DO UPDATE SET count = c.count + EXCLUDED.count
  RETURNING c.key, c.count`;

const REFUND = `
  UPDATE rate_limit_counters AS c SET count = greatest(c.count - 1, 0)
    FROM unnest($1::text[], $2::timestamptz[]) AS t(k, s)
   WHERE c.key = t.k AND c.window_start = t.s`;

/**
 * A batch of expired rows. SKIP LOCKED: replicas pruning at the same time take different rows
 * instead of waiting for each other; requests never touch an expired row, so they never wait either.
 */
const PRUNE = `
  DELETE FROM rate_limit_counters WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM rate_limit_counters WHERE expires_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`;

const PRUNE_BATCH = 5_000;

export class PostgresRateLimitStore implements RateLimitStore {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  async hit(counters: readonly CounterWindow[], by: readonly number[] = counters.map(() => 1)): Promise<number[]> {
    if (new Set(counters.map((c) => c.key)).size !== counters.length) throw new Error('rate limit counters of one hit must have distinct keys');
    const { rows } = await this.pool.query<{ key: string; count: number }>({
      name: 'rate-limit-hit',
      text: HIT,
      values: [counters.map((c) => c.key), counters.map((c) => c.windowStart.toISOString()), counters.map((c) => c.expiresAt.toISOString()), by],
    });
    const byKey = new Map(rows.map((r) => [r.key, r.count]));
    return counters.map((c) => byKey.get(c.key)!);
  }

  async refund(counters: readonly CounterWindow[]): Promise<void> {
    await this.pool.query({
      name: 'rate-limit-refund',
      text: REFUND,
      values: [counters.map((c) => c.key), counters.map((c) => c.windowStart.toISOString())],
    });
  }

  async prune(before: Date): Promise<number> {
    let deleted = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(PRUNE, [before.toISOString(), PRUNE_BATCH]);
      deleted += rowCount ?? 0;
      if ((rowCount ?? 0) < PRUNE_BATCH) return deleted;
    }
  }
}
