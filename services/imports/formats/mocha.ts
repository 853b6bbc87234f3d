import type { Readable } from 'node:stream';
import {
  JsonReader,
  exceptionTypeOf,
  firstLine,
  isoTimestamp,
  jsonArray,
  jsonNumber,
  jsonObject,
  jsonString,
} from './jsonStream';
import { MOCHA_OUTCOMES, unnamedCase, withoutAnsi } from './outcomes';
import {
  type Outcome,
  type ParseOptions,
  type ParsedCase,
  ResultFileError,
  type ResultParser,
  truncate,
} from './parsedResult';

/**
 * Mocha's JSON reporter (`{ stats, tests, pending, failures, passes }`) and mochawesome
 * (`{ stats, results: [rootSuite…] }`, suites nested in `suites`), read one test at a time.
 *
 * Mocha JSON: `tests` (in run order) is the source. The arrays after it repeat its tests and are
 * read only for what `tests` lacks: a failed hook is listed in `failures` alone (an error case
 * named by the hook's title), and `pending` tells a test skipped at run time (`this.skip()`) from a
 * pass, which `tests` cannot (mocha marks passes with `speed`, never-run skips have no `duration`).
 * Mocha JSON has no suite nesting: a case's suite is its full title minus its title ("Calculator
 * add"), and a root-level test's suite is its file's name.
 *
 * Identity (docs/imports.md): the file and the full title. Where the report names the test's file,
 * its base name is the first suitePath level (["calc.spec.js", "Calculator add"]), so the same
 * title in two files makes two tests; the variant stays null. Mocha lists a retried test once, its
 * last attempt (`currentRetry` becomes the `retries` property); a report that lists the attempts one
 * after another (the same test, a higher `currentRetry`) gets the earlier ones marked `retried`.
 */
export const parseMocha: ResultParser = (input, options) => {
  const retryOf = new WeakMap<ParsedCase, number>();
  return withRetriesMarked(mochaCases(input, options, retryOf), retryOf);
};

interface Report {
  options: ParseOptions;
  /** `stats.start`: both reporters write `stats` first. */
  executedAt: string | null;
  /** Tests read so far, numbering nameless ones. */
  position: number;
  /** Each test's position among the tests read (the lists that are the source of cases). */
  positions: WeakMap<MochaTest, number>;
  /** The `currentRetry` of each case made, for `withRetriesMarked`. */
  retryOf: WeakMap<ParsedCase, number>;
}

type MochaTest = Record<string, unknown>;

/** Ran, no error, no `speed`: held until the `pending` array; bounded so a file lacking `speed` marks stays streamed. */
const MAX_UNDECIDED = 10_000;

