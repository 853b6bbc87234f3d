import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { generateExport } from '../../scripts/generateExport';
import { createKnex } from '../../infra/postgres/database';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { HttpClient } from '../support/server';
import { WorkerCluster } from '../support/workerCluster';
import { waitUntil } from '../support/wait';
import { JOBS, uploadExport, waitForPhase } from '../support/externalImport';

const ADMIN = { email: 'migration-admin@example.com', password: 'migration e2e password' };
const JOB_COUNT = 4;
/** Per job: enough rows that a worker is killed in the middle of one. */
const SIZES = { cases: 240, runs: 8, results: 1200, projects: 2, users: 6 };
/** The events each dataset's created rows have. */
/** Datasets written row by row: one Created event per row. */
const CREATED_EVENT: Record<string, string> = { repository_folders: 'RepositoryFolderCreated', milestones: 'MilestoneCreated' };
/** Datasets written in bulk: each row once in the job's ExternalImportRowsWritten events, under its id key, and once in its table. */
const WRITTEN_IN_BULK: Record<string, [table: string, idKey: string]> = {
  repository_cases: ['repository_cases', 'caseId'], runs: ['test_runs', 'testRunId'], run_tests: ['test_run_cases', 'testRunCaseId'],
  run_results: ['test_run_results', 'testRunResultId'], sessions: ['sessions', 'sessionId'],
};

/**
 * Workers end to end: the API with one worker in its process (`npm start`) and a second worker
 * process (`services/process/worker/main.ts`) on the same database and upload directory. Several
 * migration jobs run at once; the second worker is SIGKILLed while it imports one; its jobs are
 * taken over when their leases expire. Every job completes, and every row of every job was
 * created exactly once (one Created event per row in the job's correlation, each under the id the
 * job planned).
 * Slow: two processes (the API with a worker, a second worker) migrate 4 exports of 240 cases and 1,200 results each in 50-row chunks; the second is SIGKILLed mid-job and its jobs wait out a 3 s lease
 */
