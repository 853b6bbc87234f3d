import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { parserFor } from '../../services/imports/formats';
import type { ImportFormat, ParsedCase } from '../../services/imports/formats/parsedResult';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient, newToken, signIn } from '../support/server';
import { expectCompleted, postImport, type ResultFile } from './importClient';

const PASSWORD = 'import-password-1';

const SUREFIRE = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="com.acme.LoginTest" tests="4" failures="1" errors="1" skipped="1" time="3.5" timestamp="2026-03-01T10:15:30">
    <properties><property name="java.version" value="21"/></properties>
    <testcase classname="com.acme.LoginTest" name="accepts a valid password" time="1.25">
      <system-out>logged in</system-out>
    </testcase>
    <testcase classname="com.acme.LoginTest" name="refuses a wrong password" time="0.5">
      <failure message="expected 401 but was 200" type="org.opentest4j.AssertionFailedError">at LoginTest.java:42</failure>
    </testcase>
    <testcase classname="com.acme.LoginTest" name="locks after five tries" time="0.75">
      <error message="boom" type="java.lang.NullPointerException">NPE stack</error>
    </testcase>
    <testcase classname="com.acme.LoginTest" name="remembers the device" time="0">
      <skipped message="not on CI"/>
    </testcase>
    <testsuite name="Nested" tests="1" time="0.01">
      <testcase classname="com.acme.Nested" name="inner" time="0.01" file="src/Nested.java" line="7">
        <properties><property name="owner" value="team-a"/></properties>
      </testcase>
    </testsuite>
  </testsuite>