async function* mochaCases(input: Readable, options: ParseOptions, retryOf: WeakMap<ParsedCase, number>): AsyncGenerator<ParsedCase> {
  const json = new JsonReader(input, options.fileName);
  const report: Report = { options, executedAt: null, position: 0, positions: new WeakMap(), retryOf };
  let count = 0;
  let hasTestList = false;
  let testsRead = false;
  const undecided: MochaTest[] = [];
  let pendingTitles: Set<string> | null = null;
  let warnedUndecided = false;
  try {
    for await (const key of json.keys('the report')) {
      switch (key) {
        case 'stats':
          report.executedAt = isoTimestamp(jsonObject(await json.readValue())?.start);
          break;
        case 'tests':
          hasTestList = testsRead = true;
          for await (const _ of json.items('"tests"')) {
            const test = await readTest(json, key, report);
            const outcome = outcomeInTests(test, pendingTitles);
            if (outcome) {
              count++;
              yield mochaCase(test, outcome, report);
              continue;
            }
            undecided.push(test);
            if (undecided.length > MAX_UNDECIDED) {
              if (!warnedUndecided) warnUndecided(options);
              warnedUndecided = true;
              count++;
              yield mochaCase(undecided.shift() as MochaTest, MOCHA_OUTCOMES['speed (ran and passed)'], report);
            }
          }
          break;
        case 'pending':
        case 'failures':
        case 'passes':
          hasTestList = true;
          for await (const _ of json.items(`"${key}"`)) {
            const test = await readTest(json, key, testsRead ? undefined : report);
            if (!testsRead) {
              count++;
              const outcome = key === 'pending' ? MOCHA_OUTCOMES['listed in pending (this.skip())'] : key === 'passes' ? MOCHA_OUTCOMES['only in passes'] : failureOutcome(test);
              yield mochaCase(test, outcome, report);
            } else if (key === 'pending') {
              (pendingTitles ??= new Set()).add(fullTitleOf(test));
            } else if (key === 'failures' && isHook(test)) {
              count++;
              yield mochaCase(test, MOCHA_OUTCOMES['a failed hook ("before each" hook …)'], report);
            }
          }
          break;
        case 'results':
          hasTestList = true;
          for await (const _ of json.items('"results"')) {
            for await (const parsed of suiteCases(json, ROOT_SCOPE, report)) {
              count++;
              yield parsed;
            }
          }
          break;
        case 'suites': // mochawesome before 4: one root suite
          hasTestList = true;
          for await (const parsed of suiteCases(json, ROOT_SCOPE, report)) {
            count++;
            yield parsed;
          }
          break;
        default:
          await json.skipValue();
      }
    }
    await json.end();
  } finally {
    await json.close();
  }
  for (const test of undecided) {
    count++;
    yield mochaCase(test, pendingTitles?.has(fullTitleOf(test)) ? MOCHA_OUTCOMES['listed in pending (this.skip())'] : MOCHA_OUTCOMES['speed (ran and passed)'], report);
  }
  if (!hasTestList) {
    throw json.malformed('not a Mocha JSON report: no "tests" (mocha --reporter json) or "results" (mochawesome)');
  }
  if (count === 0) throw new ResultFileError('no-tests', `${options.fileName} reports no tests`, { file: options.fileName });
}

async function readTest(json: JsonReader, list: string, report?: Report): Promise<MochaTest> {
  const test = jsonObject(await json.readValue());
  if (!test) throw json.malformed(`an item of "${list}" is not an object`);
  if (report !== undefined) report.positions.set(test, ++report.position);
  return test;
}

/** Marks an attempt `retried` when the next case is the same test with a higher `currentRetry`. */
async function* withRetriesMarked(cases: AsyncIterable<ParsedCase>, retryOf: WeakMap<ParsedCase, number>): AsyncGenerator<ParsedCase> {
  let previous: ParsedCase | null = null;
  for await (const next of cases) {
    if (previous !== null) {
      if (sameTest(previous, next) && (retryOf.get(next) ?? 0) > (retryOf.get(previous) ?? 0)) previous.retried = true;
      yield previous;
    }
    previous = next;
  }
  if (previous !== null) yield previous;
}

function sameTest(a: ParsedCase, b: ParsedCase): boolean {
  return a.name === b.name && a.className === b.className && a.file === b.file && a.suitePath.join('\u0000') === b.suitePath.join('\u0000');
}

/**
 * A test's name: its title; without a title key at all, its full title. An empty title (`it('')`)
 * gets a numbered placeholder: its full title is only its suites' ("Checkout "), the same for
 * every empty-titled test of the suite, which would make them one test.
 */
function nameOf(title: string | null, fullTitle: string, test: MochaTest, report: Report): string {
  if (title !== null) return title.trim() !== '' ? title : placeholderName(test, report);
  return fullTitle.trim() !== '' ? fullTitle : placeholderName(test, report);
}

function placeholderName(test: MochaTest, report: Report): string {
  const name = unnamedCase(report.positions.get(test) ?? ++report.position);
  report.options.onWarning({ file: report.options.fileName, message: `a test without a title was imported as "${name}"`, case: name });
  return name;
}

