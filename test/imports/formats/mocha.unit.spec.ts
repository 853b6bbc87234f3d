import { expect } from 'chai';
import { itInFreshProcess } from '../../support/freshProcess';
import { parseMocha } from '../../../services/imports/formats/mocha';
import type { ParsedCase } from '../../../services/imports/formats/parsedResult';
import {
  countWithPeakRss,
  expectRefused,
  fixture,
  generatedJson,
  inChunks,
  parseAll,
} from './jsonFormats.helpers';

const FILE = '/home/ci/calculator/test/calc.spec.js';
const START = '2024-03-04T10:15:30.120Z';

function mochaCase(fields: Partial<ParsedCase> & Pick<ParsedCase, 'suitePath' | 'name' | 'outcome'>): ParsedCase {
  return {
    className: null,
    durationMs: null,
    executedAt: START,
    message: null,
    failureType: null,
    stackTrace: null,
    systemOut: null,
    systemErr: null,
    file: FILE,
    line: null,
    properties: [],
    variant: null,
    externalId: null,
    retried: false,
    ...fields,
  };
}

const SPEC_CASES: ParsedCase[] = [
  mochaCase({ suitePath: ['calc.spec.js'], name: 'top level', outcome: 'passed', durationMs: 2 }),
  mochaCase({
    suitePath: ['calc.spec.js', 'Calculator add'],
    name: 'adds two numbers',
    className: 'Calculator add',
    outcome: 'passed',
    durationMs: 5,
  }),
  mochaCase({
    suitePath: ['calc.spec.js', 'Calculator add'],
    name: 'adds negatives',
    className: 'Calculator add',
    outcome: 'failed',
    durationMs: 7,
    message: 'Expected values to be strictly equal:\n\n-3 !== -4\n',
    failureType: 'AssertionError',
    stackTrace:
      'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n-3 !== -4\n\n' +
      '    at Context.<anonymous> (calc.spec.js:5:47)\n    at process.processImmediate (node:internal/timers:483:21)',
  }),
  mochaCase({ suitePath: ['calc.spec.js', 'Calculator add'], name: 'adds strings', className: 'Calculator add', outcome: 'skipped' }),
  mochaCase({
    suitePath: ['calc.spec.js', 'Calculator flaky'],
    name: 'passes on third try',
    className: 'Calculator flaky',
    outcome: 'passed',
    durationMs: 12,
    properties: [{ name: 'retries', value: '2' }],
  }),
  // Listed in `failures` only: the test it was for never ran.
  mochaCase({
    suitePath: ['calc.spec.js', 'Calculator divide'],
    name: '"before each" hook for "by zero"',
    className: 'Calculator divide',
    outcome: 'error',
    durationMs: 3,
    message: 'setup failed',
    failureType: 'TypeError',
    stackTrace:
      'TypeError: setup failed\n    at Context.<anonymous> (calc.spec.js:10:78)\n    at process.processImmediate (node:internal/timers:483:21)',
  }),
  // this.skip(): ran (has a duration) but no `speed`; the `pending` array, after `tests`, decides.
  mochaCase({
    suitePath: ['calc.spec.js', 'Calculator add'],
    name: 'skips at runtime',
    className: 'Calculator add',
    outcome: 'skipped',
    durationMs: 1,
  }),
];

const AWESOME_START = '2024-03-04T11:02:07.511Z';

function awesomeCase(fields: Partial<ParsedCase> & Pick<ParsedCase, 'suitePath' | 'name' | 'outcome'>): ParsedCase {
  return mochaCase({ executedAt: AWESOME_START, file: '/test/cart.spec.js', ...fields });
}

const MOCHAWESOME_CASES: ParsedCase[] = [
  awesomeCase({ suitePath: ['cart.spec.js'], name: 'loads the catalogue', outcome: 'passed', durationMs: 14 }),
  awesomeCase({ suitePath: ['cart.spec.js', 'Cart'], name: 'adds an item', className: 'Cart', outcome: 'passed', durationMs: 3 }),
  awesomeCase({
    suitePath: ['cart.spec.js', 'Cart'],
    name: 'computes the total',
    className: 'Cart',
    outcome: 'failed',
    durationMs: 8,
    message: 'AssertionError: expected 2 to equal 3',
    failureType: 'AssertionError',
    stackTrace:
      'AssertionError: expected 2 to equal 3\n    at Context.<anonymous> (test/cart.spec.js:21:30)\n' +
      '    at process.processImmediate (node:internal/timers:478:21)',
  }),
  awesomeCase({ suitePath: ['cart.spec.js', 'Cart'], name: 'removes an item', className: 'Cart', outcome: 'skipped', durationMs: 0 }),
  awesomeCase({
    suitePath: ['cart.spec.js', 'Cart', 'checkout'],
    name: '"before each" hook for "applies a coupon"',
    className: 'checkout',
    outcome: 'error',
    durationMs: 2,
    message: "TypeError: Cannot read properties of undefined (reading 'payment')",
    failureType: 'TypeError',
    stackTrace: "TypeError: Cannot read properties of undefined (reading 'payment')\n    at Context.<anonymous> (test/cart.spec.js:34:45)",
  }),
  awesomeCase({ suitePath: ['cart.spec.js', 'Cart', 'checkout'], name: 'applies a coupon', className: 'checkout', outcome: 'skipped', durationMs: 0 }),
];

