import type { Readable } from 'node:stream';
import { LIMITS, cutText } from '../../../contracts/limits';

/**
 * What every result-file parser yields: one `ParsedCase` per test case, in file order, streamed
 * (a parser never holds the whole file or all its cases in memory). Format detection and parsing
 * live in this folder only; the import saga consumes `ParsedCase`s and knows no format.
 */

export const IMPORT_FORMATS = ['junit', 'testng', 'nunit', 'xunit', 'mstest', 'mocha', 'cucumber'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** The four outcomes a result file can state; the saga maps them to statuses by exact systemName or alias. */
export type Outcome = 'passed' | 'failed' | 'error' | 'skipped';

export interface ParsedCase {
  /** The suites around the case, outermost first (nested suites become nested folders). Never empty. */
  suitePath: string[];
  /** The case's name (the repository case's title). */
  name: string;
  /** Class (or feature, or fixture) name; null when the format has none. */
  className: string | null;
  outcome: Outcome;
  /** Converted from the format's own unit; null when the file gives no duration. */
  durationMs: number | null;
  /** ISO 8601 timestamp of the execution (the case's own start, else its suite's timestamp); null when absent. */
  executedAt: string | null;
  /** Failure, error or skip message. */
  message: string | null;
  /** Failure or error type (an exception class). */
  failureType: string | null;
  stackTrace: string | null;
  systemOut: string | null;
  systemErr: string | null;
  file: string | null;
  line: number | null;
  /** Case properties, in file order (suite properties are not repeated here). */
  properties: Array<{ name: string; value: string }>;
  /**
   * What tells this test apart from other tests of the same suites, class and name: its
   * parameters, a data-provider invocation's parameters, a Cucumber example row, a browser
   * project; null when the format gives none. Part of the test's identity (docs/imports.md).
   */
  variant: string | null;
  /**
   * An id the file states for the test (a JUnit `testament_case_id` property, an NUnit/TRX category
   * or a Cucumber tag `@testament_case_id=…`, …): when present it alone identifies the test.
   */
  externalId: string | null;
  /**
   * The file says this attempt was retried: a later result of the same test in the same file
   * replaces it (Surefire `flakyFailure`/`rerunFailure` before the final outcome, TestNG
   * `retried="true"`). A run case's status is the worst of its results that are not retried.
   */
  retried: boolean;
}

/** A suite's own output (Gradle writes all output there), told once per suite as its end is read. */
export interface SuiteOutput {
  /** The suite, as the suitePath of its cases; empty for output of the whole run (TRX `<ResultSummary><Output>`). */
  suitePath: string[];
  systemOut: string | null;
  systemErr: string | null;
}

/** A suite's own properties (JUnit `<testsuite><properties>`), told once per suite as its end is read, in file order. */
export interface SuiteProperties {
  /** The suite, as the suitePath of its cases. */
  suitePath: string[];
  properties: Array<{ name: string; value: string }>;
}

export interface ParseWarning {
  /** The uploaded file's name as the client sent it. */
  file: string;
  message: string;
  /** The case concerned, when there is one. */
  case?: string;
}

export interface ParseOptions {
  /** The uploaded file's name, for warnings and error details. */
  fileName: string;
  /** system-out / system-err / stack traces longer than this (in UTF-16 code units) are cut, with a marker. */
  maxOutputChars: number;
  onWarning(warning: ParseWarning): void;
  /** Suite-level output, where the format has it; optional (the first pass ignores it). */
  onSuiteOutput?(output: SuiteOutput): void;
  /** Suite-level properties, where the format has them (JUnit); optional. */
  onSuiteProperties?(properties: SuiteProperties): void;
}

/**
 * A parser: reads a byte stream, yields cases. Throws `ResultFileError` (never anything else for
 * bad input) on malformed content, a DOCTYPE, a wrong encoding, an empty file, or a file with no tests.
 */
export type ResultParser = (input: Readable, options: ParseOptions) => AsyncIterable<ParsedCase>;

/** Bad input in a result file: answered as a 400 before streaming, or a final error event during it. */
export class ResultFileError extends Error {
  constructor(
    readonly code: ResultFileErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ResultFileError';
  }
}

export type ResultFileErrorCode =
  | 'malformed-file'
  | 'doctype-refused'
  | 'wrong-encoding'
  | 'empty-file'
  | 'no-tests'
  | 'unknown-format'
  | 'mixed-formats';

/** The details of a case before a parser has read any: no message, trace, output, place or properties. */
export function noDetails(): Pick<ParsedCase, 'message' | 'failureType' | 'stackTrace' | 'systemOut' | 'systemErr' | 'file' | 'line' | 'properties' | 'variant' | 'externalId' | 'retried'> {
  return {
    message: null, failureType: null, stackTrace: null, systemOut: null, systemErr: null, file: null, line: null, properties: [],
    variant: null, externalId: null, retried: false,
  };
}

/** Cuts a long text, saying how much was cut. */
export function truncate(text: string | null, maxChars: number): string | null {
  if (text === null || text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[… ${text.length - maxChars} more characters cut]`;
}

/**
 * A warning's message, each value it quotes from the file (the template's `${…}`) cut to
 * LIMITS.name code points, ending in "…" when cut: a 3,000-character `time` or a 2,100-character
 * suite name is quoted by its start, and the warning stays within its event (ImportParsed).
 * Every parser writes its warnings with it: `warn(quoting\`unreadable time "${raw}"\`, caseName)`.
 */
export function quoting(strings: TemplateStringsArray, ...values: unknown[]): string {
  let text = strings[0];
  values.forEach((value, i) => {
    text += cutText(String(value), LIMITS.name) + strings[i + 1];
  });
  return text;
}

/**
 * The one place every warning passes (the parsers' `warner`, the import job's first pass): the
 * case it names cut to LIMITS.name and its message to LIMITS.caseTitle (ImportParsed's bound), so
 * that no value a file holds makes a warning the job cannot record.
 */
export function boundedWarning(warning: ParseWarning): ParseWarning {
  const bounded: ParseWarning = { file: cutText(warning.file, WARNING_FILE_MAX), message: cutText(warning.message, LIMITS.caseTitle) };
  if (warning.case !== undefined) bounded.case = cutText(warning.case, LIMITS.name);
  return bounded;
}
/** ImportParsed's bound on a warning's file name (an upload's name, as the client sent it). */
const WARNING_FILE_MAX = 1000;
