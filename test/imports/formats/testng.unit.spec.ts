import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { BASE_CASE, harness } from './harness';
import { parseTestng, withoutIdentityHash } from '../../../services/imports/formats/testng';

const { parseFixture, parseText } = harness(parseTestng);
const base = BASE_CASE;

describe('TestNG parser', () => {
  it('reads testng-results.xml: config methods left out, [suite, test] path, exceptions, params, reporter output', async () => {
    const { cases, warnings } = await parseFixture('testng.xml');
    const common = { suitePath: ['Regression', 'Smoke'], className: 'com.example.LoginTest' };
    expect(cases).to.deep.equal([
      { ...base, ...common, name: 'login', durationMs: 120, executedAt: '2024-01-15T10:30:01.000Z', systemOut: 'logged in as admin\nsession created' },
      {
        ...base, ...common, name: 'logout', outcome: 'failed', durationMs: 45, executedAt: '2024-01-15T10:30:01.000Z',
        message: 'expected [true] but found [false]', failureType: 'java.lang.AssertionError',
        stackTrace: 'java.lang.AssertionError: expected [true] but found [false]\n\tat org.testng.Assert.fail(Assert.java:99)\n\tat com.example.LoginTest.logout(LoginTest.java:30)',
      },
      {
        ...base, ...common, name: 'loginAs', outcome: 'skipped', durationMs: 0, executedAt: '2024-01-15T10:30:00.000Z', // its test's start: "IST" is ambiguous
        message: 'guest login disabled', failureType: 'org.testng.SkipException',
        properties: [{ name: 'param[0]', value: 'guest' }, { name: 'param[1]', value: 'null' }], variant: 'guest, null',
      },
      { ...base, ...common, name: 'retried', outcome: 'error', durationMs: 1, executedAt: '2024-01-15T10:30:01.000Z' }, // an unknown status is an error
    ]);
    expect(warnings).to.deep.equal([
      { file: 'results.xml', message: 'unreadable started-at "2024-01-15T10:30:01 IST" on test method loginAs; no execution time taken from it', case: 'loginAs' },
      { file: 'results.xml', message: 'unknown status "RETRY"; imported as an error, so that no failure is hidden', case: 'retried' },
    ]);
  });

  it('refuses a results file with only configuration methods (no-tests)', async () => {
    const err = await parseText('<testng-results><suite name="s"><test name="t"><class name="C"><test-method is-config="true" name="setUp" status="PASS"/></class></test></suite></testng-results>').catch((e) => e);
    expect(err.code).to.equal('no-tests');
  });
});

describe('TestNG parser: identity and retries', () => {
  it('data-provider parameters (in index order) are the variant, the <test> block is in suitePath, retried="true" is a retried attempt, a nameless method gets a placeholder', async () => {
    const { cases, warnings } = await parseFixture('testng-dataprovider.xml');
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.variant, c.outcome, c.retried])).to.deep.equal([
      [['Checkout', 'Chrome'], 'com.example.CartTest', 'addsItem', 'apple, 2', 'passed', false],
      [['Checkout', 'Chrome'], 'com.example.CartTest', 'addsItem', 'pear, 1', 'passed', false],
      [['Checkout', 'Chrome'], 'com.example.CartTest', 'checksOut', null, 'skipped', true],
      [['Checkout', 'Chrome'], 'com.example.CartTest', 'checksOut', null, 'passed', false],
      [['Checkout', 'Firefox'], 'com.example.CartTest', 'checksOut', null, 'passed', false],
      [['Checkout', 'Firefox'], 'com.example.CartTest', '(unnamed test 6)', null, 'skipped', false],
    ]);
    expect(cases[2].message).to.equal('expected [PAID] but found [PENDING]');
    expect(warnings.map((w) => w.message)).to.deep.equal(['a test method without a name (class com.example.CartTest) was imported as "(unnamed test 6)"']);
  });
  it('a Java identity hash (Type@e111c7c) is no part of the variant: a retried attempt is the same test as the invocation it retried, and the next run finds it again', async () => {
    const { cases } = await parseFixture('testng-retry-hashes.xml');
    const row = 'com.acme.pricing.DiscountTest$TD@…';
    expect(cases.map((c) => [c.name, c.variant, c.outcome, c.retried])).to.deep.equal([
      ['applies', row, 'skipped', true],
      ['applies', row, 'passed', false],
      ['rounds', 'EUR, 2', 'passed', false], // parameters without a hash are as before
    ]);
    // The properties keep what the file says.
    expect(cases.map((c) => c.properties[0].value)).to.deep.equal(['com.acme.pricing.DiscountTest$TD@e111c7c', 'com.acme.pricing.DiscountTest$TD@5a2e4553', 'EUR']);
    const next = await parseText(readFileSync(join(__dirname, '..', 'fixtures', 'testng-retry-hashes.xml'), 'utf8').replace(/@e111c7c/g, '@1b6d3586').replace(/@5a2e4553/g, '@7a81197d'));
    expect(next.cases.map((c) => c.variant)).to.deep.equal(cases.map((c) => c.variant));
  });

  it('identity hashes are left out of arrays, nested classes and lambdas; other values are kept', () => {
    expect(withoutIdentityHash('[Ljava.lang.String;@1b6d3586, [I@7a81197d')).to.equal('[Ljava.lang.String;@…, [I@…');
    expect(withoutIdentityHash('com.acme.Foo$$Lambda$14/0x0000000800c02a00@5e9f23b4')).to.equal('com.acme.Foo$$Lambda$14/0x…@…');
    expect(withoutIdentityHash('ops@cafe.example, apple, 0xff, Row{id=7}')).to.equal('ops@cafe.example, apple, 0xff, Row{id=7}');
  });
});
