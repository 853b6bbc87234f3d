import { TESTNG_OUTCOMES, outcomeIn, unnamedCase, withoutAnsi } from './outcomes';
import { quoting, noDetails, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, firstLine, isoTimestamp, nonBlank, streamXml, warner, type XmlHandler } from './xmlStream';

/**
 * TestNG's testng-results.xml. suitePath is [suite name, test name]; className is the `<class>`
 * name. Configuration methods (`is-config="true"`: @BeforeMethod and the like) are not cases, except
 * one that failed: it is imported as a failed result (property `configuration`), with a warning, as
 * Gradle and Surefire report it, so that a set-up failure is not hidden behind its skipped tests.
 * A failure without `<message>` takes the first line of its stack trace as its message.
 * `<params>` become properties named `param[<index>]`; `<reporter-output>` lines become systemOut.
 *
 * Identity (docs/imports.md): the `<test>` block is in suitePath; a data-provider invocation's
 * parameters, in index order joined by ", ", are the variant, without Java identity hashes
 * (`TestData@e111c7c` is `TestData@…`; the properties keep them). `retried="true"` (an attempt the
 * retry analyzer ran again) is `retried`: an attempt of the same test as the invocation it retried,
 * as Surefire's reruns are (same method, same parameters once the hashes are left out).
 */
export const parseTestng: ResultParser = (input, options) => {
  const warn = warner(options);
  return streamXml<ParsedCase>(input, options, {
    label: 'TestNG',
    roots: ['testng-results'],
    start(emit): XmlHandler {
      let suite: Level | null = null;
      let test: Level | null = null;
      let className: string | null = null;
      let draft: ParsedCase | null = null;
      let ignoringMethod = false;
      let position = 0;
      let param: { index: string; isNull: boolean; valued: boolean } | null = null;

      const startedAt = (raw: string | undefined, where: string, caseName?: string): string | null => {
        const iso = isoTimestamp(raw);
        if (iso !== undefined) return iso;
        warn(quoting`unreadable started-at "${raw}" on ${where}; no execution time taken from it`, caseName);
        return null;
      };

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          if (ignoringMethod) return false;
          if (draft === null) {
            if (name === 'suite' && parent === 'testng-results') {
              const suiteName = nonBlank(attrs.name) ?? '(unnamed suite)';
              suite = { name: suiteName, executedAt: startedAt(attrs['started-at'], `suite ${suiteName}`) };
            } else if (name === 'test' && parent === 'suite') {
              const testName = nonBlank(attrs.name) ?? '(unnamed test)';
              test = { name: testName, executedAt: startedAt(attrs['started-at'], `test ${testName}`) ?? suite?.executedAt ?? null };
            } else if (name === 'class' && parent === 'test') className = nonBlank(attrs.name);
            else if (name === 'test-method' && parent === 'class') {
              let methodName = nonBlank(attrs.name);
              const config = attrs['is-config'] === 'true';
              if (config && outcomeIn(TESTNG_OUTCOMES, attrs.status) !== 'failed') ignoringMethod = true;
              else {
                position++;
                if (methodName === null) {
                  methodName = unnamedCase(position);
                  warn(quoting`a test method without a name (class ${className ?? 'none'}) was imported as "${methodName}"`, methodName);
                }
                let outcome = outcomeIn(TESTNG_OUTCOMES, attrs.status);
                if (outcome === undefined) {
                  warn(quoting`unknown status "${attrs.status ?? ''}"; imported as an error, so that no failure is hidden`, methodName);
                  outcome = 'error';
                }
                const duration = attrs['duration-ms'];
                let durationMs: number | null = null;
                if (duration !== undefined && duration.trim() !== '') {
                  if (/^\d+$/.test(duration.trim())) durationMs = Number(duration.trim());
                  else warn(quoting`unreadable duration-ms "${duration}"; no duration recorded`, methodName);
                }
                const levels = [suite, test].filter((l): l is Level => l !== null);
                draft = {
                  suitePath: levels.length > 0 ? levels.map((l) => l.name) : [className ?? options.fileName],
                  name: methodName,
                  className,
                  outcome,
                  durationMs,
                  executedAt: startedAt(attrs['started-at'], `test method ${methodName}`, methodName) ?? levels[levels.length - 1]?.executedAt ?? null,
                  ...noDetails(),
                  retried: attrs.retried === 'true',
                };
                if (config) {
                  draft.properties.push({ name: 'configuration', value: 'true' });
                  warn(quoting`configuration method ${methodName} (class ${className ?? 'none'}) failed; imported as a failed result so that the failure shows`, methodName);
                }
              }
            }
            return false;
          }
          const grandparent = parents[parents.length - 2];
          if (name === 'exception' && parent === 'test-method') draft.failureType = nonBlank(attrs.class);
          else if ((name === 'message' || name === 'full-stacktrace') && parent === 'exception' && grandparent === 'test-method') return true;
          else if (name === 'param' && parent === 'params') param = { index: attrs.index ?? '', isNull: attrs['is-null'] === 'true', valued: false };
          else if (name === 'value' && parent === 'param') return true;
          else if (name === 'line' && parent === 'reporter-output' && grandparent === 'test-method') return true;
          return false;
        },

        close(name, text, parents) {
          const parent = parents[parents.length - 1];
          if (name === 'test-method' && parent === 'class') {
            if (draft !== null) {
              if (draft.message === null && draft.stackTrace !== null) draft.message = withoutAnsi(firstLine(draft.stackTrace));
              if (draft.message === null && draft.properties.some((p) => p.name === 'configuration')) draft.message = `configuration method ${draft.name} failed`;
              emit(withVariant(draft));
            }
            draft = null;
            ignoringMethod = false;
            param = null;
            return;
          }
          if (draft === null) {
            if (name === 'class') className = null;
            else if (name === 'test') test = null;
            else if (name === 'suite') suite = null;
            return;
          }
          if (name === 'message' && text !== null) draft.message = withoutAnsi(nonBlank(text)?.trim() ?? null);
          else if (name === 'full-stacktrace' && text !== null) draft.stackTrace = nonBlank(text)?.trim() ?? null; // indentation around the CDATA is TestNG's, not the trace's
          else if (name === 'line' && text !== null) draft.systemOut = appendOutput(draft.systemOut, text.trim(), options.maxOutputChars);
          else if (name === 'value' && param !== null && text !== null) {
            draft.properties.push({ name: `param[${param.index}]`, value: text.trim() });
            param.valued = true;
          } else if (name === 'param' && param !== null) {
            if (!param.valued && param.isNull) draft.properties.push({ name: `param[${param.index}]`, value: 'null' });
            param = null;
          }
        },
      };
    },
  });
};

