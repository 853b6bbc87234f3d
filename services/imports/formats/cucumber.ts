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
import { CUCUMBER_OUTCOMES, externalIdOfLabel, outcomeIn, unnamedCase, withoutAnsi } from './outcomes';
import {
  type Outcome,
  type ParseOptions,
  type ParsedCase,
  ResultFileError,
  type ResultParser,
  truncate,
} from './parsedResult';

/**
 * Cucumber JSON (cucumber-js, cucumber-jvm, cucumber-ruby): an array of features, each with
 * `elements` (scenarios and backgrounds). One case per scenario, in the feature's suite.
 *
 * Outcome, over the scenario's hooks and steps: failed if any failed; else error if any is
 * ambiguous; else skipped if any is undefined, pending, skipped or unused; else passed.
 * A background element (cucumber-jvm writes one before each scenario) counts as the start of the
 * scenario that follows it. Durations are nanoseconds.
 *
 * Elements are read one at a time, but cucumber-js and cucumber-jvm write a feature's `name` and
 * `uri` after its `elements`: a feature's cases are then held (converted, not as JSON) until the
 * feature ends.
 *
 * Identity (docs/imports.md): the feature and the scenario name; the rows of a Scenario Outline
 * share their name, so a row's line ("line 12") is its variant (the element id where the line is
 * missing). A tag `@testament_case_id=…` (or `:…`) is the externalId.
 */
export const parseCucumber: ResultParser = (input, options) => cucumberCases(input, options);

/** Keys that make an array item a feature (the ones format detection looks for). */
const FEATURE_KEYS = new Set(['elements', 'keyword', 'uri']);

type Scenario = Omit<ParsedCase, 'suitePath' | 'className' | 'file'>;
type JsonObject = Record<string, unknown>;

async function* cucumberCases(input: Readable, options: ParseOptions): AsyncGenerator<ParsedCase> {
  const json = new JsonReader(input, options.fileName);
  let count = 0;
  let featureShaped = false;
  let features = 0;
  try {
    for await (const _ of json.items('the report (Cucumber JSON is an array of features)')) {
      features++;
      let name: string | undefined;
      let uri: string | undefined;
      let background: JsonObject | null = null;
      const held: Scenario[] = [];
      for await (const key of json.keys('a feature')) {
        if (FEATURE_KEYS.has(key)) featureShaped = true;
        switch (key) {
          case 'name':
            name = jsonString(await json.readValue()) ?? '';
            break;
          case 'uri':
            uri = jsonString(await json.readValue()) ?? '';
            break;
          case 'elements':
            for await (const _element of json.items('"elements"')) {
              const element = jsonObject(await json.readValue());
              if (!element) throw json.malformed('an item of "elements" is not an object');
              if (element.type === 'background') {
                background = element;
                continue;
              }
              // cucumber-jvm 1.x writes a Scenario Outline's template (no result anywhere), then each example row as a scenario of its own.
              if (element.type === 'scenario_outline' && !hasResult(element)) continue;
              count++;
              const scenario = scenarioOf(element, background, options, count);
              background = null;
              if (name !== undefined && uri !== undefined) yield inFeature(scenario, name, uri, options);
              else held.push(scenario);
            }
            break;
          default:
            await json.skipValue();
        }
      }
      for (const scenario of held) yield inFeature(scenario, name, uri, options);
    }
    await json.end();
  } finally {
    await json.close();
  }
  if (features > 0 && !featureShaped) {
    throw json.malformed('not a Cucumber JSON report: its items have no "elements", "keyword" or "uri"');
  }
  if (count === 0) throw new ResultFileError('no-tests', `${options.fileName} reports no scenarios`, { file: options.fileName });
}

function inFeature(scenario: Scenario, name: string | undefined, uri: string | undefined, options: ParseOptions): ParsedCase {
  const feature = name || uri || null;
  const { name: scenarioName, ...rest } = scenario;
  return { suitePath: [feature ?? options.fileName], name: scenarioName, className: feature, ...rest, file: uri || null };
}

/** A hook or step result, in execution order. */
interface Run {
  /** `Given I have 3 cukes` for a step; `Before hook` / `After hook` for a hook. */
  label: string;
  /** Shown as a step property (visible steps only, hooks not). */
  isStep: boolean;
  status: string;
  durationNs: number | null;
  error: string | null;
  output: string[];
}

