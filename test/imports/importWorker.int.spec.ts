import { expect } from 'chai';
import pino from 'pino';
import { PostgresJobLeases } from '../../infra/postgres/jobLeases';
import { startJobRunner, type JobRunner } from '../../services/process/worker/jobRunner';
import { resultImportKind } from '../../services/process/worker/kinds';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { waitUntil } from '../support/wait';
import { importingAdmin } from './importClient';

const CASES = 30;
const report = () => `<?xml version="1.0" encoding="UTF-8"?><testsuite name="pkg.Waiting" tests="${CASES}">${
  Array.from({ length: CASES }, (_, n) => `<testcase classname="pkg.Waiting" name="case ${n}" time="0.1"/>`).join('')}</testsuite>`;

/**
 * A result import runs in a worker, not in the request: with no worker running, the request's
 * stream says the job waits for one and the job stays queued, though the client leaves; a worker
 * started later takes it and runs it to the end.
 */
describe('result import: the job waits for a worker', function () {
  this.timeout(60_000);
  let app: TestApp;
  let runner: JobRunner | null = null;

  before(async () => {
    app = await startTestApp({ resultImportWorker: false });
  });
  after(async () => {
    await runner?.stop();
    await app?.stop();
  });

  it('no worker: the stream says so and the job stays queued after the client left; a worker started later completes it', async () => {
    const { token, projectId } = await importingAdmin(app, 'No worker yet');
    const form = new FormData();
    form.append('name', 'Waiting');
    form.append('projectId', String(projectId));
    form.append('files', new Blob([report()]), 'waiting.xml');
    const res = await fetch(`${app.url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    expect(res.status).to.equal(200);
    const jobId = Number(res.headers.get('x-import-job-id'));
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('waiting for a worker')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended:\n${seen}`);
      seen += Buffer.from(value).toString();
    }
    expect(seen).to.not.include('"complete"');
    await reader.cancel(); // the client leaves

    const client = new HttpClient(app.url, token);
    await new Promise((r) => setTimeout(r, 500));
    expect((await client.get(`/api/imports/${jobId}`)).body.data).to.include({ state: 'queued', processedCases: 0 });
    expect(await app.imports.candidates()).to.deep.equal([jobId]);

    runner = startJobRunner({
      leases: new PostgresJobLeases(app.appDeps.pool), logger: pino({ level: 'silent' }), concurrency: 1, pollMs: 100, leaseTtlMs: 5000,
      kinds: [resultImportKind(app.imports)],
    });
    await waitUntil(async () => (await client.get(`/api/imports/${jobId}`)).body.data.state === 'completed', 'the job to complete in the worker');
    const job = (await client.get(`/api/imports/${jobId}`)).body.data;
    expect(job.counts).to.include({ results: CASES, newCases: CASES });
    expect((await client.post('/api/model/testRunResult/count', { where: { testRunId: job.testRunId } })).body.data).to.equal(CASES);
    expect(await app.imports.candidates()).to.deep.equal([]);
    // A read model that lags (or whose projector is down) still listing the ended job: it is not offered again.
    await app.deps.knex('import_jobs').where({ job_id: jobId }).update({ state: 'running' });
    expect(await app.imports.candidates()).to.deep.equal([]);
  });
});
