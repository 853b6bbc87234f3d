import { expect } from 'chai';
import { itInFreshProcess } from '../../support/freshProcess';
import { parseCucumber } from '../../../services/imports/formats/cucumber';
import type { ParsedCase } from '../../../services/imports/formats/parsedResult';
import {
  countWithPeakRss,
  expectRefused,
  fixture,
  generatedJson,
  inChunks,
  parseAll,
} from './jsonFormats.helpers';

type Fields = Partial<ParsedCase> & Pick<ParsedCase, 'name' | 'outcome' | 'durationMs' | 'line' | 'properties'>;

function scenario(feature: string, uri: string, fields: Fields): ParsedCase {
  return {
    suitePath: [feature],
    className: feature,
    executedAt: null,
    message: null,
    failureType: null,
    stackTrace: null,
    systemOut: null,
    systemErr: null,
    file: uri,
    variant: null,
    externalId: null,
    retried: false,
    ...fields,
  };
}

const step = (value: string) => ({ name: 'step', value });
const tag = (value: string) => ({ name: 'tag', value });

const cart = (fields: Fields) => scenario('Shopping cart', 'features/cart.feature', fields);
const CUCUMBER_JS_CASES: ParsedCase[] = [
  cart({
    name: 'Adding an item',
    outcome: 'passed',
    durationMs: 5, // 0.412 (Before hook) + 1.25 + 2.3 + 0.84 ms
    line: 7,
    properties: [
      tag('@smoke'),
      tag('@cart'),
      step('Given an empty cart — passed'),
      step('When I add 1 apple — passed'),
      step('Then the cart holds 1 item — passed'),
    ],
  }),
  cart({
    name: 'Total price',
    outcome: 'failed',
    durationMs: 5,
    line: 13,
    message: 'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:',
    failureType: 'AssertionError',
    stackTrace:
      'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n2 !== 3\n\n' +
      '    at World.<anonymous> (/home/ci/shop/features/step_definitions/cart.steps.js:25:10)',
    properties: [
      step('Given a cart with 2 apples at 1 EUR — passed'),
      step('Then the total is 3 EUR — failed'),
      step('And the receipt shows 3 EUR — skipped'),
    ],
  }),
  cart({
    name: 'Paying with bitcoin',
    outcome: 'skipped',
    durationMs: 1,
    line: 19,
    message: 'Undefined step: When I pay with bitcoin',
    properties: [
      tag('@wip'),
      step('Given a cart with 2 apples at 1 EUR — passed'),
      step('When I pay with bitcoin — undefined'),
      step('Then the order is confirmed — skipped'),
    ],
  }),
  cart({
    name: 'Emptying the cart',
    outcome: 'error',
    durationMs: 1,
    line: 25,
    message: 'Multiple step definitions match:',
    stackTrace:
      'Multiple step definitions match:\n  I empty the cart   - features/step_definitions/cart.steps.js:33\n' +
      '  /^I empty the (.*)$/ - features/step_definitions/generic.steps.js:8',
    properties: [step('Given a cart with 2 apples at 1 EUR — passed'), step('When I empty the cart — ambiguous')],
  }),
  scenario('Checkout', 'features/checkout.feature', {
    name: 'Paying by card',
    outcome: 'skipped',
    durationMs: 1,
    line: 3,
    message: 'Pending step: When I pay by card',
    properties: [step('Given a cart with 2 apples at 1 EUR — passed'), step('When I pay by card — pending')],
  }),
];

