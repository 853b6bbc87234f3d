import { expect } from 'chai';
import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { BASE_CASE, harness } from './harness';
import { parseJunit } from '../../../services/imports/formats/junit';
import { ResultFileError } from '../../../services/imports/formats/parsedResult';

const { parseFixture, parseText } = harness(parseJunit);
const base = BASE_CASE;

describe('JUnit parser', () => {
  it('reads Maven Surefire: failure, error (→ error), skipped, flaky reruns, outputs, thousands-comma times', async () => {
    const { cases, warnings } = await parseFixture('junit-surefire.xml');
    const suite = { suitePath: ['com.example.CalculatorTest'], className: 'com.example.CalculatorTest' };
    expect(cases).to.deep.equal([
      { ...base, ...suite, name: 'adds', durationMs: 5 },
      {
        ...base, ...suite, name: 'divides', outcome: 'failed', durationMs: 12,
        message: 'expected: <2> but was: <3>', failureType: 'org.opentest4j.AssertionFailedError',
        stackTrace: 'org.opentest4j.AssertionFailedError: expected: <2> but was: <3>\n\tat com.example.CalculatorTest.divides(CalculatorTest.java:21)',
        systemOut: 'dividing 6 by 3\n', systemErr: 'warning: rounding',
      },
      {
        ...base, ...suite, name: 'handlesNull', outcome: 'error', durationMs: 1_234_500, message: 'boom',
        failureType: 'java.lang.NullPointerException', stackTrace: 'java.lang.NullPointerException: boom\n\tat com.example.Calculator.parse(Calculator.java:8)',
      },
      { ...base, ...suite, name: 'notReady', outcome: 'skipped', durationMs: 0, message: '@Disabled: not ready' },
      {
        ...base, ...suite, name: 'flaky', outcome: 'failed', retried: true, message: 'first run failed', failureType: 'java.lang.AssertionError',
        stackTrace: 'java.lang.AssertionError: first run failed', systemOut: 'output of the failed run',
      },
      { ...base, ...suite, name: 'flaky', durationMs: 20, systemOut: 'output of the passing run' },
      { ...base, ...suite, name: '(unnamed test 6)', durationMs: 1 },
      { ...base, ...suite, name: 'slow', durationMs: null },
    ]);
    expect(warnings).to.deep.equal([
      { file: 'results.xml', message: 'a test case without a name (class com.example.CalculatorTest) was imported as "(unnamed test 6)"', case: '(unnamed test 6)' },
      { file: 'results.xml', message: 'unreadable time "abc"; no duration recorded', case: 'slow' },
    ]);
  });

  it('reads Gradle: suite timestamp without zone as UTC, suite-level output not given to cases', async () => {
    const { cases } = await parseFixture('junit-gradle.xml');
    expect(cases.map((c) => [c.name, c.outcome, c.durationMs, c.executedAt, c.systemOut])).to.deep.equal([
      ['pushes()', 'passed', 11, '2024-01-15T10:30:00.000Z', null],
      ['pops an empty stack()', 'failed', 10, '2024-01-15T10:30:00.000Z', null],
    ]);
    expect(cases[1].stackTrace).to.equal('java.util.EmptyStackException\n\tat java.base/java.util.Stack.peek(Stack.java:101)');
  });

  it('reads pytest: file and line, case properties, error on setup, skip message from the attribute', async () => {
    const { cases } = await parseFixture('junit-pytest.xml');
    const common = { suitePath: ['pytest'], className: 'tests.test_math', file: 'tests/test_math.py', executedAt: '2024-01-15T10:30:00.123Z' };
    expect(cases[0]).to.deep.equal({ ...base, ...common, name: 'test_add', durationMs: 1, line: 3, properties: [{ name: 'ticket', value: 'PROJ-12' }, { name: 'owner', value: 'qa' }] });
    expect(cases[1]).to.include({ name: 'test_div', outcome: 'failed', message: 'ZeroDivisionError: division by zero', line: 7, failureType: null });
    expect(cases[1].stackTrace).to.equal('def test_div():\n>       assert 1 / 0\nE       ZeroDivisionError: division by zero\n\ntests/test_math.py:8: ZeroDivisionError');
    expect(cases[2]).to.include({ name: 'test_db', outcome: 'error', message: 'failed on setup with "ConnectionError: refused"' });
    expect(cases[3]).to.include({ name: 'test_later', outcome: 'skipped', message: 'not ready', stackTrace: null });
  });

  it('reads jest-junit: a failure without a message attribute takes its first line', async () => {
    const { cases } = await parseFixture('junit-jest.xml');
    expect(cases.map((c) => [c.suitePath, c.name, c.outcome, c.durationMs])).to.deep.equal([
      [['Calculator'], 'Calculator adds numbers', 'passed', 3],
      [['Calculator'], 'Calculator divides by zero', 'failed', 4],
      [['Calculator'], 'Calculator rounds', 'skipped', 0],
    ]);
    expect(cases[1].message).to.equal('Error: expect(received).toThrow()');
    expect(cases[1].stackTrace).to.match(/^Error: expect\(received\)\.toThrow\(\)\n\nReceived function did not throw\n {4}at Object\.toThrow/);
    expect(cases[2].message).to.equal(null);
  });

  it('reads go-junit-report: a timestamp with an offset becomes UTC', async () => {
    const { cases } = await parseFixture('junit-go.xml');
    expect(cases.map((c) => [c.name, c.outcome, c.executedAt, c.message, c.stackTrace])).to.deep.equal([
      ['TestAdd', 'passed', '2024-01-15T10:30:00.000Z', null, null],
      ['TestSub', 'failed', '2024-01-15T10:30:00.000Z', 'Failed', '    calc_test.go:15: expected 1, got 2'],
      ['TestMul', 'skipped', '2024-01-15T10:30:00.000Z', 'Skipped', null],
    ]);
    expect(cases[0].suitePath).to.deep.equal(['github.com/acme/calc']);
    expect(cases[0].properties).to.deep.equal([]); // suite properties are not repeated on cases
  });

  it('reads JunitXml.TestLogger (.NET): seven-digit fractions, entity newlines in messages', async () => {
    const { cases } = await parseFixture('junit-dotnet.xml');
    expect(cases[0]).to.deep.equal({ ...base, suitePath: ['MyTests.dll'], name: 'Adds(a: 1, b: 2)', className: 'MyTests.CalculatorTests', durationMs: 12, executedAt: '2024-01-15T10:30:00.000Z' });
    expect(cases[1]).to.include({ outcome: 'failed', durationMs: 2, failureType: 'failure', message: 'Assert.Equal() Failure\nExpected: 2\nActual:   3' });
    expect(cases[1].stackTrace).to.equal('   at MyTests.CalculatorTests.Divides() in /src/CalculatorTests.cs:line 21');
  });

  it('nests suites in suitePath, inherits the timestamp, reads text properties, warns on an unreadable timestamp', async () => {
    const { cases, warnings } = await parseFixture('junit-nested.xml');
    expect(cases.map((c) => [c.suitePath, c.name, c.durationMs, c.executedAt])).to.deep.equal([
      [['api', 'users', 'create'], 'creates a user', 100, '2024-01-15T10:30:00.000Z'],
      [['api', 'users'], 'lists users', 200, '2024-01-15T10:30:00.000Z'],
      [['api'], 'health', 300, '2024-01-15T10:30:00.000Z'],
      [['ui'], 'renders', null, null],
    ]);
    expect(cases[3].properties).to.deep.equal([{ name: 'browser', value: 'chromium' }]);
    expect(warnings.map((w) => w.message)).to.deep.equal(['unreadable timestamp "not a date" on suite ui; no execution time taken from it']);
  });

  it('cuts system-out, system-err and stack traces at maxOutputChars, saying how much was cut', async () => {
    const out = 'o'.repeat(250);
    const { cases } = await parseText(`<testsuite name="s"><testcase name="t"><error type="E">${'s'.repeat(120)}</error><system-out><![CDATA[${out}]]></system-out><system-err>${'e'.repeat(100)}</system-err></testcase></testsuite>`, 100);
    expect(cases[0].systemOut).to.equal(`${'o'.repeat(100)}\n[… 150 more characters cut]`);
    expect(cases[0].systemErr).to.equal('e'.repeat(100));
    expect(cases[0].stackTrace).to.equal(`${'s'.repeat(100)}\n[… 20 more characters cut]`);
    expect(cases[0].message).to.equal('s'.repeat(100)); // the first line of the (cut) text
  });

  it('a failure in a case with an error keeps the first one; a testcase outside any testsuite is put under its class', async () => {
    const { cases } = await parseText('<testsuites><testcase classname="k" name="t"><failure message="f"/><error message="e"/></testcase></testsuites>');
    expect(cases[0]).to.include({ outcome: 'failed', message: 'f' });
    expect(cases[0].suitePath).to.deep.equal(['k']);
  });

  it('refuses a file without test cases (no-tests) and a file of another format (malformed-file)', async () => {
    const noTests = await parseText('<testsuites><testsuite name="empty" tests="0"/></testsuites>').catch((e) => e);
    expect(noTests).to.be.instanceOf(ResultFileError);
    expect(noTests.code).to.equal('no-tests');
    const other = await parseText('<test-run><test-case name="x"/></test-run>').catch((e) => e);
    expect(other.code).to.equal('malformed-file');
    expect(other.message).to.include('root element is <test-run>');
  });
});

