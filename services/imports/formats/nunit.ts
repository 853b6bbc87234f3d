import { EXTERNAL_ID_NAME, NUNIT2_OUTCOMES, NUNIT3_OUTCOMES, externalIdOfLabel, outcomeIn, unnamedCase, withoutAnsi } from './outcomes';
import { quoting, noDetails, truncate, type Outcome, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, baseName, isoTimestamp, nonBlank, secondsToMs, splitQualifiedName, streamXml, warner, type Attributes, type XmlHandler } from './xmlStream';

/**
 * NUnit 3 (`<test-run>`) and NUnit 2 (`<test-results>`) result files. suitePath is the chain of
 * `<test-suite>` names, the Assembly level cut to its file's base name; the levels NUnit adds per
 * parameterised method (ParameterizedMethod, Theory, GenericMethod, NUnit 2 ParameterizedTest) are
 * left out where the case's name carries the method ("Add(1,2)"), and kept where it does not (a
 * TestName or SetName: "No arguments"), so that two methods' cases of one name stay two tests. NUnit 2 names cases by their full name: it is
 * split into className and the method part. NUnit 2 and xUnit-style dates without a zone count as UTC.
 * The NUnit 3 pre-release schema gives durations in `time` and start times as times of day, the
 * date in the run's `run-date`.
 *
 * Identity (docs/imports.md): parameters are in the case name ("Add(1,2)"); a `testament_case_id`
 * property, or a category `testament_case_id=…`, is the externalId. A suite's own `<output>`
 * (NUnit 3: OneTimeSetUp/TearDown output) goes to `onSuiteOutput`.
 */
