import { EXTERNAL_ID_NAME, TRX_OUTCOMES, externalIdOfLabel, outcomeIn, unnamedCase, withoutAnsi } from './outcomes';
import { noDetails, quoting, truncate, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, isoTimestamp, nonBlank, splitQualifiedName, streamXml, warner, type XmlHandler } from './xmlStream';

/**
 * MSTest / VSTest TRX files. suitePath is a single suite named by the test's full class name
 * ("MyTests.Math.CalculatorTests"), as JUnit's Surefire suites are, and className is that name.
 * Only top-level `<UnitTestResult>`s are cases: a data-driven test's `<InnerResults>` are summed up
 * by their parent's outcome, and kept in its result (`withInnerResults`): rows' outcomes as
 * properties, their messages, stack traces and outputs after the parent's own.
 *
 * Class names live in `<TestDefinitions>`, which VSTest writes after `<Results>`. A result whose
 * definition has not been read yet is held until `</TestDefinitions>` (cases are already cut to
 * maxOutputChars); the testId → class map and those held cases grow with the number of tests, not
 * with the size of the outputs.
 *
 * Identity (docs/imports.md): data rows are summed up in their parent, so the test is its class and
 * name; a `<TestCategoryItem TestCategory="testament_case_id=…">` or a property `testament_case_id`
 * of its definition is the externalId. The run's own output (`<ResultSummary><Output>`, and its
 * `<RunInfos>` messages as systemErr) goes to `onSuiteOutput` with an empty suitePath: the whole file.
 */
export const parseMstest: ResultParser = (input, options) => {
  const warn = warner(options);
  return streamXml<ParsedCase>(input, options, {
    label: 'TRX (MSTest)',
    roots: ['TestRun'],
    start(emit): XmlHandler {
      let runStart: string | null = null;
      const definitions = new Map<string, Definition>();
      let position = 0;
      let propertyKey: string | null = null;
      const run: { systemOut: string | null; systemErr: string | null } = { systemOut: null, systemErr: null };
      const held: Array<{ testId: string; parsed: ParsedCase }> = [];
      let definition: string | null = null;
      let draft: { testId: string; parsed: ParsedCase; depth: number; inner: InnerResult[]; open: InnerResult[] } | null = null;
      let ignoringDepth: number | null = null;

      const place = (testId: string, parsed: ParsedCase, found: Definition | undefined): ParsedCase => {
        let cls = found?.className ?? null;
        let name = parsed.name;
        if (cls === null) [cls] = splitQualifiedName(name);
        if (cls === null) warn(quoting`no class found for test ${testId}; it was put in the suite "(no class)"`, name);
        else if (name.startsWith(`${cls}.`) && name.length > cls.length + 1) name = name.slice(cls.length + 1);
        return { ...parsed, name, className: cls, suitePath: [cls ?? '(no class)'], externalId: found?.externalId ?? null };
      };
      const releaseHeld = (): void => {
        for (const { testId, parsed } of held.splice(0)) emit(place(testId, parsed, definitions.get(testId)));
      };
      const definitionOf = (id: string): Definition => {
        let found = definitions.get(id);
        if (found === undefined) definitions.set(id, (found = { className: null, externalId: null }));
        return found;
      };

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          if (ignoringDepth !== null) return false;
          if (draft === null) {
            if (name === 'Times' && parent === 'TestRun') {
              runStart = isoTimestamp(attrs.start) ?? null;
            } else if (name === 'UnitTestResult' && parent === 'Results') {
              position++;
              let testName = nonBlank(attrs.testName);
              const testId = attrs.testId ?? '';
              if (testName === null) {
                testName = unnamedCase(position);
                warn(quoting`a result without a testName (testId ${testId}) was imported as "${testName}"`, testName);
              }
              let outcome = outcomeIn(TRX_OUTCOMES, attrs.outcome);
              if (attrs.outcome === undefined) {
                outcome = TRX_OUTCOMES['(no outcome)'];
                warn('a result without an outcome (the run counts it as an error) was imported as an error', testName);
              } else if (outcome === undefined) {
                warn(quoting`unknown outcome "${attrs.outcome ?? ''}"; imported as an error, so that no failure is hidden`, testName);
                outcome = 'error';
              }
              const durationMs = timeSpanToMs(attrs.duration);
              if (durationMs === undefined) warn(quoting`unreadable duration "${attrs.duration}"; no duration recorded`, testName);
              const executedAt = isoTimestamp(attrs.startTime);
              if (executedAt === undefined) warn(quoting`unreadable startTime "${attrs.startTime}"; no execution time taken from it`, testName);
              draft = {
                testId,
                depth: parents.length,
                inner: [],
                open: [],
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
              definitionOf(definition).className = nonBlank(attrs.className?.split(',')[0]?.trim());
            else if (name === 'TestCategoryItem' && parent === 'TestCategory' && definition !== null) {
              const id = externalIdOfLabel(attrs.TestCategory ?? '');
              if (id !== null) definitionOf(definition).externalId ??= id;
            } else if ((name === 'Key' || name === 'Value') && parent === 'Property' && definition !== null) return true;
            else if (parents[1] === 'ResultSummary' && ((parent === 'Output' && (name === 'StdOut' || name === 'StdErr')) || (name === 'Text' && parent === 'RunInfo'))) return true;
            return false;
          }
          // A data-driven test's rows (at any depth), each with its own Output.
          if (name === 'UnitTestResult' && parent === 'InnerResults') {
            draft.open.push({ depth: parents.length, name: nonBlank(attrs.testName), outcome: attrs.outcome ?? null, message: null, stackTrace: null, systemOut: null, systemErr: null });
            return false;
          }
          const owner = draft.open[draft.open.length - 1] ?? draft;
          const within = parents.slice(owner.depth + 1).join('/');
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
            const { testId, inner } = draft;
            const parsed = withInnerResults(draft.parsed, inner, options.maxOutputChars);
            draft = null;
            if (definitions.has(testId)) emit(place(testId, parsed, definitions.get(testId)));
            else held.push({ testId, parsed });
            return;
          }
          if (draft !== null) {
            const row = draft.open[draft.open.length - 1];
            if (row !== undefined && name === 'UnitTestResult' && parents.length === row.depth) {
              draft.inner.push(draft.open.pop()!);
              return;
            }
            const parsed = row ?? draft.parsed;
            if (name === 'StdOut') parsed.systemOut = appendOutput(parsed.systemOut, text, options.maxOutputChars);
            else if (name === 'StdErr') parsed.systemErr = appendOutput(parsed.systemErr, text, options.maxOutputChars);
            else if (name === 'Message' && text !== null) parsed.message = withoutAnsi(nonBlank(text)?.trim() ?? null);
            else if (name === 'StackTrace' && text !== null) parsed.stackTrace = bodyText(text);
            return;
          }
          const parent = parents[parents.length - 1];
          const max = options.maxOutputChars;
          if (name === 'Key' && parent === 'Property') propertyKey = text;
          else if (name === 'Value' && parent === 'Property' && definition !== null) {
            if (propertyKey?.trim() === EXTERNAL_ID_NAME && nonBlank(text) !== null) definitionOf(definition).externalId ??= (text ?? '').trim();
            propertyKey = null;
          } else if (name === 'UnitTest') definition = null;
          else if (name === 'StdOut' && parent === 'Output') run.systemOut = appendOutput(run.systemOut, text, max);
          else if (name === 'StdErr' && parent === 'Output') run.systemErr = appendOutput(run.systemErr, text, max);
          else if (name === 'Text' && parent === 'RunInfo') run.systemErr = appendOutput(run.systemErr, text, max);
          else if (name === 'TestDefinitions') releaseHeld();
          else if (name === 'TestRun') {
            releaseHeld();
            if (run.systemOut !== null || run.systemErr !== null) options.onSuiteOutput?.({ suitePath: [], ...run });
          }
        },
      };
    },
  });
};

