import { expect } from 'chai';
import type { Knex } from 'knex';
import pg from 'pg';
import { PostgresRateLimitStore } from '../../infra/rateLimit/postgres';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import type { CounterWindow } from '../../services/shared/rateLimitStore';
import { createMigratedDatabase, type TestDatabase } from '../support/database';

const T0 = Date.parse('2026-06-01T12:00:00Z');
const counter = (key: string, startMs = T0, lengthMs = 60_000): CounterWindow =>
  ({ key, windowStart: new Date(startMs), expiresAt: new Date(startMs + lengthMs) });

describe('PostgreSQL rate limit store', () => {
  let db: TestDatabase;
  let knex: Knex;
  let pools: pg.Pool[];

  before(async () => {
    db = await createMigratedDatabase('rate_limits');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
    pools = [new pg.Pool({ connectionString: db.url, max: 8 }), new pg.Pool({ connectionString: db.url, max: 8 })];
  });
  after(async () => {
    await Promise.all(pools?.map((p) => p.end()) ?? []);
    await knex?.destroy();
    await db?.drop();
  });
  beforeEach(() => knex('rate_limit_counters').del());

  it('migration 004_rate_limits creates an UNLOGGED table keyed by (key, window_start) on a fresh database', async () => {
    expect(await knex('read_model_migrations').pluck('name')).to.include('004_rate_limits');
    const { rows: [table] } = await knex.raw(`SELECT relpersistence FROM pg_class WHERE relname = 'rate_limit_counters'`);
    expect(table.relpersistence).to.equal('u');
    const { rows: key } = await knex.raw(`
      SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
       WHERE i.indrelid = 'rate_limit_counters'::regclass AND i.indisprimary ORDER BY a.attnum`);
    expect(key.map((r: { attname: string }) => r.attname)).to.deep.equal(['key', 'window_start']);
  });

  it('counts every hit exactly, from two pools (two replicas) at once', async () => {
    const stores = pools.map((p) => new PostgresRateLimitStore(p));
    const counts = await Promise.all(Array.from({ length: 100 }, (_, i) => stores[i % 2].hit([counter('token:1')])));
    expect(counts.map(([c]) => c).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 100 }, (_, i) => i + 1));
    expect((await stores[1].hit([counter('token:1')]))[0]).to.equal(101);
  });

  it('hits several counters in one statement and answers their counts in the order asked', async () => {
    const store = new PostgresRateLimitStore(pools[0]);
    await store.hit([counter('login-email:b')]);
    await store.hit([counter('login-email:b')]);
    expect(await store.hit([counter('login-ip:a'), counter('login-email:b')])).to.deep.equal([1, 3]);
    expect(await store.hit([counter('login-email:b'), counter('login-ip:a')])).to.deep.equal([4, 2]);
    let statements = 0;
    const counting = { query: ((...args: unknown[]) => {
      statements++;
      return (pools[0].query as (...a: unknown[]) => unknown)(...args);
    }) as pg.Pool['query'] };
    await new PostgresRateLimitStore(counting).hit([counter('ip:x'), counter('ip:y'), counter('ip:z')]);
    expect(statements).to.equal(1);
  });

  it('refuses a hit that names one key twice', async () => {
    const store = new PostgresRateLimitStore(pools[0]);
    let error: unknown;
    await store.hit([counter('ip:x'), counter('ip:x')]).catch((e) => (error = e));
    expect(String(error)).to.match(/distinct keys/);
  });

  it('a new window counts from one again; the old one keeps its count', async () => {
    const store = new PostgresRateLimitStore(pools[0]);
    await store.hit([counter('user:3')]);
    expect(await store.hit([counter('user:3')])).to.deep.equal([2]);
    expect(await store.hit([counter('user:3', T0 + 60_000)])).to.deep.equal([1]);
    expect(await knex('rate_limit_counters').where({ key: 'user:3' }).orderBy('window_start').pluck('count')).to.deep.equal([2, 1]);
  });

  it('a refund takes one back from the window it was counted in, never below zero', async () => {
    const store = new PostgresRateLimitStore(pools[0]);
    await store.hit([counter('login-ip:a'), counter('login-email:b')]);
    await store.hit([counter('login-ip:a')]);
    await store.refund([counter('login-ip:a'), counter('login-email:b')]);
    await store.refund([counter('login-email:b')]);
    await store.refund([counter('login-ip:a', T0 + 60_000)]);
    const rows = await knex('rate_limit_counters').orderBy('key').select('key', 'count');
    expect(rows).to.deep.equal([{ key: 'login-email:b', count: 0 }, { key: 'login-ip:a', count: 1 }]);
  });

  it('prune deletes the windows that ended before the instant given, in batches, and nothing else', async () => {
    const store = new PostgresRateLimitStore(pools[0]);
    await knex.raw(`
      INSERT INTO rate_limit_counters (key, window_start, expires_at, count)
      SELECT 'ip:' || i, ?::timestamptz, ?::timestamptz, 1 FROM generate_series(1, 12000) AS i`,
    [new Date(T0 - 120_000).toISOString(), new Date(T0 - 60_000).toISOString()]);
    await store.hit([counter('ip:live')]);
    await store.hit([counter('ip:ends-at-the-instant', T0 - 120_000, 120_000)]);
    expect(await store.prune(new Date(T0))).to.equal(12_000);
    expect(await knex('rate_limit_counters').orderBy('key').pluck('key')).to.deep.equal(['ip:ends-at-the-instant', 'ip:live']);
    expect(await store.prune(new Date(T0))).to.equal(0);
  });
});
