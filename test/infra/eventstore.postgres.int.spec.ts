import pg from 'pg';
import { expect } from 'chai';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { eventStoreContract, ev, meta, take } from './eventStoreContract';

describe('PostgreSQL event store', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('es');
  });
  after(async () => db.drop());

  describe('contract', () => {
    eventStoreContract(async () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 10 });
      await setupPostgresEventStore(pool);
      return { store: new PostgresEventStore(pool, db.url), dispose: () => pool.end() };
    });
  });

  it('writers in separate processes (separate pools) still give subscribers a gap-free order', async function () {
    this.timeout(120000);
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: db.url, max: 4 }));
    await setupPostgresEventStore(pools[0]);
    const stores = pools.map((p) => new PostgresEventStore(p, db.url));
    const start = await stores[0].headPosition();
    const total = 4 * 8 * 25;
    const received = take(stores[0].subscribeToAll({ after: start }), total);
    await Promise.all(stores.flatMap((store, k) => Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 25; i++) await store.append(`p${k}w${w}-${start}`, [ev(i)], { expectedRevision: 'any', metadata: meta });
    })));
    const seen = await received;
    const positions = seen.map((e) => BigInt(e.position));
    expect(positions[0]).to.equal(BigInt(start) + 1n);
    for (let i = 1; i < positions.length; i++) expect(positions[i]).to.equal(positions[i - 1] + 1n);
    await Promise.all(stores.map((s) => s.close()));
    await Promise.all(pools.map((p) => p.end()));
  });
});
