import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ParsedCase, ParseWarning, ResultParser } from '../../../services/imports/formats/parsedResult';

/** A parser's cases and warnings from a stream, a fixture of test/imports/fixtures, or a text. */
export function harness(parser: ResultParser) {
  async function parse(input: Readable, maxOutputChars = 10_000) {
    const warnings: ParseWarning[] = [];
    const cases: ParsedCase[] = [];
    for await (const c of parser(input, { fileName: 'results.xml', maxOutputChars, onWarning: (w) => warnings.push(w) })) cases.push(c);
    return { cases, warnings };
  }
  return {
    parse,
    parseFixture: (name: string) => parse(createReadStream(join(__dirname, '..', 'fixtures', name))),
    parseText: (text: string, maxOutputChars?: number) => parse(Readable.from([Buffer.from(text)]), maxOutputChars),
  };
}

/** A case with nothing set: specs spread it and name what they expect. */
export const BASE_CASE: ParsedCase = {
  suitePath: [], name: '', className: null, outcome: 'passed', durationMs: null, executedAt: null, message: null,
  failureType: null, stackTrace: null, systemOut: null, systemErr: null, file: null, line: null, properties: [],
  variant: null, externalId: null, retried: false,
};
