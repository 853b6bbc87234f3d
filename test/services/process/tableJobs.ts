// A job kind for the job runner's tests whose jobs are rows of a table: run() records each start
// (job, owner) in test_job_runs, works for the job's work_ms (abortable), then marks the job done.
// Run as a script (`node --require tsx/cjs tableJobs.ts`), it is a worker process of its own
// that starts a runner over that kind, for the tests that kill it.
import pg from 'pg';
import pino from 'pino';
import { PostgresJobLeases } from '../../../infra/postgres/jobLeases';
import { startJobRunner, type JobKind } from '../../../services/process/worker/jobRunner';

export const TABLE_JOBS_DDL = `
  CREATE TABLE test_jobs (id integer PRIMARY KEY, work_ms integer NOT NULL, done_at timestamptz);
  CREATE TABLE test_job_runs (
    id serial PRIMARY KEY, job_id integer NOT NULL, owner text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz, outcome text)`;

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function tableJobKind(pool: pg.Pool, owner: string, kind = 'tableJob'): JobKind {
  return {
    kind,
    async candidates() {
      const { rows } = await pool.query<{ id: number }>('SELECT id FROM test_jobs WHERE done_at IS NULL ORDER BY id');
      return rows.map((r) => r.id);
    },
    async run(jobId, signal) {
      // Resumable, as a saga is: a job another worker finished since candidates() listed it is done.
      const { rows: [job] } = await pool.query<{ work_ms: number; done_at: Date | null }>('SELECT work_ms, done_at FROM test_jobs WHERE id = $1', [jobId]);
      if (job.done_at) return;
      const { rows: [run] } = await pool.query<{ id: number }>('INSERT INTO test_job_runs (job_id, owner) VALUES ($1, $2) RETURNING id', [jobId, owner]);
      try {
        await pause(job.work_ms, signal);
      } catch (err) {
        await pool.query(`UPDATE test_job_runs SET ended_at = clock_timestamp(), outcome = 'aborted' WHERE id = $1`, [run.id]);
        throw err;
      }
      await pool.query('UPDATE test_jobs SET done_at = clock_timestamp() WHERE id = $1', [jobId]);
      await pool.query(`UPDATE test_job_runs SET ended_at = clock_timestamp(), outcome = 'done' WHERE id = $1`, [run.id]);
    },
  };
}

/** The worker process: DATABASE_URL, JOB_OWNER, LEASE_TTL_MS, POLL_MS, CONCURRENCY from the environment. */
if (require.main === module) {
  const env = process.env;
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 4 });
  const owner = env.JOB_OWNER ?? 'child';
  startJobRunner({
    owner,
    leases: new PostgresJobLeases(pool),
    kinds: [tableJobKind(pool, owner)],
    concurrency: Number(env.CONCURRENCY ?? 1),
    pollMs: Number(env.POLL_MS ?? 100),
    leaseTtlMs: Number(env.LEASE_TTL_MS ?? 1000),
    logger: pino({ level: 'info' }),
  });
}
