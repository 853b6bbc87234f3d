import type { Readable } from 'node:stream';
import { SaxesParser } from 'saxes';
import { ResultFileError, boundedWarning, truncate, type ParseOptions } from './parsedResult';

/**
 * Streams an uploaded XML result file through `saxes`, chunk by chunk, and lets a format's handler
 * turn elements into items. Untrusted input: a DOCTYPE is refused before it is parsed, only UTF-8 is
 * accepted, and text is kept only for the elements a handler asks for, cut at `maxOutputChars`.
 */

export type Attributes = Readonly<Record<string, string>>;

export interface XmlHandler {
  /**
   * An element opens (`name` is its local name; `parents` are its ancestors' local names, outermost
   * first). Return true to receive its text content (descendants' text included, already cut) on close.
   */
  open(name: string, attributes: Attributes, parents: readonly string[]): boolean;
  close(name: string, text: string | null, parents: readonly string[]): void;
}

export interface XmlFormat<T> {
  /** For messages: "JUnit", "TestNG", ... */
  label: string;
  /** Local names the document element may have. */
  roots: readonly string[];
  /** Builds the handler of one parse; `emit` queues an item, yielded after the current chunk. */
  start(emit: (item: T) => void): XmlHandler;
}

/** Text fed to saxes at a time, so the text it buffers can be drained between writes. */
const SLICE_CHARS = 64 * 1024;
/** Long enough to hold `<!DOCTYPE` split across two chunks. */
const DOCTYPE_CARRY_CHARS = 8;

/**
 * saxes 6 buffers a whole text node (and always a whole CDATA section) in `text` until it ends; a
 * 100 MB `<system-out>` would sit there. Between writes, in these states (S_TEXT, S_CDATA,
 * S_CDATA_ENDING, S_CDATA_ENDING_2 of saxes 6.0.0), `text` holds only character data, so it is taken
 * out and handed on. The 80 MB CDATA test in xmlStream.unit.spec.ts fails if a saxes upgrade breaks this.
 */
const SAXES_CHARACTER_DATA_STATES = new Set([13, 20, 21, 22]);
interface SaxesInternals {
  state: number;
  text: string;
}

