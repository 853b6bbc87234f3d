import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import type { SuiteOutput } from '../../../services/imports/formats/parsedResult';
import { BASE_CASE, harness } from './harness';
import { parseNunit } from '../../../services/imports/formats/nunit';

const { parseFixture, parseText } = harness(parseNunit);
const base = BASE_CASE;

describe('NUnit parser', () => {
  const path = ['MyTests.dll', 'MyTests', 'CalculatorTests'];
  const className = 'MyTests.CalculatorTests';

  it('reads NUnit 3: Failed/Error → error, reasons, outputs, properties, parameterised method level left out', async () => {
    const { cases, warnings } = await parseFixture('nunit3.xml');
    expect(cases).to.deep.equal([
      { ...base, suitePath: path, className, name: 'Add', durationMs: 12, executedAt: '2024-01-15T10:30:00.123Z', properties: [{ name: 'Category', value: 'Fast' }, { name: 'Description', value: 'adds two numbers' }] },
      {
        ...base, suitePath: path, className, name: 'Divide', outcome: 'error', durationMs: 3, executedAt: '2024-01-15T10:30:01.000Z',
        message: 'System.DivideByZeroException : Attempted to divide by zero.', systemOut: 'dividing 1 by 0\n',
        stackTrace: '   at MyTests.Calculator.Divide(Int32 a, Int32 b) in /src/Calculator.cs:line 9\n   at MyTests.CalculatorTests.Divide() in /src/CalculatorTests.cs:line 20',
      },
      {
        ...base, suitePath: path, className, name: 'Subtract', outcome: 'failed', durationMs: 2, executedAt: '2024-01-15T10:30:01.000Z',
        message: 'Expected: 4\n  But was:  5', stackTrace: '   at MyTests.CalculatorTests.Subtract() in /src/CalculatorTests.cs:line 27',
      },
      { ...base, suitePath: path, className, name: 'Later', outcome: 'skipped', durationMs: 0, executedAt: '2024-01-15T10:30:01.000Z', message: 'not ready', properties: [{ name: '_SKIPREASON', value: 'not ready' }] },
      { ...base, suitePath: path, className, name: 'Warns', outcome: 'passed', durationMs: 1, executedAt: '2024-01-15T10:30:01.000Z', message: 'precision is low' },
      { ...base, suitePath: path, className, name: 'Multiply(2,3)', durationMs: 4, executedAt: '2024-01-15T10:30:02.000Z' },
      // A result no table lists is an error: a failure is never hidden.
      { ...base, suitePath: path, className, name: 'Weird', outcome: 'error', durationMs: 1, executedAt: '2024-01-15T10:30:00.000Z' },
    ]);
    expect(warnings).to.deep.equal([{ file: 'results.xml', message: 'unknown result "Passing"; imported as an error, so that no failure is hidden', case: 'Weird' }]);
  });

  it('reads NUnit 2: full names split into class and method, Error → error, Ignored → skipped, run date as executedAt', async () => {
    const { cases } = await parseFixture('nunit2.xml');
    const at = { suitePath: path, className, executedAt: '2024-01-15T10:30:00.000Z' };
    expect(cases).to.deep.equal([
      { ...base, ...at, name: 'Add', durationMs: 12 },
      { ...base, ...at, name: 'Divide', outcome: 'error', durationMs: 3, message: 'System.DivideByZeroException : Attempted to divide by zero.', stackTrace: 'at MyTests.CalculatorTests.Divide() in c:\\src\\CalculatorTests.cs:line 20' },
      { ...base, ...at, name: 'Subtract', outcome: 'failed', durationMs: 2, message: 'Expected: 4\n  But was:  5', stackTrace: 'at MyTests.CalculatorTests.Subtract() in c:\\src\\CalculatorTests.cs:line 27' },
      { ...base, ...at, name: 'Later', outcome: 'skipped', message: 'not ready' },
      { ...base, ...at, name: 'Multiply(1.5,2)', durationMs: 5 },
    ]);
  });

  it('NUnit 2: NotRunnable is skipped (not run, as NUnit counts it), a not executed case without result is skipped, an unknown result is an error with a warning', async () => {
    const { cases, warnings } = await parseText(`<test-results name="a.dll"><test-suite type="TestFixture" name="F"><results>
      <test-case name="N.F.Bad" executed="False" result="NotRunnable"/><test-case name="N.F.Off" executed="False"/><test-case name="N.F.Odd" executed="True" result="Passed"/>
    </results></test-suite></test-results>`);
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.outcome])).to.deep.equal([[['F'], 'N.F', 'Bad', 'skipped'], [['F'], 'N.F', 'Off', 'skipped'], [['F'], 'N.F', 'Odd', 'error']]);
    expect(warnings.map((w) => w.case)).to.deep.equal(['N.F.Odd']);
  });
});