export const parseNunit: ResultParser = (input, options) => {
  const warn = warner(options);
  return streamXml<ParsedCase>(input, options, {
    label: 'NUnit',
    roots: ['test-run', 'test-results'],
    start(emit): XmlHandler {
      let version: 2 | 3 = 3;
      let runExecutedAt: string | null = null;
      let runDate: string | null = null;
      let position = 0;
      const suites: Suite[] = [];
      let draft: ParsedCase | null = null;
      let ignoringCase = false;
      /** The test case's NUnit 3 `label` (Error, Ignored, or a sentence such as a time-out's). */
      let label: string | null = null;

      const timestamp = (raw: string | undefined, where: string, caseName?: string): string | null => {
        const iso = isoTimestamp(raw);
        if (iso !== undefined) return iso;
        warn(quoting`unreadable start time "${raw}" on ${where}; no execution time taken from it`, caseName);
        return null;
      };

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          const grandparent = parents[parents.length - 2];
          if (ignoringCase) return false;
          if (draft === null) {
            if (parents.length === 0) {
              version = name === 'test-results' ? 2 : 3;
              runDate = nonBlank(attrs['run-date']);
              runExecutedAt = version === 3
                ? startTime(attrs['start-time'], 'the test run')
                : attrs.date === undefined ? null : timestamp(`${attrs.date}T${attrs.time ?? '00:00:00'}`, 'the test results');
            } else if (name === 'test-suite') {
              const type = attrs.type ?? '';
              const suiteName = nonBlank(attrs.name) ?? '(unnamed suite)';
              suites.push({
                name: type === 'Assembly' ? baseName(suiteName) : suiteName,
                inPath: !PER_METHOD_SUITES.has(type),
                className: nonBlank(attrs.classname) ?? (type === 'TestFixture' ? nonBlank(attrs.fullname) : null),
                executedAt: startTime(attrs['start-time'], `suite ${suiteName}`) ?? suites[suites.length - 1]?.executedAt ?? runExecutedAt,
                output: null,
              });
            } else if (name === 'test-case') {
              position++;
              label = nonBlank(attrs.label);
              draft = version === 3 ? nunit3Case(attrs) : nunit2Case(attrs);
              if (draft === null) ignoringCase = true;
            } else if (name === 'output' && parent === 'test-suite') return true;
            return false;
          }
          if (parent === 'test-case' && (name === 'output' || name === 'failure' || name === 'reason')) return name === 'output';
          if ((name === 'message' && (parent === 'failure' || parent === 'reason')) || (name === 'stack-trace' && parent === 'failure'))
            return grandparent === 'test-case';
          if (name === 'property' && parent === 'properties' && grandparent === 'test-case' && attrs.name !== undefined) {
            draft.properties.push({ name: attrs.name, value: truncate(attrs.value ?? '', options.maxOutputChars) ?? '' });
            const value = attrs.value ?? '';
            const id = attrs.name === EXTERNAL_ID_NAME ? nonBlank(value)?.trim() ?? null : attrs.name === 'Category' ? externalIdOfLabel(value) : null;
            if (id !== null) draft.externalId ??= id;
          } else if (name === 'category' && parent === 'categories' && grandparent === 'test-case' && attrs.name !== undefined) {
            // NUnit 2 writes categories as elements of their own
            draft.properties.push({ name: 'Category', value: attrs.name });
            const id = externalIdOfLabel(attrs.name);
            if (id !== null) draft.externalId ??= id;
          }
          return false;
        },

        close(name, text, parents) {
          if (name === 'test-case') {
            if (draft !== null) {
              // NUnit 3 says why in the label alone for some outcomes ("Test exceeded Timeout value 1ms.", an empty <failure/>).
              if (draft.outcome !== 'passed' && draft.message === null && label !== null) draft.message = label;
              emit(draft);
            }
            draft = null;
            ignoringCase = false;
            return;
          }
          if (draft === null) {
            const suite = suites[suites.length - 1];
            if (name === 'test-suite') {
              suites.pop();
              if (suite?.output !== null && suite?.output !== undefined) {
                const path = [...suites, suite].filter((s) => s.inPath).map((s) => s.name);
                options.onSuiteOutput?.({ suitePath: path, systemOut: suite.output, systemErr: null });
              }
            } else if (name === 'output' && suite !== undefined) suite.output = appendOutput(suite.output, text, options.maxOutputChars);
            return;
          }
          const parent = parents[parents.length - 1];
          if (name === 'message' && text !== null) draft.message ??= withoutAnsi(nonBlank(text)?.trim() ?? null);
          else if (name === 'stack-trace' && text !== null) draft.stackTrace = bodyText(text);
          else if (name === 'output' && parent === 'test-case') draft.systemOut = appendOutput(draft.systemOut, text, options.maxOutputChars);
        },
      };

      /** A start time; the pre-release schema's time of day ("14:07:12") is on the run's `run-date`. */
      function startTime(raw: string | undefined, where: string, caseName?: string): string | null {
        if (raw === undefined) return null;
        if (runDate !== null && /^\d{1,2}:\d{2}(:\d{2}([.,]\d+)?)?$/.test(raw.trim())) return timestamp(`${runDate}T${raw.trim()}`, where, caseName);
        return timestamp(raw, where, caseName);
      }

      function nunit3Case(attrs: Attributes): ParsedCase | null {
        const caseName = nonBlank(attrs.name) ?? nameless(attrs.fullname);
        const outcome = nunit3Outcome(attrs.result, attrs.label) ?? unclassified(caseName, attrs.label === undefined ? attrs.result : `${attrs.result}/${attrs.label}`);
        const executedAt = startTime(attrs['start-time'], `test case ${caseName}`, caseName);
        const durationMs = attrs.duration !== undefined ? seconds(attrs.duration, 'duration', caseName) : seconds(attrs.time, 'time', caseName);
        return newCase(caseName, nonBlank(attrs.classname) ?? enclosingClass(), outcome, durationMs, executedAt);
      }

      function nunit2Case(attrs: Attributes): ParsedCase | null {
        const fullName = nonBlank(attrs.name) ?? nameless(undefined);
        const outcome = nunit2Outcome(attrs.result, attrs.executed, attrs.success) ?? unclassified(fullName, attrs.result);
        const [className, caseName] = nonBlank(attrs.name) === null ? [null, fullName] : splitQualifiedName(fullName);
        return newCase(caseName, className ?? enclosingClass(), outcome, seconds(attrs.time, 'time', fullName), null);
      }

      function newCase(name: string, className: string | null, outcome: Outcome, durationMs: number | null, executedAt: string | null): ParsedCase {
        // A parameterised method's level is kept where the case's name does not carry the method (a TestName, SetName):
        // without it two methods' cases of the same name would be one test.
        const path = suites.filter((s) => s.inPath || !carriesMethod(name, s.name)).map((s) => s.name);
        return {
          suitePath: path.length > 0 ? path : [className ?? options.fileName],
          name,
          className,
          outcome,
          durationMs,
          executedAt: executedAt ?? suites[suites.length - 1]?.executedAt ?? runExecutedAt,
          ...noDetails(),
        };
      }

      function enclosingClass(): string | null {
        for (let i = suites.length - 1; i >= 0; i--) if (suites[i].className !== null) return suites[i].className;
        return null;
      }

      function seconds(raw: string | undefined, attribute: string, caseName: string): number | null {
        const ms = secondsToMs(raw);
        if (ms !== undefined) return ms;
        warn(quoting`unreadable ${attribute} "${raw}"; no duration recorded`, caseName);
        return null;
      }

      function nameless(fullName: string | undefined): string {
        const placeholder = unnamedCase(position);
        warn(quoting`a test case without a name${fullName === undefined ? '' : ` (${fullName})`} was imported as "${placeholder}"`, placeholder);
        return placeholder;
      }

      /** A result value no table lists: an error, so that no failure is hidden. */
      function unclassified(caseName: string, result: string | undefined): Outcome {
        warn(quoting`unknown result "${result ?? ''}"; imported as an error, so that no failure is hidden`, caseName);
        return 'error';
      }
    },
  });
};

