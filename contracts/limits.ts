/**
 * The one source of limits (docs/architecture.md, "Limits"): how long a string, how many items
 * a list, how deep a JSON value, how large an integer an event may carry. The event contracts
 * (generated and hand-written, scripts/event-schemas.ts), the model API's validation
 * (services/model/args.ts) and the result import's cutting (services/imports/) all take their
 * numbers from here, and what these numbers allow, every projection stores: long text is never a
 * btree key (the read model indexes a digest of it), names fit an index row whatever their letters
 * (255 characters of 4 bytes each, well under PostgreSQL's 2,704 bytes), integers fit `integer`
 * columns. test/contracts/extremeEvents.int.spec.ts applies events at these limits through every
 * projection.
 *
 * Lengths count Unicode code points, as JSON Schema's `maxLength` does. A limit may be raised
 * freely (events already written stay valid); lowering one is a new version of every schema that
 * uses it.
 */

/** PostgreSQL `integer`, which every id and catalogue int column is. */
export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

export const LIMITS = {
  /** Names: of projects, folders, runs, tags, fields, tokens; system names, colours, icons, MIME types, external ids, file names. */
  name: 255,
  /** An e-mail address (RFC 5321: 64 + 1 + 255, rounded as usual). */
  email: 320,
  /** A URL (links, icons, build URLs). */
  url: 2048,
  /**
   * A repository case's title and class name: a generated or parametrised test's name can be long
   * (the import cuts a longer one, keeping it whole in a result property). Indexed by digest.
   */
  caseTitle: 2000,
  /**
   * Free text: descriptions, notes, steps, comments, messages, stack traces, output (the result
   * import cuts longer output). PostgreSQL search indexes it whole (infra/search/postgres.ts).
   */
  text: 200_000,
  /** Items of a list: linked ids, owned children (steps, field values), aliases, properties. */
  items: 10_000,
  /** Rows of one dataset an external import maps to Testament's (users, states, tags, ...): its sources, suggestions and mappings. */
  mappedRows: 20_000,
  /** Nesting of a JSON value (field values, result properties, integration settings): 1 is a scalar. */
  jsonDepth: 16,
} as const;

export type LimitName = keyof typeof LIMITS;

/**
 * A run's suite properties (what result imports read from JUnit `<testsuite><properties>`,
 * docs/imports.md): at most this many distinct values of a name (the first met), and this many
 * (name, value) pairs in all (one import event's rows); names are cut to LIMITS.name, values to
 * LIMITS.caseTitle.
 */
export const SUITE_PROPERTY_LIMITS = { valuesPerName: 10, pairs: 5000 } as const;

/** An index whose count (index + 1) an integer column keeps: an import's chunk. */
export const MAX_INDEX = INT32_MAX - 1;

/** Bytes a file or upload may have (bigint columns): what a JavaScript number holds exactly. */
export const MAX_BYTES = Number.MAX_SAFE_INTEGER;

/** Code points in a string: what `maxLength` counts (a pair of UTF-16 surrogates is one). */
export function codePoints(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) { n--; i++; }
    }
  }
  return n;
}

/** Whether a text is longer than `max` code points (cheap for most: code points never outnumber UTF-16 units). */
export const longerThan = (text: string, max: number): boolean => text.length > max && codePoints(text) > max;

/** A text cut to at most `max` code points, ending in "…" when cut: never between the halves of a pair. */
export function cutText(text: string, max: number): string {
  if (!longerThan(text, max)) return text;
  let end = 0;
  for (let kept = 0; kept < max - 1; kept++) {
    const c = text.charCodeAt(end);
    end += c >= 0xd800 && c <= 0xdbff && end + 1 < text.length ? 2 : 1;
  }
  return `${text.slice(0, end)}…`;
}

type Schema = Record<string, unknown>;

export const idSchema = (): Schema => ({ type: 'integer', minimum: 1, maximum: INT32_MAX });
export const intSchema = (): Schema => ({ type: 'integer', minimum: INT32_MIN, maximum: INT32_MAX });
export const textSchema = (limit: LimitName): Schema => ({ type: 'string', maxLength: LIMITS[limit] });

/**
 * Years a time may be written in: 0001 to 9999, what PostgreSQL and the model API read (JSON
 * Schema's date-time also takes year 0000, which PostgreSQL refuses).
 */
export const TIME_PATTERN = '^(?!0000)[0-9]{4}-';
export const timeSchema = (): Schema => ({ type: 'string', format: 'date-time', pattern: TIME_PATTERN });
/** Whether an ISO date-time is one the contracts take (a file's year 0000 is not). */
export const isStorableTime = (iso: string): boolean => new RegExp(TIME_PATTERN).test(iso);

/**
 * A JSON value at most LIMITS.jsonDepth deep (a scalar is 1 deep), its strings, lists and objects
 * bounded: `$defs` json1 … jsonN, each level referring to the one below, so that the schema stays
 * small and a validator never recurses deeper than the limit.
 */
export function jsonValueDefs(): Record<string, Schema> {
  const defs: Record<string, Schema> = {};
  const scalars = [{ type: 'null' }, { type: 'boolean' }, { type: 'number' }, { type: 'string', maxLength: LIMITS.text }];
  defs.json1 = { anyOf: scalars };
  for (let depth = 2; depth <= LIMITS.jsonDepth; depth++) {
    const below = { $ref: `#/$defs/json${depth - 1}` };
    defs[`json${depth}`] = {
      anyOf: [
        ...scalars,
        { type: 'array', maxItems: LIMITS.items, items: below },
        { type: 'object', maxProperties: LIMITS.items, propertyNames: { maxLength: LIMITS.name }, additionalProperties: below },
      ],
    };
  }
  return defs;
}

/** Where a schema places a JSON value: a reference to the deepest level of jsonValueDefs. */
export const jsonValueRef = (): Schema => ({ $ref: `#/$defs/json${LIMITS.jsonDepth}` });

/** How deep a JSON value nests (a scalar is 1), walking with its own stack. */
export function jsonDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (depth > deepest) deepest = depth;
    if (current !== null && typeof current === 'object') {
      if (depth + 1 > deepest) deepest = depth + 1; // a list or object holds values one level down, even when empty
      for (const child of Object.values(current as object)) stack.push([child, depth + 1]);
    }
  }
  return deepest;
}