export async function* streamXml<T>(input: Readable, options: ParseOptions, format: XmlFormat<T>): AsyncGenerator<T> {
  const { fileName, maxOutputChars } = options;
  const queue: T[] = [];
  let emitted = 0;
  const handler = format.start((item) => {
    queue.push(item);
    emitted++;
  });

  const parser = new SaxesParser({ xmlns: false, position: true });
  const internals = parser as unknown as SaxesInternals;
  const parents: string[] = [];
  const captures: Array<TextAccumulator | null> = [];
  let openCaptures = 0;
  let rootOpened = false;
  let syntaxError: { reason: string; line: number; column: number } | null = null;

  const onText = (text: string): void => {
    if (openCaptures === 0) return;
    for (const capture of captures) capture?.append(text);
  };
  parser.on('error', (err) => {
    syntaxError ??= { reason: err.message.replace(/^\d+:\d+: /, ''), line: parser.line, column: parser.column };
  });
  parser.on('xmldecl', (decl) => {
    if (decl.encoding !== undefined && !/^utf-?8$/i.test(decl.encoding))
      throw new ResultFileError('wrong-encoding', `${fileName} declares encoding "${decl.encoding}"; only UTF-8 is accepted`, { file: fileName, encoding: decl.encoding });
  });
  parser.on('doctype', () => {
    throw doctypeRefused(fileName);
  });
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('opentag', (tag) => {
    if (syntaxError) return;
    const name = localName(tag.name);
    if (!rootOpened) {
      rootOpened = true;
      if (!format.roots.includes(name))
        throw new ResultFileError('malformed-file', `${fileName} is not a ${format.label} file: its root element is <${name}>, expected ${format.roots.map((r) => `<${r}>`).join(' or ')}`, { file: fileName, root: name });
    }
    const capture = handler.open(name, tag.attributes, parents) ? new TextAccumulator(maxOutputChars) : null;
    parents.push(name);
    captures.push(capture);
    if (capture) openCaptures++;
  });
  parser.on('closetag', () => {
    if (syntaxError || parents.length === 0) return;
    const name = parents.pop() as string;
    const capture = captures.pop() ?? null;
    if (capture) openCaptures--;
    handler.close(name, capture ? capture.value() : null, parents);
  });

  let doctypeCarry = '';
  const write = (text: string): void => {
    parser.write(text);
    if (syntaxError) throw malformed(fileName, syntaxError);
    if (SAXES_CHARACTER_DATA_STATES.has(internals.state) && internals.text.length > 0) {
      const pending = internals.text;
      internals.text = '';
      if (parents.length > 0) onText(pending);
    }
  };
  const feed = (text: string): void => {
    for (let at = 0; at < text.length; at += SLICE_CHARS) {
      let slice = text.slice(at, at + SLICE_CHARS);
      if (!rootOpened) {
        // Refused before saxes reads it: nothing of a DTD is parsed, let alone fetched or expanded.
        const window = doctypeCarry + slice;
        const found = window.search(/<!doctype/i);
        if (found >= 0) {
          const before = found - doctypeCarry.length;
          if (before > 0) {
            write(slice.slice(0, before));
            slice = slice.slice(before);
          }
          if (!rootOpened || before <= 0) throw doctypeRefused(fileName);
        } else doctypeCarry = window.slice(-DOCTYPE_CARRY_CHARS);
      }
      write(slice);
    }
  };

  const decoder = new TextDecoder('utf-8', { fatal: true });
  const decode = (bytes?: Uint8Array): string => {
    try {
      return bytes ? decoder.decode(bytes, { stream: true }) : decoder.decode();
    } catch {
      throw new ResultFileError('wrong-encoding', `${fileName} is not valid UTF-8`, { file: fileName });
    }
  };
  let firstByteSeen = false;
  let sawContent = false;
  let utf8Bom = false;
  /** Bytes of the file decoded so far (the UTF-8 byte-order mark, which the decoder drops, included). */
  let bytesBefore = 0;
  const accept = (text: string): void => {
    const control = CONTROL_CHARACTER.exec(text);
    if (control !== null) throw controlCharacter(text, control.index);
    bytesBefore += Buffer.byteLength(text);
    if (!sawContent && /\S/.test(text)) sawContent = true;
    feed(text);
  };
  /** XML allows no control character but tab, line feed and carriage return, not even escaped (1.0). */
  const controlCharacter = (text: string, index: number): ResultFileError => {
    const code = text.charCodeAt(index);
    const byte = bytesBefore + Buffer.byteLength(text.slice(0, index));
    const line = parser.line + (text.slice(0, index).match(/\n/g)?.length ?? 0);
    const character = `U+${code.toString(16).toUpperCase().padStart(4, '0')} (${CONTROL_NAMES[code] ?? 'a control character'})`;
    const where = `${character} at byte offset ${byte} (line ${line})`;
    const details = { file: fileName, byte, line, character: `U+${code.toString(16).toUpperCase().padStart(4, '0')}` };
    if (code !== 0) return new ResultFileError('malformed-file', `${fileName} is not valid XML: it contains the control character ${where}; XML allows none but tab, line feed and carriage return`, details);
    // NUL in the first bytes of a file without a byte-order mark: a UTF-16 or UTF-32 file, most likely.
    const hint = !utf8Bom && byte < 4 ? ': UTF-16 or UTF-32 without a byte order mark? Only UTF-8 is accepted' : '; XML does not allow it anywhere';
    return new ResultFileError('wrong-encoding', `${fileName} contains the NUL character ${where}${hint}`, details);
  };

  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (!firstByteSeen && bytes.length > 0) {
      firstByteSeen = true;
      if (bytes[0] === 0xfe || bytes[0] === 0xff)
        throw new ResultFileError('wrong-encoding', `${fileName} starts with a UTF-16 or UTF-32 byte order mark; only UTF-8 is accepted`, { file: fileName });
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
        utf8Bom = true;
        bytesBefore = 3;
      }
    }
    accept(decode(bytes));
    while (queue.length > 0) yield queue.shift() as T;
  }
  accept(decode());
  if (!sawContent) throw new ResultFileError('empty-file', `${fileName} is empty`, { file: fileName });
  parser.close();
  if (syntaxError) throw malformed(fileName, syntaxError);
  while (queue.length > 0) yield queue.shift() as T;
  if (emitted === 0) throw new ResultFileError('no-tests', `${fileName} holds no test cases`, { file: fileName });
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/;
const CONTROL_NAMES: Record<number, string> = { 0: 'NUL', 7: 'BEL', 8: 'BS', 11: 'VT', 12: 'FF', 27: 'ESC' };

