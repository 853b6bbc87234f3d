import { EXTERNAL_ID_NAME, JUNIT_OUTCOMES, unnamedCase, withoutAnsi } from './outcomes';
import { quoting, truncate, type Outcome, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, firstLine, isoTimestamp, nonBlank, secondsToMs, streamXml, warner, type Attributes, type XmlHandler } from './xmlStream';

/**
 * JUnit XML as Maven Surefire, Gradle, pytest, jest-junit, Playwright, go-junit-report and
 * JunitXml.TestLogger write it. suitePath is the chain of `<testsuite>` names (nested suites nest);
 * a `<testsuites>` wrapper is not a level. A testcase's `file` that neither a suite (by its name or
 * its own `file`, as PHPUnit writes it), its class name nor its own name (a PHPUnit `.phpt` test)
 * already carries (jest-junit's `addFileAttribute`) is put before the suites, so the same describe
 * title in two files makes two suites. mocha-junit-reporter (Cypress) names each spec file on a
 * top-level "Root Suite" and writes that file's describe suites after it, as siblings: the file is
 * theirs too, and put before them the same way. The run's time xmlrunner appends to a suite's name
 * (`TestAcme-20251114214921`) is no part of it. Suite-level properties go to `onSuiteProperties`
 * (the run keeps them), suite-level output to `onSuiteOutput`.
 *
 * Identity (docs/imports.md): a `testament_case_id` property is the externalId; Playwright's browser
 * project (the `hostname` of a suite named by a script file, classname the same file, in a
 * `<testsuites>` with Playwright's `id`) is the variant and leads the name (`[firefox] title`).
 * Surefire's `flakyFailure`/`flakyError`/`rerunFailure`/`rerunError` are attempts of their own,
 * `retried`, yielded before the testcase's final outcome.
 */