describe('external-tool migration with two workers, one SIGKILLed mid-job', function () {
  this.timeout(600_000);
  let db: TestDatabase;
  const cluster = new WorkerCluster();
  let env: NodeJS.ProcessEnv;
  const tmp = (name: string) => cluster.tmp(name);

  before(async () => {
    db = await createTestDatabase('migration_workers');
    env = {
      DATABASE_URL: db.url, UPLOAD_DIR: tmp('uploads'), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40),
      WORKER_LEASE_TTL_MS: '3000', WORKER_POLL_MS: '300', WORKER_CONCURRENCY: '2', EXTERNAL_IMPORT_CHUNK_SIZE: '50',
    };
  });
  after(async function () {
    await cluster.stop(this.currentTest?.state === 'failed');
    await db?.drop();
  });

  it('runs every job once to completion, though a worker dies in the middle of one', async () => {
    const { api, worker } = await cluster.start(env);
    const admin = new HttpClient(api.url);
    expect((await admin.post('/api/auth/login', ADMIN)).status).to.equal(200);

    const jobIds: number[] = [];
    for (let seed = 1; seed <= JOB_COUNT; seed++) {
      const file = path.join(tmp('export'), 'export.zip');
      await generateExport({ ...SIZES, seed, format: 'zip', matchEmails: [] }, fs.createWriteStream(file));
      const up = await uploadExport(api.url, admin, fs.readFileSync(file), `export-${seed}.zip`);
      expect(up.status, JSON.stringify(up.body)).to.equal(201);
      jobIds.push(up.body.data.jobId);
    }
    for (const jobId of jobIds) {
      const job = await waitForPhase(admin, jobId, ['analysed', 'failed']);
      expect(job.phase, JSON.stringify(job.error)).to.equal('analysed');
      // The jobs run side by side: none creates a configuration row another would create too (a
      // unique name); each maps what exists and skips the rest, so the jobs only add their own data.
      const mappings = Object.fromEntries(Object.entries(job.suggestions as Record<string, Array<{ sourceId: string; action: string }>>)
        .map(([key, entries]) => [key, entries.map((e) => (e.action === 'create' ? { sourceId: e.sourceId, action: 'skip' } : e))]));
      const put = await admin.request('PUT', `${JOBS}/${jobId}/configuration`, { mappings });
      expect(put.status, JSON.stringify(put.body)).to.equal(200);
    }
    for (const jobId of jobIds) expect((await admin.post(`${JOBS}/${jobId}/execute`)).status).to.equal(202);

    // The second worker holds a job that is part-way: kill it there.
    const knex = createKnex(db.url);
    try {
      let victim: number | null = null;
      await waitUntil(async () => {
        const held = await knex('job_leases').where('owner', 'like', `%:${worker.pid}:%`).andWhere('expires_at', '>', knex.fn.now()).select('job_id');
        for (const { job_id: jobId } of held) {
          const job = (await admin.get(`${JOBS}/${jobId}`)).body.data;
          if (job.phase === 'importing' && job.progress.percent >= 5 && job.progress.percent < 80) victim = jobId;
        }
        return victim !== null;
      }, 'the second worker to be part-way through a job', 240_000);
      const before = (await admin.get(`${JOBS}/${victim}`)).body.data.progress.processed as number;
      await cluster.killWorker();
      const killedAt = Date.now();
      await waitUntil(async () => (await admin.get(`${JOBS}/${victim}`)).body.data.progress.processed > before, 'the killed job to go on in the other worker', 120_000);
      console.log(`      SIGKILL → progress again after ${Date.now() - killedAt} ms (lease TTL 3000 ms)`);

      for (const jobId of jobIds) {
        const job = await waitForPhase(admin, jobId, ['completed', 'failed'], 400_000);
        expect(job.phase, JSON.stringify(job.error)).to.equal('completed');
        for (const [dataset, type] of Object.entries(CREATED_EVENT)) {
          const created = job.counts[dataset]?.created ?? 0;
          const events = await knex('audit_events').where({ correlation_id: `externalImport-${jobId}`, type })
            .select(knex.raw('count(*)::int AS n'), knex.raw('count(DISTINCT entity_id)::int AS ids')).first();
          expect(events, `job ${jobId} ${dataset}: one ${type} per created row`).to.deep.equal({ n: created, ids: created });
          const planned = await knex('external_import_rows').where({ job_id: jobId, dataset, mapped: false }).whereNotNull('entity_id').count('* as n').first();
          expect(Number(planned!.n), `job ${jobId} ${dataset}: created = planned`).to.equal(created);
        }
        const chunks = (await knex('es_events').where({ stream_id: `externalImport-${jobId}`, type: 'ExternalImportRowsWritten' }).select('data'))
          .map((r: { data: { dataset: string; fields: string[]; rows: unknown[][] } }) => r.data);
        for (const [dataset, [table, idKey]] of Object.entries(WRITTEN_IN_BULK)) {
          const created = job.counts[dataset]?.created ?? 0;
          const ids = chunks.filter((c) => c.dataset === dataset).flatMap((c) => c.rows.map((row) => row[c.fields.indexOf(idKey)]));
          expect({ n: ids.length, ids: new Set(ids).size }, `job ${jobId} ${dataset}: each created row in one chunk`).to.deep.equal({ n: created, ids: created });
          const rows = await knex(table).where({ external_import_job_id: jobId }).count('* as n').first();
          expect(Number(rows!.n), `job ${jobId} ${dataset}: each created row in ${table}`).to.equal(created);
        }
        expect(job.counts.run_results.created, `job ${jobId}`).to.be.greaterThan(0);
      }
      // Each job closes (its file and staging go) after it completes; then no lease is held.
      await waitUntil(async () => (await knex('external_import_jobs').whereIn('job_id', jobIds).where({ closed: true }).count('* as n').first())!.n === String(JOB_COUNT), 'every job closed');
      await waitUntil(async () => (await knex('job_leases').where('expires_at', '>', knex.fn.now()).count('* as n').first())!.n === '0', 'no lease held');
    } finally {
      await knex.destroy();
    }
  });
});
