import { expect } from 'chai';
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
    ]);
    expect(warnings).to.deep.equal([{ file: 'results.xml', message: 'unknown result "Passing"; the case was skipped', case: 'Weird' }]);
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

  it('NUnit 2: NotRunnable is an error, a not executed case without result is skipped, unknown results are skipped with a warning', async () => {
    const { cases, warnings } = await parseText(`<test-results name="a.dll"><test-suite type="TestFixture" name="F"><results>
      <test-case name="N.F.Bad" executed="False" result="NotRunnable"/><test-case name="N.F.Off" executed="False"/><test-case name="N.F.Odd" executed="True" result="Passed"/>
    </results></test-suite></test-results>`);
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.outcome])).to.deep.equal([[['F'], 'N.F', 'Bad', 'error'], [['F'], 'N.F', 'Off', 'skipped']]);
    expect(warnings.map((w) => w.case)).to.deep.equal(['N.F.Odd']);
  });
});
