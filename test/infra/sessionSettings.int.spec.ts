import { expect } from 'chai';
import type { Knex } from 'knex';
import pg from 'pg';
import { createKnex, createPool } from '../../infra/postgres/database';
import { createTestDatabase, type TestDatabase } from '../support/database';

/**
 * Every connection of the service's pools runs without JIT compilation (SESSION_SETTINGS in
 * infra/postgres/database.ts): on a server built with it, a search document page spent 0.6-1.3 s
 * compiling 2 ms of work. Whether this server can compile is told by pg_jit_available().
 */
describe('the service’s PostgreSQL connections: no JIT compilation', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  let pool: pg.Pool;
  /** A statement planned far above jit_above_cost (100,000): ten million pairs. */
  const costly = 'SELECT count(*) FROM generate_series(1, 5000) a, generate_series(1, 2000) b WHERE a + b > 0';
  const jitOf = async (query: (sql: string) => Promise<Array<Record<string, unknown>>>) => {
    const [row] = await query(`EXPLAIN (FORMAT JSON) ${costly}`);
    return (row['QUERY PLAN'] as Array<Record<string, unknown>>)[0].JIT ?? null;
  };

  before(async () => {
    db = await createTestDatabase('session_settings');
    knex = createKnex(db.url, 3);
    pool = createPool(db.url, 3);
  });
  after(async () => {
    await knex?.destroy();
    await pool?.end();
    await db?.drop();
  });

  it('knex: jit is off on every connection of the pool', async () => {
    // Three at once: three connections, each set up on its own.
    const answers = await knex.transaction(async (a) => knex.transaction(async (b) => knex.transaction(async (c) =>
      Promise.all([a, b, c].map(async (trx) => ((await trx.raw('SELECT current_setting($$jit$$) AS jit, pg_backend_pid() AS pid')).rows[0] as { jit: string; pid: number }))))));
    expect(new Set(answers.map((a) => a.pid)).size).to.equal(3);
    expect(answers.map((a) => a.jit)).to.deep.equal(['off', 'off', 'off']);
  });

  it('pg pool: jit is off on every client, before its first query', async () => {
    const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    try {
      const answers = await Promise.all(clients.map(async (c) => (await c.query<{ jit: string }>('SELECT current_setting($$jit$$) AS jit')).rows[0].jit));
      expect(answers).to.deep.equal(['off', 'off', 'off']);
    } finally {
      for (const c of clients) c.release();
    }
  });

  it('a costly statement is not compiled through the service’s connections, where a plain connection compiles it', async function () {
    const plain = new pg.Client({ connectionString: db.url });
    await plain.connect();
    try {
      const available = (await plain.query<{ available: boolean }>('SELECT pg_jit_available() AS available')).rows[0].available;
      expect(await jitOf(async (sql) => (await knex.raw(sql)).rows)).to.equal(null);
      expect(await jitOf(async (sql) => (await pool.query(sql)).rows)).to.equal(null);
      if (!available) {
        console.log('      (this PostgreSQL has no JIT compiler: the plain connection cannot show the difference)');
        return;
      }
      expect(await jitOf(async (sql) => (await plain.query(sql)).rows), 'the plain connection compiles it').to.not.equal(null);
    } finally {
      await plain.end();
    }
  });
});