</testsuites>`;

/**
 * POST /api/junit/import and /api/test-results/import against a test app: the stream, what lands
 * in the read model (cases by identity, results with their details, nested folders), appending
 * to a run, the job view, and bad input answered before the stream (nothing appended).
 */
describe('result import (JUnit endpoint and the multi-format one)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let adminToken: string;
  let readerToken: string;
  const ids: Record<string, number> = {};

  const model = async (entity: string, op: string, body: unknown) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(op === 'create' ? 201 : 200);
    return res.body.data;
  };
  const junit = (fields: Record<string, any>, files: ResultFile[], token: string | null = adminToken) =>
    postImport(app.url, '/api/junit/import', fields, files, token);
  const results = (fields: Record<string, any>, files: ResultFile[], token: string | null = adminToken) =>
    postImport(app.url, '/api/test-results/import', fields, files, token);
  const tokenOf = async (email: string) => (await newToken(await signIn(app.url, email, PASSWORD), 'import')).token;

  before(async () => {
    app = await startTestApp({ maxUploadBytes: 64 * 1024, imports: { chunkSize: 2 } });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    const readerId = await registerUser(app.deps, { email: 'reader@example.com', name: 'Reader', password: PASSWORD, access: 'USER' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
    adminToken = await tokenOf('admin@example.com');
    readerToken = await tokenOf('reader@example.com');
    ids.project = (await model('project', 'create', { data: { name: 'Shop' } })).id;
    ids.other = (await model('project', 'create', { data: { name: 'Other' } })).id;
    ids.root = (await model('repositoryFolder', 'create', { data: { name: 'Automated', project: { connect: { id: ids.project } } } })).id;
    ids.tag = (await model('tag', 'create', { data: { name: 'nightly' } })).id;
    ids.runState = (await model('workflow', 'findFirst', { where: { scope: 'RUNS' } })).id;
    ids.caseState = (await model('workflow', 'findFirst', { where: { scope: 'CASES' } })).id;
    // The reader is assigned with a role that may not add results.
    const role = await model('role', 'create', { data: { name: 'Read only' } });
    await model('projectAssignment', 'create', { data: { user: { connect: { id: readerId } }, project: { connect: { id: ids.project } } } });
    await model('userProjectPermission', 'create', {
      data: { user: { connect: { id: readerId } }, project: { connect: { id: ids.project } }, accessType: 'SPECIFIC_ROLE', role: { connect: { id: role.id } } },
    });
  });
  after(() => app.stop());

  it('imports a JUnit file: a run of scope RUNS, cases by identity, results with their details, nested folders', async () => {
    const answer = await junit({ name: 'Nightly 1', projectId: ids.project, parentFolderId: ids.root, stateId: ids.runState, tagIds: [ids.tag] }, [{ name: 'TEST-login.xml', content: SUREFIRE }]);
    const runId = expectCompleted(answer);
    ids.run = runId;
    const jobId = Number(answer.headers.get('x-import-job-id'));

    // Readable at once: the read model had the whole run before `complete`.
    const run = await model('testRun', 'findUnique', { where: { id: runId }, include: { tags: true, state: true } });
    expect(run).to.include({ name: 'Nightly 1', projectId: ids.project, testRunType: 'JUNIT', stateId: ids.runState });
    expect(run.state.scope).to.equal('RUNS');
    expect(run.tags.map((t: any) => t.id)).to.deep.equal([ids.tag]);

    const found = await model('testRunResult', 'findMany', {
      where: { testRunId: runId }, orderBy: { id: 'asc' },
      include: { status: true, testRunCase: { include: { repositoryCase: { include: { folder: true } } } } },
    });
    expect(found.map((r: any) => [r.testRunCase.repositoryCase.title, r.status.systemName, r.durationMs])).to.deep.equal([
      ['accepts a valid password', 'passed', 1250],
      ['refuses a wrong password', 'failed', 500],
      ['locks after five tries', 'error', 750],
      ['remembers the device', 'skipped', 0],
      ['inner', 'passed', 10],
    ]);
    const [passed, failed, errored, skipped, inner] = found;
    expect(passed.systemOut).to.equal('logged in');
    expect(passed.executedAt).to.equal('2026-03-01T10:15:30.000Z');
    expect(failed).to.include({ message: 'expected 401 but was 200', failureType: 'org.opentest4j.AssertionFailedError', stackTrace: 'at LoginTest.java:42', attempt: 1 });
    expect(errored).to.include({ message: 'boom', failureType: 'java.lang.NullPointerException' });
    expect(skipped.message).to.equal('not on CI');
    expect(inner).to.include({ file: 'src/Nested.java', line: 7 });
    expect(inner.properties).to.deep.equal([{ name: 'owner', value: 'team-a' }]);
    expect(passed.testRunCase.repositoryCase).to.include({ className: 'com.acme.LoginTest', source: 'JUNIT', automated: true, projectId: ids.project, importJobId: jobId });
    expect(failed.testRunCase).to.include({ statusId: failed.statusId, isCompleted: true });

    // Suites became folders under parentFolderId: Automated / com.acme.LoginTest, and for the case
    // whose file the suites do not name, that file first (docs/imports.md): Automated / src/Nested.java / com.acme.LoginTest / Nested.
    const outer = passed.testRunCase.repositoryCase.folder;
    expect(outer).to.include({ name: 'com.acme.LoginTest', parentId: ids.root });
    const nested = inner.testRunCase.repositoryCase.folder;
    expect(nested).to.include({ name: 'Nested' });
    const suite = await model('repositoryFolder', 'findUnique', { where: { id: nested.parentId }, include: { parent: true } });
    expect([suite.name, suite.parent.name, suite.parent.parentId]).to.deep.equal(['com.acme.LoginTest', 'src/Nested.java', ids.root]);

    const job = await admin.get(`/api/imports/${jobId}`);
    expect(job.status).to.equal(200);
    expect(job.body.data).to.include({ state: 'completed', projectId: ids.project, testRunId: runId, totalCases: 5, processedCases: 5, chunks: 3, format: 'junit' });
    expect(job.body.data.counts).to.deep.equal({ results: 5, newCases: 5, newFolders: 4, newRunCases: 5, passed: 2, failed: 1, error: 1, skipped: 1 });
    expect(job.body.data.files[0]).to.include({ name: 'TEST-login.xml', sizeBytes: Buffer.byteLength(SUREFIRE) });

    // The audit trail has every chunk (read shallow by its projection: the same fields, the project).
    const audit = await admin.get(`/api/audit?type=TestResultsImported&entityId=${jobId}`);
    expect(audit.body.data).to.have.length(3);
    for (const entry of audit.body.data) {
      expect(entry).to.include({ entity: 'importJob', projectId: ids.project });
      expect(entry.actor).to.include({ via: 'import' });
      expect(entry.changedFields).to.include.members(['cases', 'folders', 'results', 'runCases', 'processedCases']);
    }
  });

  it('appends to a run with testRunId: the same cases, a second attempt each, nothing overwritten', async () => {
    const before = await model('repositoryCase', 'count', { where: { projectId: ids.project } });
    const second = (await model('tag', 'create', { data: { name: 'rerun' } })).id;
    const answer = await results({ projectId: ids.project, testRunId: ids.run, format: 'junit', tagIds: [second] }, [{ name: 'again.xml', content: SUREFIRE }]);
    expect(expectCompleted(answer)).to.equal(ids.run);
    const run = await model('testRun', 'findUnique', { where: { id: ids.run }, include: { tags: { orderBy: { id: 'asc' } } } });
    expect(run.tags.map((t: any) => t.id), 'tags given with testRunId are added to the run').to.deep.equal([ids.tag, second]);
    expect(await model('repositoryCase', 'count', { where: { projectId: ids.project } })).to.equal(before);
    const attempts = await model('testRunResult', 'groupBy', { by: ['attempt'], where: { testRunId: ids.run }, _count: { _all: true }, orderBy: { attempt: 'asc' } });
    expect(attempts.map((a: any) => [a.attempt, a._count._all])).to.deep.equal([[1, 5], [2, 5]]);
    expect(await model('testRunCase', 'count', { where: { testRunId: ids.run } })).to.equal(5);
  });

  it('counts each test by its final result, retried attempts apart; a case with retried attempts only shows no status (issue 36)', async () => {
    // A Surefire test that passed on its third run (two flakyFailures, no failure), and one that failed for good.
    const flaky = `<?xml version="1.0" encoding="UTF-8"?><testsuite name="com.acme.FlakyIT" tests="2">
      <testcase classname="com.acme.FlakyIT" name="eventually passes" time="1">
        <flakyFailure message="first" type="java.lang.AssertionError"><stackTrace>at A</stackTrace></flakyFailure>
        <flakyFailure message="second" type="java.lang.AssertionError"><stackTrace>at A</stackTrace></flakyFailure>
      </testcase>
      <testcase classname="com.acme.FlakyIT" name="fails" time="1"><failure message="no">at B</failure></testcase>
    </testsuite>`;
    const answer = await junit({ name: 'Flaky', projectId: ids.project }, [{ name: 'TEST-flaky.xml', content: flaky }]);
    const runId = expectCompleted(answer);
    const job = (await admin.get(`/api/imports/${answer.headers.get('x-import-job-id')}`)).body.data;
    expect(job.counts).to.include({ results: 4, passed: 1, failed: 1, error: 0, skipped: 0 });
    const cases = await model('testRunCase', 'findMany', { where: { testRunId: runId }, include: { repositoryCase: true, status: true } });
    expect(Object.fromEntries(cases.map((c: any) => [c.repositoryCase.title, c.status.systemName]))).to.deep.equal({ 'eventually passes': 'passed', fails: 'failed' });

    // TestNG: a method whose only result is an attempt the retry analyzer ran again.
    const testng = `<?xml version="1.0" encoding="UTF-8"?><testng-results><suite name="S"><test name="T"><class name="c.Retried">
      <test-method name="onlyRetried" status="FAIL" duration-ms="3" retried="true"/>
      <test-method name="plain" status="PASS" duration-ms="3"/></class></test></suite></testng-results>`;
    const retriedOnly = await results({ name: 'Retried only', projectId: ids.project }, [{ name: 'testng-results.xml', content: testng }]);
    const second = expectCompleted(retriedOnly);
    const secondJob = (await admin.get(`/api/imports/${retriedOnly.headers.get('x-import-job-id')}`)).body.data;
    expect(secondJob.counts).to.include({ results: 2, passed: 1, failed: 0 });
    const shown = await model('testRunCase', 'findMany', { where: { testRunId: second }, include: { repositoryCase: true } });
    expect(Object.fromEntries(shown.map((c: any) => [c.repositoryCase.title, c.statusId === null]))).to.deep.equal({ onlyRetried: true, plain: false });
  });

  it('keeps the suites\' own properties on the run: each value of a name once, bounded, long names cut with a warning (issue 36)', async () => {
    const longName = 'p'.repeat(3000);
    const suite = (name: string, properties: [string, string][]) => `<testsuite name="${name}" tests="1"><properties>${
      properties.map(([n, v]) => `<property name="${n}" value="${v}"/>`).join('')}</properties><testcase classname="${name}" name="works"/></testsuite>`;
    const file = `<?xml version="1.0" encoding="UTF-8"?><testsuites>${[
      suite('pkg/a', [['go.version', 'go1.22.1'], ['seed', '1'], [longName, 'x']]),
      suite('pkg/b', [['go.version', 'go1.22.1'], ['seed', '2']]),
      suite('pkg/c', Array.from({ length: 12 }, (_, i): [string, string] => ['seed', String(i + 3)])),
    ].join('')}<testsuite name="pkg/d"><testcase classname="d" name="case property"><properties><property name="${longName}" value="y"/></properties></testcase></testsuite></testsuites>`;
    const answer = await junit({ name: 'Go', projectId: ids.project }, [{ name: 'report.xml', content: file }]);
    const runId = expectCompleted(answer);
    const run = await model('testRun', 'findUnique', { where: { id: runId } });
    expect(run.suiteProperties).to.deep.equal({
      'go.version': ['go1.22.1'],
      seed: ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'],
      [`${'p'.repeat(254)}…`]: ['x'],
    });
    const warnings = answer.events.filter((e) => 'warning' in e).map((e) => e.warning.message as string);
    expect(warnings.filter((w) => w.includes('a name of 3000 characters')), JSON.stringify(warnings)).to.have.length(2); // the suite's and the case's
    expect(warnings.some((w) => w.startsWith('4 suite properties were not kept'))).to.equal(true);
    // The same file again into the same run adds nothing new.
    expectCompleted(await junit({ testRunId: runId, projectId: ids.project }, [{ name: 'report.xml', content: file }]));
    expect((await model('testRun', 'findUnique', { where: { id: runId } })).suiteProperties).to.deep.equal(run.suiteProperties);
  });

  it('a later import into a new run attaches its results to the same cases (the history stays)', async () => {
    const answer = await results({ name: 'Nightly 2', projectId: ids.project, parentFolderId: ids.root }, [{ name: 'b.xml', content: SUREFIRE }]);
    const runId = expectCompleted(answer);
    expect(runId).to.not.equal(ids.run);
    const history = await model('testRunResult', 'count', { where: { testRunCase: { repositoryCase: { title: 'refuses a wrong password' } } } });
    expect(history).to.equal(3);
    const job = await admin.get(`/api/imports/${answer.headers.get('x-import-job-id')}`);
    expect(job.body.data.counts).to.include({ newCases: 0, newFolders: 0, newRunCases: 5 });
  });

  it('imported rows are changed like any other: a case edited and tagged (version 2), a folder renamed, a result added by hand, a run case deleted', async () => {
    const kase = await model('repositoryCase', 'findFirst', { where: { title: 'refuses a wrong password', importJobId: { not: null } }, include: { folder: true } });
    expect(kase.currentVersion).to.equal(1);
    const edited = await model('repositoryCase', 'update', { where: { id: kase.id }, data: { description: 'Wrong password gives 401', tags: { connect: [{ id: ids.tag }] } }, include: { tags: true } });
    expect(edited).to.include({ description: 'Wrong password gives 401', title: 'refuses a wrong password', className: 'com.acme.LoginTest', currentVersion: 2 });
    expect(edited.tags.map((t: any) => t.id)).to.deep.equal([ids.tag]);
    const versions = await model('repositoryCaseVersion', 'findMany', { where: { repositoryCaseId: kase.id }, orderBy: { version: 'asc' } });
    expect(versions.map((v: any) => v.version)).to.deep.equal([1, 2]);

    const folder = await model('repositoryFolder', 'update', { where: { id: kase.folder.id }, data: { name: 'Login' } });
    expect(folder).to.include({ name: 'Login', parentId: ids.root });

    const runCase = await model('testRunCase', 'findFirst', { where: { testRunId: ids.run, repositoryCaseId: kase.id } });
    const passedStatus = await model('status', 'findFirst', { where: { systemName: 'passed' } });
    const byHand = await model('testRunResult', 'create', {
      data: { notes: 'checked by hand', testRun: { connect: { id: ids.run } }, testRunCase: { connect: { id: runCase.id } }, status: { connect: { id: passedStatus.id } } },
    });
    expect(byHand).to.include({ notes: 'checked by hand', testRunCaseId: runCase.id });
    await model('comment', 'create', { data: { content: 'flaky?', project: { connect: { id: ids.project } }, repositoryCase: { connect: { id: kase.id } } } });

    await model('testRunCase', 'delete', { where: { id: runCase.id } });
    expect((await model('testRunCase', 'findUnique', { where: { id: runCase.id } })).isDeleted).to.equal(true);
    const gone = await admin.post('/api/model/testRunCase/update', { where: { id: runCase.id }, data: { notes: 'x' } });
    expect(gone.status).to.equal(404);
  });

  it('an imported run case holds its (run, case) pair like any other: the same case is not added to the run twice, by hand or by changing another run case', async () => {
    const [held, other] = await model('testRunCase', 'findMany', { where: { testRunId: ids.run, isDeleted: false, importJobId: { not: null } }, orderBy: { id: 'asc' }, take: 2 });
    const pair = { testRun: { connect: { id: ids.run } }, repositoryCase: { connect: { id: held.repositoryCaseId } } };
    const taken = await expectRefused(app, () => admin.post('/api/model/testRunCase/create', { data: pair }), 409);
    expect(taken).to.deep.include({ code: 'test-run-case-test-run-id-repository-case-id-taken' });
    expect(taken.details).to.include({ ownerId: held.id });
    const moved = await expectRefused(app, () => admin.post('/api/model/testRunCase/update', { where: { id: other.id }, data: { repositoryCase: { connect: { id: held.repositoryCaseId } } } }), 409);
    expect(moved.code).to.equal('test-run-case-test-run-id-repository-case-id-taken');
    expect(await model('testRunCase', 'count', { where: { testRunId: ids.run, repositoryCaseId: held.repositoryCaseId, isDeleted: false } })).to.equal(1);

    // Once the imported run case is deleted, the pair is free again.
    await model('testRunCase', 'delete', { where: { id: held.id } });
    const added = await model('testRunCase', 'create', { data: pair });
    expect(added).to.include({ testRunId: ids.run, repositoryCaseId: held.repositoryCaseId, isDeleted: false });
  });

  describe('each format through POST /api/test-results/import (auto-detected): every parsed case is a result', () => {
    const FIXTURES: Record<string, string[]> = {
      junit: ['junit-surefire.xml', 'junit-gradle.xml', 'junit-pytest.xml', 'junit-jest.xml', 'junit-go.xml', 'junit-dotnet.xml', 'junit-nested.xml'],
      testng: ['testng.xml'], nunit: ['nunit3.xml', 'nunit2.xml'], xunit: ['xunit.xml'], mstest: ['mstest.trx'],
      mocha: ['mocha-spec.json', 'mocha-mochawesome.json'], cucumber: ['cucumber-js.json', 'cucumber-jvm.json'],
    };
    for (const [format, files] of Object.entries(FIXTURES)) {
      for (const file of files) {
        it(`${file} (${format})`, async () => {
          const content = fs.readFileSync(path.join(__dirname, 'fixtures', file));
          const expected: ParsedCase[] = [];
          for await (const c of parserFor(format as ImportFormat)(Readable.from([content]), { fileName: file, maxOutputChars: 65536, onWarning: () => undefined })) expected.push(c);
          const answer = await results({ name: `${format} ${file}`, projectId: ids.other }, [{ name: file, content }]);
          const runId = expectCompleted(answer);
          const job = await admin.get(`/api/imports/${answer.headers.get('x-import-job-id')}`);
          expect(job.body.data.format).to.equal(format);
          const found = await model('testRunResult', 'findMany', { where: { testRunId: runId }, orderBy: { id: 'asc' }, include: { status: true, testRunCase: { include: { repositoryCase: true } } } });
          expect(found.map((r: any) => [r.testRunCase.repositoryCase.title, r.status.systemName, r.durationMs]))
            .to.deep.equal(expected.map((c) => [c.name, c.outcome, c.durationMs]));
          const run = await model('testRun', 'findUnique', { where: { id: runId } });
          expect(run.testRunType).to.equal(format.toUpperCase());
        });
      }
    }
  });

  it('a file that is not UTF-8 fails in the stream with wrong-encoding, and nothing is applied', async () => {
    const runs = await model('testRun', 'count', {});
    const latin1 = Buffer.from('<?xml version="1.0"?><testsuite name="caf\xe9"><testcase name="n"/></testsuite>', 'latin1');
    const answer = await junit({ name: 'Latin-1', projectId: ids.project }, [{ name: 'latin1.xml', content: latin1 }]);
    expect(answer.events[answer.events.length - 1].code).to.equal('wrong-encoding');
    expect(await model('testRun', 'count', {})).to.equal(runs);
  });

  it('a file with a DOCTYPE fails in the stream, and nothing is applied', async () => {
    const runs = await model('testRun', 'count', {});
    const evil = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><testsuite name="x"><testcase name="&e;"/></testsuite>`;
    const answer = await junit({ name: 'Evil', projectId: ids.project }, [{ name: 'evil.xml', content: evil }]);
    expect(answer.status).to.equal(200);
    const last = answer.events[answer.events.length - 1];
    expect(last).to.have.keys('error', 'code', 'details');
    expect(last.code).to.equal('doctype-refused');
    expect(await model('testRun', 'count', {})).to.equal(runs);
    const job = await admin.get(`/api/imports/${answer.headers.get('x-import-job-id')}`);
    expect(job.body.data.state).to.equal('failed');
    expect(job.body.data.error.code).to.equal('doctype-refused');
  });

  describe('refused before the stream starts (JSON error, nothing appended)', () => {
    const file = [{ name: 'a.xml', content: SUREFIRE }];
    it('without credentials: 401', async () => {
      const body = await expectRefused(app, () => junit({ name: 'x', projectId: ids.project }, file, null), 401);
      expect(body.code).to.equal('unauthenticated');
    });
    it('without projectId, name, or files, or with a bad id: 400 naming the field', async () => {
      expect((await expectRefused(app, () => junit({ name: 'x' }, file), 400)).details.path).to.equal('projectId');
      expect((await expectRefused(app, () => junit({ projectId: ids.project }, file), 400)).details.path).to.equal('name');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project }, []), 400)).code).to.equal('files-required');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: 'seven' }, file), 400)).details.path).to.equal('projectId');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project, tagIds: ['1', 'x'] }, file), 400)).details.path).to.equal('tagIds.1');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project, format: 'junit' }, file), 400)).code).to.equal('unexpected-field');
      expect((await expectRefused(app, () => results({ name: 'x', projectId: ids.project, format: 'excel' }, file), 400)).code).to.equal('unknown-format');
    });
    it('an empty file, a file of no known format, or files of two formats: 400', async () => {
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project }, [{ name: 'e.xml', content: '' }]), 400)).code).to.equal('empty-file');
      expect((await expectRefused(app, () => results({ name: 'x', projectId: ids.project }, [{ name: 'n.txt', content: 'hello' }]), 400)).code).to.equal('unknown-format');
      const mocha = JSON.stringify({ stats: { tests: 1 }, tests: [{ title: 't', fullTitle: 't', duration: 1, err: {} }] });
      const mixed = await expectRefused(app, () => results({ name: 'x', projectId: ids.project }, [...file, { name: 'm.json', content: mocha }]), 400);
      expect(mixed.code).to.equal('mixed-formats');
    });
    it('a file over MAX_UPLOAD_BYTES: 413', async () => {
      const big = SUREFIRE + ' '.repeat(70 * 1024);
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project }, [{ name: 'big.xml', content: big }]), 413)).code).to.equal('payload-too-large');
    });
    it('references that do not exist, or not here: 404; a state not of scope RUNS: 400; a completed run: 400', async () => {
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: 9999 }, file), 404)).details.path).to.equal('projectId');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.other, parentFolderId: ids.root }, file), 404)).details.path).to.equal('parentFolderId');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.other, testRunId: ids.run }, file), 404)).details.path).to.equal('testRunId');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project, milestoneId: 9999 }, file), 404)).details.path).to.equal('milestoneId');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project, configId: 9999 }, file), 404)).details.path).to.equal('configId');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project, tagIds: [ids.tag, 9999] }, file), 404)).details.path).to.equal('tagIds');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project, stateId: ids.caseState }, file), 400)).code).to.equal('invalid-state');
      const done = (await model('testRun', 'create', { data: { name: 'Done', isCompleted: true, project: { connect: { id: ids.project } } } })).id;
      expect((await expectRefused(app, () => junit({ projectId: ids.project, testRunId: done }, file), 400)).code).to.equal('test-run-completed');
    });
    it('a user who may not add results: 403; a project they cannot see: 404', async () => {
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.project }, file, readerToken), 403)).code).to.equal('forbidden');
      expect((await expectRefused(app, () => junit({ name: 'x', projectId: ids.other }, file, readerToken), 404)).details.path).to.equal('projectId');
    });
    it('a job that is not visible: 404; a bad job id: 400', async () => {
      expect((await admin.get('/api/imports/999999')).status).to.equal(404);
      expect((await admin.get('/api/imports/abc')).status).to.equal(400);
    });

    it('a job is read as the model API reads its project: its readers see it, its own creator no longer once they lose the project or drop to access NONE', async () => {
      const lenaId = await registerUser(app.deps, { email: 'lena@example.com', name: 'Lena', password: PASSWORD, access: 'USER' }, systemMetadata('test'));
      const assignment = await model('projectAssignment', 'create', { data: { user: { connect: { id: lenaId } }, project: { connect: { id: ids.project } } } });
      const lena = new HttpClient(app.url, await tokenOf('lena@example.com'));
      const answer = await junit({ name: 'Lena\'s run', projectId: ids.project }, [{ name: 'TEST-login.xml', content: SUREFIRE }], lena.bearer);
      const jobId = Number(answer.headers.get('x-import-job-id'));
      await expectCompleted(answer);
      const reader = new HttpClient(app.url, readerToken);
      for (const [who, client] of [['lena', lena], ['reader', reader], ['admin', admin]] as const) {
        expect((await client.get(`/api/imports/${jobId}`)).status, who).to.equal(200);
      }
      await model('user', 'update', { where: { id: lenaId }, data: { access: 'NONE' } });
      const none = await expectRefused(app, () => lena.get(`/api/imports/${jobId}`), 404);
      expect(none).to.deep.include({ code: 'import-job-not-found', details: { jobId } });
      expect((await lena.post('/api/model/testRun/findMany', {})).body.data, 'the model API shows NONE nothing').to.deep.equal([]);
      await model('user', 'update', { where: { id: lenaId }, data: { access: 'USER' } });
      expect((await lena.get(`/api/imports/${jobId}`)).status).to.equal(200);
      await model('projectAssignment', 'delete', { where: { id: assignment.id } });
      expect((await expectRefused(app, () => lena.get(`/api/imports/${jobId}`), 404)).code, 'no longer in the project').to.equal('import-job-not-found');
      expect((await reader.get(`/api/imports/${jobId}`)).status).to.equal(200);
    });
  });
});
