import { expect } from 'chai';
import { createKnex } from '../../infra/postgres/database';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { WorkerCluster } from '../support/workerCluster';
import { waitUntil } from '../support/wait';
import { bigReport, expectEveryResultOnce, jobWhenEnded, tokenAndProject } from './bigImport';

const ADMIN = { email: 'import-workers@example.com', password: 'import workers e2e password' };
const JOB_COUNT = 4;
const CASES = 2000;
const CHUNK = 20;

/** An import's answer: the job, and its stream read to the end in the background. */
async function startImport(url: string, token: string, project: number, name: string) {
  const form = new FormData();
  form.append('name', name);
  form.append('projectId', String(project));
  form.append('files', new Blob([bigReport(CASES)]), 'big.xml');
  const res = await fetch(`${url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  expect(res.status).to.equal(200);
  const jobId = Number(res.headers.get('x-import-job-id'));
  const told = res.text().then((text) => text.split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => JSON.parse(b.slice('data: '.length))));
  return { jobId, told };
}

/**
 * Result imports run in the worker role: `services/process/main.ts` (API, projector and a worker)
 * and a second worker process (`services/process/worker/main.ts`) on one database and upload
 * directory. Several big imports are requested through the API at once, and both workers take
 * some (a lease each); the second worker is SIGKILLed while it appends the chunks of one. The job
 * is taken over once its lease expires, every job completes with each result exactly once, and
 * every answer's stream (followed by the API in the read model, not in the worker) ends with the
 * job's `complete`, that of the job whose worker died too.
 * Slow: two processes (the service, a second worker) import 4 files of 2,000 cases in 20-case chunks at once; one is SIGKILLed mid-job and its job waits out the lease
 */
describe('result imports run by two workers, one SIGKILLed mid-job', function () {
  this.timeout(600_000);
  let db: TestDatabase;
  const cluster = new WorkerCluster();
  const tmp = (name: string) => cluster.tmp(name);

  before(async () => {
    db = await createMigratedDatabase('import_workers');
  });
  after(async function () {
    await cluster.stop(this.currentTest?.state === 'failed');
    await db?.drop();
  });

  it('every job completes once, though the worker running one dies in the middle of it', async () => {
    const env = {
      DATABASE_URL: db.url, UPLOAD_DIR: tmp('uploads'), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), IMPORT_CHUNK_SIZE: String(CHUNK),
      WORKER_LEASE_TTL_MS: '3000', WORKER_POLL_MS: '300', WORKER_CONCURRENCY: '2',
    };
    const { api, worker } = await cluster.start(env);
    const { token, client } = await tokenAndProject(api.url, ADMIN, 'Workers 0');
    const projects: number[] = [];
    for (let i = 0; i < JOB_COUNT; i++) {
      projects.push((await client.post('/api/model/project/create', { data: { name: `Workers ${i + 1}` } })).body.data.id as number);
    }
    // One project each: the jobs run side by side (one per project at a time), two in each worker.
    const imports = await Promise.all(projects.map((project, i) => startImport(api.url, token, project, `Import ${i + 1}`)));

    const knex = createKnex(db.url);
    let victim: number | null = null;
    try {
      await waitUntil(async () => {
        const held = await knex('job_leases').where({ kind: 'resultImport' }).andWhere('owner', 'like', `%:${worker.pid}:%`)
          .andWhere('expires_at', '>', knex.fn.now()).select('job_id');
        for (const { job_id: jobId } of held) {
          // How far the job is, by its own stream (the read model may be well behind the worker on a loaded machine,
          // and a job already complete there cannot be taken over): at least three chunks, less than half of them.
          const written = await knex('es_events').where({ stream_id: `importJob-${jobId}`, type: 'TestResultsImported' }).count('* as n').first();
          const complete = await knex('es_events').where({ stream_id: `importJob-${jobId}` }).whereIn('type', ['ImportCompleted', 'ImportFailed']).first('position');
          const chunks = Number(written!.n);
          if (!complete && chunks >= 3 && chunks < CASES / CHUNK / 2) victim = jobId;
        }
        return victim !== null;
      }, 'the worker process to be part-way through an import', 120_000);
      const before = (await client.get(`/api/imports/${victim}`)).body.data.processedCases as number;
      await cluster.killWorker();
      const killedAt = Date.now();
      const pid = worker.pid;
      // The dead worker's lease expires, and the API's worker takes the job as soon as it has a free slot:
      // it runs two jobs at once and may still be busy with its own two (on a loaded machine, for a minute or more).
      await waitUntil(async () => {
        const lease = await knex('job_leases').where({ kind: 'resultImport', job_id: victim }).andWhere('expires_at', '>', knex.fn.now()).first('owner');
        return lease !== undefined && !String(lease.owner).includes(`:${pid}:`);
      }, 'the killed job to be taken over', 180_000);
      console.log(`      SIGKILL → job taken over after ${Date.now() - killedAt} ms (lease TTL 3000 ms)`);

      for (const [i, { jobId, told }] of imports.entries()) {
        const job = await jobWhenEnded(client, jobId, 180_000);
        await expectEveryResultOnce(client, projects[i], job, CASES);
        const events = await told;
        expect(events.at(-1), `job ${jobId}: ${JSON.stringify(events.slice(-3))}`).to.deep.equal({ complete: true, testRunId: job.testRunId, jobId });
        const progress = events.filter((e) => 'progress' in e).map((e) => e.progress as number);
        expect(progress, `job ${jobId}: progress rises`).to.deep.equal([...progress].sort((a, b) => a - b));
      }
      // The API's worker took the killed job over, from where its stream said.
      const resumed = api.output().split('\n').filter((line) => line.includes('"resuming an unfinished import job"') && line.includes(`"jobId":${victim}`));
      expect(resumed, api.output().slice(-3000)).to.have.length(1);
      expect(JSON.parse(resumed[0]).processedCases).to.be.at.least(before);
      expect(await knex('job_leases').where('expires_at', '>', knex.fn.now()).count('* as n').first()).to.deep.equal({ n: '0' });
    } finally {
      await knex.destroy();
    }
  });
});
