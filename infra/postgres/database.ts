import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// int8 (positions, revisions) stays a string: 64-bit values never pass through Number.
// count(*) is int8 too; callers convert counts explicitly.

/**
 * A pool whose idle connections may be cut (a database restart, an administrator) without taking
 * the process down: pg emits 'error' on the pool for them, which would otherwise be uncaught.
 */
export function createPool(connectionString: string, max = 10, onIdleError: (err: Error) => void = () => undefined): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  pool.on('error', onIdleError);
  return pool;
}

/** What knex says about its connections (a lost or refused one), to the service's log instead of the console. */
export interface KnexLog {
  warn(message: string): void;
  error(message: string): void;
}

export function createKnex(connectionString: string, max = 10, log?: KnexLog): Knex {
  return knexFactory({
    client: 'pg', connection: connectionString, pool: { min: 0, max },
    ...(log && { log: { warn: (m: unknown) => log.warn(String(m)), error: (m: unknown) => log.error(String(m)), deprecate: (m: unknown) => log.warn(String(m)), debug: () => undefined } }),
  });
}
