import { noDetails, truncate, type Outcome, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, baseName, isoTimestamp, nonBlank, secondsToMs, splitQualifiedName, streamXml, warner, type Attributes, type XmlHandler } from './xmlStream';

/**
 * NUnit 3 (`<test-run>`) and NUnit 2 (`<test-results>`) result files. suitePath is the chain of
 * `<test-suite>` names, the Assembly level cut to its file's base name; the levels NUnit adds per
 * parameterised method (ParameterizedMethod, Theory, GenericMethod, NUnit 2 ParameterizedTest) are
 * left out, the case names already carry the method. NUnit 2 names cases by their full name: it is
 * split into className and the method part. NUnit 2 and xUnit-style dates without a zone count as UTC.
 */
export const parseNunit: ResultParser = (input, options) => {
  const warn = warner(options);
  return streamXml<ParsedCase>(input, options, {
    label: 'NUnit',
    roots: ['test-run', 'test-results'],
    start(emit): XmlHandler {
      let version: 2 | 3 = 3;
      let runExecutedAt: string | null = null;
      const suites: Suite[] = [];
      let draft: ParsedCase | null = null;
      let ignoringCase = false;

      const timestamp = (raw: string | undefined, where: string, caseName?: string): string | null => {
        const iso = isoTimestamp(raw);
        if (iso !== undefined) return iso;
        warn(`unreadable start time "${raw}" on ${where}; no execution time taken from it`, caseName);
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
              runExecutedAt = version === 3
                ? timestamp(attrs['start-time'], 'the test run')
                : attrs.date === undefined ? null : timestamp(`${attrs.date}T${attrs.time ?? '00:00:00'}`, 'the test results');
            } else if (name === 'test-suite') {
              const type = attrs.type ?? '';
              const suiteName = nonBlank(attrs.name) ?? '(unnamed suite)';
              suites.push({
                name: type === 'Assembly' ? baseName(suiteName) : suiteName,
                inPath: !PER_METHOD_SUITES.has(type),
                className: nonBlank(attrs.classname) ?? (type === 'TestFixture' ? nonBlank(attrs.fullname) : null),
                executedAt: (attrs['start-time'] === undefined ? null : timestamp(attrs['start-time'], `suite ${suiteName}`)) ?? suites[suites.length - 1]?.executedAt ?? runExecutedAt,
              });
            } else if (name === 'test-case') {
              draft = version === 3 ? nunit3Case(attrs) : nunit2Case(attrs);
              if (draft === null) ignoringCase = true;
            }
            return false;
          }
          if (parent === 'test-case' && (name === 'output' || name === 'failure' || name === 'reason')) return name === 'output';
          if ((name === 'message' && (parent === 'failure' || parent === 'reason')) || (name === 'stack-trace' && parent === 'failure'))
            return grandparent === 'test-case';
          if (name === 'property' && parent === 'properties' && grandparent === 'test-case' && attrs.name !== undefined)
            draft.properties.push({ name: attrs.name, value: truncate(attrs.value ?? '', options.maxOutputChars) ?? '' });
          return false;
        },

        close(name, text, parents) {
          if (name === 'test-case') {
            if (draft !== null) emit(draft);
            draft = null;
            ignoringCase = false;
            return;
          }
          if (draft === null) {
            if (name === 'test-suite') suites.pop();
            return;
          }
          const parent = parents[parents.length - 1];
          if (name === 'message' && text !== null) draft.message ??= nonBlank(text)?.trim() ?? null;
          else if (name === 'stack-trace' && text !== null) draft.stackTrace = bodyText(text);
          else if (name === 'output' && parent === 'test-case') draft.systemOut = appendOutput(draft.systemOut, text, options.maxOutputChars);
        },
      };

      function nunit3Case(attrs: Attributes): ParsedCase | null {
        const caseName = nonBlank(attrs.name);
        if (caseName === null) return nameless(attrs.fullname);
        const outcome = nunit3Outcome(attrs.result, attrs.label);
        if (outcome === undefined) return unclassified(caseName, attrs.label === undefined ? attrs.result : `${attrs.result}/${attrs.label}`);
        const executedAt = attrs['start-time'] === undefined ? null : timestamp(attrs['start-time'], `test case ${caseName}`, caseName);
        return newCase(caseName, nonBlank(attrs.classname) ?? enclosingClass(), outcome, seconds(attrs.duration, 'duration', caseName), executedAt);
      }

      function nunit2Case(attrs: Attributes): ParsedCase | null {
        const fullName = nonBlank(attrs.name);
        if (fullName === null) return nameless(undefined);
        const outcome = nunit2Outcome(attrs.result, attrs.executed);
        if (outcome === undefined) return unclassified(fullName, attrs.result);
        const [className, caseName] = splitQualifiedName(fullName);
        return newCase(caseName, className ?? enclosingClass(), outcome, seconds(attrs.time, 'time', fullName), null);
      }

      function newCase(name: string, className: string | null, outcome: Outcome, durationMs: number | null, executedAt: string | null): ParsedCase {
        const path = suites.filter((s) => s.inPath).map((s) => s.name);
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
        warn(`unreadable ${attribute} "${raw}"; no duration recorded`, caseName);
        return null;
      }

      function nameless(fullName: string | undefined): null {
        warn(`a test case without a name${fullName === undefined ? '' : ` (${fullName})`} was skipped`);
        return null;
      }

      function unclassified(caseName: string, result: string | undefined): null {
        warn(`unknown result "${result ?? ''}"; the case was skipped`, caseName);
        return null;
      }
    },
  });
};

interface Suite {
  name: string;
  inPath: boolean;
  className: string | null;
  executedAt: string | null;
}

const PER_METHOD_SUITES = new Set(['ParameterizedMethod', 'Theory', 'GenericMethod', 'ParameterizedTest']);

/** NUnit 3: the label refines a Failed result; Warning is a pass with warnings (Assert.Warn). */
function nunit3Outcome(result: string | undefined, label: string | undefined): Outcome | undefined {
  switch (result) {
    case 'Passed':
    case 'Warning':
      return 'passed';
    case 'Failed':
      return label === 'Error' || label === 'Invalid' || label === 'Cancelled' ? 'error' : 'failed';
    case 'Skipped':
    case 'Inconclusive':
      return 'skipped';
    default:
      return undefined;
  }
}

/** NUnit 2: NotRunnable (an invalid test: bad signature, bad arguments) counts as an error, as NUnit 3's Failed/Invalid. */
function nunit2Outcome(result: string | undefined, executed: string | undefined): Outcome | undefined {
  switch (result) {
    case 'Success':
      return 'passed';
    case 'Failure':
      return 'failed';
    case 'Error':
    case 'NotRunnable':
    case 'Cancelled':
      return 'error';
    case 'Ignored':
    case 'Skipped':
    case 'Inconclusive':
      return 'skipped';
    case undefined:
      return executed === 'False' ? 'skipped' : undefined;
    default:
      return undefined;
  }
}
