import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { parserFor } from '../../services/imports/formats';
import type { ImportFormat, Outcome, ParsedCase } from '../../services/imports/formats/parsedResult';
import { FULL_NAME_PROPERTY } from '../../services/imports/importJob.saga';
import { startTestApp, type TestApp } from '../support/app';
import { expectCompleted, type ImportAnswer, importingAdmin } from './importClient';

/**
 * Result files written by the real tools (test/imports/fixtures/real, where each comes from is in
 * SOURCES.md), each imported into a run of its own, compared with what the file itself states:
 * its own totals where the format has them (JUnit suite counts, TestNG, NUnit, xUnit.net, TRX
 * counters, Mocha stats), and with its test cases where it has none (Cucumber). Every file also
 * holds to what a CI user relies on: every failure or error in the file is a failed or error result
 * whose run case shows failed or error (never passed), and distinct tests stay distinct run cases.
 * Slow: imports 29 real result files through the API, each into a run of its own, and reads back every run case and result of each
 */

const FIXTURES = path.join(__dirname, 'fixtures', 'real');

type Counts = { total: number; passed: number; failed: number; error: number; skipped: number };
/** What a file says of itself, as comparable numbers: tests, and of them failing (failures and errors) and skipped. */
type Own = { tests: number; failing: number; errors?: number; skipped: number };

interface RealFile {
  file: string;
  /** The tool that wrote it. */
  producer: string;
  format: ImportFormat;
  /** The file's own numbers, read from it by `ownTotals` (so a typo here fails the test). */
  own: Own;
  /** The run's cases by the status they show, and the results (retried ones among them). */
  runCases: Counts;
  results: number;
  retried: number;
  /** Output of a suite (or, with an empty suite, of the whole run): [suite, text in its standard output, text in its standard error]. */
  suiteOutput?: Array<[string, string, string]>;
  /** Where the file's numbers and ours legitimately differ: why, and the relation that holds instead. */
  differs?: { why: string; holds: (own: Own, runCases: Counts) => boolean };
}