interface Level {
  name: string;
  executedAt: string | null;
}

/** The data-provider parameters (properties `param[<index>]`), in index order, as the case's variant. */
function withVariant(parsed: ParsedCase): ParsedCase {
  const params = parsed.properties
    .map((p) => ({ index: /^param\[(\d+)\]$/.exec(p.name)?.[1], value: p.value }))
    .filter((p): p is { index: string; value: string } => p.index !== undefined)
    .sort((a, b) => Number(a.index) - Number(b.index));
  return params.length === 0 ? parsed : { ...parsed, variant: params.map((p) => withoutIdentityHash(p.value)).join(', ') };
}

/**
 * Java's default toString of an object (a data-provider row without its own toString) is its class and
 * identity hash, `com.acme.TestData@e111c7c`, new in every JVM: the next run (and the retry of the same
 * invocation) prints another hash. The hash is left out (`com.acme.TestData@…`) so the test stays itself.
 * Class names as Java prints them: nested (`Outer$Row`), arrays (`[Ljava.lang.String;`, `[I`), lambdas (`X$$Lambda$14/0x7f…`).
 */
const IDENTITY_HASH = /((?:\[+(?:L[\w$./]+;|[ZBCSIJFD]))|[A-Za-z_$][\w$]*(?:[./][\w$]+)*)@[0-9a-f]{1,8}(?![\w.@-])/g;

export function withoutIdentityHash(value: string): string {
  // A hidden class's name (a lambda's) ends in its address, as new every run as the hash.
  return value.replace(IDENTITY_HASH, (_, type: string) => `${type.replace(/\/0x[0-9a-f]+$/, '/0x…')}@…`);
}