interface Suite {
  name: string;
  inPath: boolean;
  className: string | null;
  executedAt: string | null;
  /** The suite's own `<output>`, already cut. */
  output: string | null;
}

const PER_METHOD_SUITES = new Set(['ParameterizedMethod', 'Theory', 'GenericMethod', 'ParameterizedTest']);

/** "Add(1,2)" and "Add<Int32>(1)" carry their method "Add" (or "Add<T>"); a given test name ("No arguments") does not. */
function carriesMethod(caseName: string, method: string): boolean {
  const base = method.split(/[<(]/)[0];
  return caseName === base || caseName.startsWith(`${base}(`) || caseName.startsWith(`${base}<`);
}

/** NUnit 3: a `result/label` pair the table lists, else the result alone (Failed/Error, but Failed/Other is a failure). */
function nunit3Outcome(result: string | undefined, label: string | undefined): Outcome | undefined {
  return (label === undefined ? undefined : outcomeIn(NUNIT3_OUTCOMES, `${result}/${label}`)) ?? outcomeIn(NUNIT3_OUTCOMES, result);
}

/**
 * NUnit 2: the result; without one, `executed` and `success`. NotRunnable (an invalid test: bad
 * signature, bad arguments) is skipped: NUnit 2's own header counts it as not run.
 */
function nunit2Outcome(result: string | undefined, executed: string | undefined, success: string | undefined): Outcome | undefined {
  if (result !== undefined) return outcomeIn(NUNIT2_OUTCOMES, result);
  if (executed === 'False') return NUNIT2_OUTCOMES['(no result, executed="False")'];
  if (executed === 'True' && success === 'False') return NUNIT2_OUTCOMES['(no result, executed="True" success="False")'];
  if (executed === 'True' && success === 'True') return NUNIT2_OUTCOMES['(no result, executed="True" success="True")'];
  return undefined;
}
