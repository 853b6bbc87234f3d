import { expect } from 'chai';
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
      { ...base, ...suite, name: 'flaky', durationMs: 20, systemOut: 'output of the passing run' },
      { ...base, ...suite, name: 'slow', durationMs: null },
    ]);
    expect(warnings).to.deep.equal([
      { file: 'results.xml', message: 'a test case without a name (class com.example.CalculatorTest) was skipped' },
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
