import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import pino, { type Logger } from 'pino';

/**
 * JSON logs on stdout. Secrets never reach them: authorization headers, cookies and passwords are
 * redacted, and a failed query's bound values are not logged. Nor is its whole SQL text (see `logError`).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', 'password', '*.password', 'token', '*.token'],
      censor: '[redacted]',
    },
    serializers: { err: logError },
  }, destination);
}

/** How much of a failed query's SQL text a log line keeps; `sqlHash` tells the same statement again. */
export const SQL_LOGGED_CHARS = 300;
/** Any other text of an error (message, stack, the driver's `where`) is cut here. */
export const ERROR_TEXT_LOGGED_CHARS = 4000;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && (value.constructor === Object || Object.getPrototypeOf(value) === null);
const hashOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

/**
 * pino's error serializer, bounded: a query's SQL (up to megabytes for a large model API read, on
 * `err.sql`, see infra/postgres/database.ts) becomes its first SQL_LOGGED_CHARS characters, its
 * length and a hash; bound values (`bindings`) only their number; any other text is cut at
 * ERROR_TEXT_LOGGED_CHARS characters, with its length and hash.
 */
export function logError(err: unknown): unknown {
  const serialized: unknown = pino.stdSerializers.err(err as Error);
  return typeof serialized === 'object' && serialized !== null ? bounded(serialized as Record<string, unknown>, 0) : serialized;
}

function bounded(fields: Record<string, unknown>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'sql' && typeof value === 'string') {
      Object.assign(out, { sql: value.length > SQL_LOGGED_CHARS ? `${value.slice(0, SQL_LOGGED_CHARS)}…` : value, sqlLength: value.length, sqlHash: hashOf(value) });
    } else if (key === 'bindings' && Array.isArray(value)) {
      out.bindingCount = value.length;
    } else if (typeof value === 'string' && value.length > ERROR_TEXT_LOGGED_CHARS) {
      out[key] = `${value.slice(0, ERROR_TEXT_LOGGED_CHARS)}… (${value.length} characters, sha256 ${hashOf(value)})`;
    } else if (depth < 5 && Array.isArray(value)) {
      out[key] = value.map((item) => (isPlainObject(item) ? bounded(item, depth + 1) : item));
    } else if (depth < 5 && isPlainObject(value)) {
      out[key] = bounded(value, depth + 1); // a nested error (pino serialized it) or details
    } else {
      out[key] = value;
    }
  }
  return out;
}

/**
 * What a thrown value says about its cause, whatever it is: an Error's type, message, code (a Node
 * errno or a PostgreSQL SQLSTATE), detail, stack, the errors of an AggregateError (a refused
 * connection to `localhost` is one, with an empty message) and its `cause`; anything else inspected.
 */
export function errorFields(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error)) {
    return { type: err === null ? 'null' : typeof err, message: err === undefined ? 'undefined (failed without saying why)' : inspect(err, { depth: 3, breakLength: Infinity }) };
  }
  const fields: Record<string, unknown> = { type: err.name, message: err.message };
  const extra = err as Error & Record<string, unknown>;
  for (const key of ['code', 'errno', 'syscall', 'address', 'port', 'detail', 'hint']) {
    if (typeof extra[key] === 'string' || typeof extra[key] === 'number') fields[key] = extra[key];
  }
  fields.stack = err.stack;
  if (depth < 5 && err instanceof AggregateError) fields.errors = err.errors.map((e) => errorFields(e, depth + 1));
  if (depth < 5 && err.cause !== undefined) fields.cause = errorFields(err.cause, depth + 1);
  return fields;
}

/** The last word of a process that cannot go on: one JSON line on stderr, with the cause in full. */
export function logFatal(msg: string, err: unknown): void {
  console.error(JSON.stringify({ level: 'fatal', time: Date.now(), msg, err: errorFields(err) }));
}