describe('JUnit parser: identity, retries and suite output', () => {
  it('Surefire reruns: each flaky/rerun element is a retried attempt before the final outcome, with its own message, trace and output; the case id comes from a testament_case_id property', async () => {
    const { cases } = await parseFixture('junit-surefire-reruns.xml');
    const suite = { suitePath: ['com.example.PaymentIT'], className: 'com.example.PaymentIT' };
    const idProperty = [{ name: 'testament_case_id', value: 'PAY-17' }];
    expect(cases).to.deep.equal([
      {
        ...base, ...suite, name: 'chargesCard', outcome: 'failed', retried: true, externalId: 'PAY-17', durationMs: 2250,
        message: 'expected: <200> but was: <503>', failureType: 'org.opentest4j.AssertionFailedError',
        stackTrace: 'org.opentest4j.AssertionFailedError: expected: <200> but was: <503>\n\tat com.example.PaymentIT.chargesCard(PaymentIT.java:31)',
        systemOut: 'POST /charge -> 503\n',
      },
      {
        ...base, ...suite, name: 'chargesCard', outcome: 'error', retried: true, externalId: 'PAY-17',
        message: 'Connection refused', failureType: 'java.net.ConnectException',
        stackTrace: 'java.net.ConnectException: Connection refused\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)',
        systemErr: 'retrying after connect error',
      },
      { ...base, ...suite, name: 'chargesCard', externalId: 'PAY-17', durationMs: 1500, systemOut: 'POST /charge -> 200\n', properties: idProperty },
      {
        ...base, ...suite, name: 'refunds', outcome: 'failed', retried: true, message: 'refund still not recorded', failureType: 'java.lang.AssertionError',
        stackTrace: 'java.lang.AssertionError: refund still not recorded\n\tat com.example.PaymentIT.refunds(PaymentIT.java:48)',
      },
      {
        ...base, ...suite, name: 'refunds', outcome: 'error', retried: true, message: 'timed out after 5s', failureType: 'java.util.concurrent.TimeoutException',
        stackTrace: 'java.util.concurrent.TimeoutException: timed out after 5s',
      },
      {
        ...base, ...suite, name: 'refunds', outcome: 'failed', durationMs: 750, message: 'refund not recorded', failureType: 'java.lang.AssertionError',
        stackTrace: 'java.lang.AssertionError: refund not recorded\n\tat com.example.PaymentIT.refunds(PaymentIT.java:48)',
      },
      { ...base, ...suite, name: 'listsPayments', durationMs: 100 },
    ]);
  });

  it('a flakyFailure whose text is its trace (no child elements, as cargo-nextest writes it) keeps that text as the attempt\'s trace', async () => {
    const { cases } = await parseText('<testsuites><testsuite name="crate"><testcase name="it_flakes" classname="mod::tests" time="0.300"><flakyFailure message="flake" type="failure">thread panicked at src/lib.rs:9:5</flakyFailure></testcase></testsuite></testsuites>');
    expect(cases.map((c) => [c.name, c.outcome, c.retried, c.message, c.stackTrace])).to.deep.equal([
      ['it_flakes', 'failed', true, 'flake', 'thread panicked at src/lib.rs:9:5'],
      ['it_flakes', 'passed', false, null, null],
    ]);
  });

  it('Playwright: the browser project (a script-file suite\'s hostname) is the variant and leads the title, so the same test in two projects differs where a user sees it', async () => {
    const { cases } = await parseFixture('junit-playwright.xml');
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.variant, c.outcome])).to.deep.equal([
      [['checkout.spec.ts'], 'checkout.spec.ts', '[chromium] Checkout › pays with a card', 'chromium', 'passed'],
      [['checkout.spec.ts'], 'checkout.spec.ts', '[chromium] Checkout › shows the total', 'chromium', 'failed'],
      [['checkout.spec.ts'], 'checkout.spec.ts', '[firefox] Checkout › pays with a card', 'firefox', 'passed'],
      [['checkout.spec.ts'], 'checkout.spec.ts', '[firefox] Checkout › shows the total', 'firefox', 'passed'],
    ]);
    // Playwright's includeProjectInTestName writes the same prefix itself: the same tests, not prefixed twice.
    const text = readFileSync(join(__dirname, '..', 'fixtures', 'junit-playwright.xml'), 'utf8');
    const prefixed = text.replace(/(hostname="(\w+)"[^]*?)(?=<testsuite |<\/testsuites>)/g, (block: string, _: string, project: string) => block.replace(/<testcase name="/g, `<testcase name="[${project}] `));
    expect(prefixed).to.include('name="[firefox] Checkout › shows the total"');
    const again = await parseText(prefixed);
    expect(again.cases.map((c) => [c.name, c.variant])).to.deep.equal(cases.map((c) => [c.name, c.variant]));
  });

  it('Vitest: a script-file suite whose hostname is the machine (no Playwright <testsuites id>) has no variant, so the next run on another machine finds the same tests', async () => {
    const { cases } = await parseFixture('junit-vitest.xml');
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.variant, c.outcome])).to.deep.equal([
      [['src/cart.test.ts'], 'src/cart.test.ts', 'cart > adds an item', null, 'passed'],
      [['src/cart.test.ts'], 'src/cart.test.ts', 'cart > totals the prices', null, 'failed'],
    ]);
    const text = readFileSync(join(__dirname, '..', 'fixtures', 'junit-vitest.xml'), 'utf8');
    const nextRun = await parseText(text.replace('fv-az1127-318', 'fv-az582-44'));
    expect(nextRun.cases.map((c) => [c.suitePath, c.className, c.name, c.variant])).to.deep.equal(cases.map((c) => [c.suitePath, c.className, c.name, c.variant]));
  });

  it('a machine hostname (Gradle) is no variant; pytest files are already named by their class', async () => {
    const gradle = await parseFixture('junit-gradle.xml');
    expect(gradle.cases.map((c) => c.variant)).to.deep.equal([null, null]);
    const pytest = await parseFixture('junit-pytest.xml');
    expect(pytest.cases.map((c) => c.suitePath)).to.deep.equal([['pytest'], ['pytest'], ['pytest'], ['pytest']]);
  });

  it('jest-junit with file attributes: the same describe and title in two files get different suitePaths; a nameless case gets a numbered placeholder', async () => {
    const { cases, warnings } = await parseFixture('junit-jest-files.xml');
    expect(cases.map((c) => [c.suitePath, c.name])).to.deep.equal([
      [['src/calculator.test.js', 'Calculator'], 'Calculator adds numbers'],
      [['src/calculator.test.js', 'Calculator'], '(unnamed test 2)'],
      [['src/legacy/calculator.test.js', 'Calculator'], 'Calculator adds numbers'],
    ]);
    expect(warnings.map((w) => w.case)).to.deep.equal(['(unnamed test 2)']);
  });

  it('an empty <failure/> followed by an <error message> keeps the failure outcome and takes the message, type and text of the error', async () => {
    const { cases } = await parseText('<testsuite name="s"><testcase name="t"><failure/><error message="socket closed" type="java.io.IOException">java.io.IOException: socket closed\n\tat X.y(X.java:1)</error></testcase></testsuite>');
    expect(cases[0]).to.include({ outcome: 'failed', message: 'socket closed', failureType: 'java.io.IOException', stackTrace: 'java.io.IOException: socket closed\n\tat X.y(X.java:1)' });
  });

  it('reports suite-level output (Gradle) once per suite, cut at maxOutputChars', async () => {
    const outputs: unknown[] = [];
    const xml = `<testsuites><testsuite name="outer"><testsuite name="inner"><testcase name="t"/><system-out>${'x'.repeat(30)}</system-out></testsuite>
      <testcase name="u"><system-out>case out</system-out></testcase><system-err>outer err</system-err></testsuite></testsuites>`;
    const cases = [];
    for await (const c of parseJunit(Readable.from([Buffer.from(xml)]), { fileName: 'r.xml', maxOutputChars: 10, onWarning: () => {}, onSuiteOutput: (o) => outputs.push(o) })) cases.push(c);
    expect(outputs).to.deep.equal([
      { suitePath: ['outer', 'inner'], systemOut: `${'x'.repeat(10)}\n[… 20 more characters cut]`, systemErr: null },
      { suitePath: ['outer'], systemOut: null, systemErr: 'outer err' },
    ]);
    expect(cases.map((c) => c.systemOut)).to.deep.equal([null, 'case out']);
    const gradle: unknown[] = [];
    for await (const _ of parseJunit(createReadStream(join(__dirname, '..', 'fixtures', 'junit-gradle.xml')), { fileName: 'g.xml', maxOutputChars: 100, onWarning: () => {}, onSuiteOutput: (o) => gradle.push(o) }));
    expect(gradle).to.deep.equal([{ suitePath: ['com.example.StackTest'], systemOut: "suite output is not a case's", systemErr: null }]);
  });

  it('tells each suite\'s own properties to onSuiteProperties (value attribute or text), not the cases\' (issue 36)', async () => {
    const xml = `<?xml version="1.0"?><testsuites><testsuite name="outer"><properties><property name="go.version" value="go1.22.1"/><property name="os">linux</property></properties>
      <testsuite name="inner"><properties><property name="seed" value="7"/></properties><testcase name="t"><properties><property name="owner" value="a"/></properties></testcase></testsuite>
      <testcase name="u"/></testsuite></testsuites>`;
    const told: unknown[] = [];
    const cases: { name: string; properties: unknown[] }[] = [];
    for await (const c of parseJunit(Readable.from([Buffer.from(xml)]), { fileName: 'p.xml', maxOutputChars: 100, onWarning: () => {}, onSuiteProperties: (p) => told.push(p) })) cases.push(c);
    expect(told).to.deep.equal([
      { suitePath: ['outer', 'inner'], properties: [{ name: 'seed', value: '7' }] },
      { suitePath: ['outer'], properties: [{ name: 'go.version', value: 'go1.22.1' }, { name: 'os', value: 'linux' }] },
    ]);
    expect(cases.map((c) => [c.name, c.properties])).to.deep.equal([['t', [{ name: 'owner', value: 'a' }]], ['u', []]]);
  });
});