function localName(qualified: string): string {
  const colon = qualified.indexOf(':');
  return colon < 0 ? qualified : qualified.slice(colon + 1);
}

function doctypeRefused(fileName: string): ResultFileError {
  return new ResultFileError('doctype-refused', `${fileName} contains a DOCTYPE declaration; result files must not have one`, { file: fileName });
}

function malformed(fileName: string, error: { reason: string; line: number; column: number }): ResultFileError {
  return new ResultFileError('malformed-file', `${fileName} is not well-formed XML at line ${error.line}, column ${error.column}: ${error.reason}`, {
    file: fileName,
    line: error.line,
    column: error.column,
  });
}

/**
 * Text gathered piece by piece, holding at most `maxChars` of it; the rest is only counted. `value()`
 * equals `truncate(wholeText, maxChars)` without the whole text ever being held.
 */
export class TextAccumulator {
  private kept = '';
  private total = 0;

  constructor(private readonly maxChars: number) {}

  append(text: string): void {
    if (this.kept.length < this.maxChars) this.kept += text.slice(0, this.maxChars - this.kept.length);
    this.total += text.length;
  }

  get length(): number {
    return this.total;
  }

  value(): string {
    if (this.total <= this.maxChars) return this.kept;
    return `${this.kept}\n[… ${this.total - this.maxChars} more characters cut]`; // the marker `truncate` writes
  }
}

// Conversions shared by the XML formats.

/** "" and whitespace become null; other text is kept. */
export function nonBlank(text: string | null | undefined): string | null {
  return text === null || text === undefined || text.trim() === '' ? null : text;
}

/** First non-blank line of a text, trimmed (a message when an element only has a body). */
export function firstLine(text: string | null): string | null {
  if (text === null) return null;
  const line = text.split('\n').find((l) => l.trim() !== '');
  return line === undefined ? null : line.trim();
}

/**
 * Seconds as written by JUnit-style tools ("1.5", "0.0012345", "1,234.5" with a thousands comma,
 * "0,5" with a decimal comma) to whole milliseconds. Absent or blank → null; unreadable → undefined.
 */
export function secondsToMs(raw: string | undefined): number | null | undefined {
  if (raw === undefined || raw.trim() === '') return null;
  let text = raw.trim();
  if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(text)) text = text.replace(/,/g, '');
  else if (/^\d+,\d+$/.test(text)) text = text.replace(',', '.');
  if (/^\d+(\.\d*)?$|^\.\d+$/.test(text)) return Math.round(Number(`${text}e3`)); // shifts in decimal: "0.0145" → 15
  if (/^\d+(\.\d*)?e[+-]?\d+$/i.test(text)) return Math.round(Number(text) * 1000);
  return undefined;
}

/**
 * Zone abbreviations that mean one offset only, for the tools that write them (TestNG's "UTC", US
 * CI machines' "EST"/"CST"…); ambiguous ones (IST, BST) are not read. CST is read as US Central, as
 * the other US zones beside it.
 */
const ZONE_OFFSETS = new Map(Object.entries({
  UTC: 'Z', UT: 'Z', GMT: 'Z', Z: 'Z', WET: '+00:00', WEST: '+01:00', CET: '+01:00', CEST: '+02:00', EET: '+02:00', EEST: '+03:00',
  EST: '-05:00', EDT: '-04:00', CST: '-06:00', CDT: '-05:00', MST: '-07:00', MDT: '-06:00', PST: '-08:00', PDT: '-07:00', JST: '+09:00',
}));

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * A date-time from a result file ("2024-01-15T10:30:00", "2024-01-15 10:30:00Z",
 * "2024-01-15T10:30:00.1234567+01:00", "2024-01-15T10:30:00 UTC", RFC 1123's
 * "Tue, 05 Mar 2024 10:15:30 GMT") as ISO 8601 in UTC. Without a zone it is taken as UTC. Absent,
 * blank, or year 1 (.NET's DateTime.MinValue, which its tools write for "no time") → null;
 * unreadable → undefined.
 */
export function isoTimestamp(raw: string | undefined): string | null | undefined {
  if (raw === undefined || raw.trim() === '') return null;
  const text = raw.trim();
  const iso = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d+))?\s*(Z|[+-]\d{2}(?::?\d{2})?|[A-Za-z]{1,5})?$/.exec(text);
  if (iso) {
    const [, year, month, day, time, fraction, zone] = iso;
    return utc(year, month, day, time, fraction, zone);
  }
  const rfc = /^(?:[A-Za-z]{3},\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{4})\s+(\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d+))?\s*(Z|[+-]\d{2}(?::?\d{2})?|[A-Za-z]{1,5})?$/.exec(text);
  if (rfc) {
    const [, day, monthName, year, time, fraction, zone] = rfc;
    const month = MONTHS.indexOf(monthName.toLowerCase());
    if (month < 0) return undefined;
    return utc(year, String(month + 1).padStart(2, '0'), day.padStart(2, '0'), time, fraction, zone);
  }
  return undefined;
}