/** One scenario; `position` is its place among the file's scenarios (naming one without name or line). */
function scenarioOf(element: JsonObject, background: JsonObject | null, options: ParseOptions, position: number): Scenario {
  const runs = [...(background ? runsOf(background) : []), ...runsOf(element)];
  const keyword = (jsonString(element.keyword) ?? 'Scenario').trim();
  const line = jsonNumber(element.line);
  const durations = runs.flatMap((run) => (run.durationNs === null ? [] : [run.durationNs]));
  const output = runs.flatMap((run) => run.output);
  const tags = jsonArray(element.tags).flatMap((tag) => {
    const tagName = jsonString(jsonObject(tag)?.name);
    return tagName ? [{ name: 'tag', value: tagName }] : [];
  });
  const steps = runs.filter((run) => run.isStep).map((run) => ({ name: 'step', value: `${run.label} — ${run.status}` }));
  const externalId = tags.map((tag) => externalIdOfLabel(tag.value)).find((id) => id !== null) ?? null;
  const id = jsonString(element.id);
  const outlineRow = /outline|template/i.test(keyword) || (id !== null && id.split(';').length >= 3);
  return {
    name: jsonString(element.name) || (line !== null ? `${keyword} at line ${line}` : unnamed(position, options)),
    ...outcomeOf(runs, options),
    durationMs: durations.length > 0 ? Math.round(durations.reduce((a, b) => a + b, 0) / 1e6) : null,
    executedAt: isoTimestamp(element.start_timestamp),
    systemOut: output.length > 0 ? truncate(output.join('\n'), options.maxOutputChars) : null,
    systemErr: null,
    line,
    properties: [...tags, ...steps],
    variant: outlineRow ? (line !== null ? `line ${line}` : id) : null,
    externalId,
    retried: false,
  };
}

function unnamed(position: number, options: ParseOptions): string {
  const name = unnamedCase(position);
  options.onWarning({ file: options.fileName, message: `a scenario without a name or line was imported as "${name}"`, case: name });
  return name;
}

function runsOf(element: JsonObject): Run[] {
  const runs = hooksOf(element.before, 'Before hook');
  for (const value of jsonArray(element.steps)) {
    const step = jsonObject(value);
    if (!step) continue;
    runs.push(...hooksOf(step.before, 'BeforeStep hook'));
    // Older cucumber-js lists hooks as hidden steps with keyword Before / After.
    const hidden = step.hidden === true;
    const keyword = (jsonString(step.keyword) ?? '').trim();
    const label = hidden ? `${keyword} hook` : `${keyword} ${jsonString(step.name) ?? ''}`.trim();
    runs.push(runOf(step, label, !hidden));
    runs.push(...hooksOf(step.after, 'AfterStep hook'));
  }
  runs.push(...hooksOf(element.after, 'After hook'));
  return runs;
}

/** Whether any hook or step of an element has a `result` (an outline's template has none). */
function hasResult(element: JsonObject): boolean {
  const withResult = (value: unknown) => jsonArray(value).some((item) => jsonObject(jsonObject(item)?.result) !== null);
  return withResult(element.before) || withResult(element.after) || jsonArray(element.steps).some((step) => {
    const object = jsonObject(step);
    return object !== null && (jsonObject(object.result) !== null || withResult(object.before) || withResult(object.after));
  });
}

function hooksOf(value: unknown, label: string): Run[] {
  return jsonArray(value).flatMap((hook) => {
    const object = jsonObject(hook);
    return object ? [runOf(object, label, false)] : [];
  });
}

function runOf(step: JsonObject, label: string, isStep: boolean): Run {
  const result = jsonObject(step.result);
  return {
    label,
    isStep,
    status: jsonString(result?.status) ?? '(no result, or another status)',
    durationNs: jsonNumber(result?.duration),
    error: jsonString(result?.error_message) || null,
    output: jsonArray(step.output).flatMap((line) => (typeof line === 'string' ? [line] : [])),
  };
}

const NOT_RUN_MESSAGE: Record<string, string> = { undefined: 'Undefined step', pending: 'Pending step' };

/** A hook's or step's outcome by the table; a status the table does not list counts as not run. */
function stepOutcome(status: string): Outcome {
  return outcomeIn(CUCUMBER_OUTCOMES, status) ?? CUCUMBER_OUTCOMES['(no result, or another status)'];
}

function outcomeOf(runs: Run[], options: ParseOptions): Pick<ParsedCase, 'outcome' | 'message' | 'failureType' | 'stackTrace'> {
  const failed = runs.find((run) => stepOutcome(run.status) === 'failed');
  if (failed) return problem('failed', failed, `${failed.label} failed`, options);
  const ambiguous = runs.find((run) => stepOutcome(run.status) === 'error');
  if (ambiguous) return problem('error', ambiguous, `Ambiguous step: ${ambiguous.label}`, options);
  const notRun = runs.find((run) => stepOutcome(run.status) !== 'passed');
  if (notRun) {
    const message = notRun.error
      ? withoutAnsi(firstLine(notRun.error))
      : NOT_RUN_MESSAGE[notRun.status]
        ? `${NOT_RUN_MESSAGE[notRun.status]}: ${notRun.label}`
        : null;
    return { outcome: 'skipped', message, failureType: null, stackTrace: null };
  }
  return { outcome: 'passed', message: null, failureType: null, stackTrace: null };
}

function problem(outcome: Outcome, run: Run, fallback: string, options: ParseOptions) {
  return {
    outcome,
    message: run.error ? withoutAnsi(firstLine(run.error)) : fallback,
    failureType: exceptionTypeOf(run.error),
    stackTrace: truncate(run.error, options.maxOutputChars),
  };
}