function outcomeInTests(test: MochaTest, pendingTitles: Set<string> | null): Outcome | null {
  if (isHook(test)) return MOCHA_OUTCOMES['a failed hook ("before each" hook …)'];
  if (hasError(test)) return MOCHA_OUTCOMES['a non-empty err'];
  if (test.speed !== undefined) return MOCHA_OUTCOMES['speed (ran and passed)'];
  if (jsonNumber(test.duration) === null) return MOCHA_OUTCOMES['no duration (it.skip, xit: never ran)'];
  if (pendingTitles) return pendingTitles.has(fullTitleOf(test)) ? MOCHA_OUTCOMES['listed in pending (this.skip())'] : MOCHA_OUTCOMES['speed (ran and passed)'];
  return null;
}

function failureOutcome(test: MochaTest): Outcome {
  return isHook(test) ? MOCHA_OUTCOMES['a failed hook ("before each" hook …)'] : MOCHA_OUTCOMES['only in failures'];
}

function warnUndecided(options: ParseOptions): void {
  options.onWarning({
    file: options.fileName,
    message:
      `more than ${MAX_UNDECIDED} tests have neither an error nor a pass mark (speed): ` +
      'the earliest are counted as passed even if "pending" lists them',
  });
}

function mochaCase(test: MochaTest, outcome: Outcome, report: Report): ParsedCase {
  const title = jsonString(test.title) ?? '';
  const fullTitle = fullTitleOf(test);
  const suiteTitle = fullTitle.endsWith(title) ? fullTitle.slice(0, fullTitle.length - title.length).trim() : '';
  const file = jsonString(test.file);
  const retries = jsonNumber(test.currentRetry);
  const fileLevel = file ? [baseName(file)] : [];
  const parsed: ParsedCase = {
    suitePath: suiteTitle ? [...fileLevel, suiteTitle] : fileLevel.length > 0 ? fileLevel : [report.options.fileName],
    name: nameOf(jsonString(test.title), fullTitle, test, report),
    className: suiteTitle || null,
    outcome,
    durationMs: jsonNumber(test.duration),
    executedAt: report.executedAt,
    ...errorFields(test, outcome, 'stack', report.options),
    systemOut: null,
    systemErr: null,
    file,
    line: null,
    properties: retries ? [{ name: 'retries', value: String(retries) }] : [],
    variant: null,
    externalId: null,
    retried: false,
  };
  if (retries !== null) report.retryOf.set(parsed, retries);
  return parsed;
}

// ---- mochawesome: results → suites → tests, streamed test by test ----

interface Scope {
  /** Titles of the enclosing suites that have one (a root suite's title is empty). */
  titles: string[];
  file: string | null;
}

const ROOT_SCOPE: Scope = { titles: [], file: null };

function innerScope(parent: Scope, title: string | null | undefined, file: string | null | undefined): Scope {
  return { titles: title ? [...parent.titles, title] : parent.titles, file: file || parent.file };
}

/**
 * One suite, its tests streamed. mochawesome writes `title` and `file` before `tests` and `suites`;
 * should a producer write them after, that suite's tests and child suites are held until its end.
 */
async function* suiteCases(json: JsonReader, parent: Scope, report: Report): AsyncGenerator<ParsedCase> {
  let title: string | undefined;
  let file: string | undefined;
  const held: { tests?: unknown; suites?: unknown } = {};
  for await (const key of json.keys('a mochawesome suite')) {
    const known = title !== undefined && file !== undefined;
    switch (key) {
      case 'title':
        title = jsonString(await json.readValue()) ?? '';
        break;
      case 'file':
        file = jsonString(await json.readValue()) ?? '';
        break;
      case 'tests':
        if (!known) {
          held.tests = await json.readValue();
          break;
        }
        for await (const _ of json.items('"tests"')) {
          yield mochawesomeCase(await readTest(json, key, report), innerScope(parent, title, file), report);
        }
        break;
      case 'suites':
        if (!known) {
          held.suites = await json.readValue();
          break;
        }
        for await (const _ of json.items('"suites"')) yield* suiteCases(json, innerScope(parent, title, file), report);
        break;
      default:
        await json.skipValue();
    }
  }
  if (held.tests !== undefined || held.suites !== undefined) {
    yield* heldSuiteCases({ ...held, title, file }, parent, report);
  }
}

