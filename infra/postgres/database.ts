import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// int8 (positions, revisions) stays a string: 64-bit values never pass through Number.
// count(*) is int8 too; callers convert counts explicitly.

/**
 * What every connection of the service sets first. `jit = off`: PostgreSQL compiles a statement
 * with LLVM when the planner's cost estimate passes `jit_above_cost` (100,000 by default), and a
 * search document's statement (a sub-select per row for its steps, tags and custom fields) is
 * estimated far above that for 100 rows that take 2 ms to read: on a PostgreSQL built with JIT
 * (Debian's, the usual server; the embedded one has none), each page of documents spent 0.6-1.3 s
 * compiling. The service runs short statements, where compiling never pays.
 */
export const SESSION_SETTINGS = 'SET jit = off';

/**
 * A pool whose idle connections may be cut (a database restart, an administrator) without taking
 * the process down: pg emits 'error' on the pool for them, which would otherwise be uncaught.
 */
export function createPool(connectionString: string, max = 10, onIdleError: (err: Error) => void = () => undefined): pg.Pool {
  // onConnect: awaited before the pool hands a new client out. Refused (a server older than
  // PostgreSQL 11 has no `jit`), the connection stays as the server made it.
  const pool = new pg.Pool({ connectionString, max, onConnect: async (client) => void (await client.query(SESSION_SETTINGS).catch(() => undefined)) });
  pool.on('error', onIdleError);
  return pool;
}

/** What knex says about its connections (a lost or refused one), to the service's log instead of the console. */
export interface KnexLog {
  warn(message: string): void;
  error(message: string): void;
}

export function createKnex(connectionString: string, max = 10, log?: KnexLog, options: { searchPath?: readonly string[] } = {}): Knex {
  const knex = knexFactory({
    client: 'pg', connection: connectionString,
    pool: { min: 0, max, afterCreate: (conn: pg.Client, done: (err: null, conn: pg.Client) => void) => void conn.query(SESSION_SETTINGS, () => done(null, conn)) },
    // A replay (projections/runtime/replay.ts) writes into a schema of its own.
    ...(options.searchPath && { searchPath: [...options.searchPath] }),
    // A failed query's message would otherwise carry its SQL with every bound value written in.
    compileSqlOnError: false,
    ...(log && { log: { warn: (m: unknown) => log.warn(String(m)), error: (m: unknown) => log.error(String(m)), deprecate: (m: unknown) => log.warn(String(m)), debug: () => undefined } }),
  });
  knex.on('query-error', keepSqlOutOfMessage);
  return knex;
}

/**
 * knex puts a failed query's whole SQL text in front of the driver's message (megabytes for a
 * large query, in every log line, status and error that quotes the message): the message stays
 * the driver's, and the text moves to `sql`, which the logger shortens to a hash and its start.
 */
function keepSqlOutOfMessage(error: unknown, query: { sql?: unknown }): void {
  if (!(error instanceof Error) || typeof query?.sql !== 'string') return;
  const prefix = `${query.sql} - `;
  if (error.message.startsWith(prefix)) error.message = error.message.slice(prefix.length);
  Object.defineProperty(error, 'sql', { value: query.sql, enumerable: true, configurable: true, writable: true });
}
