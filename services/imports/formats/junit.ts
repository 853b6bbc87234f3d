import { truncate, type Outcome, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, firstLine, isoTimestamp, nonBlank, secondsToMs, streamXml, warner, type Attributes, type XmlHandler } from './xmlStream';

/**
 * JUnit XML as Maven Surefire, Gradle, pytest, jest-junit, go-junit-report and JunitXml.TestLogger
 * write it. suitePath is the chain of `<testsuite>` names (nested suites nest); a `<testsuites>`
 * wrapper is not a level. Suite-level properties and output are not imported.
 */
export const parseJunit: ResultParser = (input, options) => {
  const warn = warner(options);
  const fileName = options.fileName;
  return streamXml<ParsedCase>(input, options, {
    label: 'JUnit',
    roots: ['testsuites', 'testsuite'],
    start(emit): XmlHandler {
      let runName: string | null = null;
      const suites: Array<{ name: string; executedAt: string | null }> = [];
      let draft: Draft | null = null;
      let ignoringCase = false;
      let property: { name: string | undefined; value: string | undefined } | null = null;

      const timestamp = (raw: string | undefined, where: string, caseName?: string): string | null => {
        const iso = isoTimestamp(raw);
        if (iso !== undefined) return iso;
        warn(`unreadable timestamp "${raw}" on ${where}; no execution time taken from it`, caseName);
        return null;
      };

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          if (draft === null) {
            if (ignoringCase) return false;
            if (name === 'testsuites' && parents.length === 0) runName = nonBlank(attrs.name);
            else if (name === 'testsuite') {
              const suiteName = nonBlank(attrs.name) ?? nonBlank(attrs.package) ?? '(unnamed suite)';
              const executedAt = attrs.timestamp === undefined ? null : timestamp(attrs.timestamp, `suite ${suiteName}`);
              suites.push({ name: suiteName, executedAt: executedAt ?? suites[suites.length - 1]?.executedAt ?? null });
            } else if (name === 'testcase') {
              const caseName = nonBlank(attrs.name);
              if (caseName === null) {
                warn(`a test case without a name (class ${attrs.classname ?? 'none'}) was skipped`);
                ignoringCase = true;
                return false;
              }
              draft = newDraft(caseName, attrs, suites, runName ?? fileName);
              const duration = secondsToMs(attrs.time);
              if (duration === undefined) warn(`unreadable time "${attrs.time}"; no duration recorded`, caseName);
              draft.durationMs = duration ?? null;
              if (attrs.timestamp !== undefined) draft.executedAt = timestamp(attrs.timestamp, `test case ${caseName}`, caseName) ?? draft.executedAt;
              if (attrs.line !== undefined) {
                if (/^\d+$/.test(attrs.line.trim())) draft.line = Number(attrs.line.trim());
                else warn(`unreadable line "${attrs.line}"`, caseName);
              }
            }
            return false;
          }
          if (parent === 'testcase') {
            const outcome = OUTCOME_ELEMENTS.get(name);
            if (outcome !== undefined) {
              if (draft.outcomeElement !== null) return false; // the first failure, error or skip decides
              draft.outcomeElement = name;
              draft.outcome = outcome;
              draft.message = truncate(nonBlank(attrs.message), options.maxOutputChars);
              draft.failureType = outcome === 'skipped' ? null : nonBlank(attrs.type);
              return true;
            }
            return name === 'system-out' || name === 'system-err';
          }
          if (name === 'property' && parent === 'properties' && parents[parents.length - 2] === 'testcase') {
            property = { name: attrs.name, value: attrs.value };
            return attrs.value === undefined;
          }
          return false;
        },

        close(name, text, parents) {
          if (name === 'testsuite' && draft === null && !ignoringCase) {
            suites.pop();
            return;
          }
          if (name === 'testcase' && parents[parents.length - 1] !== 'testcase') {
            if (draft !== null) {
              const { outcomeElement: _decided, ...parsed } = draft;
              emit(parsed);
            }
            draft = null;
            ignoringCase = false;
            return;
          }
          if (draft === null) return;
          const parent = parents[parents.length - 1];
          if (parent === 'testcase' && name === draft.outcomeElement && text !== null) {
            const body = bodyText(text);
            if (draft.outcome === 'skipped') draft.message ??= body;
            else {
              draft.message ??= firstLine(body);
              draft.stackTrace = body;
            }
          } else if (parent === 'testcase' && name === 'system-out' && text !== null) draft.systemOut = appendOutput(draft.systemOut, text, options.maxOutputChars);
          else if (parent === 'testcase' && name === 'system-err' && text !== null) draft.systemErr = appendOutput(draft.systemErr, text, options.maxOutputChars);
          else if (name === 'property' && property !== null) {
            if (property.name !== undefined) draft.properties.push({ name: property.name, value: property.value ?? text ?? '' });
            property = null;
          }
        },
      };
    },
  });
};

const OUTCOME_ELEMENTS = new Map<string, Outcome>([['failure', 'failed'], ['error', 'error'], ['skipped', 'skipped']]);

interface Draft extends ParsedCase {
  outcomeElement: string | null;
}

function newDraft(name: string, attrs: Attributes, suites: Array<{ name: string; executedAt: string | null }>, fallbackSuite: string): Draft {
  const className = nonBlank(attrs.classname);
  return {
    suitePath: suites.length > 0 ? suites.map((s) => s.name) : [className ?? fallbackSuite],
    name,
    className,
    outcome: 'passed',
    durationMs: null,
    executedAt: suites[suites.length - 1]?.executedAt ?? null,
    message: null,
    failureType: null,
    stackTrace: null,
    systemOut: null,
    systemErr: null,
    file: nonBlank(attrs.file),
    line: null,
    properties: [],
    variant: null,
    externalId: null,
    retried: false,
    outcomeElement: null,
  };
}