describe('parseMocha', () => {
  describe('mocha --reporter json', () => {
    it('yields one case per test with outcome, suite, duration in ms, error and start time', async () => {
      const { cases, warnings } = await parseAll(parseMocha, inChunks(fixture('mocha-spec.json')));
      expect(cases).to.deep.equal(SPEC_CASES);
      expect(warnings).to.deep.equal([]);
    });

    it('gives the same cases when the file arrives in 7-byte chunks', async () => {
      const { cases } = await parseAll(parseMocha, inChunks(fixture('mocha-spec.json'), 7));
      expect(cases).to.deep.equal(SPEC_CASES);
    });

    it('reads passes, failures and pending when the report has no tests list', async () => {
      const report = JSON.parse(fixture('mocha-spec.json').toString());
      delete report.tests;
      const { cases } = await parseAll(parseMocha, inChunks(JSON.stringify(report)));
      expect(cases.map((c) => [c.name, c.outcome])).to.deep.equal([
        ['adds strings', 'skipped'],
        ['skips at runtime', 'skipped'],
        ['adds negatives', 'failed'],
        ['"before each" hook for "by zero"', 'error'],
        ['top level', 'passed'],
        ['adds two numbers', 'passed'],
        ['passes on third try', 'passed'],
      ]);
    });

    it('counts a test that ran without error or pass mark as passed when pending does not list it', async () => {
      const test = { title: 't', fullTitle: 'S t', file: 'a.js', duration: 4, currentRetry: 0, err: {} };
      const { cases } = await parseAll(parseMocha, inChunks(JSON.stringify({ stats: {}, tests: [test], pending: [] })));
      expect(cases.map((c) => [c.suitePath, c.name, c.outcome, c.executedAt])).to.deep.equal([[['a.js', 'S'], 't', 'passed', null]]);
    });

    it('holds at most 10,000 tests waiting for the pending list, warning once when it must decide early', async () => {
      const test = (i: number) => JSON.stringify({ title: `t${i}`, fullTitle: `S t${i}`, duration: 1, err: {} });
      const pending = [0, 10_004].map((i) => ({ title: `t${i}`, fullTitle: `S t${i}`, duration: 1, err: {} }));
      const input = generatedJson('{"stats": {}, "tests": [', 10_005, test, `], "pending": ${JSON.stringify(pending)}}`);
      const { cases, warnings } = await parseAll(parseMocha, input);
      expect(cases).to.have.length(10_005);
      expect(cases.filter((c) => c.outcome === 'skipped').map((c) => c.name)).to.deep.equal(['t10004']);
      expect(cases.slice(0, 5).map((c) => [c.name, c.outcome])).to.deep.equal([0, 1, 2, 3, 4].map((i) => [`t${i}`, 'passed']));
      expect(warnings).to.have.length(1);
    });

    it('cuts a long stack trace at maxOutputChars', async () => {
      const test = { title: 't', fullTitle: 't', duration: 1, err: { message: 'boom', stack: `Error: boom\n${'x'.repeat(500)}` } };
      const input = inChunks(JSON.stringify({ stats: {}, tests: [test] }));
      const { cases } = await parseAll(parseMocha, input, 'r.json', 100);
      expect(cases[0].stackTrace).to.equal(`Error: boom\n${'x'.repeat(88)}\n[… 412 more characters cut]`);
      expect(cases[0].suitePath).to.deep.equal(['r.json']); // no suite, no file: the upload's name
    });

    it('accepts a UTF-8 byte-order mark and non-ASCII titles split across chunks', async () => {
      const test = { title: 'größer als 3 → wahr', fullTitle: 'Vergleich größer als 3 → wahr', duration: 1, speed: 'fast', err: {} };
      const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ stats: {}, tests: [test] }))]);
      const { cases } = await parseAll(parseMocha, inChunks(bytes, 3));
      expect(cases.map((c) => [c.suitePath, c.name])).to.deep.equal([[['Vergleich'], 'größer als 3 → wahr']]);
    });
  });

  describe('mochawesome', () => {
    it('yields one case per test, suites nested by title, hooks as errors, skipped after a hook failure', async () => {
      const { cases } = await parseAll(parseMocha, inChunks(fixture('mocha-mochawesome.json')));
      expect(cases).to.deep.equal(MOCHAWESOME_CASES);
    });

    it('gives the same cases when the file arrives in 5-byte chunks', async () => {
      const { cases } = await parseAll(parseMocha, inChunks(fixture('mocha-mochawesome.json'), 5));
      expect(cases).to.deep.equal(MOCHAWESOME_CASES);
    });

    it('places tests right when a suite writes its title after its tests', async () => {
      const inner = { tests: [{ title: 'b', state: 'passed', duration: 1 }], suites: [], title: 'Inner', file: '/t.js' };
      const outer = { suites: [inner], tests: [{ title: 'a', state: 'failed', err: { message: 'no' } }], title: 'Outer', file: '/t.js' };
      const root = { title: '', file: '/t.js', tests: [], suites: [outer] };
      const { cases } = await parseAll(parseMocha, inChunks(JSON.stringify({ stats: {}, results: [root] })));
      expect(cases.map((c) => [c.suitePath, c.name, c.outcome, c.message])).to.deep.equal([
        [['t.js', 'Outer'], 'a', 'failed', 'no'],
        [['t.js', 'Outer', 'Inner'], 'b', 'passed', null],
      ]);
    });
  });

  describe('bad input', () => {
    it('refuses an empty or blank file', async () => {
      await expectRefused(parseMocha, inChunks(''), 'empty-file');
      await expectRefused(parseMocha, inChunks(' \n\t\r\n'), 'empty-file');
    });

    it('refuses invalid JSON, a cut file and trailing content, saying where', async () => {
      const error = await expectRefused(parseMocha, inChunks('{"stats": {}, "tests": [ {"title": x} ]}'), 'malformed-file');
      expect(error.details).to.include({ file: 'bad.json', beforeByte: 40 });
      await expectRefused(parseMocha, inChunks('{"stats": {}, "tests": [ {"title": "a"'), 'malformed-file');
      await expectRefused(parseMocha, inChunks('{"stats": {}, "tests": []} {}'), 'malformed-file');
    });

    it('refuses bytes that are not UTF-8', async () => {
      const bytes = Buffer.concat([Buffer.from('{"stats": {}, "tests": [{"title": "'), Buffer.from([0xc3, 0x28]), Buffer.from('"}]}')]);
      await expectRefused(parseMocha, inChunks(bytes), 'wrong-encoding');
      const cut = Buffer.concat([Buffer.from('{"stats": {}, "tests": []}'), Buffer.from([0xe2, 0x82])]);
      await expectRefused(parseMocha, inChunks(cut), 'wrong-encoding');
    });

    it('refuses JSON that is not a mocha report', async () => {
      await expectRefused(parseMocha, inChunks('[{"elements": []}]'), 'malformed-file');
      await expectRefused(parseMocha, inChunks('{"stats": {"tests": 0}}'), 'malformed-file');
      await expectRefused(parseMocha, inChunks('{"stats": {}, "tests": {"title": "a"}}'), 'malformed-file');
      await expectRefused(parseMocha, inChunks('{"stats": {}, "tests": [1, 2]}'), 'malformed-file');
    });

    it('refuses a report without tests', async () => {
      await expectRefused(parseMocha, inChunks('{"stats": {"tests": 0}, "tests": [], "pending": [], "failures": [], "passes": []}'), 'no-tests');
      await expectRefused(parseMocha, inChunks('{"stats": {}, "results": [{"title": "", "file": "", "tests": [], "suites": []}]}'), 'no-tests');
    });
  });

  describe('memory', () => {
    itInFreshProcess('parses 200,000 tests (about 120 MB) with the resident set rising by less than 150 MB', __filename, async () => {
      const pad = 'x'.repeat(300);
      const words = 'returns the expected total when the cart holds several discounted items and the price cache is warm'.repeat(2);
      const input = generatedJson(
        '{"stats": {"start": "2024-03-04T10:15:30.120Z"}, "tests": [',
        200_000,
        (i) =>
          JSON.stringify({
            title: `${words} ${i}`,
            fullTitle: `Suite ${i % 100} ${words} ${i}`,
            file: `/home/ci/app/test/suite${i % 100}.spec.js`,
            duration: i % 50,
            currentRetry: 0,
            speed: i % 7 === 0 ? undefined : 'fast',
            err: i % 7 === 0 ? { message: `failure ${i}`, stack: `Error: failure ${i}\n${pad}` } : {},
          }),
        '], "pending": [], "failures": [], "passes": []}',
      );
      const { count, rssRise } = await countWithPeakRss(parseMocha, input);
      expect(count).to.equal(200_000);
      expect(rssRise).to.be.below(150 * 1024 * 1024);
    });
  });
});

