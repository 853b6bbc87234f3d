import { expect } from 'chai';
import { systemMetadata } from '../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { waitUntil } from '../support/wait';
import { expectCompleted, type ImportAnswer, importingAdmin, postImport } from './importClient';

const report = (tag: string, cases = 3) => `<?xml version="1.0" encoding="UTF-8"?><testsuite name="pkg.${tag}" tests="${cases}">${
  Array.from({ length: cases }, (_, n) => `<testcase classname="pkg.${tag}" name="case ${n}" time="0.1"/>`).join('')}</testsuite>`;

const CONTEXT = {
  branch: 'feature/login', commit: 'ABCDEF0123456789abcdef0123456789ABCDEF01', buildUrl: 'https://ci.example.com/acme/shop/-/jobs/4711',
  ciJobId: '4711', attempt: '2',
};

/**
 * An import's CI context (where the run came from) and repeated uploads: the context is checked,
 * kept on the run and the job; the same files sent again for the same CI job and attempt answer
 * with the first job and run, adding nothing (also when both arrive at once); newAttempt, another
 * attempt, or no CI job id import again.
 */
describe('result import: CI context and repeated uploads', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let token: string;
  let project: number;

  const junit = (fields: Record<string, string | number>, content: string) =>
    postImport(app.url, '/api/junit/import', { projectId: project, ...fields }, [{ name: 'report.xml', content }], token);
  const jobCount = async () => Number((await app.deps.knex('import_jobs').count({ n: '*' }))[0].n);
  const resultCount = async (testRunId: number) => (await admin.post('/api/model/testRunResult/count', { where: { testRunId } })).body.data as number;
  const completeOf = (answer: ImportAnswer) => answer.events[answer.events.length - 1];
  /** The run of a completed answer: the import's own stream, or one that followed an earlier job (rising progress, then complete). */
  const runOf = (answer: ImportAnswer) => {
    if (completeOf(answer)?.duplicateOf === undefined) return expectCompleted(answer);
    expect(answer.status).to.equal(200);
    const progress = answer.events.filter((e) => 'progress' in e).map((e) => e.progress as number);
    expect(progress).to.deep.equal([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).to.equal(100);
    expect(completeOf(answer)).to.include({ complete: true });
    return completeOf(answer).testRunId as number;
  };

  before(async () => {
    app = await startTestApp({ imports: { chunkSize: 2 } });
    ({ token, projectId: project } = await importingAdmin(app, 'CI shop'));
    admin = new HttpClient(app.url, token);
  });
  after(async () => {
    await app?.stop();
  });

  it('refuses a bad CI field with 400 invalid-ci-context (details.path, reason), storing and appending nothing', async () => {
    const bad: [string, string][] = [
      ['commit', 'xyz1234'], ['commit', 'abc12'], ['commit', 'a'.repeat(65)],
      ['buildUrl', 'ftp://ci.example.com/1'], ['buildUrl', 'javascript:alert(1)'], ['buildUrl', 'not a url'],
      ['buildUrl', 'https://user:secret@ci.example.com/1'], ['buildUrl', `https://ci.example.com/${'a'.repeat(2048)}`],
      ['attempt', '0'], ['attempt', '-1'], ['attempt', '1.5'], ['attempt', 'two'], ['attempt', '99999999999'],
      ['branch', 'b'.repeat(256)], ['branch', 'main\nX-Evil: 1'], ['ciJobId', 'j'.repeat(256)], ['ciJobId', 'job\u0000id'],
    ];
    for (const [field, value] of bad) {
      const error = await expectRefused(app, () => junit({ name: 'Refused', ...CONTEXT, [field]: value }, report('Refused')), 400);
      expect(error.code, `${field}=${value}`).to.equal('invalid-ci-context');
      expect(error.details).to.include({ path: field });
      expect(error.details.reason).to.be.a('string');
    }
    const flag = await expectRefused(app, () => junit({ name: 'Refused', ...CONTEXT, newAttempt: 'yes' }, report('Refused')), 400);
    expect(flag).to.include({ code: 'invalid-argument' });
    expect(flag.details).to.include({ path: 'newAttempt' });
    expect(await jobCount()).to.equal(0);
  });

  it('keeps the context on the new run (model API) and on the job (GET /api/imports/{jobId}); a commit in lower case', async () => {
    const answer = await junit({ name: 'With context', ...CONTEXT, ciJobId: 'ctx-1' }, report('Context'));
    const runId = expectCompleted(answer);
    const run = (await admin.post('/api/model/testRun/findUnique', { where: { id: runId } })).body.data;
    expect(run).to.include({ branch: 'feature/login', commit: CONTEXT.commit.toLowerCase(), buildUrl: CONTEXT.buildUrl, ciJobId: 'ctx-1', ciAttempt: 2 });
    const job = (await admin.get(`/api/imports/${answer.headers.get('x-import-job-id')}`)).body.data;
    expect(job.ci).to.deep.equal({ branch: 'feature/login', commit: CONTEXT.commit.toLowerCase(), buildUrl: CONTEXT.buildUrl, ciJobId: 'ctx-1', attempt: 2, newAttempt: false });
    expect(job.options).to.not.have.property('branch');
    // Filterable like any field: the runs of a branch.
    expect((await admin.post('/api/model/testRun/count', { where: { branch: 'feature/login', commit: { startsWith: 'abcdef0' } } })).body.data).to.equal(1);
  });

  it('the same files again for the same CI job and attempt: answered with the first job and run, nothing added; the job is not repeated', async () => {
    const fields = { name: 'Retried', ...CONTEXT, ciJobId: 'retry-1' };
    const first = await junit(fields, report('Retried'));
    const runId = expectCompleted(first);
    const firstJob = Number(first.headers.get('x-import-job-id'));
    const jobs = await jobCount();
    const before = (await app.deps.store.headPosition()).toString();

    const again = await junit(fields, report('Retried'));
    expect(again.status).to.equal(200);
    expect(completeOf(again), JSON.stringify(again.events)).to.deep.equal({ complete: true, testRunId: runId, jobId: firstJob, duplicateOf: firstJob });
    expect(again.headers.get('x-import-duplicate-of')).to.equal(String(firstJob));
    expect(again.headers.get('x-import-job-id')).to.equal(String(firstJob));
    expect((await app.deps.store.headPosition()).toString(), 'nothing appended').to.equal(before);
    expect(await jobCount()).to.equal(jobs);
    expect(await resultCount(runId)).to.equal(3);
    // Another name does not make it another upload: the files and the job do.
    expect(completeOf(await junit({ ...fields, name: 'Renamed' }, report('Retried')))).to.include({ duplicateOf: firstJob });
  });

  it('imports again for another attempt, newAttempt=true (later repeats then answer with the newest), other files, or no CI job id', async () => {
    const fields = { name: 'Attempts', ...CONTEXT, ciJobId: 'attempts-1', attempt: '1' };
    const first = expectCompleted(await junit(fields, report('Attempts')));
    const second = expectCompleted(await junit({ ...fields, attempt: '2' }, report('Attempts')));
    expect(second).to.not.equal(first);
    const forced = await junit({ ...fields, newAttempt: 'true' }, report('Attempts'));
    const forcedRun = expectCompleted(forced);
    expect(forcedRun).to.not.equal(first);
    expect(completeOf(forced)).to.not.have.property('duplicateOf');
    const job = (await admin.get(`/api/imports/${forced.headers.get('x-import-job-id')}`)).body.data;
    expect(job.ci).to.include({ newAttempt: true });
    expect(completeOf(await junit(fields, report('Attempts')))).to.include({ testRunId: forcedRun, jobId: Number(forced.headers.get('x-import-job-id')) });

    const otherFiles = expectCompleted(await junit(fields, report('Attempts', 4)));
    expect(otherFiles).to.not.be.oneOf([first, forcedRun]);
    const { ciJobId: _j, attempt: _a, ...noJob } = fields;
    const a = expectCompleted(await junit(noJob, report('NoJob')));
    const b = expectCompleted(await junit(noJob, report('NoJob')));
    expect(a).to.not.equal(b);
  });

  it('two identical uploads at the same moment: one job imports, both answer with its run, every result once', async () => {
    const fields = { name: 'Racing', ...CONTEXT, ciJobId: 'race-1' };
    const jobs = await jobCount();
    const answers = await Promise.all([junit(fields, report('Racing', 6)), junit(fields, report('Racing', 6)), junit(fields, report('Racing', 6))]);
    const runs = answers.map(runOf);
    expect(new Set(runs).size, JSON.stringify(answers.map((a) => a.events.at(-1)))).to.equal(1);
    expect(answers.filter((a) => completeOf(a).duplicateOf === undefined)).to.have.length(1);
    expect(await jobCount()).to.equal(jobs + 1);
    expect(await resultCount(runs[0])).to.equal(6);
  });

  it('a failed first import does not hold the upload: the retry imports', async () => {
    const fields = { name: 'Failing', ...CONTEXT, ciJobId: 'fail-1' };
    const empty = '<?xml version="1.0"?><testsuite name="none" tests="0"></testsuite>';
    const failed = await junit(fields, empty);
    expect(completeOf(failed)).to.include({ code: 'no-tests' });
    const again = await junit(fields, empty);
    expect(again.headers.get('x-import-job-id')).to.not.equal(failed.headers.get('x-import-job-id'));
    expect(completeOf(again)).to.include({ code: 'no-tests' });
    expect(completeOf(again)).to.not.have.property('duplicateOf');
  });

  it('the model API writes the context of a run by hand, with the same checks (400 invalid-ci-context, nothing appended)', async () => {
    const run = (await admin.post('/api/model/testRun/create', { data: { name: 'By hand', project: { connect: { id: project } } } })).body.data;
    expect(run).to.include({ branch: null, commit: null, buildUrl: null, ciJobId: null, ciAttempt: null });
    const updated = await admin.post('/api/model/testRun/update', { where: { id: run.id }, data: { branch: 'main', commit: 'abc1234', buildUrl: 'http://jenkins.local/job/1/', ciJobId: 'jenkins-shop-1', ciAttempt: 1 } });
    expect(updated.status, JSON.stringify(updated.body)).to.equal(200);
    expect(updated.body.data).to.include({ branch: 'main', commit: 'abc1234', ciAttempt: 1 });
    for (const [field, value] of [['buildUrl', 'file:///etc/passwd'], ['commit', 'not-a-sha'], ['ciAttempt', 0], ['branch', 'x'.repeat(300)]] as const) {
      const error = await expectRefused(app, () => admin.post('/api/model/testRun/update', { where: { id: run.id }, data: { [field]: value } }), 400);
      expect(error.code, field).to.equal('invalid-ci-context');
      expect(error.details).to.include({ path: `data.${field}` });
    }
  });

  it('a v1 ImportRequested (before the CI context) is still read: the job shows no context', async () => {
    const jobId = await app.deps.ids.next('importJob', systemMetadata('test'));
    await app.deps.store.append(`importJob-${jobId}`, [{
      type: 'ImportRequested', schemaVersion: 1,
      data: {
        jobId, projectId: project, endpoint: 'junit', format: 'junit', testRunName: 'Old', testRunId: null, stateId: null, parentFolderId: null,
        configId: null, milestoneId: null, tagIds: [], templateId: null, requestedAt: new Date().toISOString(),
      },
    }], { expectedRevision: 'no-stream', metadata: systemMetadata('test') });
    await waitUntil(async () => (await admin.get(`/api/imports/${jobId}`)).status === 200, 'the v1 job in the read model');
    const job = (await admin.get(`/api/imports/${jobId}`)).body.data;
    // (The app's worker takes the job up, and fails it: it has no files. Its state is not the point here.)
    expect(job).to.include({ ci: null, endpoint: 'junit', testRunName: 'Old' });
    expect(job.options).to.deep.equal({ tagIds: [], stateId: null, configId: null, templateId: null, milestoneId: null, parentFolderId: null });
  });
});