export const parseJunit: ResultParser = (input, options) => {
  const warn = warner(options);
  const fileName = options.fileName;
  const max = options.maxOutputChars;
  return streamXml<ParsedCase>(input, options, {
    label: 'JUnit',
    roots: ['testsuites', 'testsuite'],
    start(emit): XmlHandler {
      let runName: string | null = null;
      /** Playwright's reporter writes `id` on its `<testsuites>` always (PLAYWRIGHT_JUNIT_SUITE_ID, empty by default); Vitest and others do not. */
      let playwrightRoot = false;
      const suites: Suite[] = [];
      /** The spec file of mocha-junit-reporter's last top-level "Root Suite" (Cypress): its describe suites follow it as siblings. */
      let specFile: string | null = null;
      let draft: Draft | null = null;
      let position = 0;
      let property: { name: string | undefined; value: string | undefined } | null = null;
      /** A `<testsuite>`'s own `<property>` being read (its value may be its text). */
      let suiteProperty: { name: string | undefined; value: string | undefined } | null = null;
      /** The outcome or rerun element being read, with the attempt it fills. */
      let element: { name: string; attempt: ParsedCase; children: number } | null = null;

      const timestamp = (raw: string | undefined, where: string, caseName?: string): string | null => {
        const iso = isoTimestamp(raw);
        if (iso !== undefined) return iso;
        warn(quoting`unreadable timestamp "${raw}" on ${where}; no execution time taken from it`, caseName);
        return null;
      };

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          if (draft === null) {
            if (name === 'testsuites' && parents.length === 0) {
              runName = nonBlank(attrs.name);
              playwrightRoot = attrs.id !== undefined;
            }
            else if (name === 'testsuite') {
              const suiteName = withoutRunStamp(nonBlank(attrs.name)) ?? nonBlank(attrs.package) ?? '(unnamed suite)';
              if (suites.length === 0) {
                if (suiteName === MOCHA_ROOT_SUITE) specFile = nonBlank(attrs.file);
                else if (nonBlank(attrs.file) !== null) specFile = null;
              }
              const executedAt = attrs.timestamp === undefined ? null : timestamp(attrs.timestamp, `suite ${suiteName}`);
              suites.push({
                name: suiteName,
                executedAt: executedAt ?? suites[suites.length - 1]?.executedAt ?? null,
                hostname: nonBlank(attrs.hostname),
                file: nonBlank(attrs.file),
                specFile: suites.length > 0 ? suites[suites.length - 1].specFile : specFile,
                systemOut: null,
                systemErr: null,
                properties: [],
              });
            } else if (name === 'testcase') {
              position++;
              let caseName = nonBlank(attrs.name);
              if (caseName === null) {
                caseName = unnamedCase(position);
                warn(quoting`a test case without a name (class ${attrs.classname ?? 'none'}) was imported as "${caseName}"`, caseName);
              }
              draft = newDraft(caseName, attrs, suites, runName ?? fileName, playwrightRoot);
              const duration = secondsToMs(attrs.time);
              if (duration === undefined) warn(quoting`unreadable time "${attrs.time}"; no duration recorded`, caseName);
              draft.durationMs = duration ?? null;
              if (attrs.timestamp !== undefined) draft.executedAt = timestamp(attrs.timestamp, `test case ${caseName}`, caseName) ?? draft.executedAt;
              if (attrs.line !== undefined) {
                if (/^\d+$/.test(attrs.line.trim())) draft.line = Number(attrs.line.trim());
                else warn(quoting`unreadable line "${attrs.line}"`, caseName);
              }
            } else if ((name === 'system-out' || name === 'system-err') && parent === 'testsuite') return true;
            else if (name === 'property' && parent === 'properties' && parents[parents.length - 2] === 'testsuite' && suites.length > 0) {
              suiteProperty = { name: attrs.name, value: attrs.value };
              return attrs.value === undefined;
            }
            return false;
          }
          if (parent === 'testcase') {
            const outcome = OUTCOME_ELEMENTS.get(name);
            if (outcome !== undefined) {
              element = { name, attempt: draft, children: 0 };
              if (draft.outcomeElement === null) {
                // The first failure, error or skip decides the outcome; later ones only fill what it lacks.
                draft.outcomeElement = name;
                draft.outcome = outcome;
              }
              draft.message ??= truncate(withoutAnsi(nonBlank(attrs.message)), max);
              if (outcome !== 'skipped' && draft.outcome !== 'skipped') draft.failureType ??= nonBlank(attrs.type);
              return true;
            }
            const rerun = RERUN_ELEMENTS.get(name);
            if (rerun !== undefined) {
              const attempt: ParsedCase = {
                ...withoutDecision(draft),
                outcome: rerun,
                durationMs: secondsToMs(attrs.time) ?? null,
                message: truncate(withoutAnsi(nonBlank(attrs.message)), max),
                failureType: nonBlank(attrs.type),
                stackTrace: null,
                systemOut: null,
                systemErr: null,
                properties: [],
                retried: true,
              };
              draft.reruns.push(attempt);
              element = { name, attempt, children: 0 };
              return true; // its own text is its stack trace when it has no child elements (cargo-nextest, older writers)
            }
            return name === 'system-out' || name === 'system-err';
          }
          if (RERUN_ELEMENTS.has(parent) && parents[parents.length - 2] === 'testcase') {
            if (element !== null) element.children++;
            return name === 'stackTrace' || name === 'system-out' || name === 'system-err';
          }
          if (name === 'property' && parent === 'properties' && parents[parents.length - 2] === 'testcase') {
            property = { name: attrs.name, value: attrs.value };
            return attrs.value === undefined;
          }
          return false;
        },

        close(name, text, parents) {
          const parent = parents[parents.length - 1];
          if (draft === null) {
            const suite = suites[suites.length - 1];
            if (name === 'testsuite') {
              suites.pop();
              if (suite !== undefined && (suite.systemOut !== null || suite.systemErr !== null))
                options.onSuiteOutput?.({ suitePath: [...suites.map((s) => s.name), suite.name], systemOut: suite.systemOut, systemErr: suite.systemErr });
              if (suite !== undefined && suite.properties.length > 0)
                options.onSuiteProperties?.({ suitePath: [...suites.map((s) => s.name), suite.name], properties: suite.properties });
            } else if (suite !== undefined && name === 'property' && suiteProperty !== null) {
              if (suiteProperty.name !== undefined) suite.properties.push({ name: suiteProperty.name, value: suiteProperty.value ?? text ?? '' });
              suiteProperty = null;
            } else if (suite !== undefined && parent === 'testsuite' && name === 'system-out') suite.systemOut = appendOutput(suite.systemOut, text, max);
            else if (suite !== undefined && parent === 'testsuite' && name === 'system-err') suite.systemErr = appendOutput(suite.systemErr, text, max);
            return;
          }
          if (name === 'testcase' && parent !== 'testcase') {
            const finished = draft;
            for (const attempt of finished.reruns) emit({ ...attempt, externalId: finished.externalId, variant: finished.variant });
            emit(withoutDecision(finished));
            draft = null;
            return;
          }
          if (parent === 'testcase' && element !== null && name === element.name) {
            const body = bodyText(text);
            if (OUTCOME_ELEMENTS.has(name) && body !== null) {
              if (draft.outcome === 'skipped') draft.message ??= truncate(withoutAnsi(body), max);
              else {
                draft.message ??= withoutAnsi(firstLine(body));
                draft.stackTrace ??= body;
              }
            } else if (RERUN_ELEMENTS.has(name) && element.children === 0 && body !== null) {
              element.attempt.stackTrace = body;
              element.attempt.message ??= withoutAnsi(firstLine(body));
            }
            element = null;
          } else if (element !== null && RERUN_ELEMENTS.has(parent)) {
            const attempt = element.attempt;
            if (name === 'stackTrace') {
              attempt.stackTrace = bodyText(text);
              attempt.message ??= withoutAnsi(firstLine(attempt.stackTrace));
            } else if (name === 'system-out') attempt.systemOut = appendOutput(attempt.systemOut, text, max);
            else if (name === 'system-err') attempt.systemErr = appendOutput(attempt.systemErr, text, max);
          } else if (parent === 'testcase' && name === 'system-out' && text !== null) draft.systemOut = appendOutput(draft.systemOut, text, max);
          else if (parent === 'testcase' && name === 'system-err' && text !== null) draft.systemErr = appendOutput(draft.systemErr, text, max);
          else if (name === 'property' && property !== null) {
            if (property.name !== undefined) {
              const value = property.value ?? text ?? '';
              draft.properties.push({ name: property.name, value });
              if (property.name === EXTERNAL_ID_NAME && nonBlank(value) !== null) draft.externalId ??= value.trim();
            }
            property = null;
          }
        },
      };
    },
  });
};

