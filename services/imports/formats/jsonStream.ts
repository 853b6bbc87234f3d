import type { Readable } from 'node:stream';
import { Assembler } from 'stream-json/core/assembler.js';
import { jsonParser, type Token } from 'stream-json/core/parser.js';
import { storableText } from '../../shared/text';
import { ResultFileError } from './parsedResult';
import { isoTimestamp as fileTimestamp } from './xmlStream';

/**
 * Pull-style reading of a JSON result file: the JSON formats walk the file's structure key by key
 * and assemble only the small values they need (one test, one scenario), so a file is never held
 * whole. Tokens come from stream-json's tokenizer, fed chunk by chunk.
 */
export class JsonReader {
  private readonly source: AsyncIterator<Token[]>;
  private batch: Token[] = [];
  private index = 0;

  constructor(
    input: Readable,
    readonly file: string,
  ) {
    this.source = tokenBatches(input, file);
  }

  async peek(): Promise<Token> {
    if (this.index >= this.batch.length) await this.fill();
    return this.batch[this.index];
  }

  /** The token `n` places after the next one (`lookAhead(0)` is `peek()`), or undefined past the end of the input. */
  async lookAhead(n: number): Promise<Token | undefined> {
    while (this.index + n >= this.batch.length) {
      const next = await this.source.next();
      if (next.done) return undefined;
      this.batch = this.batch.slice(this.index).concat(next.value);
      this.index = 0;
    }
    return this.batch[this.index + n];
  }

  async next(): Promise<Token> {
    if (this.index >= this.batch.length) await this.fill();
    return this.batch[this.index++];
  }

  /** Walks an object: yields each key; the caller reads or skips the key's value before pulling the next. */
  async *keys(what: string): AsyncGenerator<string> {
    if ((await this.next()).name !== 'startObject') throw this.malformed(`${what} is not a JSON object`);
    for (;;) {
      const token = await this.next();
      if (token.name === 'endObject') return;
      if (token.name === 'keyValue') yield token.value;
    }
  }

  /** Walks an array: yields once per item; the caller reads or skips the item before pulling the next. */
  async *items(what: string): AsyncGenerator<void> {
    if ((await this.next()).name !== 'startArray') throw this.malformed(`${what} is not a JSON array`);
    while ((await this.peek()).name !== 'endArray') yield;
    await this.next();
  }

  /**
   * Assembles the next value (kept small by the callers: one test, one scenario, the stats).
   * Deeper than `maxDepth` levels of arrays and objects: JsonTooDeep, before it is assembled.
   */
  async readValue(maxDepth = Infinity): Promise<unknown> {
    const assembler = new Assembler();
    let depth = 0;
    do {
      // Awaits only when a batch runs out: most tokens are taken synchronously.
      if (this.index >= this.batch.length) await this.fill();
      const token = this.batch[this.index++];
      depth += DEPTH_CHANGE[token.name] ?? 0;
      if (depth > maxDepth) throw new JsonTooDeep(maxDepth);
      assembler.consume(token);
    } while (depth > 0);
    return assembler.current;
  }

  async skipValue(): Promise<void> {
    let depth = 0;
    do {
      if (this.index >= this.batch.length) await this.fill();
      depth += DEPTH_CHANGE[this.batch[this.index++].name] ?? 0;
    } while (depth > 0);
  }

  private async fill(): Promise<void> {
    do {
      const next = await this.source.next();
      if (next.done) throw this.malformed('the file ends before its JSON value does');
      this.batch = next.value;
      this.index = 0;
    } while (this.batch.length === 0);
  }

  /** Reads to the end of the input, so trailing garbage or a cut UTF-8 sequence is still reported. */
  async end(): Promise<void> {
    for (;;) {
      const next = await this.source.next();
      if (next.done) return;
    }
  }

  /** Stops reading (ends the input) when a parser stops early. */
  async close(): Promise<void> {
    await this.source.return?.(undefined);
  }

  malformed(message: string): ResultFileError {
    return new ResultFileError('malformed-file', `${this.file}: ${message}`, { file: this.file });
  }
}

/** A value nested deeper than the reader was asked to assemble. */
export class JsonTooDeep extends Error {
  constructor(readonly maxDepth: number) {
    super(`nested deeper than ${maxDepth} levels`);
    this.name = 'JsonTooDeep';
  }
}

