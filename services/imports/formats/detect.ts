import { open } from 'node:fs/promises';
import type { ImportFormat } from './parsedResult';

/**
 * Which format a result file is in, from its first bytes (and, for MSTest, its name). XML goes by
 * the root element (the first start tag after the prolog), JSON by the top-level keys (mocha) or
 * the first feature's keys (cucumber) found in the head; never by a substring anywhere.
 * A `.trx` file is MSTest unless its content is recognisably another format.
 */
export function detectFormat(head: Buffer, fileName: string): ImportFormat | null {
  const text = decodeHead(head);
  const start = skipWhitespace(text, 0);
  const isTrx = /\.trx$/i.test(fileName);
  const first = text[start];
  const found = first === '<' ? xmlFormat(text, start, isTrx) : first === '{' || first === '[' ? jsonFormat(text, start) : null;
  return found ?? (isTrx ? 'mstest' : null);
}

/** The first `bytes` of a file (fewer when the file is shorter). */
export async function readHead(path: string, bytes = 65536): Promise<Buffer> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await file.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await file.close();
  }
}

/** True when the head holds nothing but a byte-order mark and whitespace. */
export function isBlankHead(head: Buffer): boolean {
  const text = decodeHead(head);
  return skipWhitespace(text, 0) === text.length;
}

function decodeHead(head: Buffer): string {
  // A UTF-16 file announces itself with a byte-order mark; TextDecoder drops the mark.
  if (head[0] === 0xff && head[1] === 0xfe) return new TextDecoder('utf-16le').decode(head);
  if (head[0] === 0xfe && head[1] === 0xff) return new TextDecoder('utf-16be').decode(head);
  return new TextDecoder('utf-8').decode(head); // the head may end inside a character: not fatal here
}

function skipWhitespace(text: string, from: number): number {
  let i = from;
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  return i;
}

// ---- XML ----

const ROOT_FORMATS: Record<string, ImportFormat> = {
  'testng-results': 'testng',
  'test-run': 'nunit', // NUnit 3
  'test-results': 'nunit', // NUnit 2
  assemblies: 'xunit',
  assembly: 'xunit',
  testsuites: 'junit',
  testsuite: 'junit',
};

const TEAM_TEST_NAMESPACE = 'http://microsoft.com/schemas/VisualStudio/TeamTest/';

function xmlFormat(text: string, from: number, isTrx: boolean): ImportFormat | null {
  const root = rootElement(text, from);
  if (!root) return null;
  const localName = root.name.slice(root.name.indexOf(':') + 1);
  if (localName === 'TestRun') return root.startTag.includes(TEAM_TEST_NAMESPACE) || isTrx ? 'mstest' : null;
  return ROOT_FORMATS[localName] ?? null;
}

const ELEMENT_NAME = /[A-Za-z_][\w.:-]*/y;

/** The root element's name and start tag (the tag possibly cut at the end of the head). */
function rootElement(text: string, from: number): { name: string; startTag: string } | null {
  let i = from;
  for (;;) {
    i = skipWhitespace(text, i);
    if (text.startsWith('<?', i)) i = after(text, '?>', i);
    else if (text.startsWith('<!--', i)) i = after(text, '-->', i);
    else if (text.startsWith('<!', i)) i = afterDeclaration(text, i); // DOCTYPE: the parser refuses it, not detection
    else if (text[i] === '<') {
      ELEMENT_NAME.lastIndex = i + 1;
      const name = ELEMENT_NAME.exec(text)?.[0];
      if (!name) return null;
      const end = text.indexOf('>', i);
      return { name, startTag: text.slice(i, end < 0 ? text.length : end + 1) };
    } else return null;
    if (i < 0) return null;
  }
}

function after(text: string, terminator: string, from: number): number {
  const at = text.indexOf(terminator, from);
  return at < 0 ? -1 : at + terminator.length;
}

/** Past `<!DOCTYPE …>`, including an internal subset in brackets. */
function afterDeclaration(text: string, from: number): number {
  let inSubset = false;
  for (let i = from + 2; i < text.length; i++) {
    if (text[i] === '[') inSubset = true;
    else if (text[i] === ']') inSubset = false;
    else if (text[i] === '>' && !inSubset) return i + 1;
  }
  return -1;
}

// ---- JSON ----

const MOCHA_LISTS = ['tests', 'passes', 'failures', 'pending', 'results', 'suites'];
const CUCUMBER_KEYS = ['elements', 'keyword', 'uri'];

function jsonFormat(text: string, from: number): ImportFormat | null {
  if (text[from] === '{') {
    const keys = headKeys(text, from, 1);
    return keys.has('stats') && MOCHA_LISTS.some((key) => keys.has(key)) ? 'mocha' : null;
  }
  // An empty array is an empty cucumber report (cucumber writes `[]` when no feature ran).
  if (text[skipWhitespace(text, from + 1)] === ']') return 'cucumber';
  const keys = headKeys(text, from, 2);
  return CUCUMBER_KEYS.some((key) => keys.has(key)) ? 'cucumber' : null;
}

/**
 * The keys at `depth` (1: the root object's; 2: the first array item's) that the head shows,
 * scanning until that object closes or the head ends.
 */
function headKeys(text: string, from: number, depth: number): Set<string> {
  const keys = new Set<string>();
  let level = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (end < 0) break;
      const next = skipWhitespace(text, end + 1);
      if (level === depth && text[next] === ':') keys.add(text.slice(i + 1, end));
      i = end;
    } else if (c === '{' || c === '[') {
      level++;
    } else if (c === '}' || c === ']') {
      level--;
      if (level < depth) break;
    }
  }
  return keys;
}

/** Index of the quote closing the string that opens at `from`; -1 when the head ends first. */
function stringEnd(text: string, from: number): number {
  for (let i = from + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return -1;
}