describe('parseMocha: identity and retries', () => {
  const spec = (file: string, fields: Record<string, unknown>) => ({ title: 'adds', fullTitle: 'Calculator adds', file, duration: 2, currentRetry: 0, speed: 'fast', err: {}, ...fields });

  it('the same full title in two files gives two suitePaths (the file first); variant stays null', async () => {
    const tests = [spec('/ci/app/test/calc.spec.js', {}), spec('/ci/app/test/legacy.spec.js', {})];
    const { cases } = await parseAll(parseMocha, inChunks(JSON.stringify({ stats: {}, tests })));
    expect(cases.map((c) => [c.suitePath, c.className, c.name, c.variant])).to.deep.equal([
      [['calc.spec.js', 'Calculator'], 'Calculator', 'adds', null],
      [['legacy.spec.js', 'Calculator'], 'Calculator', 'adds', null],
    ]);
  });

  it('attempts listed one after another (a higher currentRetry) mark the earlier ones retried', async () => {
    const failed = { currentRetry: 0, speed: undefined, err: { message: 'timeout', stack: 'Error: timeout' } };
    const tests = [spec('/ci/t.js', failed), spec('/ci/t.js', { ...failed, currentRetry: 1 }), spec('/ci/t.js', { currentRetry: 2 }), spec('/ci/t.js', { title: 'other', fullTitle: 'Calculator other' })];
    const { cases } = await parseAll(parseMocha, inChunks(JSON.stringify({ stats: {}, tests })));
    expect(cases.map((c) => [c.name, c.outcome, c.retried])).to.deep.equal([
      ['adds', 'failed', true],
      ['adds', 'failed', true],
      ['adds', 'passed', false],
      ['other', 'passed', false],
    ]);
  });

  it('a test with an empty title gets a numbered placeholder and a warning, in mocha JSON and mochawesome; ANSI colours leave the message only', async () => {
    const tests = [spec('/ci/t.js', {}), spec('/ci/t.js', { title: '', fullTitle: '', speed: undefined, err: { message: '\u001b[31mexpected 1\u001b[39m', stack: '\u001b[31mAssertionError: expected 1\u001b[39m' } })];
    const json = await parseAll(parseMocha, inChunks(JSON.stringify({ stats: {}, tests })));
    expect(json.cases.map((c) => [c.name, c.outcome, c.message, c.stackTrace])).to.deep.equal([
      ['adds', 'passed', null, null],
      ['(unnamed test 2)', 'failed', 'expected 1', '\u001b[31mAssertionError: expected 1\u001b[39m'],
    ]);
    expect(json.warnings).to.deep.equal([{ file: 'results.json', message: 'a test without a title was imported as "(unnamed test 2)"', case: '(unnamed test 2)' }]);
    const root = { title: '', file: '/t.js', tests: [], suites: [{ title: 'S', file: '/t.js', tests: [{ title: 'a', state: 'passed' }, { title: '', state: 'passed' }], suites: [] }] };
    const awesome = await parseAll(parseMocha, inChunks(JSON.stringify({ stats: {}, results: [root] })));
    expect(awesome.cases.map((c) => c.name)).to.deep.equal(['a', '(unnamed test 2)']);
  });
});

describe('parseMocha: timestamps', () => {
  it('stats.start in year 1 is no time; an RFC 1123 date or a zone-less one (UTC) is read', async () => {
    const test = { title: 't', fullTitle: 't', duration: 1, speed: 'fast', err: {} };
    const start = async (value: string) => (await parseAll(parseMocha, inChunks(JSON.stringify({ stats: { start: value }, tests: [test] })))).cases[0].executedAt;
    expect([await start('0001-01-01T00:00:00.000Z'), await start('Tue, 05 Mar 2024 10:15:30 GMT'), await start('2024-03-05T10:15:30'), await start('2024-03-05T10:15:30 EST')])
      .to.deep.equal([null, '2024-03-05T10:15:30.000Z', '2024-03-05T10:15:30.000Z', '2024-03-05T15:15:30.000Z']);
  });
});
