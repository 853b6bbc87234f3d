import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { ConcurrencyError, ContractViolation, DomainError, EventParked, HttpError, ReadModelWaitFailed, badRequest } from './errors';
import { isTransient } from './faults';
import { findTextProblem } from './text';

/** Wraps an async handler so that a rejection reaches the error middleware. */
export const asyncHandler =
  (fn: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler =>
  (req, res, next) => {
    fn(req, res, next).catch(next);
  };

const CORRELATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Takes a well-formed X-Correlation-Id from the caller, or makes one; echoes it on the response. */
export function correlationId(header: string | undefined): string {
  return header && CORRELATION_ID.test(header) ? header : randomUUID();
}

/**
 * One log line per request once its answer is sent (or the client went away): correlation id,
 * method, URL, status and time taken; warn for 4xx, error for 5xx (whose cause the error handler
 * logged already). Nothing is built for a level the logger does not write.
 */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    let logged = false;
    const done = () => {
      if (logged) return;
      logged = true;
      const status = res.writableFinished ? res.statusCode : 499;
      const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      logger[level]({ correlationId: req.correlationId, method: req.method, url: req.originalUrl, status, ms: Math.round(ms * 10) / 10 },
        status === 499 ? 'request aborted' : 'request completed');
    };
    res.once('finish', done);
    res.once('close', done);
    next();
  };
}

/** Status of a domain rule violation, by the shape of its stable code. */
export function statusOfDomainCode(code: string): number {
  if (code.endsWith('-not-found')) return 404;
  // A state that refuses the change (quarantined already, not quarantined, revoked already): a conflict with the row's state.
  if (code.endsWith('-exists') || code.endsWith('-taken') || code.endsWith('-quarantined') || code.endsWith('-revoked')) return 409;
  return 400;
}

/** A body that is not JSON would otherwise be ignored silently (and a findMany answer everything). */
export const jsonBodiesOnly: RequestHandler = (req, _res, next) => {
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
  if (hasBody && !req.is('application/json'))
    return next(new HttpError(415, 'unsupported-media-type', 'Send the body as application/json', { contentType: req.headers['content-type'] ?? null }));
  next();
};

/** jsonBodiesOnly, except on the given paths, whose routes parse multipart/form-data themselves (file uploads). */
export const jsonBodiesOnlyExcept = (multipartPaths: readonly string[]): RequestHandler => (req, res, next) =>
  multipartPaths.includes(req.baseUrl + req.path) ? next() : jsonBodiesOnly(req, res, next);

/**
 * Every JSON body and query string, before any route reads it: a string or key holding an
 * unpaired UTF-16 surrogate (`"\ud800"` alone) or the NUL character, neither of which a text
 * column stores, is a 400 naming its path (`data.name`, a query parameter by its name).
 * Multipart fields are decoded from UTF-8 bytes (no surrogate survives that); their routes check
 * them for NUL (services/shared/text.ts).
 */
export const wellFormedText: RequestHandler = (req, _res, next) => {
  const found = findTextProblem(req.query) ?? findTextProblem(req.body);
  if (found) return next(badRequest('invalid-argument', `${found.path || 'body'}: ${found.problem}`, { path: found.path }));
  next();
};

export const notFoundRoute: RequestHandler = (req, _res, next) =>
  next(new HttpError(404, 'route-not-found', `No route for ${req.method} ${req.path}`, { method: req.method, path: req.path }));

/** Every error leaves as `{ error, code, details }`; server errors are logged with the correlation id. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const body = (status: number, code: string, error: string, details: Record<string, unknown> = {}) => {
      if (!res.headersSent) res.status(status).json({ error, code, details });
      else res.end();
    };
    const cid = (req as Request & { correlationId?: string }).correlationId;
    if (err instanceof HttpError) return body(err.status, err.code, err.message, err.details);
    if (err instanceof DomainError) return body(statusOfDomainCode(err.code), err.code, err.message, err.details);
    if (err instanceof ReadModelWaitFailed) return body(503, err.code, err.message, err.details);
    if (err instanceof EventParked) {
      logger.error({ correlationId: cid, method: req.method, url: req.originalUrl, ...err.details }, 'the write was recorded but its event is parked');
      return body(500, err.code, err.message, { ...err.details, correlationId: cid });
    }
    if (err instanceof ConcurrencyError)
      return body(409, err.code, 'The entity was changed by someone else; read it again and retry', { streamId: err.streamId });
    const type = (err as { type?: string }).type;
    if (type === 'entity.parse.failed') return body(400, 'malformed-json', 'The request body is not valid JSON', { path: '' });
    if (type === 'entity.too.large') return body(413, 'payload-too-large', 'The request body is too large');
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') return body(415, 'unsupported-encoding', String(err.message));
    // Any other client error the HTTP layer raised (a request cut short, too many parameters): its own 4xx, not a 500.
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose === true) {
      return body(status, 'bad-request', String((err as Error).message), { type: type ?? null });
    }
    // Express's router: a path parameter that is not percent-encoded UTF-8 (`%ED%A0%80`, the bytes of a lone surrogate).
    if (err instanceof URIError && status === 400) return body(status, 'bad-request', err.message, { type: 'param.malformed' });
    // The database or the event store away (restarting, refusing connections): retrying later can succeed.
    if (isTransient(err)) {
      logger.warn({ err, correlationId: cid, method: req.method, url: req.originalUrl }, 'request failed: a dependency does not answer');
      return body(503, 'service-unavailable', 'The database or the event store does not answer right now; retry shortly', { correlationId: cid });
    }
    const level = err instanceof ContractViolation ? 'fatal' : 'error';
    logger[level]({ err, correlationId: cid, method: req.method, url: req.originalUrl }, 'request failed');
    return body(500, 'internal-error', 'Internal server error', { correlationId: cid });
  };
}
