import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { ParseWarning, ParsedCase, SuiteOutput } from '../../../services/imports/formats/parsedResult';
import { BASE_CASE, harness } from './harness';
import { parseMstest } from '../../../services/imports/formats/mstest';

const { parseFixture, parseText } = harness(parseMstest);
const base = BASE_CASE;

describe('MSTest (TRX) parser', () => {
  it('reads a TRX whose definitions follow its results: class names, outcomes, TimeSpan durations, outputs', async () => {
    const { cases, warnings } = await parseFixture('mstest.trx');
    const calc = { suitePath: ['MyTests.Math.CalculatorTests'], className: 'MyTests.Math.CalculatorTests' };
    expect(cases).to.deep.equal([
      { ...base, ...calc, name: 'Add', durationMs: 12, executedAt: '2024-01-15T10:30:00.123Z', systemOut: 'adding 1 and 2' },
      {
        ...base, ...calc, name: 'Divide', outcome: 'failed', durationMs: 1500, executedAt: '2024-01-15T10:30:01.000Z', systemErr: 'warning: dividing',
        message: 'Assert.AreEqual failed. Expected:<2>. Actual:<3>.', stackTrace: '   at MyTests.Math.CalculatorTests.Divide() in /src/CalculatorTests.cs:line 20',
      },
      { ...base, suitePath: ['MyTests.Math.SlowTests'], className: 'MyTests.Math.SlowTests', name: 'Hangs', outcome: 'error', durationMs: 86_402_000, executedAt: '2024-01-15T10:30:02.000Z' },
      { ...base, ...calc, name: 'Later', outcome: 'skipped', durationMs: 0, executedAt: '2024-01-15T10:30:03.000Z', message: 'Test method MyTests.Math.CalculatorTests.Later was ignored' },
      { ...base, ...calc, name: 'Rows', outcome: 'failed', durationMs: 2, executedAt: '2024-01-15T10:30:04.000Z', message: 'Rows (1): inner row failed', properties: [{ name: 'inner[1]', value: 'Rows (1): Failed' }] },
      { ...base, suitePath: ['(no class)'], name: 'Odd', outcome: 'passed', durationMs: 0, executedAt: '2024-01-15T10:30:00.000Z' }, // PassedButRunAborted
    ]);
    expect(warnings).to.deep.equal([{ file: 'results.xml', message: 'no class found for test t6; it was put in the suite "(no class)"', case: 'Odd' }]);
  });

  it('uses definitions read before the results, a qualified test name without a definition, and the run start', async () => {
    const trx = `<?xml version="1.0" encoding="utf-8"?><t:TestRun xmlns:t="http://microsoft.com/schemas/VisualStudio/TeamTest/2010">
      <t:Times start="2024-01-15T10:30:00.0000000Z"/>
      <t:TestDefinitions><t:UnitTest id="a"><t:TestMethod className="Ns.A" name="One"/></t:UnitTest></t:TestDefinitions>
      <t:Results>
        <t:UnitTestResult testId="a" testName="One" outcome="Aborted" duration="00:00:00.0004999"/>
        <t:UnitTestResult testId="b" testName="Ns.B.Two" outcome="Error"/>
        <t:UnitTestResult testId="c" testName="Three" outcome="Inconclusive"/>
      </t:Results></t:TestRun>`;
    const { cases, warnings } = await parseText(trx);
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.outcome, c.durationMs, c.executedAt])).to.deep.equal([
      [['Ns.A'], 'Ns.A', 'One', 'error', 0, '2024-01-15T10:30:00.000Z'],
      [['Ns.B'], 'Ns.B', 'Two', 'error', null, '2024-01-15T10:30:00.000Z'],
      [['(no class)'], null, 'Three', 'skipped', null, '2024-01-15T10:30:00.000Z'],
    ]);
    expect(warnings.map((w) => w.message)).to.deep.equal(['no class found for test c; it was put in the suite "(no class)"']);
  });

  it('a data-driven test keeps its rows: their outcomes as properties, their messages (the parent has none), stack traces and outputs under their names', async () => {
    const { cases } = await parseFixture('mstest-data-driven.trx');
    expect(cases).to.deep.equal([{
      ...base, suitePath: ['Parsing.Tests.RowTests'], className: 'Parsing.Tests.RowTests', name: 'ParsesRow', outcome: 'failed', durationMs: 30, executedAt: '2024-05-06T14:00:01.000Z',
      message: 'ParsesRow ("a",1): Some Message.\nParsesRow ("c",3): Second Message.',
      stackTrace: 'ParsesRow ("a",1):\n   at Parsing.Tests.RowTests.ParsesRow(String text, Int32 n) in /src/RowTests.cs:line 14\nParsesRow ("c",3):\n   at Parsing.Tests.RowTests.ParsesRow(String text, Int32 n) in /src/RowTests.cs:line 15',
      systemOut: '[ParsesRow ("a",1)]\nparsing a',
      systemErr: '[ParsesRow ("c",3)]\nrow c is odd',
      properties: [
        { name: 'inner[1]', value: 'ParsesRow ("a",1): Failed' },
        { name: 'inner[2]', value: 'ParsesRow ("b",2): Passed' },
        { name: 'inner[3]', value: 'ParsesRow ("c",3): Failed' },
      ],
    }]);
  });

  it('refuses a TRX without results (no-tests)', async () => {
    const err = await parseText('<TestRun xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010"><Results/></TestRun>').catch((e) => e);
    expect(err.code).to.equal('no-tests');
  });
});

describe('MSTest (TRX) parser: identity, missing outcomes, run output', () => {
  it('a testament_case_id category or property is the externalId; a result without an outcome is an error with a warning; run output goes to onSuiteOutput', async () => {
    const outputs: SuiteOutput[] = [];
    const warnings: ParseWarning[] = [];
    const cases: ParsedCase[] = [];
    const input = createReadStream(join(__dirname, '..', 'fixtures', 'mstest-identity.trx'));
    for await (const c of parseMstest(input, { fileName: 'run.trx', maxOutputChars: 1000, onWarning: (w) => warnings.push(w), onSuiteOutput: (o) => outputs.push(o) })) cases.push(c);
    expect(cases.map((c) => [c.suitePath, c.name, c.outcome, c.externalId])).to.deep.equal([
      [['Orders.Tests.OrderTests'], 'CreatesOrder', 'passed', 'ORD-1'],
      [['Orders.Tests.OrderTests'], 'CancelsOrder', 'failed', 'ORD-2'],
      [['Orders.Tests.OrderTests'], 'ShipsOrder', 'error', null],
    ]);
    expect(warnings).to.deep.equal([{ file: 'run.trx', message: 'a result without an outcome (the run counts it as an error) was imported as an error', case: 'ShipsOrder' }]);
    expect(outputs).to.deep.equal([{ suitePath: [], systemOut: "Data collector 'Code Coverage' started.", systemErr: 'The active test run was aborted. Reason: Test host process crashed' }]);
  });

  it('a result without a testName gets a numbered placeholder', async () => {
    const { cases, warnings } = await parseText(`<TestRun xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010"><Results>
      <UnitTestResult testId="a" testName="Ns.A.One" outcome="Passed"/><UnitTestResult testId="b" outcome="Failed"/></Results></TestRun>`);
    expect(cases.map((c) => [c.name, c.outcome])).to.deep.equal([['One', 'passed'], ['(unnamed test 2)', 'failed']]);
    expect(warnings.map((w) => w.case)).to.include('(unnamed test 2)');
  });
});