function utc(year: string, month: string, day: string, time: string, fraction: string | undefined, zone: string | undefined): string | null | undefined {
  if (year === '0001') return null;
  let offset = 'Z';
  if (zone !== undefined) {
    if (/^[+-]/.test(zone)) offset = zone.length === 3 ? `${zone}:00` : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
    else {
      const known = ZONE_OFFSETS.get(zone.toUpperCase());
      if (known === undefined) return undefined;
      offset = known;
    }
  }
  const millis = fraction === undefined ? '' : `.${fraction.slice(0, 3).padEnd(3, '0')}`;
  const seconds = time.length === 5 ? `${time}:00` : time;
  const parsed = new Date(`${year}-${month}-${day}T${seconds}${millis}${offset}`);
  if (Number.isNaN(parsed.getTime())) return undefined;
  // Date rolls "2024-02-30" over to March; a date that is not one is unreadable.
  const local = new Date(parsed.getTime() + offsetMinutes(offset) * 60_000);
  if (local.getUTCDate() !== Number(day) || local.getUTCMonth() + 1 !== Number(month)) return undefined;
  return parsed.toISOString();
}

/** "+01:00" → 60, "-05:00" → -300, "Z" → 0. */
function offsetMinutes(offset: string): number {
  if (offset === 'Z') return 0;
  return (offset[0] === '-' ? -1 : 1) * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6)));
}

/** "C:\\src\\bin\\Tests.dll" or "/src/bin/Tests.dll" → "Tests.dll". */
export function baseName(path: string): string {
  const parts = path.split(/[\\/]/).filter((p) => p !== '');
  return parts.length === 0 ? path : parts[parts.length - 1];
}

/** "Ns.Class.Method(1.5, 2)" → ["Ns.Class", "Method(1.5, 2)"]; no dot before the arguments → [null, name]. */
export function splitQualifiedName(name: string): [string | null, string] {
  // The last dot outside parentheses and quotes: a parameterised fixture's arguments (NUnit 2's
  // "NUnit.Tests.GenericFixture<Double>(11.5d).Test1") belong to the class, a method's to the name.
  let depth = 0;
  let quoted = false;
  let dot = -1;
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    else if (c === '.' && depth === 0) dot = i;
  }
  if (dot <= 0 || dot === name.length - 1) return [null, name];
  return [name.slice(0, dot), name.slice(dot + 1)];
}

/** Warnings for one file, each naming the file (and the case when there is one), bounded (boundedWarning); messages are written with `quoting`. */
export function warner(options: ParseOptions): (message: string, caseName?: string) => void {
  return (message, caseName) => options.onWarning(boundedWarning({ file: options.fileName, message, ...(caseName === undefined ? {} : { case: caseName }) }));
}

/** Output of one more element added to a case's output (already cut), staying within `maxChars`. */
export function appendOutput(previous: string | null, text: string | null, maxChars: number): string | null {
  const added = nonBlank(text);
  if (added === null) return previous;
  if (previous === null) return added;
  if (previous.length >= maxChars) return previous;
  return truncate(`${previous}\n${added}`, maxChars);
}

/** A body without its blank leading lines and trailing whitespace, keeping the first line's indent ("   at ..."); blank → null. */
export function bodyText(text: string | null): string | null {
  const body = nonBlank(text);
  return body === null ? null : body.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd();
}