const OUTCOME_ELEMENTS = new Map<string, Outcome>([
  ['failure', JUNIT_OUTCOMES['<failure>']],
  ['error', JUNIT_OUTCOMES['<error>']],
  ['skipped', JUNIT_OUTCOMES['<skipped>']],
]);
const RERUN_ELEMENTS = new Map<string, Outcome>([
  ['flakyFailure', JUNIT_OUTCOMES['<flakyFailure> (retried attempt)']],
  ['flakyError', JUNIT_OUTCOMES['<flakyError> (retried attempt)']],
  ['rerunFailure', JUNIT_OUTCOMES['<rerunFailure> (retried attempt)']],
  ['rerunError', JUNIT_OUTCOMES['<rerunError> (retried attempt)']],
]);

/** mocha-junit-reporter's (Cypress's) suite for a spec file's root, the one that names the file; its describe suites follow as siblings. */
const MOCHA_ROOT_SUITE = 'Root Suite';

/** Playwright names a suite by its spec file and writes the browser project as the suite's `hostname`. */
const SCRIPT_FILE = /\.[cm]?[jt]sx?$/;

interface Suite {
  name: string;
  executedAt: string | null;
  hostname: string | null;
  /** The suite's own `file` (PHPUnit writes one per test class): its cases' file is then carried by the suite. */
  file: string | null;
  /** The spec file mocha-junit-reporter names on the "Root Suite" before this suite: the file of its cases that name none. */
  specFile: string | null;
  systemOut: string | null;
  systemErr: string | null;
  /** Its own `<properties>`, in file order. */
  properties: Array<{ name: string; value: string }>;
}

