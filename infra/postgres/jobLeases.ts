import type pg from 'pg';
import type { JobLeases } from '../../services/shared/jobLeases';

/**
 * Job leases in the table job_leases (read-model migration 018_job_leases), one statement per
 * call. Expiry is the database's `now()`, so the clocks of the workers do not matter. Two workers
 * taking the same lease at once meet on the row lock of `ON CONFLICT DO UPDATE`: the second sees
 * the first's row and its WHERE (expired, or ours) decides, so exactly one of them gets it.
 */
const ACQUIRE = `
  INSERT INTO job_leases AS l (kind, job_id, owner, expires_at, acquired_at, renewed_at)
  VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond', now(), now())
  ON CONFLICT (kind, job_id) DO UPDATE
     SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, renewed_at = EXCLUDED.renewed_at,
         acquired_at = CASE WHEN l.owner = EXCLUDED.owner THEN l.acquired_at ELSE EXCLUDED.acquired_at END
   WHERE l.owner = EXCLUDED.owner OR l.expires_at <= now()
  RETURNING 1`;

/**
 * Ours while the row names us, even past its expiry: nobody else took it in between (taking it
 * would have written their name, releasing it deleted the row), so nobody else ran the job either.
 */
const RENEW = `
  UPDATE job_leases SET expires_at = now() + $4 * interval '1 millisecond', renewed_at = now()
   WHERE kind = $1 AND job_id = $2 AND owner = $3`;

const RELEASE = 'DELETE FROM job_leases WHERE kind = $1 AND job_id = $2 AND owner = $3';

const HOLDER = 'SELECT owner, expires_at FROM job_leases WHERE kind = $1 AND job_id = $2 AND expires_at > now()';

const OWNERS = 'SELECT DISTINCT owner FROM job_leases WHERE expires_at > now() ORDER BY owner';

const EXPIRE = 'UPDATE job_leases SET expires_at = now() WHERE owner = ANY($1::text[]) AND expires_at > now()';

export class PostgresJobLeases implements JobLeases {
  constructor(private readonly pool: Pick<pg.Pool, 'query'>) {}

  async acquire(kind: string, jobId: number, owner: string, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query({ name: 'job-lease-acquire', text: ACQUIRE, values: [kind, jobId, owner, ttlOf(ttlMs)] });
    return rowCount === 1;
  }

  async renew(kind: string, jobId: number, owner: string, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query({ name: 'job-lease-renew', text: RENEW, values: [kind, jobId, owner, ttlOf(ttlMs)] });
    return rowCount === 1;
  }

  async release(kind: string, jobId: number, owner: string): Promise<void> {
    await this.pool.query({ name: 'job-lease-release', text: RELEASE, values: [kind, jobId, owner] });
  }

  async holder(kind: string, jobId: number): Promise<{ owner: string; expiresAt: Date } | null> {
    const { rows } = await this.pool.query<{ owner: string; expires_at: Date }>({ name: 'job-lease-holder', text: HOLDER, values: [kind, jobId] });
    return rows.length === 0 ? null : { owner: rows[0].owner, expiresAt: rows[0].expires_at };
  }

  async owners(): Promise<string[]> {
    const { rows } = await this.pool.query<{ owner: string }>(OWNERS);
    return rows.map((r) => r.owner);
  }

  async expire(owners: readonly string[]): Promise<number> {
    if (owners.length === 0) return 0;
    const { rowCount } = await this.pool.query(EXPIRE, [[...owners]]);
    return rowCount ?? 0;
  }
}

function ttlOf(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`a lease's ttl must be a positive number of milliseconds, not ${ttlMs}`);
  return Math.ceil(ttlMs);
}