function* heldSuiteCases(suite: Record<string, unknown>, parent: Scope, report: Report): Generator<ParsedCase> {
  const scope = innerScope(parent, jsonString(suite.title), jsonString(suite.file));
  for (const test of jsonArray(suite.tests)) yield mochawesomeCase(jsonObject(test) ?? {}, scope, report);
  for (const child of jsonArray(suite.suites)) yield* heldSuiteCases(jsonObject(child) ?? {}, scope, report);
}

function mochawesomeCase(test: MochaTest, scope: Scope, report: Report): ParsedCase {
  const outcome = mochawesomeOutcome(test);
  const title = nameOf(jsonString(test.title), jsonString(test.fullTitle) ?? '', test, report);
  const fileLevel = scope.file ? [baseName(scope.file)] : [];
  const suitePath = [...fileLevel, ...scope.titles];
  return {
    suitePath: suitePath.length > 0 ? suitePath : [report.options.fileName],
    name: title,
    className: scope.titles.at(-1) ?? null,
    outcome,
    durationMs: jsonNumber(test.duration),
    executedAt: report.executedAt,
    ...errorFields(test, outcome, 'estack', report.options),
    systemOut: null,
    systemErr: null,
    file: scope.file,
    line: null,
    properties: [],
    variant: null,
    externalId: null,
    retried: false,
  };
}

function mochawesomeOutcome(test: MochaTest): Outcome {
  if (test.isHook === true || isHook(test)) return MOCHA_OUTCOMES['a failed hook ("before each" hook …)'];
  if (test.state === 'failed' || test.fail === true) return MOCHA_OUTCOMES['mochawesome state failed'];
  if (test.state === 'passed' || test.pass === true) return MOCHA_OUTCOMES['mochawesome state passed'];
  return MOCHA_OUTCOMES['mochawesome pending or skipped']; // pending, or not run after a hook failed (`skipped`)
}

// ---- shared ----

const HOOK_TITLE = /^"(?:before|after) (?:each|all)" hook/;

function isHook(test: MochaTest): boolean {
  return HOOK_TITLE.test(jsonString(test.title) ?? '');
}

function hasError(test: MochaTest): boolean {
  const err = jsonObject(test.err);
  return err !== null && Object.keys(err).length > 0;
}

function fullTitleOf(test: MochaTest): string {
  return jsonString(test.fullTitle) ?? jsonString(test.title) ?? '';
}

function errorFields(
  test: MochaTest,
  outcome: Outcome,
  stackKey: 'stack' | 'estack',
  options: ParseOptions,
): Pick<ParsedCase, 'message' | 'failureType' | 'stackTrace'> {
  const err = jsonObject(test.err);
  if (!err || (outcome !== 'failed' && outcome !== 'error')) return { message: null, failureType: null, stackTrace: null };
  const stack = jsonString(err[stackKey]) ?? jsonString(err.stack);
  return {
    message: withoutAnsi(jsonString(err.message) || (stack ? firstLine(stack) : null)),
    failureType: jsonString(err.name) ?? exceptionTypeOf(stack),
    stackTrace: truncate(stack || null, options.maxOutputChars),
  };
}

/** A test file's base name, whether the report was written on Windows (`C:\\work\\test\\a.test.js`) or not. */
function baseName(file: string): string {
  return file.split(/[\\/]/).filter((part) => part !== '').pop() ?? file;
}