const login = (fields: Fields) => scenario('Login', 'classpath:features/login.feature', fields);
const CUCUMBER_JVM_CASES: ParsedCase[] = [
  login({
    name: 'Successful login',
    outcome: 'failed',
    durationMs: 477, // background 2.012 + before 305 + steps 120.5 + 8.9 + after 41 ms
    executedAt: '2024-03-04T10:20:01.123Z',
    line: 8,
    message: 'java.lang.AssertionError: expected:<Welcome, alice> but was:<Invalid password>',
    failureType: 'java.lang.AssertionError',
    stackTrace:
      'java.lang.AssertionError: expected:<Welcome, alice> but was:<Invalid password>\n' +
      '\tat org.junit.Assert.fail(Assert.java:89)\n\tat org.junit.Assert.failNotEquals(Assert.java:835)\n' +
      '\tat com.example.steps.LoginSteps.iSee(LoginSteps.java:42)\n' +
      '\tat ✽.she sees "Welcome, alice"(classpath:features/login.feature:10)\n',
    properties: [
      tag('@login'),
      tag('@critical'),
      step('Given a registered user "alice" — passed'),
      step('When alice signs in with password "s3cret" — passed'),
      step('Then she sees "Welcome, alice" — failed'),
    ],
  }),
  // The background before it failed; its own steps were skipped.
  login({
    name: 'Locked account',
    outcome: 'failed',
    durationMs: 2,
    executedAt: '2024-03-04T10:20:01.601Z',
    line: 13,
    message: 'java.lang.IllegalStateException: user store unavailable',
    failureType: 'java.lang.IllegalStateException',
    stackTrace:
      'java.lang.IllegalStateException: user store unavailable\n' +
      '\tat com.example.steps.LoginSteps.aRegisteredUser(LoginSteps.java:21)\n' +
      '\tat ✽.a registered user "alice"(classpath:features/login.feature:5)\n',
    properties: [
      tag('@login'),
      step('Given a registered user "alice" — failed'),
      step('Given alice is locked out — skipped'),
      step('Then she sees "Account locked" — skipped'),
    ],
  }),
  login({
    name: 'Password reset',
    outcome: 'skipped',
    durationMs: 3,
    executedAt: '2024-03-04T10:20:01.702Z',
    line: 22,
    variant: 'line 22', // a Scenario Outline's example row
    message: 'io.cucumber.java.PendingException: TODO: implement me',
    properties: [tag('@login'), step('Given a registered user "alice" — passed'), step('When alice requests a reset by email — pending')],
  }),
];

function feature(name: string, uri: string, elements: unknown[]) {
  return { name, uri, keyword: 'Feature', elements };
}

function element(name: string, steps: unknown[], extra: Record<string, unknown> = {}) {
  return { type: 'scenario', keyword: 'Scenario', name, line: 3, steps, ...extra };
}

