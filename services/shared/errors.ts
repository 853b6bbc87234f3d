/** A broken business rule. `code` is stable; the HTTP layer maps it to a status. */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    message?: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message ?? code);
    this.name = 'DomainError';
  }
}

/** An error that already knows its HTTP status: validation, authentication, not found. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new HttpError(400, code, message, details);
export const unauthorized = (message = 'Authentication required', code = 'unauthenticated') =>
  new HttpError(401, code, message);
export const notFound = (message: string, details: Record<string, unknown> = {}) =>
  new HttpError(404, 'not-found', message, details);

/** Optimistic concurrency: the stream was not at the expected revision. */
export class ConcurrencyError extends Error {
  readonly code = 'concurrency-conflict';
  constructor(
    readonly streamId: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`Stream ${streamId} is at revision ${actual}, expected ${expected}`);
    this.name = 'ConcurrencyError';
  }
}

/**
 * A write was recorded but the read models did not apply it in time (`read-model-lagging`), or the
 * process stops while a request waits for them (`shutting-down`). Raised below the HTTP layer
 * (the checkpoint watcher); the API answers 503 with the code.
 */
export class ReadModelWaitFailed extends Error {
  constructor(
    readonly code: 'read-model-lagging' | 'shutting-down',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ReadModelWaitFailed';
  }
}

/**
 * A write was recorded, but a projection parked its event (it cannot apply it: docs/architecture.md,
 * "A projection never stops the service"): the change is in the log, not in what those
 * projections show. Raised below the HTTP layer (the checkpoint watcher); the API answers 500
 * `event-parked` naming the projections, at once rather than after the write timeout.
 */
export class EventParked extends Error {
  readonly code = 'event-parked';
  constructor(
    readonly position: string,
    readonly projections: string[],
  ) {
    super(`The change was recorded (position ${position}), but ${projections.join(', ')} could not apply it: it is not shown until an administrator retries it after a fix. Do not repeat the write.`);
    this.name = 'EventParked';
  }

  get details(): Record<string, unknown> {
    return { position: this.position, projections: this.projections };
  }
}

/** Declared with the contracts (which depend on nothing of ours); every layer above names it from here. */
export { ContractViolation } from '../../contracts/contractViolation';

export function assertNever(x: never): never {
  throw new Error(`Unexpected value: ${JSON.stringify(x)}`);
}
