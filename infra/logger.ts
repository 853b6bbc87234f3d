import { inspect } from 'node:util';
import pino, { type Logger } from 'pino';

/** JSON logs on stdout. Secrets never reach them: authorization headers, cookies and passwords are redacted. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', 'password', '*.password', 'token', '*.token'],
      censor: '[redacted]',
    },
  });
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
