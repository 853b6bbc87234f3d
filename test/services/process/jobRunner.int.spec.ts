import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import type pg from 'pg';
import pino from 'pino';
import { createPool } from '../../../infra/postgres/database';
import { PostgresJobLeases } from '../../../infra/postgres/jobLeases';
import { JobAborted, backoffDelay, interleave, startJobRunner, type JobKind, type JobRunner } from '../../../services/process/worker/jobRunner';
import { createMigratedDatabase, cutConnections, restoreConnections, withApplicationName, type TestDatabase } from '../../support/database';
import { waitUntil } from '../../support/wait';
import { TABLE_JOBS_DDL, pause, tableJobKind } from './tableJobs';

interface LogLine { level: number; msg: string; kind?: string; jobId?: number; err?: { message: string }; [k: string]: unknown }

function capturingLogger() {
  const lines: LogLine[] = [];
  return { logger: pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) }), lines };
}

/** An in-memory kind: its candidates are a list; run() records its start, then waits for its abort (or `work`). */
function memoryKind(kind: string, ids: number[], work?: (jobId: number, signal: AbortSignal) => Promise<void>) {
  const started: number[] = [];
  const aborted: { jobId: number; reason: unknown }[] = [];
  const jobs: JobKind = {
    kind,
    candidates: async () => [...ids],
    async run(jobId, signal) {
      started.push(jobId);
      try {
        await (work ? work(jobId, signal) : pause(3_600_000, signal));
        ids.splice(ids.indexOf(jobId), 1);
      } catch (err) {
        if (signal.aborted) aborted.push({ jobId, reason: signal.reason });
        throw err;
      }
    },
  };
  return { jobs, started, aborted };
}

const WORKER = path.join(__dirname, 'tableJobs.ts');

