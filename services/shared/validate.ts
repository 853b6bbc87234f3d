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

const MAX_INT4 = 2_147_483_647;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** A row id given as text (a path or query parameter): a positive 32-bit integer, else a 400 naming `path`. */
export function idParameter(path: string, raw: string): number {
  if (!/^[1-9][0-9]{0,9}$/.test(raw) || Number(raw) > MAX_INT4) throw invalidArgument(path, 'must be a positive integer id');
  return Number(raw);
}

/** Whether the text is an ISO 8601 date-time with a time zone (`2026-06-01T12:00:00Z`, `…+02:00`). */
export const isIsoTime = (raw: string): boolean => ISO_TIME.test(raw) && !Number.isNaN(Date.parse(raw));

/** An ISO 8601 date-time with a time zone, else a 400 naming `path`. */
export function timeParameter(path: string, raw: string): Date {
  if (!isIsoTime(raw)) throw invalidArgument(path, 'must be an ISO 8601 date-time with a time zone, e.g. 2026-06-01T12:00:00Z');
  return new Date(raw);
}
