import { EXTERNAL_ID_NAME, XUNIT_OUTCOMES, outcomeIn, unnamedCase, withoutAnsi } from './outcomes';
import { quoting, noDetails, truncate, type ParsedCase, type ResultParser } from './parsedResult';
import { appendOutput, bodyText, baseName, isoTimestamp, nonBlank, secondsToMs, streamXml, warner, type XmlHandler } from './xmlStream';

/**
 * xUnit.net v2 XML (`<assemblies><assembly><collection><test>`). suitePath is [assembly file's base
 * name, collection name]; className is the test's `type`, and a name that starts with "<type>." is
 * cut to the rest ("Ns.CalcTests.Add" → "Add"; a custom DisplayName stays whole). Traits become
 * properties. executedAt is the assembly's run-date and run-time, taken as UTC (xUnit writes no zone).
 * Assembly-level `<errors>` (fixture cleanup failures) are not cases: each one is a warning.
 * Identity (docs/imports.md): theory data is in the name ("Add(a: 1, b: 2)"); a trait
 * `testament_case_id` is the externalId.
 */
export const parseXunit: ResultParser = (input, options) => {
  const warn = warner(options);
  return streamXml<ParsedCase>(input, options, {
    label: 'xUnit',
    roots: ['assemblies', 'assembly'],
    start(emit): XmlHandler {
      let assembly: { name: string; executedAt: string | null } | null = null;
      let collection: string | null = null;
      let draft: ParsedCase | null = null;
      let ignoringTest = false;
      let position = 0;

      return {
        open(name, attrs, parents) {
          const parent = parents[parents.length - 1];
          if (ignoringTest) return false;
          if (draft === null) {
            if (name === 'assembly') {
              const assemblyName = baseName(nonBlank(attrs.name) ?? '(unnamed assembly)');
              let executedAt: string | null = null;
              if (attrs['run-date'] !== undefined) {
                const raw = `${attrs['run-date']}T${attrs['run-time'] ?? '00:00:00'}`;
                const iso = isoTimestamp(raw);
                if (iso === undefined) warn(quoting`unreadable run-date/run-time "${attrs['run-date']} ${attrs['run-time'] ?? ''}" on assembly ${assemblyName}`);
                executedAt = iso ?? null;
              }
              assembly = { name: assemblyName, executedAt };
            } else if (name === 'collection') collection = nonBlank(attrs.name) ?? '(unnamed collection)';
            else if (name === 'error' && parent === 'errors')
              warn(quoting`the ${attrs.type ?? ''} error of ${attrs.name ?? 'the assembly'} is not a test case and was not imported`);
            else if (name === 'test') {
              position++;
              let fullName = nonBlank(attrs.name);
              const type = nonBlank(attrs.type);
              if (fullName === null) {
                fullName = unnamedCase(position);
                warn(quoting`a test without a name (type ${type ?? 'none'}) was imported as "${fullName}"`, fullName);
              }
              const caseName = type !== null && fullName.startsWith(`${type}.`) && fullName.length > type.length + 1 ? fullName.slice(type.length + 1) : fullName;
              let outcome = outcomeIn(XUNIT_OUTCOMES, attrs.result);
              if (outcome === undefined) {
                warn(quoting`unknown result "${attrs.result ?? ''}"; imported as an error, so that no failure is hidden`, fullName);
                outcome = 'error';
              }
              const durationMs = secondsToMs(attrs.time);
              if (durationMs === undefined) warn(quoting`unreadable time "${attrs.time}"; no duration recorded`, fullName);
              const path = [assembly?.name, collection].filter((p): p is string => p !== null && p !== undefined);
              draft = {
                suitePath: path.length > 0 ? path : [type ?? options.fileName],
                name: caseName,
                className: type,
                outcome,
                durationMs: durationMs ?? null,
                executedAt: assembly?.executedAt ?? null,
                ...noDetails(),
              };
            }
            return false;
          }
          if (name === 'failure' && parent === 'test') draft.failureType = nonBlank(attrs['exception-type']);
          else if ((name === 'message' || name === 'stack-trace') && parent === 'failure') return true;
          else if ((name === 'reason' || name === 'output') && parent === 'test') return true;
          else if (name === 'trait' && parent === 'traits' && attrs.name !== undefined) {
            draft.properties.push({ name: attrs.name, value: truncate(attrs.value ?? '', options.maxOutputChars) ?? '' });
            if (attrs.name === EXTERNAL_ID_NAME && nonBlank(attrs.value) !== null) draft.externalId ??= (attrs.value ?? '').trim();
          }
          return false;
        },

        close(name, text, parents) {
          const parent = parents[parents.length - 1];
          if (name === 'test' && parent !== 'test') {
            if (draft !== null) emit(draft);
            draft = null;
            ignoringTest = false;
            return;
          }
          if (draft === null) {
            if (name === 'collection') collection = null;
            else if (name === 'assembly') assembly = null;
            return;
          }
          if ((name === 'message' || name === 'reason') && text !== null) draft.message ??= withoutAnsi(nonBlank(text)?.trim() ?? null);
          else if (name === 'stack-trace' && text !== null) draft.stackTrace = bodyText(text);
          else if (name === 'output' && parent === 'test') draft.systemOut = appendOutput(draft.systemOut, text, options.maxOutputChars);
        },
      };
    },
  });
};
