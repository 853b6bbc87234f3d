import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { FULL_NAME_PROPERTY, MAX_ROWS_PER_EVENT } from '../../services/imports/importJob.saga';
import { startTestApp, type TestApp } from '../support/app';
import { waitUntil } from '../support/wait';
import { expectCompleted, importingAdmin } from './importClient';

// Slow: 23 tests, each importing small files through the API and waiting for every job to end; the last wait out jobs that fail and a 1.5 s retry budget

/** A JUnit file of suites, each with its cases: [name, classname, outcome element or ''] */
function junit(suites: Array<{ name: string; cases: Array<[string, string, string]> }>): string {
  const body = suites.map((s) => `  <testsuite name="${s.name}" tests="${s.cases.length}">\n${s.cases.map(([name, cls, outcome]) =>
    `    <testcase name="${name}" classname="${cls}" time="0.1">${outcome}</testcase>`).join('\n')}\n  </testsuite>`).join('\n');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n${body}\n</testsuites>\n`;
}
const FAIL = '<failure message="expected 2 but was 3" type="AssertionError">at sum.test.js:4</failure>';

/** An administrator, a project, and the run cases of a run. */
async function setUp(app: TestApp) {
  const { admin, model, projectId, upload } = await importingAdmin(app, 'Identity');
  /** The run's run cases: [title, status, attempts], ordered by sort order. */
  const runCases = async (testRunId: number) => {
    const rows = await model('testRunCase', 'findMany', {
      where: { testRunId }, orderBy: { order: 'asc' }, include: { status: true, repositoryCase: true, results: true },
    });
    return rows.map((r: any) => [r.repositoryCase.title, r.status?.systemName ?? null, r.results.length]);
  };
  return { admin, model, projectId, upload, runCases };
}

describe('result import: what a test is, and what its run case shows', function () {
  this.timeout(180_000);
  let app: TestApp;
  let t: Awaited<ReturnType<typeof setUp>>;

  before(async () => {
    app = await startTestApp({ maxUploadBytes: 16 * 1024 * 1024, imports: { chunkSize: 3 } });
    t = await setUp(app);
  });
  after(() => app?.stop());

  it('keeps tests of the same name in different suites (files) apart, and a failure shows over a later pass of the same test', async () => {
    const file = junit([
      { name: 'src/cart/total.test.js', cases: [['adds the prices', '', ''], ['rounds', '', FAIL]] },
      { name: 'src/checkout/total.test.js', cases: [['adds the prices', '', FAIL], ['rounds', '', '']] },
      // The same test twice in one suite without a retry mark: both results count, the failure shows.
      { name: 'src/flaky.test.js', cases: [['retries the payment', '', FAIL], ['retries the payment', '', '']] },
    ]);
    const runId = expectCompleted(await t.upload({ format: 'junit', name: 'files' }, [{ name: 'jest-junit.xml', content: file }]));
    expect(await t.runCases(runId)).to.deep.equal([
      ['adds the prices', 'passed', 1],
      ['rounds', 'failed', 1],
      ['adds the prices', 'failed', 1],
      ['rounds', 'passed', 1],
      ['retries the payment', 'failed', 2],
    ]);
    const cases = await t.model('repositoryCase', 'findMany', { where: { projectId: t.projectId }, include: { folder: true }, orderBy: { id: 'asc' } });
    expect(cases.map((c: any) => [c.title, c.folder.name])).to.deep.equal([
      ['adds the prices', 'src/cart/total.test.js'], ['rounds', 'src/cart/total.test.js'],
      ['adds the prices', 'src/checkout/total.test.js'], ['rounds', 'src/checkout/total.test.js'],
      ['retries the payment', 'src/flaky.test.js'],
    ]);

    // The same file again into a new run lands on the same five cases.
    const again = expectCompleted(await t.upload({ format: 'junit', name: 'files again' }, [{ name: 'jest-junit.xml', content: file }]));
    expect(await t.model('repositoryCase', 'count', { where: { projectId: t.projectId } })).to.equal(5);
    expect((await t.runCases(again)).map((r: unknown[]) => r[1])).to.deep.equal(['passed', 'failed', 'failed', 'passed', 'failed']);
  });

  it('appending a pass to a failed run case keeps it failed; results of runs before stay as they were', async () => {
    const first = junit([{ name: 'Append', cases: [['stays red', 'A', FAIL], ['goes green', 'A', '']] }]);
    const runId = expectCompleted(await t.upload({ format: 'junit', name: 'append' }, [{ name: 'a.xml', content: first }]));
    const second = junit([{ name: 'Append', cases: [['stays red', 'A', ''], ['goes green', 'A', '']] }]);
    expectCompleted(await t.upload({ format: 'junit', testRunId: runId }, [{ name: 'b.xml', content: second }]));
    expect(await t.runCases(runId)).to.deep.equal([['stays red', 'failed', 2], ['goes green', 'passed', 2]]);
  });

  it('finds cases imported before identities existed, each adopted once by a test of the same title and class', async () => {
    const file = junit([{ name: 'suite-one', cases: [['legacy test', 'L', '']] }, { name: 'suite-two', cases: [['legacy test', 'L', '']] }]);
    const runId = expectCompleted(await t.upload({ format: 'junit', name: 'legacy' }, [{ name: 'l.xml', content: file }]));
    const [one, two] = await t.model('repositoryCase', 'findMany', { where: { projectId: t.projectId, title: 'legacy test' }, orderBy: { id: 'asc' } });
    expect(one.id).to.not.equal(two.id);
    // As a database migrated from before identities has them: no key; the second case was made by hand (no import).
    await app.deps.knex('repository_cases').whereIn('id', [one.id, two.id]).update({ identity_key: null, identity_scope: null });

    const again = expectCompleted(await t.upload({ format: 'junit', name: 'legacy again' }, [{ name: 'l.xml', content: file }]));
    expect(again).to.not.equal(runId);
    const used = await t.model('testRunCase', 'findMany', { where: { testRunId: again }, orderBy: { order: 'asc' } });
    expect(used.map((rc: any) => rc.repositoryCaseId)).to.deep.equal([one.id, two.id]);
    const keys = await app.deps.knex('repository_cases').whereIn('id', [one.id, two.id]).orderBy('id').pluck('identity_key');
    expect(keys.every((k: string | null) => typeof k === 'string' && k.length === 22)).to.equal(true);
    expect(keys[0]).to.not.equal(keys[1]);
  });

  it('a renamed case keeps its history: the next import under the old name and one under the new name both land on it', async () => {
    const before = junit([{ name: 'Rename', cases: [['logs in', 'com.acme.Login', '']] }]);
    const runId = expectCompleted(await t.upload({ format: 'junit', name: 'rename 1' }, [{ name: 'r.xml', content: before }]));
    const [runCase] = await t.model('testRunCase', 'findMany', { where: { testRunId: runId } });
    const caseId = runCase.repositoryCaseId as number;
    await t.model('repositoryCase', 'update', { where: { id: caseId }, data: { title: 'signs in with a password' } });

    const oldName = expectCompleted(await t.upload({ format: 'junit', name: 'rename 2' }, [{ name: 'r.xml', content: before }]));
    const after = junit([{ name: 'Rename', cases: [['signs in with a password', 'com.acme.Login', FAIL]] }]);
    const newName = expectCompleted(await t.upload({ format: 'junit', name: 'rename 3' }, [{ name: 'r2.xml', content: after }]));
    for (const id of [oldName, newName]) {
      const [rc] = await t.model('testRunCase', 'findMany', { where: { testRunId: id } });
      expect(rc.repositoryCaseId, `run ${id}`).to.equal(caseId);
    }
    // The alias is an event, with who renamed it.
    const audit = await t.admin.get(`/api/audit?type=RepositoryCaseAliasAdded`);
    expect(audit.status).to.equal(200);
    expect(audit.body.data.map((e: any) => e.type)).to.include('RepositoryCaseAliasAdded');
  });

  it('a test the file marks as retried shows its last attempt: Surefire flaky (passed on a rerun) and rerun failures; an explicit id names the case', async () => {
    const content = fs.readFileSync(path.join(__dirname, 'fixtures', 'junit-surefire-reruns.xml'));
    const runId = expectCompleted(await t.upload({ format: 'junit', name: 'reruns' }, [{ name: 'TEST-com.example.PaymentIT.xml', content }]));
    expect(await t.runCases(runId)).to.deep.equal([['chargesCard', 'passed', 3], ['refunds', 'failed', 3], ['listsPayments', 'passed', 1]]);
    const results = await t.model('testRunResult', 'findMany', { where: { testRunId: runId }, orderBy: { id: 'asc' }, include: { status: true } });
    expect(results.map((r: any) => [r.attempt, r.status.systemName, r.retried])).to.deep.equal([
      [1, 'failed', true], [2, 'error', true], [3, 'passed', false],
      [1, 'failed', true], [2, 'error', true], [3, 'failed', false],
      [1, 'passed', false],
    ]);
    // The case with testament_case_id is found by it whatever its name becomes.
    const renamed = fs.readFileSync(path.join(__dirname, 'fixtures', 'junit-surefire-reruns.xml'), 'utf8').replace('name="chargesCard"', 'name="chargesTheCard"');
    const again = expectCompleted(await t.upload({ format: 'junit', name: 'reruns again' }, [{ name: 'TEST-com.example.PaymentIT.xml', content: renamed }]));
    const [first] = await t.model('testRunCase', 'findMany', { where: { testRunId: runId }, orderBy: { order: 'asc' } });
    const [second] = await t.model('testRunCase', 'findMany', { where: { testRunId: again }, orderBy: { order: 'asc' } });
    expect(second.repositoryCaseId).to.equal(first.repositoryCaseId);
  });

  it('TestNG data-provider invocations are tests of their own: a failed invocation is never hidden by a passing one', async () => {
    const content = fs.readFileSync(path.join(__dirname, 'fixtures', 'testng-dataprovider.xml'));
    const runId = expectCompleted(await t.upload({ format: 'testng', name: 'data provider' }, [{ name: 'testng-results.xml', content }]));
    const results = await t.model('testRunResult', 'findMany', { where: { testRunId: runId }, include: { status: true, testRunCase: { include: { status: true } } } });
    // Every result not retried that failed shows on its run case.
    for (const r of results.filter((x: any) => !x.retried && ['failed', 'error'].includes(x.status.systemName))) {
      expect(['failed', 'error'], `run case ${r.testRunCaseId}`).to.include(r.testRunCase.status.systemName);
    }
    const failedInFile = (content.toString().match(/status="FAIL"/g) ?? []).length;
    expect(results.filter((x: any) => x.status.systemName === 'failed')).to.have.length(failedInFile);
  });

  it('TestNG: a retried invocation whose data-provider object prints a new identity hash is an attempt of the same case, and the next run finds the same cases', async () => {
    const content = fs.readFileSync(path.join(__dirname, 'fixtures', 'testng-retry-hashes.xml'), 'utf8');
    const before = await t.model('repositoryCase', 'count', { where: { projectId: t.projectId } });
    const runId = expectCompleted(await t.upload({ format: 'testng', name: 'retried hashes' }, [{ name: 'testng-results.xml', content }]));
    expect(await t.runCases(runId)).to.deep.equal([['applies', 'passed', 2], ['rounds', 'passed', 1]]);
    const results = await t.model('testRunResult', 'findMany', { where: { testRunId: runId }, orderBy: { id: 'asc' }, include: { status: true } });
    expect(results.map((r: any) => [r.attempt, r.status.systemName, r.retried])).to.deep.equal([[1, 'skipped', true], [2, 'passed', false], [1, 'passed', false]]);
    // The next CI run prints other hashes: no new case.
    const next = content.replace(/@e111c7c/g, '@1b6d3586').replace(/@5a2e4553/g, '@7a81197d').replace(/@3f99bd52/g, '@4e50df2e');
    const again = expectCompleted(await t.upload({ format: 'testng', name: 'retried hashes again' }, [{ name: 'testng-results.xml', content: next }]));
    expect(await t.model('repositoryCase', 'count', { where: { projectId: t.projectId } })).to.equal(before + 2);
    expect(await t.runCases(again)).to.deep.equal([['applies', 'passed', 2], ['rounds', 'passed', 1]]);
  });

  it('Playwright: the same test in two browser projects is two cases whose titles name the project; a machine hostname (Vitest) changes no case from run to run', async () => {
    const playwright = fs.readFileSync(path.join(__dirname, 'fixtures', 'junit-playwright.xml'));
    const before = await t.model('repositoryCase', 'count', { where: { projectId: t.projectId } });
    const runId = expectCompleted(await t.upload({ format: 'junit', name: 'playwright' }, [{ name: 'results.xml', content: playwright }]));
    expect(await t.runCases(runId)).to.deep.equal([
      ['[chromium] Checkout › pays with a card', 'passed', 1], ['[chromium] Checkout › shows the total', 'failed', 1],
      ['[firefox] Checkout › pays with a card', 'passed', 1], ['[firefox] Checkout › shows the total', 'passed', 1],
    ]);
    const vitest = fs.readFileSync(path.join(__dirname, 'fixtures', 'junit-vitest.xml'), 'utf8');
    expectCompleted(await t.upload({ format: 'junit', name: 'vitest' }, [{ name: 'junit.xml', content: vitest }]));
    const again = expectCompleted(await t.upload({ format: 'junit', name: 'vitest on another runner' }, [{ name: 'junit.xml', content: vitest.replace('fv-az1127-318', 'fv-az582-44') }]));
    expect(await t.runCases(again)).to.deep.equal([['cart > adds an item', 'passed', 1], ['cart > totals the prices', 'failed', 1]]);
    expect(await t.model('repositoryCase', 'count', { where: { projectId: t.projectId } })).to.equal(before + 6);
  });

  it('keeps suite-level output per run, readable page by page by whoever sees the project', async () => {
    const gradle = `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.acme.CartTest" tests="1" failures="0" errors="0" skipped="0" timestamp="2026-03-01T10:00:00" hostname="ci" time="0.2">
  <properties/>
  <testcase name="adds an item" classname="com.acme.CartTest" time="0.1"/>
  <system-out><![CDATA[Cart service started on port 8080
]]></system-out>
  <system-err><![CDATA[WARN slow start
]]></system-err>
</testsuite>`;
    const answer = await t.upload({ format: 'junit', name: 'gradle' }, [
      { name: 'TEST-com.acme.CartTest.xml', content: gradle },
      { name: 'TEST-com.acme.OrderTest.xml', content: gradle.replaceAll('CartTest', 'OrderTest').replace('Cart service', 'Order service') },
    ]);
    const runId = expectCompleted(answer);
    const page1 = await t.admin.get(`/api/test-runs/${runId}/suite-output?limit=1`);
    expect(page1.status, JSON.stringify(page1.body)).to.equal(200);
    expect(page1.body.data.map((o: any) => [o.suite, o.systemOut, o.systemErr])).to.deep.equal([['com.acme.CartTest', 'Cart service started on port 8080\n', 'WARN slow start\n']]);
    expect(page1.body.data[0].importJobId).to.equal(Number(answer.headers.get('x-import-job-id')));
    const page2 = await t.admin.get(`/api/test-runs/${runId}/suite-output?limit=1&cursor=${page1.body.nextCursor}`);
    expect(page2.body.data.map((o: any) => o.suite)).to.deep.equal(['com.acme.OrderTest']);
    expect(page2.body.nextCursor).to.equal(null);
    for (const bad of ['limit=0', 'limit=101', 'cursor=x', 'limit=1e3']) {
      const res = await t.admin.get(`/api/test-runs/${runId}/suite-output?${bad}`);
      expect(res.status, bad).to.equal(400);
      expect(res.body.code).to.equal('invalid-argument');
    }
    expect((await t.admin.get('/api/test-runs/999999/suite-output')).status).to.equal(404);
  });

  it('imports what a real file may hold past the contract\'s limits: long names cut (kept whole in a property), deep suites split', async () => {
    const longName = `Add(${'1,'.repeat(2600)}2)`; // NUnit writes parameterised names like this: 5,206 characters
    const longClass = `Ns.${'Inner.'.repeat(400)}Fixture`;
    const longSuite = 'S'.repeat(300);
    const file = junit([{ name: longSuite, cases: [[longName, longClass, FAIL]] }]);
    const answer = await t.upload({ format: 'junit', name: 'long' }, [{ name: 'long.xml', content: file }]);
    const runId = expectCompleted(answer);
    const warnings = answer.events.filter((e) => 'warning' in e).map((e) => e.warning.message as string);
    expect(warnings.some((w) => w.includes(FULL_NAME_PROPERTY))).to.equal(true);
    const [result] = await t.model('testRunResult', 'findMany', { where: { testRunId: runId }, include: { testRunCase: { include: { repositoryCase: { include: { folder: true } } } } } });
    const repositoryCase = result.testRunCase.repositoryCase;
    expect(repositoryCase.title).to.have.length(2000);
    expect(repositoryCase.title.endsWith('…')).to.equal(true);
    expect(repositoryCase.className).to.have.length(2000);
    expect(repositoryCase.folder.name).to.have.length(255);
    expect(result.properties).to.deep.include({ name: FULL_NAME_PROPERTY, value: longName });
    expect(result.message).to.equal('expected 2 but was 3');

    // Imported again, the long name finds its case.
    const again = expectCompleted(await t.upload({ format: 'junit', name: 'long again' }, [{ name: 'long.xml', content: file }]));
    const [rc] = await t.model('testRunCase', 'findMany', { where: { testRunId: again } });
    expect(rc.repositoryCaseId).to.equal(repositoryCase.id);
  });

  it('a case nested in more suites than one event holds folders for imports, its folders spread over chunks', async () => {
    const depth = MAX_ROWS_PER_EVENT + 1200;
    const xml = `<?xml version="1.0"?>\n<testsuites>${'<testsuite name="level">'.repeat(depth)}<testcase name="deep" classname="D"><failure message="down here"/></testcase>${'</testsuite>'.repeat(depth)}</testsuites>`;
    const answer = await t.upload({ format: 'junit', name: 'deep' }, [{ name: 'deep.xml', content: xml }]);
    const runId = expectCompleted(answer);
    expect(await t.runCases(runId)).to.deep.equal([['deep', 'failed', 1]]);
    const jobId = Number(answer.headers.get('x-import-job-id'));
    const job = (await t.admin.get(`/api/imports/${jobId}`)).body.data;
    expect(job.counts).to.include({ newFolders: depth, results: 1 });
    expect(job.chunks).to.equal(2);
  });
});

describe('result import: a job that cannot succeed fails once', function () {
  this.timeout(120_000);
  let app: TestApp;
  let t: Awaited<ReturnType<typeof setUp>>;

  before(async () => {
    // More cases per chunk than the event contract allows: every chunk is refused, as content a later version cannot fit would be.
    app = await startTestApp({ imports: { chunkSize: MAX_ROWS_PER_EVENT + 1 } });
    t = await setUp(app);
  });
  after(() => app?.stop());

  it('a chunk the event contract refuses fails the job with a code naming the file, leaves no empty run, and is not taken up again', async () => {
    const cases: Array<[string, string, string]> = Array.from({ length: MAX_ROWS_PER_EVENT + 1 }, (_, i) => [`case ${i}`, 'Big', '']);
    const answer = await t.upload({ format: 'junit', name: 'refused' }, [{ name: 'big.xml', content: junit([{ name: 'Big', cases }]) }]);
    expect(answer.status).to.equal(200);
    const last = answer.events[answer.events.length - 1];
    expect(last, JSON.stringify(last)).to.include({ code: 'import-content-refused' });
    expect(last.details.files).to.deep.equal(['big.xml']);
    const jobId = Number(answer.headers.get('x-import-job-id'));
    const job = (await t.admin.get(`/api/imports/${jobId}`)).body.data;
    expect(job.state).to.equal('failed');
    expect(job.error).to.include({ code: 'import-content-refused' });
    // The run it made holds nothing, so it is deleted (by the worker, right after it records the failure the stream told).
    const runs = () => t.model('testRun', 'findMany', { where: { projectId: t.projectId }, select: { isDeleted: true } });
    await waitUntil(async () => JSON.stringify(await runs()) === '[{"isDeleted":true}]', 'the empty run to be deleted', 10_000, async () => JSON.stringify(await runs()));
    // No worker takes it up again.
    expect(await app.imports.candidates()).to.not.include(jobId);
    const events = await app.deps.store.readStream(`importJob-${jobId}`);
    expect(events.filter((e) => e.type === 'ImportFailed')).to.have.length(1);
  });
});

describe('result import: interrupted for longer than its retry budget', function () {
  this.timeout(120_000);
  let app: TestApp;
  let t: Awaited<ReturnType<typeof setUp>>;

  before(async () => {
    app = await startTestApp({ imports: { retryBudgetMs: 1500 } });
    t = await setUp(app);
    // A real PostgreSQL fault the saga must take as transient (40001, as a serialization failure), raised
    // by the server for every chunk the job appends, and for nothing else: the job's other events go in.
    await app.deps.knex.raw(`
      CREATE FUNCTION refuse_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not serialize access (test: chunks refused)' USING ERRCODE = '40001'; END $$;
      CREATE TRIGGER refuse_chunks BEFORE INSERT ON es_events FOR EACH ROW WHEN (NEW.type = 'TestResultsImported') EXECUTE FUNCTION refuse_chunks();`);
  });
  after(() => app?.stop());

  it('retries within the budget, then fails once with import-interrupted-too-long and the last error, leaving no empty run', async () => {
    const answer = await t.upload({ format: 'junit', name: 'never appended' }, [{ name: 'small.xml', content: junit([{ name: 'S', cases: [['a', 'S', ''], ['b', 'S', FAIL]] }]) }]);
    expect(answer.status).to.equal(200);
    // The stream follows the job while it is taken up again, and ends with its failure.
    expect(answer.events.at(-1), JSON.stringify(answer.events)).to.include({ code: 'import-interrupted-too-long' });
    const jobId = Number(answer.headers.get('x-import-job-id'));
    let job: any;
    for (let i = 0; i < 150; i++) {
      job = (await t.admin.get(`/api/imports/${jobId}`)).body.data;
      if (job.state !== 'running') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(job.state, JSON.stringify(job)).to.equal('failed');
    expect(job.error.code, JSON.stringify(job.error)).to.equal('import-interrupted-too-long');
    expect(job.error.error).to.match(/longer than its retry budget: gave up after [2-9] failed attempts/);
    expect(job.error.details.lastError).to.include('chunks refused');
    const events = await app.deps.store.readStream(`importJob-${jobId}`);
    expect(events.filter((e) => e.type === 'ImportFailed')).to.have.length(1);
    expect(events.filter((e) => e.type === 'TestResultsImported')).to.have.length(0);
    // The empty run is removed right after the job is recorded as failed (its own event, a moment later).
    const runs = () => t.model('testRun', 'findMany', { where: { projectId: t.projectId }, select: { isDeleted: true } });
    await waitUntil(async () => JSON.stringify(await runs()) === '[{"isDeleted":true}]', 'the empty run to be deleted', 10_000, async () => JSON.stringify(await runs()));
    // Once the fault is gone nothing takes the job up again: it failed for good.
    await app.deps.knex.raw('DROP TRIGGER refuse_chunks ON es_events');
    expect(await app.imports.candidates()).to.not.include(jobId);
  });
});