describe('NUnit parser: identity, gaps of the older schemas, suite output', () => {
  it('NUnit 2: executed="True" success="False" without a result is a failure (a one-case file is not refused)', async () => {
    const { cases } = await parseText(`<test-results name="a.dll" date="2009-08-20" time="13:22:10"><test-suite type="TestFixture" name="F" executed="True" success="False"><results>
      <test-case name="N.F.Breaks" executed="True" success="False" time="0.031"><failure><message><![CDATA[boom]]></message></failure></test-case>
    </results></test-suite></test-results>`);
    expect(cases.map((c) => [c.name, c.outcome, c.message, c.durationMs])).to.deep.equal([['Breaks', 'failed', 'boom', 31]]);
  });

  it('NUnit 3 pre-release schema: durations from time, a time-of-day start-time on the run-date; testament_case_id as a property or a Category; a nameless case gets a placeholder', async () => {
    const { cases, warnings } = await parseFixture('nunit3-prerelease.xml');
    const suitePath = ['Billing.Tests.dll', 'InvoiceTests'];
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.outcome, c.durationMs, c.executedAt, c.externalId])).to.deep.equal([
      [suitePath, 'Billing.Tests.InvoiceTests', 'TotalsLines', 'passed', 122, '2014-11-28T14:11:45.000Z', 'BIL-101'],
      [suitePath, 'Billing.Tests.InvoiceTests', 'AppliesVat', 'failed', 153, '2014-11-28T14:11:46.000Z', 'BIL-102'],
      [suitePath, 'Billing.Tests.InvoiceTests', '(unnamed test 3)', 'passed', 11, '2014-11-28T14:11:45.000Z', null],
    ]);
    expect(warnings).to.deep.equal([{ file: 'results.xml', message: 'a test case without a name (Billing.Tests.InvoiceTests) was imported as "(unnamed test 3)"', case: '(unnamed test 3)' }]);
  });

  it('NUnit 2 categories: testament_case_id=… is the externalId', async () => {
    const { cases } = await parseText(`<test-results name="a.dll"><test-suite type="TestFixture" name="F"><results>
      <test-case name="N.F.A" executed="True" result="Success" success="True"><categories><category name="Smoke"/><category name="testament_case_id=SMK-7"/></categories></test-case>
    </results></test-suite></test-results>`);
    expect(cases[0]).to.include({ externalId: 'SMK-7' });
    expect(cases[0].properties).to.deep.equal([{ name: 'Category', value: 'Smoke' }, { name: 'Category', value: 'testament_case_id=SMK-7' }]);
  });

  it('NUnit 2: two parameterised methods whose cases have the same given names stay four tests (the method level is kept where the name lacks it)', async () => {
    const { cases } = await parseFixture('nunit2-named-cases.xml');
    const fixture = ['Runner.Tests.dll', 'Runner', 'Tests', 'CommandLineTests'];
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.outcome])).to.deep.equal([
      [[...fixture, 'FirstProjectAndStopAfterFirstProject'], 'Runner.Tests.CommandLineTests', 'Prio project specified', 'passed'],
      [[...fixture, 'FirstProjectAndStopAfterFirstProject'], 'Runner.Tests.CommandLineTests', 'No arguments', 'passed'],
      [[...fixture, 'ParseArgs'], 'Runner.Tests.CommandLineTests', 'Prio project specified', 'passed'],
      [[...fixture, 'ParseArgs'], 'Runner.Tests.CommandLineTests', 'No arguments', 'failed'],
      // A case named by its method keeps the identity it had: no method level.
      [fixture, 'Runner.Tests.CommandLineTests', 'Sum(1,2)', 'passed'],
    ]);
    const identities = new Set(cases.map((c) => JSON.stringify([c.suitePath, c.className, c.name, c.variant])));
    expect(identities.size).to.equal(5);
  });

  it('a case named only by its given name (no namespace and class), in NUnit 2 and NUnit 3, keeps its parameterised method level', async () => {
    const nunit2 = await parseText(`<test-results name="a.dll"><test-suite type="TestFixture" name="F"><results>
      <test-suite type="ParameterizedTest" name="ParseArgs"><results><test-case name="No arguments" executed="True" result="Success" success="True"/></results></test-suite>
      <test-suite type="ParameterizedTest" name="Other"><results><test-case name="No arguments" executed="True" result="Success" success="True"/></results></test-suite>
    </results></test-suite></test-results>`);
    expect(nunit2.cases.map((c) => [c.suitePath, c.name])).to.deep.equal([[['F', 'ParseArgs'], 'No arguments'], [['F', 'Other'], 'No arguments']]);
    const nunit3 = await parseText(`<test-run><test-suite type="TestFixture" name="F" fullname="N.F" classname="N.F">
      <test-suite type="ParameterizedMethod" name="ParseArgs" fullname="N.F.ParseArgs" classname="N.F">
        <test-case name="No arguments" fullname="N.F.No arguments" methodname="ParseArgs" classname="N.F" result="Passed"/></test-suite>
      <test-suite type="ParameterizedMethod" name="Other" fullname="N.F.Other" classname="N.F">
        <test-case name="No arguments" fullname="N.F.No arguments" methodname="Other" classname="N.F" result="Passed"/></test-suite>
      <test-suite type="GenericMethod" name="Echo&lt;T&gt;" fullname="N.F.Echo&lt;T&gt;" classname="N.F">
        <test-case name="Echo&lt;Int32&gt;(1)" fullname="N.F.Echo&lt;Int32&gt;(1)" methodname="Echo" classname="N.F" result="Passed"/></test-suite>
    </test-suite></test-run>`);
    expect(nunit3.cases.map((c) => [c.suitePath, c.name])).to.deep.equal([[['F', 'ParseArgs'], 'No arguments'], [['F', 'Other'], 'No arguments'], [['F'], 'Echo<Int32>(1)']]);
  });

  it('NUnit 3 suite-level <output> is reported once per suite through onSuiteOutput', async () => {
    const outputs: SuiteOutput[] = [];
    const input = Readable.from([readFileSync(join(__dirname, '..', 'fixtures', 'nunit3-prerelease.xml'))]);
    for await (const _ of parseNunit(input, { fileName: 'r.xml', maxOutputChars: 100, onWarning: () => {}, onSuiteOutput: (o) => outputs.push(o) }));
    expect(outputs).to.deep.equal([{ suitePath: ['Billing.Tests.dll', 'InvoiceTests'], systemOut: 'fixture set-up: seeded 3 customers\n', systemErr: null }]);
  });
});