describe('job runner: leased background jobs across workers (real PostgreSQL)', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  const runners: JobRunner[] = [];
  const children: ChildProcess[] = [];
  const extraPools: pg.Pool[] = [];

  const runner = (opts: Partial<Parameters<typeof startJobRunner>[0]> & Pick<Parameters<typeof startJobRunner>[0], 'kinds'>) => {
    const r = startJobRunner({ leases: new PostgresJobLeases(pool), concurrency: 3, pollMs: 50, leaseTtlMs: 1_000, logger: pino({ level: 'silent' }), ...opts });
    runners.push(r);
    return r;
  };

  before(async () => {
    db = await createMigratedDatabase('job_runner');
    pool = createPool(db.url, 12);
    await pool.query(TABLE_JOBS_DDL);
  });
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    await Promise.all(extraPools.splice(0).map((p) => p.end()));
    await pool.query('TRUNCATE test_jobs, test_job_runs, job_leases');
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });

  const runsOf = async () => (await pool.query<{ job_id: number; owner: string; outcome: string | null }>('SELECT job_id, owner, outcome FROM test_job_runs ORDER BY id')).rows;
  const leaseRows = async () => (await pool.query('SELECT kind, job_id, owner FROM job_leases')).rows;

  it('twenty jobs, two runners on one database: each job runs exactly once, both take part, every lease is released', async () => {
    await pool.query('INSERT INTO test_jobs (id, work_ms) SELECT g, 80 FROM generate_series(1, 20) g');
    runner({ owner: 'a', kinds: [tableJobKind(pool, 'a')] });
    runner({ owner: 'b', kinds: [tableJobKind(pool, 'b')] });
    await waitUntil(async () => (await pool.query('SELECT 1 FROM test_jobs WHERE done_at IS NULL')).rowCount === 0, 'every job done');
    // Let both poll a few more times: a finished job must not run again.
    await new Promise((r) => setTimeout(r, 300));
    await Promise.all(runners.map((r) => r.stop()));

    const runs = await runsOf();
    expect(runs.map((r) => r.job_id).sort((x, y) => x - y)).to.deep.equal(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(runs.every((r) => r.outcome === 'done')).to.equal(true);
    expect(new Set(runs.map((r) => r.owner))).to.deep.equal(new Set(['a', 'b']));
    const { rows: [overlap] } = await pool.query(`
      SELECT count(*)::int AS n FROM test_job_runs x JOIN test_job_runs y ON x.id < y.id AND x.owner = y.owner
       WHERE tstzrange(x.started_at, x.ended_at) && tstzrange(y.started_at, y.ended_at)
       GROUP BY x.owner ORDER BY n DESC LIMIT 1`);
    expect(overlap.n, 'a runner ran several jobs at once').to.be.greaterThan(0);
    expect(await leaseRows()).to.deep.equal([]);
  });

  it('a worker process killed (SIGKILL) mid-job: its lease holds the job until it expires, then the other runner takes the job over', async () => {
    await pool.query('INSERT INTO test_jobs (id, work_ms) VALUES (1, 3600000)');
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', WORKER], {
      env: { ...process.env, DATABASE_URL: db.url, JOB_OWNER: 'doomed', LEASE_TTL_MS: '1500', POLL_MS: '50' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    await waitUntil(async () => (await runsOf()).length === 1, 'the worker process to start the job', 60_000, () => output);
    expect((await new PostgresJobLeases(pool).holder('tableJob', 1))?.owner).to.equal('doomed');

    const survivor = runner({ owner: 'survivor', leaseTtlMs: 1_500, kinds: [tableJobKind(pool, 'survivor')] });
    // Several TTLs while the worker lives: it renews, and the survivor does not take the job.
    await new Promise((r) => setTimeout(r, 4_000));
    expect(await runsOf()).to.deep.equal([{ job_id: 1, owner: 'doomed', outcome: null }]);
    expect(survivor.status().running).to.deep.equal([]);
    const beforeKill = (await new PostgresJobLeases(pool).holder('tableJob', 1))!;
    expect(beforeKill.owner).to.equal('doomed');

    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    await pool.query('UPDATE test_jobs SET work_ms = 50 WHERE id = 1'); // what is left of the job is short
    await waitUntil(async () => (await runsOf()).length === 2 && (await runsOf())[1].outcome === 'done', 'the survivor to take the job over and finish it', 30_000);

    const runs = await runsOf();
    expect(runs).to.deep.equal([{ job_id: 1, owner: 'doomed', outcome: null }, { job_id: 1, owner: 'survivor', outcome: 'done' }]);
    const { rows: [taken] } = await pool.query(`SELECT started_at FROM test_job_runs WHERE owner = 'survivor'`);
    expect(taken.started_at.getTime(), 'not before the dead worker\'s lease expired').to.be.at.least(beforeKill.expiresAt.getTime());
    await waitUntil(async () => (await leaseRows()).length === 0, 'the survivor to release the lease');
  });

  it('a lease taken by another worker: the job\'s signal aborts (job-lease-lost), it is logged, and the other\'s lease is left alone', async () => {
    const { logger, lines } = capturingLogger();
    const jobs = memoryKind('memory', [7]);
    const r = runner({ owner: 'mine', kinds: [jobs.jobs], leaseTtlMs: 600, logger });
    await waitUntil(() => jobs.started.length === 1, 'the job to start');
    // What another worker's acquire does once the lease expired: the row names it now.
    await pool.query(`UPDATE job_leases SET owner = 'thief', expires_at = now() + interval '1 minute' WHERE kind = 'memory' AND job_id = 7`);
    await waitUntil(() => jobs.aborted.length === 1, 'the job to be aborted');
    expect(jobs.aborted[0].reason).to.be.instanceOf(JobAborted);
    expect((jobs.aborted[0].reason as JobAborted).code).to.equal('job-lease-lost');
    await waitUntil(() => r.status().running.length === 0, 'the runner to let the job go');
    expect(await leaseRows()).to.deep.equal([{ kind: 'memory', job_id: 7, owner: 'thief' }]);
    expect(lines.some((l) => l.level === 40 && l.jobId === 7 && /taken by another worker/.test(l.msg))).to.equal(true);
    expect(lines.some((l) => l.level >= 50), 'a lost lease is no job failure').to.equal(false);
    // Not taken here again while the thief holds it.
    await new Promise((res) => setTimeout(res, 300));
    expect(jobs.started).to.deep.equal([7]);
  });

  it('renewals failing (the database refuses connections) until the lease may expire: the job\'s signal aborts', async () => {
    const leasePool = createPool(withApplicationName(db.url, 'leases_cut'), 2);
    extraPools.push(leasePool);
    const { logger, lines } = capturingLogger();
    const jobs = memoryKind('memory', [8]);
    runner({ owner: 'mine', kinds: [jobs.jobs], leases: new PostgresJobLeases(leasePool), leaseTtlMs: 900, logger });
    await waitUntil(() => jobs.started.length === 1, 'the job to start');
    const cutAt = Date.now();
    try {
      await cutConnections(db, 'leases_cut');
      await waitUntil(() => jobs.aborted.length === 1, 'the job to be aborted', 10_000);
    } finally {
      await restoreConnections(db);
    }
    expect((jobs.aborted[0].reason as JobAborted).code).to.equal('job-lease-lost');
    expect(Date.now() - cutAt, 'aborted within about a TTL').to.be.below(5_000);
    expect(lines.some((l) => l.jobId === 8 && /could not be renewed before it expires/.test(l.msg))).to.equal(true);
  });

  it('a job that throws is logged with its error, its lease released, and this runner leaves it alone for a backoff that doubles', async () => {
    const { logger, lines } = capturingLogger();
    const attempts: number[] = [];
    const jobs = memoryKind('memory', [3, 4], async (jobId) => {
      if (jobId === 3) {
        attempts.push(Date.now());
        throw new Error('the export is not a zip');
      }
    });
    const r = runner({ owner: 'mine', kinds: [jobs.jobs], pollMs: 10, logger, errorBackoff: { firstMs: 400, maxMs: 10_000 } });
    await waitUntil(() => attempts.length >= 3, 'three attempts', 10_000);
    await r.stop();
    // A tight loop at pollMs = 10 would have made a hundred attempts; a backoff of 400 then 800 ms makes three.
    expect(attempts).to.have.length(3);
    expect(attempts[1] - attempts[0]).to.be.at.least(400);
    expect(attempts[2] - attempts[1]).to.be.at.least(800);
    const failures = lines.filter((l) => l.level === 50 && l.jobId === 3);
    expect(failures.map((l) => [l.err?.message, l.failures, l.retryAfterMs])).to.deep.equal([
      ['the export is not a zip', 1, 400], ['the export is not a zip', 2, 800], ['the export is not a zip', 3, 1600],
    ]);
    expect(r.status().backingOff).to.deep.include.members([{ kind: 'memory', jobId: 3, failures: 3, until: r.status().backingOff[0].until }]);
    expect(jobs.started.filter((id) => id === 4), 'the other job ran, once').to.deep.equal([4]);
    expect(await leaseRows()).to.deep.equal([]);
  });

  it('stop(): every job aborts (job-runner-stopping), the runner waits for them and releases their leases, and polls no more', async () => {
    const ids = [1, 2, 3, 4, 5];
    const jobs = memoryKind('memory', ids, async (_, signal) => {
      try {
        await pause(3_600_000, signal);
      } catch (err) {
        await new Promise((res) => setTimeout(res, 200)); // winding down takes a while
        throw err;
      }
    });
    const r = runner({ owner: 'mine', kinds: [jobs.jobs], concurrency: 2 });
    await waitUntil(() => jobs.started.length === 2, 'two jobs to start');
    expect(r.status().running.map((j) => j.jobId)).to.deep.equal([1, 2]);
    expect((await leaseRows()).map((l) => l.job_id).sort()).to.deep.equal([1, 2]);
    await r.stop();
    expect(jobs.aborted.map((a) => [a.jobId, (a.reason as JobAborted).code])).to.deep.equal([[1, 'job-runner-stopping'], [2, 'job-runner-stopping']]);
    expect(r.status()).to.deep.include({ state: 'stopped', running: [] });
    expect(await leaseRows()).to.deep.equal([]);
    await new Promise((res) => setTimeout(res, 300));
    expect(jobs.started).to.deep.equal([1, 2]);
  });

  it('concurrency counts the jobs of every kind together, and the kinds take turns', async () => {
    const a = memoryKind('kindA', [1, 2, 3]);
    const b = memoryKind('kindB', [1, 2, 3]);
    const r = runner({ owner: 'mine', kinds: [a.jobs, b.jobs], concurrency: 3 });
    await waitUntil(() => r.status().running.length === 3, 'three jobs to run');
    await new Promise((res) => setTimeout(res, 200));
    expect(r.status().running.map((j) => `${j.kind}:${j.jobId}`).sort()).to.deep.equal(['kindA:1', 'kindA:2', 'kindB:1']);
    expect(r.status().owner).to.equal('mine');
  });

  it('a kind whose candidates cannot be read is reported, once, and does not hold up the other kinds', async () => {
    const { logger, lines } = capturingLogger();
    const broken: JobKind = { kind: 'broken', candidates: () => pool.query('SELECT id FROM no_such_table').then(() => []), run: async () => undefined };
    const fine = memoryKind('fine', [1]);
    const r = runner({ owner: 'mine', kinds: [broken, fine.jobs], pollMs: 20, logger });
    await waitUntil(() => fine.started.length === 1, 'the other kind\'s job to start');
    await new Promise((res) => setTimeout(res, 200));
    expect(r.status().lastError).to.match(/no_such_table/);
    expect(lines.filter((l) => /cannot poll for jobs/.test(l.msg))).to.have.length(1);
    expect(() => startJobRunner({ leases: new PostgresJobLeases(pool), kinds: [fine.jobs, fine.jobs], concurrency: 1, pollMs: 10, leaseTtlMs: 100, logger }))
      .to.throw(RangeError, /distinct/);
    expect(() => startJobRunner({ leases: new PostgresJobLeases(pool), kinds: [], concurrency: 0, pollMs: 10, leaseTtlMs: 100, logger })).to.throw(RangeError);
  });

  it('wake() polls at once, whatever pollMs; an owner not given is <host>:<pid>:<random>', async () => {
    const ids: number[] = [];
    const jobs = memoryKind('memory', ids, async () => undefined);
    const r = runner({ kinds: [jobs.jobs], pollMs: 3_600_000 });
    expect(r.status().owner).to.match(new RegExp(`^[^:]+:${process.pid}:[0-9a-f]{8}$`));
    await new Promise((res) => setTimeout(res, 200)); // the first poll found nothing
    ids.push(11);
    r.wake();
    await waitUntil(() => jobs.started.length === 1, 'the job to start after wake()', 5_000);
  });

  it('backoffDelay doubles up to its cap; interleave takes the lists in turn', () => {
    expect([1, 2, 3, 4, 5, 40].map((n) => backoffDelay(n, { firstMs: 5_000, maxMs: 300_000 }))).to.deep.equal([5_000, 10_000, 20_000, 40_000, 80_000, 300_000]);
    expect(interleave<number | string>([[1, 2, 3], [], ['a']])).to.deep.equal([1, 'a', 2, 3]);
  });
});