describe('parseCucumber', () => {
  it('cucumber-js: one case per scenario, outcome over steps and hooks, ns durations in ms, tags and steps', async () => {
    const { cases, warnings } = await parseAll(parseCucumber, inChunks(fixture('cucumber-js.json')));
    expect(cases).to.deep.equal(CUCUMBER_JS_CASES);
    expect(warnings).to.deep.equal([]);
  });

  it('cucumber-jvm: backgrounds count toward the scenario after them, hooks toward its duration', async () => {
    const { cases } = await parseAll(parseCucumber, inChunks(fixture('cucumber-jvm.json')));
    expect(cases).to.deep.equal(CUCUMBER_JVM_CASES);
  });

  it('gives the same cases when the files arrive in 6-byte chunks', async () => {
    expect((await parseAll(parseCucumber, inChunks(fixture('cucumber-js.json'), 6))).cases).to.deep.equal(CUCUMBER_JS_CASES);
    expect((await parseAll(parseCucumber, inChunks(fixture('cucumber-jvm.json'), 6))).cases).to.deep.equal(CUCUMBER_JVM_CASES);
  });

  it('gives the same cases whether a feature names itself before or after its elements', async () => {
    const features = JSON.parse(fixture('cucumber-js.json').toString()) as Array<Record<string, unknown>>;
    const nameFirst = features.map(({ elements, ...rest }) => ({ ...rest, elements }));
    const { cases } = await parseAll(parseCucumber, inChunks(JSON.stringify(nameFirst)));
    expect(cases).to.deep.equal(CUCUMBER_JS_CASES);
  });

  it('a failed hook fails the scenario; hidden hook steps are not listed as steps', async () => {
    const steps = [
      { keyword: 'Before', hidden: true, result: { status: 'failed', duration: 2_000_000, error_message: 'Error: db down\n    at hooks.js:3' } },
      { keyword: 'Given ', name: 'a user', result: { status: 'skipped', duration: 0 } },
    ];
    const { cases } = await parseAll(parseCucumber, inChunks(JSON.stringify([feature('', 'features/a.feature', [element('', steps)])])));
    expect(cases).to.deep.equal([
      {
        suitePath: ['features/a.feature'],
        name: 'Scenario at line 3',
        className: 'features/a.feature',
        outcome: 'failed',
        durationMs: 2,
        executedAt: null,
        message: 'Error: db down',
        failureType: 'Error',
        stackTrace: 'Error: db down\n    at hooks.js:3',
        systemOut: null,
        systemErr: null,
        file: 'features/a.feature',
        line: 3,
        properties: [step('Given a user — skipped')],
        variant: null,
        externalId: null,
        retried: false,
      },
    ]);
  });

  it('a scenario without durations has none; one without steps passed', async () => {
    const report = [feature('F', 'f.feature', [element('no steps', []), element('no durations', [{ keyword: 'Given ', name: 'x', result: { status: 'passed' } }])])];
    const { cases } = await parseAll(parseCucumber, inChunks(JSON.stringify(report)));
    expect(cases.map((c) => [c.name, c.outcome, c.durationMs])).to.deep.equal([
      ['no steps', 'passed', null],
      ['no durations', 'passed', null],
    ]);
  });

  describe('bad input', () => {
    it('refuses an empty or blank file', async () => {
      await expectRefused(parseCucumber, inChunks(''), 'empty-file');
      await expectRefused(parseCucumber, inChunks('\n\n  '), 'empty-file');
    });

    it('refuses invalid or cut JSON', async () => {
      await expectRefused(parseCucumber, inChunks('[{"name": "F", "elements": [{"name": "a",}]}]'), 'malformed-file');
      const cut = fixture('cucumber-js.json').subarray(0, 2000);
      await expectRefused(parseCucumber, inChunks(cut), 'malformed-file');
    });

    it('refuses bytes that are not UTF-8', async () => {
      const bytes = Buffer.concat([Buffer.from('[{"name": "'), Buffer.from([0xff, 0xfe]), Buffer.from('", "elements": []}]')]);
      await expectRefused(parseCucumber, inChunks(bytes), 'wrong-encoding');
    });

    it('refuses JSON that is not a cucumber report', async () => {
      await expectRefused(parseCucumber, inChunks(fixture('mocha-spec.json')), 'malformed-file');
      await expectRefused(parseCucumber, inChunks('[{"title": "a"}, {"title": "b"}]'), 'malformed-file');
      await expectRefused(parseCucumber, inChunks('["a"]'), 'malformed-file');
      await expectRefused(parseCucumber, inChunks('[{"name": "F", "elements": ["a"]}]'), 'malformed-file');
    });

    it('refuses a report without scenarios', async () => {
      await expectRefused(parseCucumber, inChunks('[]'), 'no-tests');
      await expectRefused(parseCucumber, inChunks('[{"name": "F", "uri": "f.feature", "elements": []}]'), 'no-tests');
    });
  });

  describe('memory', () => {
    itInFreshProcess('parses 100,000 scenarios (about 140 MB) with the resident set rising by less than 150 MB', __filename, async () => {
      const stepsOf = (i: number) =>
        ['Given ', 'And ', 'When ', 'Then ', 'And '].map((keyword, s) => ({
          keyword,
          name: `the shopper number ${i} performs step ${s} of the checkout flow with a fairly long description`,
          line: 4 + s,
          match: { location: `features/step_definitions/checkout.steps.js:${10 + s}` },
          result: { status: i % 9 === 0 && s === 4 ? 'failed' : 'passed', duration: 1_234_567, ...(i % 9 === 0 && s === 4 ? { error_message: 'Error: nope' } : {}) },
        }));
      // 2,000 features of 50 scenarios; elements first, as cucumber-js writes them.
      const input = generatedJson(
        '[',
        2_000,
        (f) =>
          JSON.stringify({
            description: '',
            elements: Array.from({ length: 50 }, (_, s) =>
              element(`Scenario ${s} of feature ${f}`, stepsOf(f * 50 + s), { id: `f${f};s${s}`, tags: [{ name: '@checkout' }] }),
            ),
            id: `feature-${f}`,
            keyword: 'Feature',
            name: `Feature ${f}`,
            uri: `features/f${f}.feature`,
          }),
        ']',
      );
      const { count, rssRise } = await countWithPeakRss(parseCucumber, input);
      expect(count).to.equal(100_000);
      expect(rssRise).to.be.below(150 * 1024 * 1024);
    });
  });
});

