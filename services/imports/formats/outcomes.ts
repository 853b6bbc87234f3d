import type { Outcome } from './parsedResult';

/**
 * How each format's own result values become the four outcomes. The parsers look their outcomes up
 * here and nowhere else, and docs/imports.md shows these tables (test/imports/importsDoc.unit.spec.ts
 * checks that the two are equal), so what the documentation says is what the code does.
 *
 * A key is the value as the file writes it; keys in parentheses describe a shape that has no single
 * value (an absent attribute, an element's presence).
 */
export type OutcomeTable = Readonly<Record<string, Outcome>>;

/** JUnit: the first outcome element in a `<testcase>` decides; the Surefire rerun elements are earlier, retried attempts. */
export const JUNIT_OUTCOMES = {
  '(no failure, error or skipped element)': 'passed',
  '<failure>': 'failed',
  '<error>': 'error',
  '<skipped>': 'skipped',
  '<flakyFailure> (retried attempt)': 'failed',
  '<flakyError> (retried attempt)': 'error',
  '<rerunFailure> (retried attempt)': 'failed',
  '<rerunError> (retried attempt)': 'error',
} as const satisfies OutcomeTable;

/** TestNG: the `status` of a `<test-method>` (SUCCESS_PERCENTAGE_FAILURE: an invocation that failed within the method's successPercentage). */
export const TESTNG_OUTCOMES = {
  PASS: 'passed',
  FAIL: 'failed',
  SKIP: 'skipped',
  SUCCESS_PERCENTAGE_FAILURE: 'failed',
} as const satisfies OutcomeTable;

/** NUnit 3: `result`, refined by `label` where a `result/label` pair is listed. */
export const NUNIT3_OUTCOMES = {
  Passed: 'passed',
  Warning: 'passed',
  Failed: 'failed',
  'Failed/Error': 'error',
  'Failed/Invalid': 'error',
  'Failed/Cancelled': 'error',
  Skipped: 'skipped',
  Inconclusive: 'skipped',
} as const satisfies OutcomeTable;

/** NUnit 2: `result`; without one, `executed` and `success`. */
export const NUNIT2_OUTCOMES = {
  Success: 'passed',
  Failure: 'failed',
  Error: 'error',
  Cancelled: 'error',
  NotRunnable: 'skipped',
  Ignored: 'skipped',
  Skipped: 'skipped',
  Inconclusive: 'skipped',
  '(no result, executed="False")': 'skipped',
  '(no result, executed="True" success="False")': 'failed',
  '(no result, executed="True" success="True")': 'passed',
} as const satisfies OutcomeTable;

/** xUnit.net v2: the `result` of a `<test>` (NotRun from v3 runners writing the v2 format). */
export const XUNIT_OUTCOMES = {
  Pass: 'passed',
  Fail: 'failed',
  Skip: 'skipped',
  NotRun: 'skipped',
} as const satisfies OutcomeTable;

/**
 * TRX: the `outcome` of a top-level `<UnitTestResult>`, every value of the TRX schema's TestOutcome.
 * PassedButRunAborted passed before the run was aborted; InProgress was cut off by the end of the run.
 */
export const TRX_OUTCOMES = {
  Passed: 'passed',
  PassedButRunAborted: 'passed',
  Warning: 'passed',
  Completed: 'passed',
  Failed: 'failed',
  Error: 'error',
  Timeout: 'error',
  Aborted: 'error',
  Disconnected: 'error',
  InProgress: 'error',
  NotExecuted: 'skipped',
  NotRunnable: 'skipped',
  Inconclusive: 'skipped',
  Pending: 'skipped',
  '(no outcome)': 'error',
} as const satisfies OutcomeTable;

/** Mocha JSON (`tests` and its companion arrays) and mochawesome (`state`). */
export const MOCHA_OUTCOMES = {
  'a failed hook ("before each" hook …)': 'error',
  'a non-empty err': 'failed',
  'speed (ran and passed)': 'passed',
  'no duration (it.skip, xit: never ran)': 'skipped',
  'listed in pending (this.skip())': 'skipped',
  'only in passes': 'passed',
  'only in failures': 'failed',
  'mochawesome state passed': 'passed',
  'mochawesome state failed': 'failed',
  'mochawesome pending or skipped': 'skipped',
} as const satisfies OutcomeTable;

/**
 * Cucumber: each hook and step `result.status`; the scenario takes the first of failed, error,
 * skipped found among them (passed when all passed).
 */
export const CUCUMBER_OUTCOMES = {
  passed: 'passed',
  failed: 'failed',
  ambiguous: 'error',
  undefined: 'skipped',
  pending: 'skipped',
  skipped: 'skipped',
  unused: 'skipped',
  '(no result, or another status)': 'skipped',
} as const satisfies OutcomeTable;

/** Every table by the heading its format has in docs/imports.md. */
export const OUTCOME_TABLES: Readonly<Record<string, OutcomeTable>> = {
  JUnit: JUNIT_OUTCOMES,
  TestNG: TESTNG_OUTCOMES,
  'NUnit 3': NUNIT3_OUTCOMES,
  'NUnit 2': NUNIT2_OUTCOMES,
  'xUnit.net': XUNIT_OUTCOMES,
  'TRX (MSTest, VSTest)': TRX_OUTCOMES,
  Mocha: MOCHA_OUTCOMES,
  Cucumber: CUCUMBER_OUTCOMES,
};

/** The outcome a table gives a value; undefined for a value the table does not list. */
export function outcomeIn(table: OutcomeTable, value: string | undefined): Outcome | undefined {
  return value !== undefined && Object.hasOwn(table, value) ? table[value] : undefined;
}

/** The name of a property, trait, category or tag that states a test's id (see docs/imports.md). */
export const EXTERNAL_ID_NAME = 'testament_case_id';

/** "testament_case_id=ABC-1" or "testament_case_id:ABC-1" (a category or tag) → "ABC-1"; anything else → null. */
export function externalIdOfLabel(label: string): string | null {
  const text = label.trim().replace(/^@/, '');
  if (!text.startsWith(EXTERNAL_ID_NAME)) return null;
  const rest = text.slice(EXTERNAL_ID_NAME.length);
  if (rest[0] !== '=' && rest[0] !== ':') return null;
  const id = rest.slice(1).trim();
  return id === '' ? null : id;
}

/** The placeholder of a case whose name is empty or missing, numbered by its position among the file's cases. */
export function unnamedCase(position: number): string {
  return `(unnamed test ${position})`;
}

/** CSI escape sequences (colours: ESC [ 31 m; cursor moves) as test runners write them into messages. */
// eslint-disable-next-line no-control-regex
const CSI_SEQUENCE = /\u001b\[[0-?]*[ -/]*[@-~]|\u009b[0-?]*[ -/]*[@-~]/g;

/** A message without ANSI colour codes and other CSI sequences (stack traces and outputs keep them). */
export function withoutAnsi<T extends string | null>(text: T): T {
  return (text === null ? null : text.replace(CSI_SEQUENCE, '')) as T;
}
