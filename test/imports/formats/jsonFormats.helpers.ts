import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import {
  type ParseWarning,
  type ParsedCase,
  ResultFileError,
  type ResultParser,
} from '../../../services/imports/formats/parsedResult';

export const FIXTURES = join(__dirname, '..', 'fixtures');

export function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

/** The bytes as a stream of `size`-byte chunks (a UTF-8 character or a token may be split). */
export function inChunks(bytes: Buffer | string, size = 65536): Readable {
  const buffer = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  return Readable.from(
    (function* () {
      for (let at = 0; at < buffer.length; at += size) yield buffer.subarray(at, at + size);
    })(),
  );
}

export async function parseAll(
  parser: ResultParser,
  input: Readable,
  fileName = 'results.json',
  maxOutputChars = 10_000,
): Promise<{ cases: ParsedCase[]; warnings: ParseWarning[] }> {
  const cases: ParsedCase[] = [];
  const warnings: ParseWarning[] = [];
  for await (const parsed of parser(input, { fileName, maxOutputChars, onWarning: (w) => warnings.push(w) })) {
    cases.push(parsed);
  }
  return { cases, warnings };
}

/** Parses and expects a `ResultFileError` with `code`; returns it for further checks. */
export async function expectRefused(parser: ResultParser, input: Readable, code: string): Promise<ResultFileError> {
  try {
    await parseAll(parser, input, 'bad.json');
  } catch (error) {
    expect(error).to.be.instanceOf(ResultFileError);
    expect((error as ResultFileError).code).to.equal(code);
    return error as ResultFileError;
  }
  expect.fail(`expected a ResultFileError ${code}`);
}

/**
 * Counts the cases of a generated input while sampling the resident set; returns the count and the
 * highest rise above the resident set before parsing.
 */
export async function countWithPeakRss(parser: ResultParser, input: Readable): Promise<{ count: number; rssRise: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().rss);
  };
  const timer = setInterval(sample, 10);
  let count = 0;
  try {
    for await (const _ of parser(input, { fileName: 'big.json', maxOutputChars: 10_000, onWarning: () => {} })) {
      if (++count % 1000 === 0) sample();
    }
  } finally {
    clearInterval(timer);
  }
  sample();
  return { count, rssRise: peak - before };
}

/** A Readable producing `head`, then `count` items made by `item` (comma-separated), then `tail`, in chunks of about 64 KiB. */
export function generatedJson(head: string, count: number, item: (i: number) => string, tail: string): Readable {
  return Readable.from(
    (function* () {
      let pending = head;
      for (let i = 0; i < count; i++) {
        pending += (i === 0 ? '' : ',') + item(i);
        if (pending.length >= 65536) {
          yield Buffer.from(pending);
          pending = '';
        }
      }
      yield Buffer.from(pending + tail);
    })(),
  );
}