const FILES: RealFile[] = [
  // JUnit XML
  {
    file: 'surefire-rerun-flaky.xml', producer: 'Maven Surefire 3 (rerunFailingTestsCount)', format: 'junit',
    own: { tests: 2, failing: 2, errors: 1, skipped: 0 },
    runCases: { total: 4, passed: 2, failed: 1, error: 1, skipped: 0 }, results: 12, retried: 8,
    differs: {
      why: 'Surefire counts in tests="2" only the two tests that stayed red; the two that passed on a rerun (flakyFailure, flakyError) are <testcase>s too, '
        + 'so the file holds 4 tests: 2 passed (each after a retried failed/error attempt), 1 failed and 1 error (each with 3 retried reruns)',
      holds: (own, rc) => rc.total === own.tests + 2 && rc.failed + rc.error === own.failing && rc.passed === 2,
    },
  },
  { file: 'gradle-spring-failure.xml', producer: 'Gradle (JUnit 5, Spring MockMvc)', format: 'junit', own: { tests: 3, failing: 1, errors: 0, skipped: 0 }, runCases: { total: 3, passed: 2, failed: 1, error: 0, skipped: 0 }, results: 3, retried: 0 },
  {
    file: 'TEST-com.github.guenhter.junit.CalculatorTest.xml', producer: 'Gradle (JUnit 5 @ParameterizedTest, Kotlin)', format: 'junit',
    own: { tests: 24, failing: 0, errors: 0, skipped: 0 }, runCases: { total: 24, passed: 24, failed: 0, error: 0, skipped: 0 }, results: 24, retried: 0,
  },
  { file: 'go-junit-report.xml', producer: 'go-junit-report', format: 'junit', own: { tests: 5, failing: 2, errors: 0, skipped: 1 }, runCases: { total: 5, passed: 2, failed: 2, error: 0, skipped: 1 }, results: 5, retried: 0 },
  { file: 'playwright-junit.xml', producer: 'Playwright (junit reporter, projects setup and chrome)', format: 'junit', own: { tests: 14, failing: 1, errors: 0, skipped: 5 }, runCases: { total: 14, passed: 8, failed: 1, error: 0, skipped: 5 }, results: 14, retried: 0 },
  {
    file: 'pytest-junit.xml', producer: 'pytest (--junitxml)', format: 'junit',
    own: { tests: 15, failing: 2, errors: 0, skipped: 2 }, runCases: { total: 10, passed: 6, failed: 2, error: 0, skipped: 2 }, results: 10, retried: 0,
    differs: {
      why: 'the suite says tests="15" but holds 10 <testcase>s: pytest counts test reports, and test_with_subtests (pytest subtests) is one <testcase> whose subtests '
        + 'are counted as reports of their own; failures and skips agree',
      holds: (own, rc) => own.tests - rc.total === 5 && rc.failed + rc.error === own.failing && rc.skipped === own.skipped,
    },
  },
  { file: 'python-unittest-xmlrunner.xml', producer: 'unittest-xml-reporting (xmlrunner)', format: 'junit', own: { tests: 8, failing: 2, errors: 1, skipped: 2 }, runCases: { total: 8, passed: 4, failed: 1, error: 1, skipped: 2 }, results: 8, retried: 0 },
  { file: 'phpunit-junit.xml', producer: 'PHPUnit 11 (--log-junit, .phpt and class suites)', format: 'junit', own: { tests: 12, failing: 2, errors: 0, skipped: 0 }, runCases: { total: 12, passed: 10, failed: 2, error: 0, skipped: 0 }, results: 12, retried: 0 },
  { file: 'jest-junit-old.xml', producer: 'jest-junit (old version, suite "undefined")', format: 'junit', own: { tests: 6, failing: 4, errors: 0, skipped: 1 }, runCases: { total: 6, passed: 1, failed: 4, error: 0, skipped: 1 }, results: 6, retried: 0 },
  { file: 'jest-junit-widget.xml', producer: 'jest-junit (empty classname)', format: 'junit', own: { tests: 2, failing: 0, errors: 0, skipped: 0 }, runCases: { total: 2, passed: 2, failed: 0, error: 0, skipped: 0 }, results: 2, retried: 0 },
  { file: 'cypress-mocha-junit.xml', producer: 'Cypress (mocha-junit-reporter, merged)', format: 'junit', own: { tests: 6, failing: 2, errors: 0, skipped: 0 }, runCases: { total: 6, passed: 4, failed: 2, error: 0, skipped: 0 }, results: 6, retried: 0 },
  { file: 'cypress-mocha-junit-windows.xml', producer: 'Cypress (mocha-junit-reporter, Windows)', format: 'junit', own: { tests: 3, failing: 0, errors: 0, skipped: 0 }, runCases: { total: 3, passed: 3, failed: 0, error: 0, skipped: 0 }, results: 3, retried: 0 },
  {
    file: 'bazel-suite-logs.xml', producer: 'Bazel (test.xml, suite-level logs)', format: 'junit',
    own: { tests: 1, failing: 1, errors: 1, skipped: 0 }, runCases: { total: 1, passed: 0, failed: 0, error: 1, skipped: 0 }, results: 1, retried: 0,
    suiteOutput: [['bazel/failing_absl_test', "ModuleNotFoundError: No module named 'non_existent_package'", 'Generated test.err']],
  },
  // TestNG
  {
    file: 'testng-dataprovider.xml', producer: 'TestNG (data provider, Ant; no totals on the root)', format: 'testng',
    own: { tests: 8, failing: 4, skipped: 0 }, runCases: { total: 8, passed: 4, failed: 4, error: 0, skipped: 0 }, results: 8, retried: 0,
  },
  {
    file: 'testng-dataprovider-config-params.xml', producer: 'TestNG 7 (data provider, parameterised configuration methods)', format: 'testng',
    own: { tests: 4, failing: 0, skipped: 0 }, runCases: { total: 4, passed: 4, failed: 0, error: 0, skipped: 0 }, results: 4, retried: 0,
  },
  {
    file: 'testng-failed-config.xml', producer: 'TestNG (failed @BeforeMethod)', format: 'testng',
    own: { tests: 121, failing: 0, skipped: 0 }, runCases: { total: 2, passed: 0, failed: 1, error: 0, skipped: 1 }, results: 2, retried: 0,
    differs: {
      why: 'the root\'s totals (121 passed) are not this file\'s: it holds one test method (SKIP) and one configuration method that failed (testSetup); '
        + 'the skip is imported as skipped, and the failed configuration method as a failed result, so the set-up failure shows',
      holds: (_own, rc) => rc.total === 2 && rc.failed === 1 && rc.skipped === 1,
    },
  },
  // NUnit
  {
    file: 'nunit3-console.xml', producer: 'NUnit 3 console (Theory, Error and Timeout labels)', format: 'nunit',
    own: { tests: 9, failing: 5, skipped: 1 }, runCases: { total: 9, passed: 3, failed: 3, error: 2, skipped: 1 }, results: 9, retried: 0,
  },
  { file: 'nunit2-pickles.xml', producer: 'NUnit 2.5 (SpecFlow, ParameterizedTest suite)', format: 'nunit', own: { tests: 4, failing: 1, skipped: 0 }, runCases: { total: 4, passed: 3, failed: 1, error: 0, skipped: 0 }, results: 4, retried: 0 },
  {
    file: 'nunit25-mock-assembly.xml', producer: 'NUnit 2.5.8 (mock-assembly: ignored, not runnable, generic and parameterised fixtures)', format: 'nunit',
    own: { tests: 21, failing: 2, skipped: 8 }, runCases: { total: 28, passed: 18, failed: 1, error: 1, skipped: 8 }, results: 28, retried: 0,
    differs: {
      why: 'NUnit 2\'s total="21" counts the tests that ran; the 7 of not-run="7" (4 Ignored, 3 NotRunnable) are test cases too, imported as skipped with the inconclusive one',
      holds: (own, rc) => rc.total === own.tests + 7 && rc.failed + rc.error === own.failing && rc.skipped === own.skipped,
    },
  },
  // xUnit.net, TRX
  { file: 'xunit2-simple.xml', producer: 'xUnit.net 2.0 console', format: 'xunit', own: { tests: 3, failing: 1, skipped: 1 }, runCases: { total: 3, passed: 1, failed: 1, error: 0, skipped: 1 }, results: 3, retried: 0 },
  { file: 'mstest-pickles.trx', producer: 'MSTest (Visual Studio 2010, SpecFlow)', format: 'mstest', own: { tests: 4, failing: 1, skipped: 0 }, runCases: { total: 4, passed: 3, failed: 1, error: 0, skipped: 0 }, results: 4, retried: 0 },
  {
    file: 'vstest-xunit.trx', producer: 'VSTest (dotnet test, xUnit adapter)', format: 'mstest',
    own: { tests: 7, failing: 3, skipped: 0 }, runCases: { total: 7, passed: 3, failed: 3, error: 0, skipped: 1 }, results: 7, retried: 0,
    suiteOutput: [['', "Test 'DotnetTests.XUnitTests.CalculatorTests.Skipped_Test' was skipped in the test run.", 'DotnetTests.XUnitTests.CalculatorTests.Skipped_Test [SKIP]']],
    differs: {
      why: 'VSTest counts a skipped test in total="7" but not in notExecuted="0" (executed="6"): the NotExecuted result is imported as skipped',
      holds: (own, rc) => rc.total === own.tests && rc.failed === own.failing && rc.skipped === 1 && rc.passed + rc.failed + rc.skipped === own.tests,
    },
  },
  // Mocha
  { file: 'mocha-json-reporter.json', producer: 'Mocha --reporter json (Windows paths)', format: 'mocha', own: { tests: 7, failing: 5, skipped: 1 }, runCases: { total: 7, passed: 1, failed: 5, error: 0, skipped: 1 }, results: 7, retried: 0 },
  { file: 'mochawesome-cypress-cucumber.json', producer: 'mochawesome 6 (Cypress with cucumber preprocessor)', format: 'mocha', own: { tests: 10, failing: 1, skipped: 0 }, runCases: { total: 10, passed: 9, failed: 1, error: 0, skipped: 0 }, results: 10, retried: 0 },
  { file: 'mochawesome-api.json', producer: 'mochawesome 7 (Mocha 11)', format: 'mocha', own: { tests: 3, failing: 0, skipped: 0 }, runCases: { total: 3, passed: 3, failed: 0, error: 0, skipped: 0 }, results: 3, retried: 0 },
  // Cucumber (the format states no totals: the file's scenarios and their step and hook statuses are its own account)
  { file: 'cucumber-js-login.json', producer: 'cucumber-js (Playwright)', format: 'cucumber', own: { tests: 2, failing: 0, skipped: 0 }, runCases: { total: 2, passed: 2, failed: 0, error: 0, skipped: 0 }, results: 2, retried: 0 },
  { file: 'cucumber-js-apickli-unnamed-feature.json', producer: 'cucumber-js (apickli; a feature without name)', format: 'cucumber', own: { tests: 2, failing: 0, skipped: 0 }, runCases: { total: 2, passed: 2, failed: 0, error: 0, skipped: 0 }, results: 2, retried: 0 },
  { file: 'cucumber-jvm-outline.json', producer: 'cucumber-jvm 1.x (Scenario Outline with its template)', format: 'cucumber', own: { tests: 2, failing: 0, skipped: 0 }, runCases: { total: 2, passed: 2, failed: 0, error: 0, skipped: 0 }, results: 2, retried: 0 },
  { file: 'cucumber-jvm-hook-failures.json', producer: 'cucumber-jvm (failing Before and After hooks)', format: 'cucumber', own: { tests: 4, failing: 3, skipped: 0 }, runCases: { total: 4, passed: 1, failed: 3, error: 0, skipped: 0 }, results: 4, retried: 0 },
];