interface Draft extends ParsedCase {
  outcomeElement: string | null;
  /** Surefire's earlier attempts, in file order (each already cut to maxOutputChars). */
  reruns: ParsedCase[];
}

function withoutDecision(draft: Draft): ParsedCase {
  const { outcomeElement: _decided, reruns: _reruns, ...parsed } = draft;
  return { ...parsed, properties: [...parsed.properties] };
}

function newDraft(caseName: string, attrs: Attributes, suites: Suite[], fallbackSuite: string, playwrightRoot: boolean): Draft {
  const className = nonBlank(attrs.classname);
  const innermost = suites[suites.length - 1];
  const ownFile = nonBlank(attrs.file);
  const file = ownFile ?? innermost?.specFile ?? null;
  const suitePath = suites.length > 0 ? suites.map((s) => s.name) : [className ?? fallbackSuite];
  // A spec file named on a "Root Suite" is carried by no suite name (the same describe in two spec files is two tests).
  const carried = file !== null && (suitePath.includes(file)
    || (ownFile !== null && (suites.some((s) => s.file === file && s.name !== MOCHA_ROOT_SUITE) || namesFile(className, file) || isBaseName(caseName, file))));
  // Written on Windows (cypress\e2e\login.cy.js) or not, the same file is the same level.
  if (file !== null && !carried) suitePath.unshift(file.replace(/\\/g, '/'));
  const project = playwrightRoot && innermost !== undefined && SCRIPT_FILE.test(innermost.name) && className === innermost.name ? innermost.hostname : null;
  // The project shows in the title as Playwright's own includeProjectInTestName writes it, so a file with or without that option names the same test.
  const name = project === null || caseName.startsWith(`[${project}] `) ? caseName : `[${project}] ${caseName}`;
  return {
    suitePath,
    name,
    className,
    outcome: JUNIT_OUTCOMES['(no failure, error or skipped element)'],
    durationMs: null,
    executedAt: innermost?.executedAt ?? null,
    message: null,
    failureType: null,
    stackTrace: null,
    systemOut: null,
    systemErr: null,
    file,
    line: null,
    properties: [],
    variant: project,
    externalId: null,
    retried: false,
    outcomeElement: null,
    reruns: [],
  };
}

/**
 * unittest-xml-reporting (xmlrunner) names a suite by its class and the run's time by default
 * (`TestAcme-20251114214921`): without the stamp, the next run's suite is the same suite.
 */
function withoutRunStamp(name: string | null): string | null {
  const stamped = name === null ? null : /^(.+)-(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(name);
  if (stamped === null) return name;
  const [, base, , month, day, hour, minute, second] = stamped.map(String);
  const valid = Number(month) >= 1 && Number(month) <= 12 && Number(day) >= 1 && Number(day) <= 31 && Number(hour) <= 23 && Number(minute) <= 59 && Number(second) <= 59;
  return valid ? base : name;
}

/** PHPUnit names a `.phpt` test by its file's base name (and writes the file's absolute path, the machine's, as `file`). */
function isBaseName(name: string, file: string): boolean {
  return name === file.split(/[\\/]/).pop();
}

/** pytest's classname is the file's module path: "tests/test_math.py" is named by "tests.test_math" and "tests.test_math.TestX". */
function namesFile(className: string | null, file: string): boolean {
  if (className === null) return false;
  if (className === file || className.startsWith(`${file} `)) return true;
  const module = file.replace(/\.[^./\\]+$/, '').replace(/[\\/]/g, '.').replace(/^\.+/, '');
  return module !== '' && (className === module || className.startsWith(`${module}.`) || className.endsWith(`.${module}`));
}
