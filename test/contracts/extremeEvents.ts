/**
 * Events at the contracts' extremes, generated from each type's JSON Schema (issue 35): in mode
 * `max` every string at its maxLength in random non-ASCII text (4-byte letters among them), every
 * list of one item at its largest, every integer at its maximum, times at 9999-12-31, every
 * optional value present and each JSON value as deep as it may nest; in `min` every nullable value
 * null, strings at their minLength, lists empty, integers at their minimum, times at 0001-01-01
 * and an update changing one field; in `lists` every list at its maxItems (of small items) and
 * every map at its most keys. References are then pointed at rows that exist (`Refs`), so that a
 * projection does its real work: an update finds what it updates.
 */
import { INT32_MAX, LIMITS } from '../../contracts/limits';
import { mulberry32 } from '../../scripts/generateExport';

export type Mode = 'max' | 'min' | 'lists';
export const MODES: readonly Mode[] = ['max', 'min', 'lists'];
type Schema = Record<string, any>;

/** A seeded generator: the same events on every run of one seed. */
export function random(seed: number) {
  const next = mulberry32(seed);
  return { next, int: (n: number) => Math.floor(next() * n) };
}

/** Letters of several scripts, 2, 3 and 4 bytes in UTF-8 (no NUL, no lone surrogate: what PostgreSQL stores). */
const RANGES: [number, number][] = [
  [0x00c0, 0x024f], [0x0391, 0x03c9], [0x0410, 0x044f], [0x05d0, 0x05ea], [0x0627, 0x064a], [0x3041, 0x3096], [0x4e00, 0x9fff],
  [0xac00, 0xd7a3], [0x20000, 0x2a6df], [0x1d400, 0x1d7ff], [0x1f300, 0x1f64f],
];

/** `length` code points of random words in those scripts, spaces between them (a search indexes words). */
export function randomText(rng: ReturnType<typeof random>, length: number): string {
  // Code points first, made into a string a slice at a time (a string per code point, joined, took
  // most of this suite's own time: it writes texts of 200,000 characters).
  const points = new Array<number>(length);
  let n = 0;
  let left = length;
  while (left > 0) {
    const word = Math.min(left, 1 + rng.int(8));
    const [from, to] = RANGES[rng.int(RANGES.length)];
    for (let i = 0; i < word; i++) points[n++] = from + rng.int(to - from + 1);
    left -= word;
    if (left > 0) {
      points[n++] = 0x20;
      left--;
    }
  }
  let text = '';
  for (let i = 0; i < n; i += 4096) text += String.fromCodePoint(...points.slice(i, i + 4096));
  return text;
}

const HEX = '0123456789abcdef';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
const pick = (rng: ReturnType<typeof random>, alphabet: string, n: number) => Array.from({ length: n }, () => alphabet[rng.int(alphabet.length)]).join('');

/** Strings a pattern of the contracts admits, at its longest or shortest. */
function patterned(rng: ReturnType<typeof random>, schema: Schema, longest: boolean): string {
  const max = schema.maxLength as number | undefined;
  switch (schema.pattern as string) {
    case '^[0-9a-f]{64}$': return pick(rng, HEX, 64);
    case '^[0-9a-f]{7,64}$': return pick(rng, HEX, longest ? 64 : 7);
    // A position: the largest a bigint column holds, or the first.
    case '^[1-9][0-9]{0,18}$': return longest ? '9223372036854775807' : '1';
    case '^[A-Za-z0-9_-]{22}$': return pick(rng, B64URL, 22);
    case '^\\$argon2id\\$': return `$argon2id$${longest ? pick(rng, B64URL, max! - 10) : ''}`;
    case '^https?://': return `https://${longest ? randomText(rng, max! - 8) : ''}`;
    case '^[a-z][a-z0-9]*(-[a-z0-9]+)*$': return longest ? `a${pick(rng, 'abcdefghijklmnopqrstuvwxyz0123456789', max! - 1)}` : 'a';
    case '^[a-zA-Z][a-zA-Z0-9]*$': return longest ? `A${pick(rng, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', max! - 1)}` : 'A';
    case '^/(?:[^/\\\\\\s][^\\s]*)?$': return longest ? `/${randomText(rng, max! - 1).replace(/\s/g, '_')}` : '/';
    default: throw new Error(`no generator for the pattern ${schema.pattern}: add one`);
  }
}

