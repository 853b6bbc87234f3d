import { noDetails, type Outcome, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, isoTimestamp, nonBlank, splitQualifiedName, streamXml, warner, type XmlHandler } from './xmlStream';

/**
 * MSTest / VSTest TRX files. suitePath is a single suite named by the test's full class name
 * ("MyTests.Math.CalculatorTests"), as JUnit's Surefire suites are, and className is that name.
 * Only top-level `<UnitTestResult>`s are cases: a data-driven test's `<InnerResults>` are summed up
 * by their parent's outcome.
 *
 * Class names live in `<TestDefinitions>`, which VSTest writes after `<Results>`. A result whose
 * definition has not been read yet is held until `</TestDefinitions>` (cases are already cut to
 * maxOutputChars); the testId → class map and those held cases grow with the number of tests, not
 * with the size of the outputs.
 */
export const parseMstest: ResultParser = (input, options) => {
  const warn = warner(options);
  return streamXml<ParsedCase>(input, options, {
    label: 'TRX (MSTest)',
    roots: ['TestRun'],
    start(emit): XmlHandler {
      let runStart: string | null = null;
      const classNames = new Map<string, string | null>();
      const held: Array<{ testId: string; parsed: ParsedCase }> = [];
      let definition: string | null = null;
      let draft: { testId: string; parsed: ParsedCase; depth: number } | null = null;
      let ignoringDepth: number | null = null;

      const place = (testId: string, parsed: ParsedCase, className: string | null): ParsedCase => {
        let cls = className;
        let name = parsed.name;
        if (cls === null) [cls] = splitQualifiedName(name);
        if (cls === null) warn(`no class found for test ${testId}; it was put in the suite "(no class)"`, name);
        else if (name.startsWith(`${cls}.`) && name.length > cls.length + 1) name = name.slice(cls.length + 1);
        return { ...parsed, name, className: cls, suitePath: [cls ?? '(no class)'] };
      };
      const releaseHeld = (): void => {
        for (const { testId, parsed } of held.splice(0)) emit(place(testId, parsed, classNames.get(testId) ?? null));
      };

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          if (ignoringDepth !== null) return false;
          if (draft === null) {
            if (name === 'Times' && parent === 'TestRun') {
              runStart = isoTimestamp(attrs.start) ?? null;
            } else if (name === 'UnitTestResult' && parent === 'Results') {
              const testName = nonBlank(attrs.testName);
              const testId = attrs.testId ?? '';
              if (testName === null) {
                warn(`a result without a testName (testId ${testId}) was skipped`);
                ignoringDepth = parents.length;
                return false;
              }
              const outcome = OUTCOMES.get(attrs.outcome ?? '');
              if (outcome === undefined) {
                warn(`unknown outcome "${attrs.outcome ?? ''}"; the case was skipped`, testName);
                ignoringDepth = parents.length;
                return false;
              }
              const durationMs = timeSpanToMs(attrs.duration);
              if (durationMs === undefined) warn(`unreadable duration "${attrs.duration}"; no duration recorded`, testName);
              const executedAt = isoTimestamp(attrs.startTime);
              if (executedAt === undefined) warn(`unreadable startTime "${attrs.startTime}"; no execution time taken from it`, testName);
              draft = {
                testId,
                depth: parents.length,
                parsed: {
                  suitePath: [],
                  name: testName,
                  className: null,
                  outcome,
                  durationMs: durationMs ?? null,
                  executedAt: executedAt ?? runStart,
                  ...noDetails(),
                },
              };
            } else if (name === 'UnitTest' && parent === 'TestDefinitions') definition = attrs.id ?? null;
            else if (name === 'TestMethod' && parent === 'UnitTest' && definition !== null)
              classNames.set(definition, nonBlank(attrs.className?.split(',')[0]?.trim()));
            return false;
          }
          // Inside a result: only its own Output, not an inner result's.
          const within = parents.slice(draft.depth + 1).join('/');
          if (within === 'Output') return name === 'StdOut' || name === 'StdErr';
          if (within === 'Output/ErrorInfo') return name === 'Message' || name === 'StackTrace';
          return false;
        },

        close(name, text, parents) {
          if (ignoringDepth !== null) {
            if (parents.length === ignoringDepth) ignoringDepth = null;
            return;
          }
          if (draft !== null && parents.length === draft.depth) {
            const { testId, parsed } = draft;
            draft = null;
            if (classNames.has(testId)) emit(place(testId, parsed, classNames.get(testId) ?? null));
            else held.push({ testId, parsed });
            return;
          }
          if (draft !== null) {
            const parsed = draft.parsed;
            if (name === 'StdOut') parsed.systemOut = appendOutput(parsed.systemOut, text, options.maxOutputChars);
            else if (name === 'StdErr') parsed.systemErr = appendOutput(parsed.systemErr, text, options.maxOutputChars);
            else if (name === 'Message' && text !== null) parsed.message = nonBlank(text)?.trim() ?? null;
            else if (name === 'StackTrace' && text !== null) parsed.stackTrace = bodyText(text);
            return;
          }
          if (name === 'UnitTest') definition = null;
          else if (name === 'TestDefinitions' || name === 'TestRun') releaseHeld();
        },
      };
    },
  });
};

const OUTCOMES = new Map<string, Outcome>([
  ['Passed', 'passed'],
  ['Failed', 'failed'],
  ['NotExecuted', 'skipped'],
  ['Inconclusive', 'skipped'],
  ['Timeout', 'error'],
  ['Aborted', 'error'],
  ['Error', 'error'],
]);

/** .NET TimeSpan text ("00:00:01.2345678", "1.02:03:04.5") to whole milliseconds. */
export function timeSpanToMs(raw: string | undefined): number | null | undefined {
  if (raw === undefined || raw.trim() === '') return null;
  const m = /^(?:(\d+)\.)?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(raw.trim());
  if (!m) return undefined;
  const [, days, hours, minutes, seconds] = m;
  const wholeMinutes = (Number(days ?? 0) * 24 + Number(hours)) * 60 + Number(minutes);
  return wholeMinutes * 60_000 + Math.round(Number(`${seconds}e3`));
}
