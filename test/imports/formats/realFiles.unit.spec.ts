import { expect } from 'chai';
import { parseCucumber } from '../../../services/imports/formats/cucumber';
import { parseJunit } from '../../../services/imports/formats/junit';
import { parseMocha } from '../../../services/imports/formats/mocha';
import { parseNunit } from '../../../services/imports/formats/nunit';
import { parseTestng } from '../../../services/imports/formats/testng';
import { harness } from './harness';

/**
 * What real result files (test/imports/fixtures/real, SOURCES.md) showed the parsers got wrong, each
 * reduced to the shape that shows it. test/imports/realFiles.int.spec.ts imports the files themselves.
 */
describe('parsers on shapes real files have', () => {
  it('PHPUnit: the absolute `file` it writes on each class suite and on .phpt tests is not a suite level (a CI checkout elsewhere finds the same tests)', async () => {
    const report = (root: string) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="CLI Arguments" tests="2" failures="1">
    <testcase name="deprecated.phpt" file="${root}/tests/end-to-end/deprecated.phpt" assertions="1" time="0.06">
      <failure type="PHPUnit\\Framework\\PhptAssertionFailedError">deprecated.phptFailed asserting that string matches format description.</failure>
    </testcase>
    <testsuite name="PHPUnit\\Event\\CollectingDispatcherTest" file="${root}/tests/unit/CollectingDispatcherTest.php" tests="1">
      <testcase name="testCollects" file="${root}/tests/unit/CollectingDispatcherTest.php" line="20" class="PHPUnit\\Event\\CollectingDispatcherTest" classname="PHPUnit.Event.CollectingDispatcherTest" time="0.001"/>
    </testsuite>
  </testsuite>
</testsuites>`;
    const { parseText } = harness(parseJunit);
    const onLaptop = await parseText(report('/home/matteo/OSS/phpunit'));
    const onCi = await parseText(report('/home/runner/work/phpunit/phpunit'));
    const identity = (c: { suitePath: string[]; className: string | null; name: string }) => [c.suitePath, c.className, c.name];
    expect(onLaptop.cases.map(identity)).to.deep.equal([
      [['CLI Arguments'], null, 'deprecated.phpt'],
      [['CLI Arguments', 'PHPUnit\\Event\\CollectingDispatcherTest'], 'PHPUnit.Event.CollectingDispatcherTest', 'testCollects'],
    ]);
    expect(onCi.cases.map(identity)).to.deep.equal(onLaptop.cases.map(identity));
    // The file itself is still kept on the result.
    expect(onCi.cases[1].file).to.equal('/home/runner/work/phpunit/phpunit/tests/unit/CollectingDispatcherTest.php');
    expect(onCi.cases.map((c) => c.outcome)).to.deep.equal(['failed', 'passed']);
  });

  it('jest-junit with addFileAttribute still gets its file as the first level (a relative path no suite carries)', async () => {
    const { parseText } = harness(parseJunit);
    const { cases } = await parseText(`<testsuites><testsuite name="total">
      <testcase classname="total adds" name="adds" file="src/cart/total.test.js"/>
    </testsuite></testsuites>`);
    expect(cases[0].suitePath).to.deep.equal(['src/cart/total.test.js', 'total']);
  });

  it('Mocha JSON and mochawesome written on Windows: the file level is the base name, not the machine\'s path', async () => {
    const { parseText } = harness(parseMocha);
    const file = 'C:\\Users\\Michal\\Workspace\\dorny\\test-reporter\\reports\\mocha\\test\\main.test.js';
    const json = await parseText(JSON.stringify({
      stats: { tests: 2, passes: 1, failures: 1 },
      tests: [
        { title: 'Passing test', fullTitle: 'Test 1 Passing test', file, duration: 0, currentRetry: 0, err: {} },
        { title: 'Failing test', fullTitle: 'Test 1 Failing test', file, duration: 1, currentRetry: 0, err: { message: '2 == -1', stack: 'AssertionError: 2 == -1' } },
      ],
    }));
    expect(json.cases.map((c) => [c.suitePath, c.name, c.outcome])).to.have.deep.members([
      [['main.test.js', 'Test 1'], 'Passing test', 'passed'],
      [['main.test.js', 'Test 1'], 'Failing test', 'failed'],
    ]);
    expect(json.cases.map((c) => c.file)).to.deep.equal([file, file]);

    const awesome = await parseText(JSON.stringify({
      stats: { tests: 1, passes: 1 },
      results: [{
        title: '', fullFile: 'D:\\work\\testcases\\update-data-profile.js', file: '\\testcases\\update-data-profile.js', tests: [],
        suites: [{ title: 'Update Data User API Test', file: '\\testcases\\update-data-profile.js', tests: [
          { title: 'returns 200', fullTitle: 'Update Data User API Test returns 200', duration: 85, state: 'passed', pass: true, fail: false, pending: false, err: {} },
        ], suites: [] }],
      }],
    }));
    expect(awesome.cases.map((c) => c.suitePath)).to.deep.equal([['update-data-profile.js', 'Update Data User API Test']]);
  });

  it('cucumber-jvm 1.x: a Scenario Outline\'s template (no result anywhere) is not a test; its example rows are', async () => {
    const { parseText } = harness(parseCucumber);
    const row = (line: number, status: string) => ({
      line, name: 'reports each example', id: `outlines;reports-each-example;;${line - 9}`, type: 'scenario', keyword: 'Scenario Outline',
      before: [{ result: { duration: 1000000, status: 'passed' } }],
      steps: [{ line: 6, name: 'a get call', keyword: 'Given ', result: { duration: 2000000, status } }],
    });
    const { cases } = await parseText(JSON.stringify([{
      name: 'Outlines', uri: '/features/outline.feature', keyword: 'Feature', elements: [
        { line: 5, name: 'reports each example', id: 'outlines;reports-each-example', type: 'scenario_outline', keyword: 'Scenario Outline',
          examples: [{ line: 9, rows: [{ cells: ['endpoint'], line: 10 }, { cells: ['/a'], line: 11 }, { cells: ['/b'], line: 12 }] }],
          steps: [{ line: 6, name: 'a get call to "<endpoint>"', keyword: 'Given ' }] },
        row(11, 'passed'),
        row(12, 'failed'),
      ],
    }]));
    expect(cases.map((c) => [c.name, c.variant, c.outcome])).to.deep.equal([
      ['reports each example', 'line 11', 'passed'],
      ['reports each example', 'line 12', 'failed'],
    ]);
  });

  it('a scenario_outline element that did run (it has results) is still imported', async () => {
    const { parseText } = harness(parseCucumber);
    const { cases } = await parseText(JSON.stringify([{
      name: 'Outlines', uri: 'outline.feature', elements: [
        { line: 5, name: 'ran as a whole', type: 'scenario_outline', keyword: 'Scenario Outline', steps: [{ name: 'x', keyword: 'Given ', result: { status: 'failed', error_message: 'boom' } }] },
      ],
    }]));
    expect(cases.map((c) => [c.name, c.outcome, c.message])).to.deep.equal([['ran as a whole', 'failed', 'boom']]);
  });

  it('TestNG: a failed configuration method is a failed result with a warning (its tests only show as skipped); passed and skipped ones stay out', async () => {
    const { parseText } = harness(parseTestng);
    const { cases, warnings } = await parseText(`<?xml version="1.0" encoding="UTF-8"?>
<testng-results skipped="1" failed="0" total="1" passed="0">
  <suite name="Config suite"><test name="Config test"><class name="com.fakepkg.test.MyFakeTest">
    <test-method status="FAIL" signature="testSetup" name="testSetup" is-config="true" duration-ms="11"/>
    <test-method status="SKIP" signature="tearDown" name="tearDown" is-config="true" duration-ms="0"/>
    <test-method status="PASS" signature="beforeClass" name="beforeClass" is-config="true" duration-ms="1"/>
    <test-method status="SKIP" signature="runTest" name="testShouldPass" duration-ms="11"/>
  </class></test></suite>
</testng-results>`);
    expect(cases.map((c) => [c.name, c.outcome, c.message, c.properties])).to.deep.equal([
      ['testSetup', 'failed', 'configuration method testSetup failed', [{ name: 'configuration', value: 'true' }]],
      ['testShouldPass', 'skipped', null, []],
    ]);
    expect(warnings.map((w) => w.message)).to.deep.equal(['configuration method testSetup (class com.fakepkg.test.MyFakeTest) failed; imported as a failed result so that the failure shows']);
  });

  it('TestNG: a failure whose <exception> has no <message> takes the first line of its stack trace as message', async () => {
    const { parseText } = harness(parseTestng);
    const { cases } = await parseText(`<testng-results><suite name="Ant suite"><test name="Ant test"><class name="org.jenkins.TestDataProvider">
      <test-method status="FAIL" signature="test(int)" name="test" duration-ms="9">
        <params><param index="0"><value><![CDATA[1]]></value></param></params>
        <exception class="java.lang.AssertionError"><full-stacktrace><![CDATA[java.lang.AssertionError
	at org.jenkins.TestDataProvider.test(TestDataProvider.java:15)
]]></full-stacktrace></exception>
      </test-method>
    </class></test></suite></testng-results>`);
    expect(cases.map((c) => [c.variant, c.outcome, c.message, c.failureType])).to.deep.equal([['1', 'failed', 'java.lang.AssertionError', 'java.lang.AssertionError']]);
  });

  it('Mocha: an empty title inside a describe (full title "Checkout ") gets a numbered placeholder, so two such tests stay two, in mocha JSON and mochawesome', async () => {
    const { parseText } = harness(parseMocha);
    const json = await parseText(JSON.stringify({
      stats: { tests: 3, passes: 2, failures: 1 },
      tests: [
        { title: '', fullTitle: 'Checkout ', file: '/ci/test/checkout.spec.js', duration: 3, currentRetry: 0, err: { message: 'expected 1 to equal 2', stack: 'AssertionError' } },
        { title: '', fullTitle: 'Checkout ', file: '/ci/test/checkout.spec.js', duration: 1, currentRetry: 0, speed: 'fast', err: {} },
        { fullTitle: 'Checkout pays', file: '/ci/test/checkout.spec.js', duration: 1, currentRetry: 0, speed: 'fast', err: {} },
      ],
    }));
    expect(json.cases.map((c) => [c.suitePath, c.name, c.outcome])).to.have.deep.members([
      [['checkout.spec.js', 'Checkout'], '(unnamed test 1)', 'failed'],
      [['checkout.spec.js', 'Checkout'], '(unnamed test 2)', 'passed'],
      // Without a title key at all the full title is all there is.
      [['checkout.spec.js', 'Checkout pays'], 'Checkout pays', 'passed'],
    ]);
    expect(json.warnings.map((w) => w.message).sort()).to.deep.equal([
      'a test without a title was imported as "(unnamed test 1)"', 'a test without a title was imported as "(unnamed test 2)"',
    ]);

    const awesome = await parseText(JSON.stringify({
      stats: { tests: 2 },
      results: [{ title: '', file: '/t.js', tests: [], suites: [{ title: 'S', file: '/t.js', suites: [], tests: [
        { title: '', fullTitle: 'S ', state: 'failed', fail: true, err: { message: 'boom' } },
        { title: ' ', fullTitle: 'S  ', state: 'passed', pass: true, err: {} },
      ] }] }],
    }));
    expect(awesome.cases.map((c) => [c.name, c.outcome])).to.deep.equal([['(unnamed test 1)', 'failed'], ['(unnamed test 2)', 'passed']]);
  });

  it('Cypress (mocha-junit-reporter): the spec file on each "Root Suite" is the file of the describe suites after it, so one describe in two spec files is two tests', async () => {
    const { parseText } = harness(parseJunit);
    const spec = (file: string, outcome: string) => `
<testsuite name="Root Suite" timestamp="2021-02-09T12:41:53" tests="1" file="${file}" time="2.47" failures="0">
  <testcase name="loads" time="2.47" classname="loads"></testcase>
</testsuite>
<testsuite name="Login" timestamp="2021-02-09T12:41:58" tests="1" time="1.65" failures="${outcome ? 1 : 0}">
  <testcase name="Login works" time="1.65" classname="works">${outcome}</testcase>
</testsuite>`;
    const { cases } = await parseText(`<?xml version="1.0"?>\n<testsuites>${spec('cypress/e2e/desktop/login.cy.js', '<failure message="no button" type="AssertionError">no button</failure>')}${spec('cypress/e2e/mobile/login.cy.js', '')}</testsuites>`);
    // Written on Windows, the same spec file is the same level (the result keeps the file as written).
    const windows = await parseText(`<testsuites>${spec('cypress\\e2e\\mobile\\login.cy.js', '')}</testsuites>`);
    expect(windows.cases.map((c) => [c.suitePath, c.file])).to.deep.equal([
      [['cypress/e2e/mobile/login.cy.js', 'Root Suite'], 'cypress\\e2e\\mobile\\login.cy.js'],
      [['cypress/e2e/mobile/login.cy.js', 'Login'], 'cypress\\e2e\\mobile\\login.cy.js'],
    ]);
    expect(cases.map((c) => [c.suitePath, c.name, c.file, c.outcome])).to.deep.equal([
      [['cypress/e2e/desktop/login.cy.js', 'Root Suite'], 'loads', 'cypress/e2e/desktop/login.cy.js', 'passed'],
      [['cypress/e2e/desktop/login.cy.js', 'Login'], 'Login works', 'cypress/e2e/desktop/login.cy.js', 'failed'],
      [['cypress/e2e/mobile/login.cy.js', 'Root Suite'], 'loads', 'cypress/e2e/mobile/login.cy.js', 'passed'],
      [['cypress/e2e/mobile/login.cy.js', 'Login'], 'Login works', 'cypress/e2e/mobile/login.cy.js', 'passed'],
    ]);
  });

  it('xmlrunner: the run\'s time it appends to a suite name (TestAcme-20251114214921) is left out, so the next run finds the same tests; other names keep their digits', async () => {
    const { parseText } = harness(parseJunit);
    const report = (suite: string) => `<testsuite name="${suite}" tests="1" file=".py" failures="1">
  <testcase classname="TestAcme" name="test_always_fail" time="0.000" file="tests/test_lib.py" line="23"><failure type="AssertionError" message="failed">AssertionError: failed</failure></testcase>
</testsuite>`;
    const monday = await parseText(report('TestAcme-20251114214921'));
    const tuesday = await parseText(report('TestAcme-20251115093000'));
    expect(monday.cases.map((c) => c.suitePath)).to.deep.equal([['tests/test_lib.py', 'TestAcme']]);
    expect(tuesday.cases.map((c) => c.suitePath)).to.deep.equal(monday.cases.map((c) => c.suitePath));
    for (const name of ['release-2025111421492', 'build-20251399999999', '20251114214921']) {
      expect((await parseText(report(name))).cases[0].suitePath[1], name).to.equal(name);
    }
  });

  it('NUnit 3: a failure whose only explanation is its label (a time-out, an empty <failure/>) takes the label as message', async () => {
    const { parseText } = harness(parseNunit);
    const { cases } = await parseText(`<test-run id="0" testcasecount="2" result="Failed" total="2" passed="0" failed="2">
  <test-suite type="TestFixture" id="1-1000" name="CalculatorTests" fullname="DotnetTests.XUnitTests.CalculatorTests" classname="DotnetTests.XUnitTests.CalculatorTests" result="Failed">
    <test-case id="1-1006" name="Timeout_Test" fullname="DotnetTests.XUnitTests.CalculatorTests.Timeout_Test" result="Failed" label="Test exceeded Timeout value 1ms." duration="0.014949">
      <properties><property name="Timeout" value="1" /></properties>
      <failure />
    </test-case>
    <test-case id="1-1004" name="Exception_In_TargetTest" fullname="DotnetTests.XUnitTests.CalculatorTests.Exception_In_TargetTest" result="Failed" label="Error" duration="0.02">
      <failure><message><![CDATA[System.DivideByZeroException : Attempted to divide by zero.]]></message></failure>
    </test-case>
  </test-suite>
</test-run>`);
    expect(cases.map((c) => [c.name, c.outcome, c.message])).to.deep.equal([
      ['Timeout_Test', 'failed', 'Test exceeded Timeout value 1ms.'],
      ['Exception_In_TargetTest', 'error', 'System.DivideByZeroException : Attempted to divide by zero.'],
    ]);
  });

  it('NUnit 2: a parameterised or generic fixture\'s arguments belong to its class (NUnit.Tests.GenericFixture<Double>(11.5d)), a method\'s to its name', async () => {
    const { parseText } = harness(parseNunit);
    const { cases } = await parseText(`<test-results name="mock-assembly.dll" total="3" errors="0" failures="0" not-run="0" date="2010-10-18" time="13:23:35">
  <test-suite type="Assembly" name="/home/charlie/mock-assembly.dll" executed="True" result="Success" success="True"><results>
    <test-suite type="TestFixture" name="GenericFixture&lt;Double&gt;(11.5d)" executed="True" result="Success" success="True"><results>
      <test-case name="NUnit.Tests.GenericFixture&lt;Double&gt;(11.5d).Test1" executed="True" result="Success" success="True" time="0.000" />
    </results></test-suite>
    <test-suite type="TestFixture" name="FixtureWithTestCases" executed="True" result="Success" success="True"><results>
      <test-suite type="ParameterizedTest" name="MethodWithParameters" executed="True" result="Success" success="True"><results>
        <test-case name="NUnit.Tests.FixtureWithTestCases.MethodWithParameters(9.5,&quot;a.b)&quot;)" executed="True" result="Success" success="True" time="0.003" />
      </results></test-suite>
    </results></test-suite>
  </results></test-suite>
</test-results>`);
    expect(cases.map((c) => [c.className, c.name])).to.deep.equal([
      ['NUnit.Tests.GenericFixture<Double>(11.5d)', 'Test1'],
      ['NUnit.Tests.FixtureWithTestCases', 'MethodWithParameters(9.5,"a.b)")'],
    ]);
  });
});