const DEPTH_CHANGE: Partial<Record<Token['name'], number>> = {
  startObject: 1,
  startArray: 1,
  endObject: -1,
  endArray: -1,
};

const JSON_WHITESPACE_ONLY = /^[ \t\n\r]*$/;

/**
 * The file's tokens, one batch per input chunk; bad bytes, bad syntax and an empty file become
 * `ResultFileError`s, strings that no text column holds are made storable (`storableText`).
 */
async function* tokenBatches(input: Readable, file: string): AsyncGenerator<Token[]> {
  const decoder = new TextDecoder('utf-8', { fatal: true }); // drops a leading byte-order mark
  const tokenize = jsonParser({ streamValues: false });
  let bytesRead = 0;
  let started = false;
  let depth = 0;
  let complete = false;

  const decode = (chunk: Buffer | undefined): string => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      throw new ResultFileError('wrong-encoding', `${file} is not valid UTF-8 (before byte ${bytesRead})`, {
        file,
        beforeByte: bytesRead,
      });
    }
  };
  const tokensOf = (text: string): Token[] => {
    let result;
    try {
      result = tokenize(text);
    } catch (error) {
      const reason = error instanceof Error ? error.message.replace(/^Parser /, '') : String(error);
      throw new ResultFileError('malformed-file', `${file} is not valid JSON before byte ${bytesRead}: ${reason}`, {
        file,
        beforeByte: bytesRead,
      });
    }
    if (typeof result === 'symbol') return [];
    for (const token of result.values) {
      depth += DEPTH_CHANGE[token.name] ?? 0;
      if (depth === 0) complete = true;
      // JSON escapes can spell what no text column holds (`\ud800` alone, `\u0000`): read as U+FFFD (docs/imports.md, Encoding).
      if (token.name === 'stringValue' || token.name === 'keyValue') token.value = storableText(token.value);
    }
    return result.values;
  };

  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    let text: string;
    if (typeof chunk === 'string') {
      text = chunk;
      bytesRead += Buffer.byteLength(chunk);
    } else {
      bytesRead += chunk.length;
      text = decode(chunk);
    }
    if (!started) {
      if (JSON_WHITESPACE_ONLY.test(text)) continue;
      started = true;
    }
    const tokens = tokensOf(text);
    if (tokens.length > 0) yield tokens;
  }
  const rest = decode(undefined);
  if (!started && JSON_WHITESPACE_ONLY.test(rest)) {
    throw new ResultFileError('empty-file', `${file} is empty`, { file });
  }
  // The trailing newline ends a value the tokenizer still waits on (a top-level number or literal).
  const tokens = tokensOf(`${rest}\n`);
  if (tokens.length > 0) yield tokens;
  if (!complete) {
    throw new ResultFileError('malformed-file', `${file} ends before its JSON value does (${bytesRead} bytes read)`, {
      file,
      beforeByte: bytesRead,
    });
  }
}

/** Plain-value guards for assembled JSON. */
export function jsonObject(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

export function jsonArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function jsonString(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function jsonNumber(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * A timestamp the file gives, as ISO 8601; null when absent, unreadable or year 1 (.NET's "no
 * time"). Read as the XML formats read theirs (no zone is UTC, RFC 1123, zone abbreviations), then
 * by `Date.parse` for other shapes.
 */
export function isoTimestamp(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const read = fileTimestamp(value);
  if (read !== undefined) return read;
  const time = Date.parse(value);
  return Number.isNaN(time) || new Date(time).getUTCFullYear() <= 1 ? null : new Date(time).toISOString();
}

export function firstLine(text: string): string {
  const end = text.indexOf('\n');
  return (end < 0 ? text : text.slice(0, end)).trimEnd();
}

const EXCEPTION_PREFIX = /^([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?: \[[\w]+\])?:(?:\s|$)/;

/** The exception class an error text starts with: `AssertionError [ERR_ASSERTION]: …`, `java.lang.IllegalStateException: …`. */
export function exceptionTypeOf(text: string | null): string | null {
  if (!text) return null;
  const match = EXCEPTION_PREFIX.exec(firstLine(text));
  return match && /(Error|Exception|Failure|Throwable)$/.test(match[1]) ? match[1] : null;
}