// ---- What a file says of itself -------------------------------------------------------------

type Attrs = Record<string, string>;
const attrsOf = (raw: string): Attrs => Object.fromEntries([...raw.matchAll(/([\w:.-]+)\s*=\s*"([^"]*)"/g)].map((m) => [m[1], m[2]]));
const num = (value: string | undefined) => (value === undefined || value.trim() === '' ? 0 : Number(value));
const firstTag = (xml: string, name: string): Attrs | null => {
  const m = new RegExp(`<${name}(?=[\\s>/])([^>]*)>`).exec(xml);
  return m ? attrsOf(m[1]) : null;
};

/** JUnit: each count from <testsuites> where it states it, else summed over the top-level <testsuite>s (a nested suite's are in its parent's). */
function junitOwn(xml: string): Own {
  let root: Attrs | null = null;
  let depth = 0;
  const top: Attrs[] = [];
  for (const m of xml.matchAll(/<(\/?)(testsuites|testsuite)(?=[\s>/])([^>]*)>/g)) {
    if (m[1] === '/') {
      if (m[2] === 'testsuite') depth--;
      continue;
    }
    if (m[2] === 'testsuites') {
      root = attrsOf(m[3]);
      continue;
    }
    if (depth === 0) top.push(attrsOf(m[3]));
    if (!m[3].trimEnd().endsWith('/')) depth++;
  }
  const count = (key: string) => (root?.[key] !== undefined ? num(root[key]) : top.reduce((sum, s) => sum + num(s[key]), 0));
  return { tests: count('tests'), failing: count('failures') + count('errors'), errors: count('errors'), skipped: count('skipped') };
}

/** Cucumber states no totals: its scenario elements, failing when a step or hook failed. */
function cucumberOwn(json: string): Own {
  const scenarios = (JSON.parse(json) as any[]).flatMap((feature) => (feature.elements ?? []).filter((e: any) => e.type === 'scenario'));
  const statuses = (e: any) => [...(e.before ?? []), ...(e.steps ?? []), ...(e.after ?? [])].map((s: any) => s.result?.status);
  return { tests: scenarios.length, failing: scenarios.filter((e: any) => statuses(e).includes('failed')).length, skipped: 0 };
}

function ownTotals(format: ImportFormat, content: string): Own {
  switch (format) {
    case 'junit':
      return junitOwn(content);
    case 'testng': {
      const root = firstTag(content, 'testng-results')!;
      if (root.total !== undefined) return { tests: num(root.total), failing: num(root.failed), skipped: num(root.skipped) };
      // An old TestNG writes no totals: its test methods (configuration methods are not tests), by status.
      const methods = [...content.matchAll(/<test-method(?=[\s>/])([^>]*)>/g)].map((m) => attrsOf(m[1])).filter((a) => a['is-config'] !== 'true');
      return { tests: methods.length, failing: methods.filter((a) => a.status === 'FAIL').length, skipped: methods.filter((a) => a.status === 'SKIP').length };
    }
    case 'nunit': {
      const v3 = firstTag(content, 'test-run');
      if (v3) return { tests: num(v3.total), failing: num(v3.failed), skipped: num(v3.skipped) + num(v3.inconclusive) };
      const v2 = firstTag(content, 'test-results')!;
      return { tests: num(v2.total), failing: num(v2.failures) + num(v2.errors), skipped: num(v2['not-run']) + num(v2.inconclusive) };
    }
    case 'xunit': {
      const assemblies = [...content.matchAll(/<assembly(?=[\s>/])([^>]*)>/g)].map((m) => attrsOf(m[1]));
      const sum = (key: string) => assemblies.reduce((s, a) => s + num(a[key]), 0);
      return { tests: sum('total'), failing: sum('failed'), skipped: sum('skipped') };
    }
    case 'mstest': {
      const c = firstTag(content, 'Counters')!;
      const failing = num(c.failed) + num(c.error) + num(c.timeout) + num(c.aborted);
      return { tests: num(c.total), failing, skipped: num(c.notExecuted) + num(c.inconclusive) + num(c.notRunnable) + num(c.pending) };
    }
    case 'mocha': {
      const stats = JSON.parse(content).stats;
      return { tests: stats.tests, failing: stats.failures, skipped: (stats.pending ?? 0) + (stats.skipped ?? 0) };
    }
    case 'cucumber':
      return cucumberOwn(content);
  }
}

// ---- The import and what it made ------------------------------------------------------------

async function parseAll(format: ImportFormat, file: string, content: Buffer): Promise<ParsedCase[]> {
  const cases: ParsedCase[] = [];
  for await (const c of parserFor(format)(Readable.from([content]), { fileName: file, maxOutputChars: 65536, onWarning: () => undefined })) cases.push(c);
  return cases;
}

const identityOf = (c: ParsedCase) => c.externalId ?? JSON.stringify([c.suitePath, c.className, c.name, c.variant]);
const RANK: Record<Outcome, number> = { passed: 0, skipped: 1, failed: 2, error: 2 };
const FAILING = ['failed', 'error'];

interface RunResult {
  id: number;
  status: Outcome;
  retried: boolean;
  runCaseId: number;
  runCaseStatus: string;
  title: string;
  properties: Array<{ name: string; value: string }>;
  message: string | null;
  stackTrace: string | null;
}
interface Run { results: RunResult[]; runCases: Array<{ id: number; status: string; title: string }> }

async function setUp(app: TestApp) {
  const { admin, model, upload: uploadFiles } = await importingAdmin(app, 'Real files');
  const upload = (fields: Record<string, string | number>, name: string, content: string | Buffer) => uploadFiles(fields, [{ name, content }]);

  /** The run's results (with status, retried, run case and its status) and its run cases. */
  const runOf = async (testRunId: number): Promise<Run> => {
    const results = await model('testRunResult', 'findMany', {
      where: { testRunId }, orderBy: { id: 'asc' },
      include: { status: true, testRunCase: { include: { status: true, repositoryCase: true } } },
    });
    const retried = new Map<number, boolean>(
      (await app.deps.knex('test_run_results').where({ test_run_id: testRunId }).select('id', 'retried')).map((r: any) => [r.id, r.retried]),
    );
    const runCases = await model('testRunCase', 'findMany', { where: { testRunId }, include: { status: true, repositoryCase: true, results: true } });
    return {
      results: results.map((r: any) => ({
        id: r.id as number, status: r.status.systemName as Outcome, retried: retried.get(r.id) === true, runCaseId: r.testRunCaseId as number,
        runCaseStatus: r.testRunCase.status?.systemName as string, title: r.testRunCase.repositoryCase.title as string, properties: r.properties,
        message: r.message as string | null, stackTrace: r.stackTrace as string | null,
      })),
      runCases: runCases.map((rc: any) => ({ id: rc.id as number, status: rc.status?.systemName as string, title: rc.repositoryCase.title as string })),
    };
  };
  const suiteOutputsOf = async (testRunId: number) =>
    app.deps.knex('test_run_suite_outputs').where({ test_run_id: testRunId }).orderBy('id').select('suite', 'system_out', 'system_err') as Promise<Array<{ suite: string; system_out: string | null; system_err: string | null }>>;
  const jobOf = async (answer: ImportAnswer) => (await admin.get(`/api/imports/${answer.headers.get('x-import-job-id')}`)).body.data;
  return { upload, runOf, jobOf, model, suiteOutputsOf };
}

/** What a CI user relies on, for any import: failures show, a run case shows the worst of its results not retried. */
function expectFailuresShown(run: Run) {
  for (const r of run.results) {
    if (!r.retried && FAILING.includes(r.status)) expect(FAILING, `${r.title}: its ${r.status} result's run case shows ${r.runCaseStatus}`).to.include(r.runCaseStatus);
    // A failure says something: its message, or at least its stack trace.
    if (FAILING.includes(r.status)) expect(r.message ?? r.stackTrace, `${r.title}: its ${r.status} result says why`).to.be.a('string').and.not.equal('');
  }
  for (const rc of run.runCases) {
    const own = run.results.filter((r) => r.runCaseId === rc.id && !r.retried);
    expect(own.length, `${rc.title} has a result not retried`).to.be.greaterThan(0);
    const worst = Math.max(...own.map((r) => RANK[r.status]));
    expect(own.filter((r) => RANK[r.status] === worst).map((r) => r.status), `${rc.title} shows the worst of its results`).to.include(rc.status);
  }
}

describe('result import of real files (test/imports/fixtures/real): their own totals, failures shown, no test folded', function () {
  this.timeout(600_000);
  let app: TestApp;
  let t: Awaited<ReturnType<typeof setUp>>;

  before(async () => {
    // A small chunk size puts each real file's cases through several chunks, as a large file's are.
    app = await startTestApp({ maxUploadBytes: 16 * 1024 * 1024, imports: { chunkSize: 5 } });
    t = await setUp(app);
  });
  after(() => app?.stop());

  it('has every fixture of the folder in the table, each under 200 KB, and each listed in SOURCES.md', () => {
    const files = fs.readdirSync(FIXTURES).filter((f) => f !== 'SOURCES.md').sort();
    expect(files).to.deep.equal(FILES.map((f) => f.file).sort());
    const sources = fs.readFileSync(path.join(FIXTURES, 'SOURCES.md'), 'utf8');
    for (const f of files) {
      expect(fs.statSync(path.join(FIXTURES, f)).size, f).to.be.below(200 * 1024);
      expect(sources, `SOURCES.md names ${f}`).to.include(`\`${f}\``);
    }
  });

  for (const spec of FILES) {
    it(`${spec.file} (${spec.producer}): ${spec.differs ? 'differs from its own totals as explained' : 'matches its own totals'}; failures shown; distinct tests distinct`, async () => {
      const content = fs.readFileSync(path.join(FIXTURES, spec.file));
      const own = ownTotals(spec.format, content.toString('utf8'));
      expect(own, 'the numbers the file states').to.deep.equal(spec.own);

      // Auto-detected, as a CI upload does it.
      const answer = await t.upload({ name: spec.file }, spec.file, content);
      const runId = expectCompleted(answer);
      const job = await t.jobOf(answer);
      expect(job.format).to.equal(spec.format);

      const run = await t.runOf(runId);
      const byStatus = (statuses: string[]) => ({
        total: statuses.length, passed: statuses.filter((s) => s === 'passed').length, failed: statuses.filter((s) => s === 'failed').length,
        error: statuses.filter((s) => s === 'error').length, skipped: statuses.filter((s) => s === 'skipped').length,
      });
      const runCases = byStatus(run.runCases.map((rc) => rc.status));
      expect(runCases, 'run cases by the status they show').to.deep.equal(spec.runCases);
      expect(run.results.length, 'results').to.equal(spec.results);
      expect(run.results.filter((r) => r.retried).length, 'retried results').to.equal(spec.retried);

      // The job's counts are the tests' by the status they show (retried attempts apart), and every result.
      expect(job.counts).to.include({ results: spec.results, newRunCases: spec.runCases.total, passed: runCases.passed, failed: runCases.failed, error: runCases.error, skipped: runCases.skipped });

      // Every failure or error the parser reads is a failed or error result, and its run case shows it.
      const parsed = await parseAll(spec.format, spec.file, content);
      expect(run.results.map((r) => r.status), 'each case of the file is a result with its outcome, in file order').to.deep.equal(parsed.map((c) => c.outcome));
      expect(run.results.map((r) => r.retried)).to.deep.equal(parsed.map((c) => c.retried));
      expectFailuresShown(run);

      // Distinct tests are distinct run cases, none folded into another.
      expect(runCases.total, 'run cases = distinct tests of the file').to.equal(new Set(parsed.map(identityOf)).size);

      // Output the file gives for a suite or the whole run (not for a case) is kept once, with its suite; files without have none.
      const outputs = await t.suiteOutputsOf(runId);
      expect(outputs.map((o) => o.suite), 'suites with output of their own').to.deep.equal((spec.suiteOutput ?? []).map((o) => o[0]));
      (spec.suiteOutput ?? []).forEach(([, out, err], i) => {
        expect(outputs[i].system_out).to.include(out);
        expect(outputs[i].system_err).to.include(err);
      });

      if (spec.differs) {
        expect(spec.differs.holds(own, runCases), spec.differs.why).to.equal(true);
      } else {
        expect(runCases.total, 'tests').to.equal(own.tests);
        expect(runCases.failed + runCases.error, 'failing tests').to.equal(own.failing);
        if (own.errors !== undefined) expect(runCases.error, 'errors').to.equal(own.errors);
        expect(runCases.skipped, 'skipped tests').to.equal(own.skipped);
      }
    });
  }

  // A CI checkout is elsewhere than the laptop that wrote these files, and the next run is at another time: neither the machine's
  // paths nor the run's time in a file are part of a test's identity.
  const ELSEWHERE: Array<[string, string, string, string]> = [
    ['phpunit-junit.xml', '/home/matteo/OSS/phpunit', '/home/runner/work/phpunit/phpunit', 'from another checkout'],
    ['mocha-json-reporter.json', 'C:\\\\Users\\\\Michal\\\\Workspace\\\\dorny', 'D:\\\\a\\\\dorny', 'from another checkout'],
    ['python-unittest-xmlrunner.xml', 'TestAcme-20251114214921', 'TestAcme-20251115093000', 'by the next run (xmlrunner stamps the suite name)'],
    ['cypress-mocha-junit-windows.xml', 'cypress\\e2e\\links_externos.cy.js', 'cypress/e2e/links_externos.cy.js', 'on Linux (the spec file\'s path without backslashes)'],
  ];
  for (const [file, from, to, when] of ELSEWHERE) {
    it(`${file} written again ${when} finds the same cases: no new case, no new folder`, async () => {
      const content = fs.readFileSync(path.join(FIXTURES, file), 'utf8');
      expect(content.includes(from), `${file} holds ${from}`).to.equal(true);
      const moved = content.split(from).join(to);
      const first = await t.upload({ name: `${file} here` }, file, content);
      expectCompleted(first);
      const answer = await t.upload({ name: `${file} elsewhere` }, file, moved);
      const run = await t.runOf(expectCompleted(answer));
      const job = await t.jobOf(answer);
      expect(job.counts).to.include({ newCases: 0, newFolders: 0, newRunCases: run.runCases.length });
      expectFailuresShown(run);
    });
  }

  describe('hostile inputs', () => {
    it('a JUnit testcase with a 6,000-character parameterised name: two such names alike for 2,000 characters stay two tests, the failing one shown', async () => {
      const params = 'x'.repeat(5990);
      const xml = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="tests.test_params" tests="2" failures="1">
  <testcase classname="tests.test_params" name="test_sum[${params}-1]" time="0.01"><failure message="assert 3 == 4">assert 3 == 4</failure></testcase>
  <testcase classname="tests.test_params" name="test_sum[${params}-2]" time="0.01"/>
</testsuite></testsuites>`;
      const answer = await t.upload({ name: 'long names', format: 'junit' }, 'long.xml', xml);
      const run = await t.runOf(expectCompleted(answer));
      expect(run.runCases).to.have.length(2);
      expect(run.results.map((r) => [r.status, r.runCaseStatus, r.title.length])).to.deep.equal([['failed', 'failed', 2000], ['passed', 'passed', 2000]]);
      expect(run.results.map((r) => r.properties.find((p) => p.name === FULL_NAME_PROPERTY)?.value)).to.deep.equal([`test_sum[${params}-1]`, `test_sum[${params}-2]`]);
      expect(run.results[0].message).to.equal('assert 3 == 4');
      expectFailuresShown(run);
    });

    it('a Mocha JSON report with empty titles: each test gets a numbered placeholder, none dropped, the failing one shown', async () => {
      const json = JSON.stringify({
        stats: { suites: 1, tests: 3, passes: 2, pending: 0, failures: 1 },
        tests: [
          { title: '', fullTitle: 'Checkout ', file: '/ci/test/checkout.spec.js', duration: 3, currentRetry: 0, err: { message: 'expected 1 to equal 2', stack: 'AssertionError: expected 1 to equal 2' } },
          { title: '', fullTitle: 'Checkout ', file: '/ci/test/checkout.spec.js', duration: 1, currentRetry: 0, speed: 'fast', err: {} },
          { title: 'pays', fullTitle: 'Checkout pays', file: '/ci/test/checkout.spec.js', duration: 1, currentRetry: 0, speed: 'fast', err: {} },
        ],
      });
      const answer = await t.upload({ name: 'empty titles', format: 'mocha' }, 'mocha.json', json);
      const run = await t.runOf(expectCompleted(answer));
      const warnings = answer.events.filter((e) => 'warning' in e).map((e) => e.warning.message as string);
      expect(warnings.filter((w) => w.includes('without a title'))).to.have.length(2);
      expect(run.runCases, 'three tests, none folded into another').to.have.length(3);
      expect(run.results.map((r) => [r.title, r.status, r.runCaseStatus])).to.deep.equal([
        ['(unnamed test 1)', 'failed', 'failed'], ['(unnamed test 2)', 'passed', 'passed'], ['pays', 'passed', 'passed'],
      ]);
      expectFailuresShown(run);
    });

    it('a JUnit file of 6,000 nested testsuites: it completes, with its failure at the bottom shown and its passes', async () => {
      const depth = 6000;
      const xml = `<?xml version="1.0"?>\n<testsuites>${'<testsuite name="level">'.repeat(depth)}`
        + '<testcase name="deep failure" classname="Deep"><failure message="down here"/></testcase><testcase name="deep pass" classname="Deep"/>'
        + `${'</testsuite>'.repeat(depth)}</testsuites>`;
      const answer = await t.upload({ name: 'deep', format: 'junit' }, 'deep.xml', xml);
      const run = await t.runOf(expectCompleted(answer));
      expect(run.results.map((r) => [r.title, r.status, r.runCaseStatus])).to.deep.equal([['deep failure', 'failed', 'failed'], ['deep pass', 'passed', 'passed']]);
      const job = await t.jobOf(answer);
      expect(job.counts).to.include({ results: 2, failed: 1, passed: 1 });
      expect(job.counts.newFolders).to.be.at.least(depth);
    });
  });
});
