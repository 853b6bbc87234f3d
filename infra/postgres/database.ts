import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

// int8 (positions, revisions) stays a string: 64-bit values never pass through Number.
// count(*) is int8 too; callers convert counts explicitly.

export function createPool(connectionString: string, max = 10): pg.Pool {
  return new pg.Pool({ connectionString, max });
}

export function createKnex(connectionString: string, max = 10): Knex {
  return knexFactory({ client: 'pg', connection: connectionString, pool: { min: 0, max } });
}