const MAX_TIME = '9999-12-31T23:59:59.999Z';
const MIN_TIME = '0001-01-01T00:00:00.000Z';

/** A value of `schema` at the mode's extreme (see the top of this file). */
export function extreme(root: Schema, schema: Schema, mode: Mode, rng: ReturnType<typeof random>): unknown {
  if (schema.$ref) {
    const name = /^#\/\$defs\/(.+)$/.exec(schema.$ref)![1];
    return jsonValue(Number(/^json(\d+)$/.exec(name)![1]), mode, rng);
  }
  if (schema.enum) {
    const values = (schema.enum as unknown[]).filter((v) => v !== null);
    if (mode === 'min' && schema.enum.includes(null)) return null;
    return mode === 'min' ? values[0] : values[values.length - 1];
  }
  if (schema.const !== undefined) return schema.const;
  const types: string[] = [].concat(schema.type ?? []);
  if (types.includes('null') && mode === 'min') return null;
  const type = types.find((t) => t !== 'null');
  switch (type) {
    case 'boolean': return mode !== 'min';
    case 'integer': return mode === 'min' ? schema.minimum : schema.maximum;
    case 'number': return mode === 'min' ? -Number.MAX_VALUE : Number.MAX_VALUE;
    case 'string': {
      if (schema.format === 'date-time') return mode === 'min' ? MIN_TIME : MAX_TIME;
      if (schema.format === 'uuid') return `${pick(rng, HEX, 8)}-${pick(rng, HEX, 4)}-4${pick(rng, HEX, 3)}-8${pick(rng, HEX, 3)}-${pick(rng, HEX, 12)}`;
      if (schema.pattern) return patterned(rng, schema, mode !== 'min');
      return randomText(rng, mode === 'min' ? schema.minLength ?? 0 : schema.maxLength);
    }
    case 'array': {
      const count = mode === 'lists' ? schema.maxItems : mode === 'min' ? schema.minItems ?? 0 : Math.max(1, schema.minItems ?? 0);
      const itemMode: Mode = mode === 'lists' ? 'min' : mode;
      const items = Array.from({ length: count }, () => extreme(root, schema.items ?? {}, itemMode, rng));
      return schema.uniqueItems ? distinct(items as number[]) : items;
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>);
      // An update's changes: all of them, or (min) the first only.
      const optional = properties.length > 0 && (schema.required ?? []).length === 0;
      for (const [key, value] of mode === 'min' && optional ? properties.slice(0, 1) : properties) out[key] = extreme(root, value, mode, rng);
      if (typeof schema.additionalProperties === 'object' && properties.length === 0) {
        const count = mode === 'lists' ? schema.maxProperties ?? LIMITS.items : mode === 'min' ? 0 : 1;
        for (let i = 0; i < count; i++) {
          const names = schema.propertyNames?.enum as string[] | undefined;
          if (names && i >= names.length) break;
          const key = names ? names[i] : mode === 'max' ? randomText(rng, schema.propertyNames?.maxLength ?? LIMITS.name) : `k${i}`;
          out[key] = extreme(root, schema.additionalProperties, mode === 'lists' ? 'min' : mode, rng);
        }
      }
      return out;
    }
    default: return jsonValue(LIMITS.jsonDepth, mode, rng);
  }
}

/** Ids of a list that must be unique: the generated ones spread from the top of the range down. */
function distinct(items: number[]): number[] {
  return items.map((v, i) => (typeof v === 'number' ? (i % 2 === 0 ? INT32_MAX - i : 1 + i) : v));
}

/** A JSON value at most `depth` deep: nested lists ending in the longest text (max), the longest list (lists), null (min). */
function jsonValue(depth: number, mode: Mode, rng: ReturnType<typeof random>): unknown {
  if (mode === 'min') return null;
  if (mode === 'lists') return depth === 1 ? Number.MAX_VALUE : Array.from({ length: LIMITS.items }, (_, i) => (i % 2 === 0 ? -Number.MAX_VALUE : i));
  let value: unknown = randomText(rng, LIMITS.text);
  for (let level = 2; level <= depth; level++) value = level % 2 === 0 ? [value] : { [randomText(rng, LIMITS.name)]: value };
  return value;
}
