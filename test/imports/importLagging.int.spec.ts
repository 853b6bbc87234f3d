import { expect } from 'chai';
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { waitUntil } from '../support/wait';
import { importingAdmin, postImport } from './importClient';

const CASES = 20;

const report = () => `<?xml version="1.0" encoding="UTF-8"?><testsuite name="pkg.Lag" tests="${CASES}">${
  Array.from({ length: CASES }, (_, n) => `<testcase classname="pkg.Lag" name="case ${n}" time="0.1"/>`).join('')}</testsuite>`;

/**
 * A read model that lags is an interruption, not a failure of the import (found by `npm run chaos`
 * on Kafka: a busy projector made the run's creation wait longer than WRITE_TIMEOUT_MS, and jobs
 * failed with `import-internal-error`). Here the `readModel` projection is held back by a lock on
 * `test_runs` for longer than the write timeout (10 s) while the job creates its run: the job goes
 * on once the read model caught up, and completes with every result.
 */
describe('import job: a lagging read model interrupts the job, it does not fail it', function () {
  this.timeout(120_000);
  let app: TestApp;
  let hold: Knex.Transaction | null = null;

  before(async () => {
    app = await startTestApp({ imports: { chunkSize: 5 } });
  });
  after(async () => {
    await hold?.rollback().catch(() => undefined);
    await app?.stop();
  });

  it('the run\'s creation waits past WRITE_TIMEOUT_MS: the job resumes and completes', async () => {
    const { token, projectId } = await importingAdmin(app, 'Lagging');
    const admin = new HttpClient(app.url, token);
    hold = await app.deps.knex.transaction();
    await hold.raw('LOCK TABLE test_runs IN EXCLUSIVE MODE'); // plain reads go on; the projection's writes wait
    const answer = postImport(app.url, '/api/junit/import', { name: 'Lagging run', projectId }, [{ name: 'lag.xml', content: report() }], token);
    let jobId = 0;
    await waitUntil(async () => {
      jobId = (await app.deps.knex('import_jobs').where({ project_id: projectId }).first('job_id'))?.job_id ?? 0;
      return jobId > 0;
    }, 'the job to be requested');
    // Longer than the write timeout the run's creation waits for.
    await new Promise((r) => setTimeout(r, 12_000));
    await hold.rollback();
    hold = null;
    let job: { state: string; error?: unknown; counts?: { results: number } } | undefined;
    await waitUntil(async () => {
      job = (await admin.get(`/api/imports/${jobId}`)).body.data;
      return job?.state === 'completed' || job?.state === 'failed';
    }, 'the job to end', 60_000);
    expect(job!.state, JSON.stringify(job)).to.equal('completed');
    expect(job!.counts!.results).to.equal(CASES);
    await answer.catch(() => undefined);
  });
});