describe('parseCucumber: identity', () => {
  const passed = [{ keyword: 'Given ', name: 'a cart with <count> items', result: { status: 'passed', duration: 1_000_000 } }];

  it("a Scenario Outline's rows share a name: each row's line is its variant (cucumber-js), the element id where the line is missing", async () => {
    const rows = [
      { type: 'scenario', keyword: 'Scenario Outline', name: 'Discount for <count> items', id: 'cart;discount-for-<count>-items;;2', line: 14, steps: passed },
      { type: 'scenario', keyword: 'Scenario Outline', name: 'Discount for <count> items', id: 'cart;discount-for-<count>-items;;3', line: 15, steps: passed },
      { type: 'scenario', keyword: 'Scenario Outline', name: 'Discount for <count> items', id: 'cart;discount-for-<count>-items;;4', steps: passed },
      { type: 'scenario', keyword: 'Scenario', name: 'Empty cart', id: 'cart;empty-cart', line: 20, steps: passed },
    ];
    const { cases } = await parseAll(parseCucumber, inChunks(JSON.stringify([feature('Cart', 'features/cart.feature', rows)])));
    expect(cases.map((c) => [c.name, c.variant])).to.deep.equal([
      ['Discount for <count> items', 'line 14'],
      ['Discount for <count> items', 'line 15'],
      ['Discount for <count> items', 'cart;discount-for-<count>-items;;4'],
      ['Empty cart', null],
    ]);
  });

  it('a tag @testament_case_id=… or @testament_case_id:… is the externalId; ANSI colours leave the message', async () => {
    const failing = [{ keyword: 'Then ', name: 'x', result: { status: 'failed', error_message: '\u001b[31mAssertionError: no\u001b[39m\n    at steps.js:4' } }];
    const report = [feature('F', 'f.feature', [
      element('a', passed, { tags: [{ name: '@smoke' }, { name: '@testament_case_id=CART-9' }] }),
      element('b', failing, { tags: [{ name: '@testament_case_id:CART-10' }] }),
      element('c', passed, { tags: [{ name: '@testament_case_id' }] }),
    ])];
    const { cases } = await parseAll(parseCucumber, inChunks(JSON.stringify(report)));
    expect(cases.map((c) => [c.name, c.externalId])).to.deep.equal([['a', 'CART-9'], ['b', 'CART-10'], ['c', null]]);
    expect(cases[1].message).to.equal('AssertionError: no');
    expect(cases[1].stackTrace).to.equal('\u001b[31mAssertionError: no\u001b[39m\n    at steps.js:4');
  });
});

describe('parseCucumber: nameless scenarios', () => {
  it('a scenario without name is named by its line, or, without a line either, by a numbered placeholder with a warning', async () => {
    const steps = [{ keyword: 'Given ', name: 'x', result: { status: 'passed' } }];
    const report = [feature('F', 'f.feature', [element('', steps, { line: 7 }), element('', steps, { line: undefined })])];
    const { cases, warnings } = await parseAll(parseCucumber, inChunks(JSON.stringify(report)));
    expect(cases.map((c) => c.name)).to.deep.equal(['Scenario at line 7', '(unnamed test 2)']);
    expect(warnings).to.deep.equal([{ file: 'results.json', message: 'a scenario without a name or line was imported as "(unnamed test 2)"', case: '(unnamed test 2)' }]);
  });
});
