import Ajv, { type ErrorObject, type JSONSchemaType } from 'ajv';
import addFormats from 'ajv-formats';
import { badRequest } from './errors';

const ajv = new Ajv({ allErrors: false, strict: true });
addFormats(ajv);

/** `/data/name` → `name`, `/items/0` → `items[0]`; a missing property names itself. */
function pathOf(e: ErrorObject): string {
  const base = e.instancePath.split('/').filter(Boolean)
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
  const extra = (e.params as { missingProperty?: string; additionalProperty?: string });
  const leaf = extra.missingProperty ?? extra.additionalProperty;
  return leaf ? (base ? `${base}.${leaf}` : leaf) : base;
}

/** Compiles a JSON Schema for a request body; the parser throws a 400 naming the offending path. */
export function bodyParser<T>(schema: JSONSchemaType<T>): (body: unknown) => T {
  const validate = ajv.compile(schema);
  return (body) => {
    if (validate(body)) return body;
    const e = validate.errors![0];
    const path = pathOf(e);
    const reason = e.keyword === 'additionalProperties' ? 'is not a known field' : e.keyword === 'required' ? 'is required' : e.message ?? 'is invalid';
    throw badRequest('invalid-argument', `${path || 'body'} ${reason}`, { path });
  };
}

/** A 400 invalid-argument naming the parameter or field at fault. */
export const invalidArgument = (path: string, reason: string, extra: Record<string, unknown> = {}) =>
  badRequest('invalid-argument', `${path} ${reason}`, { path, ...extra });

/**
 * A query string's parameters, each given once as a non-empty plain value and known to the route
 * (`known`); anything else is a 400 invalid-argument naming it.
 */
export function queryParameters(query: Record<string, unknown>, known: readonly string[]): Record<string, string> {
  const given: Record<string, string> = {};
  for (const [key, value] of Object.entries(query)) {
    if (!known.includes(key)) throw invalidArgument(key, 'is not a known parameter', { parameters: known });
    if (typeof value !== 'string') throw invalidArgument(key, 'must be given once, as a plain value');
    if (value === '') throw invalidArgument(key, 'must not be empty');
    given[key] = value;
  }
  return given;
}

/**
 * The range of every id the API takes (a row's, a job's, a token's): the read model keeps ids in
 * PostgreSQL `integer` columns, and the ids the service gives out are positive. A value outside
 * it names no row and would fail in the database, so it is refused before (400, docs/errors.md).
 */
export const ID_RANGE = { min: 1, max: 2_147_483_647 } as const;

/** An id as a JSON Schema / OpenAPI schema declares it: the same range. */
export const idSchema = (description?: string) => ({ type: 'integer' as const, minimum: ID_RANGE.min, maximum: ID_RANGE.max, ...(description !== undefined && { description }) });

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * The one reader of ids, wherever a request gives one: a path or query parameter or a form field
 * (`text`: decimal digits, no sign, exponent or fraction), a JSON body or a cursor (`json`: a
 * number), or a field that takes either. Null when it is not a whole number within ID_RANGE.
 */
export function idOf(raw: unknown, given: 'text' | 'json' | 'either' = 'text'): number | null {
  const n = typeof raw === 'string' && given !== 'json' ? (/^[1-9][0-9]{0,9}$/.test(raw) ? Number(raw) : NaN)
    : typeof raw === 'number' && given !== 'text' ? raw : NaN;
  return Number.isInteger(n) && n >= ID_RANGE.min && n <= ID_RANGE.max ? n : null;
}

/** idOf, or a 400 invalid-argument naming `path` (docs/errors.md: an id out of range is refused, not looked up). */
export function parseId(path: string, raw: unknown, given: 'text' | 'json' | 'either' = 'text'): number {
  const id = idOf(raw, given);
  if (id === null) throw invalidArgument(path, `must be an id: a whole number from ${ID_RANGE.min} to ${ID_RANGE.max}`, { min: ID_RANGE.min, max: ID_RANGE.max });
  return id;
}

/** Whether the text is an ISO 8601 date-time with a time zone (`2026-06-01T12:00:00Z`, `…+02:00`). */
export const isIsoTime = (raw: string): boolean => ISO_TIME.test(raw) && !Number.isNaN(Date.parse(raw));

/** An ISO 8601 date-time with a time zone, else a 400 naming `path`. */
export function timeParameter(path: string, raw: string): Date {
  if (!isIsoTime(raw)) throw invalidArgument(path, 'must be an ISO 8601 date-time with a time zone, e.g. 2026-06-01T12:00:00Z');
  return new Date(raw);
}
