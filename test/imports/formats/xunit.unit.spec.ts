import { expect } from 'chai';
import { BASE_CASE, harness } from './harness';
import { parseXunit } from '../../../services/imports/formats/xunit';

const { parseFixture, parseText } = harness(parseXunit);
const base = BASE_CASE;

describe('xUnit parser', () => {
  it('reads xUnit v2: [assembly, collection] path, type as class, traits, failures, skip reasons, run date', async () => {
    const { cases, warnings } = await parseFixture('xunit.xml');
    const common = { suitePath: ['MyTests.dll', 'Test collection for MyTests.CalculatorTests'], className: 'MyTests.CalculatorTests', executedAt: '2024-01-15T10:30:00.000Z' };
    expect(cases).to.deep.equal([
      { ...base, ...common, name: 'Add', durationMs: 1, properties: [{ name: 'Category', value: 'Unit' }, { name: 'Owner', value: 'qa' }] },
      {
        ...base, ...common, name: 'Divide(a: 1, b: 0)', outcome: 'failed', durationMs: 2, failureType: 'System.DivideByZeroException',
        message: 'System.DivideByZeroException : Attempted to divide by zero.', systemOut: 'dividing 1 by 0\n',
        stackTrace: '   at MyTests.Calculator.Divide(Int32 a, Int32 b) in /src/Calculator.cs:line 9\n   at MyTests.CalculatorTests.Divide(Int32 a, Int32 b) in /src/CalculatorTests.cs:line 20',
      },
      { ...base, ...common, name: 'Adds big numbers', outcome: 'skipped', durationMs: 0, message: 'not ready' },
      { ...base, ...common, name: 'Odd', outcome: 'error', durationMs: 1 }, // an unknown result is an error
    ]);
    expect(warnings.map((w) => w.message)).to.deep.equal([
      'the test-class-cleanup error of MyTests.DatabaseTests is not a test case and was not imported',
      'unknown result "Unknown"; imported as an error, so that no failure is hidden',
    ]);
  });

  it('cuts a long output', async () => {
    const { cases } = await parseText(`<assemblies><assembly name="a.dll"><collection name="c"><test name="t" type="T" time="0.5" result="Pass"><output>${'o'.repeat(30)}</output></test></collection></assembly></assemblies>`, 10);
    expect(cases[0]).to.include({ durationMs: 500, executedAt: null, systemOut: `${'o'.repeat(10)}\n[… 20 more characters cut]` });
  });
});

describe('xUnit parser: identity', () => {
  it('a testament_case_id trait is the externalId; a nameless test gets a numbered placeholder; ANSI colours leave the message', async () => {
    const { cases, warnings } = await parseText(`<?xml version="1.1"?><assemblies><assembly name="/ci/Shop.Tests.dll" run-date="2024-03-05" run-time="10:15:30"><collection name="Test collection for Shop.CartTests">
      <test name="Shop.CartTests.Adds" type="Shop.CartTests" method="Adds" time="0.01" result="Pass"><traits><trait name="testament_case_id" value="SHOP-3"/></traits></test>
      <test name="" type="Shop.CartTests" method="Empty" time="0.01" result="Fail"><failure exception-type="Xunit.Sdk.EqualException"><message>&#x1B;[31mAssert.Equal() Failure&#x1B;[39m</message><stack-trace>&#x1B;[2m   at Shop.CartTests.Empty()&#x1B;[22m</stack-trace></failure></test>
    </collection></assembly></assemblies>`);
    expect(cases.map((c) => [c.name, c.externalId, c.outcome])).to.deep.equal([['Adds', 'SHOP-3', 'passed'], ['(unnamed test 2)', null, 'failed']]);
    expect(cases[1].message).to.equal('Assert.Equal() Failure');
    expect(cases[1].stackTrace).to.equal('\u001b[2m   at Shop.CartTests.Empty()\u001b[22m');
    expect(warnings.map((w) => w.case)).to.deep.equal(['(unnamed test 2)']);
  });
});