interface Definition {
  className: string | null;
  externalId: string | null;
}

/** A row of a data-driven test (`<InnerResults>`), with what its own Output says. */
interface InnerResult {
  depth: number;
  name: string | null;
  outcome: string | null;
  message: string | null;
  stackTrace: string | null;
  systemOut: string | null;
  systemErr: string | null;
}

/**
 * A data-driven test's rows, kept in its result: each row's testName and outcome as a property
 * `inner[<n>]`; their messages after the parent's own (one line each, named by the row); their
 * stack traces and outputs after the parent's, each under the row's name.
 */
function withInnerResults(parsed: ParsedCase, rows: readonly InnerResult[], max: number): ParsedCase {
  if (rows.length === 0) return parsed;
  const label = (row: InnerResult, n: number) => row.name ?? `row ${n + 1}`;
  const joined = (own: string | null, parts: Array<string | null>): string | null => {
    const all = [own, ...parts].filter((p): p is string => p !== null);
    return all.length === 0 ? null : all.join('\n');
  };
  let { systemOut, systemErr } = parsed;
  rows.forEach((row, n) => {
    if (row.systemOut !== null) systemOut = appendOutput(systemOut, `[${label(row, n)}]\n${row.systemOut}`, max);
    if (row.systemErr !== null) systemErr = appendOutput(systemErr, `[${label(row, n)}]\n${row.systemErr}`, max);
  });
  return {
    ...parsed,
    message: joined(parsed.message, rows.map((row, n) => (row.message === null ? null : `${label(row, n)}: ${row.message}`))),
    stackTrace: truncate(joined(parsed.stackTrace, rows.map((row, n) => (row.stackTrace === null ? null : `${label(row, n)}:\n${row.stackTrace}`))), max),
    systemOut,
    systemErr,
    properties: [...parsed.properties, ...rows.map((row, n) => ({ name: `inner[${n + 1}]`, value: `${label(row, n)}: ${row.outcome ?? '(no outcome)'}` }))],
  };
}

/** .NET TimeSpan text ("00:00:01.2345678", "1.02:03:04.5") to whole milliseconds. */
export function timeSpanToMs(raw: string | undefined): number | null | undefined {
  if (raw === undefined || raw.trim() === '') return null;
  const m = /^(?:(\d+)\.)?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(raw.trim());
  if (!m) return undefined;
  const [, days, hours, minutes, seconds] = m;
  const wholeMinutes = (Number(days ?? 0) * 24 + Number(hours)) * 60 + Number(minutes);
  return wholeMinutes * 60_000 + Math.round(Number(`${seconds}e3`));
}
