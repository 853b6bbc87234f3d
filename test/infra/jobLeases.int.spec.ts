import { expect } from 'chai';
import type pg from 'pg';
import { createPool } from '../../infra/postgres/database';
import { PostgresJobLeases } from '../../infra/postgres/jobLeases';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { waitUntil } from '../support/wait';

const SHORT = 200;
const LONG = 60_000;

describe('PostgreSQL job leases', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  let leases: PostgresJobLeases;

  before(async () => {
    db = await createMigratedDatabase('job_leases');
    // createPool: a connection the drop cuts after pool.end() resolved is no uncaught error.
    pool = createPool(db.url, 8);
    leases = new PostgresJobLeases(pool);
  });
  after(async () => {
    await pool?.end();
    await db?.drop();
  });
  beforeEach(() => pool.query('DELETE FROM job_leases'));

  const expired = (kind: string, jobId: number) =>
    waitUntil(async () => (await leases.holder(kind, jobId)) === null, `the lease of ${kind} ${jobId} to expire`, 10_000);

  it('migration 018_job_leases creates a logged table keyed by (kind, job_id)', async () => {
    const { rows: names } = await pool.query('SELECT name FROM read_model_migrations');
    expect(names.map((r) => r.name)).to.include('018_job_leases');
    const { rows: [table] } = await pool.query(`SELECT relpersistence FROM pg_class WHERE relname = 'job_leases'`);
    expect(table.relpersistence, 'a crash must not forget who holds a job').to.equal('p');
    const { rows: key } = await pool.query(`
      SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
       WHERE i.indrelid = 'job_leases'::regclass AND i.indisprimary ORDER BY a.attnum`);
    expect(key.map((r) => r.attname)).to.deep.equal(['kind', 'job_id']);
  });

  it('a free lease is taken; its holder is the owner until the expiry the database computed (its own now() + ttl)', async () => {
    expect(await leases.holder('resultImport', 1)).to.equal(null);
    expect(await leases.acquire('resultImport', 1, 'w1', LONG)).to.equal(true);
    const holder = await leases.holder('resultImport', 1);
    expect(holder?.owner).to.equal('w1');
    const { rows: [row] } = await pool.query(
      `SELECT owner, expires_at - acquired_at AS ttl, renewed_at = acquired_at AS fresh, expires_at > now() AS live FROM job_leases WHERE kind = 'resultImport' AND job_id = 1`);
    expect(row).to.deep.include({ owner: 'w1', fresh: true, live: true });
    expect(row.ttl.minutes).to.equal(1);
    expect(holder?.expiresAt.getTime()).to.be.greaterThan(Date.now() + LONG / 2);
  });

  it('another owner cannot take a live lease; the holder taking it again renews it', async () => {
    expect(await leases.acquire('resultImport', 2, 'w1', SHORT)).to.equal(true);
    const first = await leases.holder('resultImport', 2);
    expect(await leases.acquire('resultImport', 2, 'w2', LONG)).to.equal(false);
    expect(await leases.renew('resultImport', 2, 'w2', LONG)).to.equal(false);
    expect((await leases.holder('resultImport', 2))?.owner).to.equal('w1');
    expect(await leases.acquire('resultImport', 2, 'w1', LONG)).to.equal(true);
    const again = await leases.holder('resultImport', 2);
    expect(again?.owner).to.equal('w1');
    expect(again!.expiresAt.getTime()).to.be.greaterThan(first!.expiresAt.getTime());
    const { rows: [row] } = await pool.query(`SELECT acquired_at < renewed_at AS kept FROM job_leases WHERE kind = 'resultImport' AND job_id = 2`);
    expect(row.kept, 'taking it again keeps when it was first taken').to.equal(true);
  });

  it('leases of other jobs and other kinds are independent', async () => {
    expect(await leases.acquire('resultImport', 3, 'w1', LONG)).to.equal(true);
    expect(await leases.acquire('resultImport', 4, 'w2', LONG)).to.equal(true);
    expect(await leases.acquire('externalImport', 3, 'w2', LONG)).to.equal(true);
    expect((await leases.holder('resultImport', 3))?.owner).to.equal('w1');
    expect((await leases.holder('externalImport', 3))?.owner).to.equal('w2');
  });

  it('an expired lease has no holder, another owner takes it, and the former holder can renew it no more', async () => {
    expect(await leases.acquire('resultImport', 5, 'w1', SHORT)).to.equal(true);
    await expired('resultImport', 5);
    expect(await leases.acquire('resultImport', 5, 'w2', LONG)).to.equal(true);
    expect((await leases.holder('resultImport', 5))?.owner).to.equal('w2');
    expect(await leases.renew('resultImport', 5, 'w1', LONG), 'lost').to.equal(false);
    expect(await leases.acquire('resultImport', 5, 'w1', LONG)).to.equal(false);
    expect((await leases.holder('resultImport', 5))?.owner).to.equal('w2');
    const { rows: [row] } = await pool.query(`SELECT acquired_at = renewed_at AS fresh FROM job_leases WHERE kind = 'resultImport' AND job_id = 5`);
    expect(row.fresh, 'a lease taken over is a new acquisition').to.equal(true);
  });

  it('renewing extends the lease past its first expiry; a lease that expired but nobody took is still ours to renew', async () => {
    expect(await leases.acquire('resultImport', 6, 'w1', SHORT)).to.equal(true);
    expect(await leases.renew('resultImport', 6, 'w1', LONG)).to.equal(true);
    await new Promise((r) => setTimeout(r, SHORT * 3));
    expect((await leases.holder('resultImport', 6))?.owner, 'still held past the first TTL').to.equal('w1');
    expect(await leases.acquire('resultImport', 6, 'w2', LONG)).to.equal(false);

    expect(await leases.acquire('resultImport', 7, 'w1', SHORT)).to.equal(true);
    await expired('resultImport', 7);
    expect(await leases.renew('resultImport', 7, 'w1', LONG)).to.equal(true);
    expect((await leases.holder('resultImport', 7))?.owner).to.equal('w1');
  });

  it('release frees the lease for anybody, but only its holder releases it; renewing a released lease fails', async () => {
    expect(await leases.acquire('resultImport', 8, 'w1', LONG)).to.equal(true);
    await leases.release('resultImport', 8, 'w2');
    expect((await leases.holder('resultImport', 8))?.owner).to.equal('w1');
    await leases.release('resultImport', 8, 'w1');
    expect(await leases.holder('resultImport', 8)).to.equal(null);
    expect(await leases.renew('resultImport', 8, 'w1', LONG)).to.equal(false);
    expect(await leases.acquire('resultImport', 8, 'w2', LONG)).to.equal(true);
    const { rows } = await pool.query(`SELECT owner FROM job_leases WHERE kind = 'resultImport' AND job_id = 8`);
    expect(rows).to.deep.equal([{ owner: 'w2' }]);
  });

  it('owners racing for one free lease from separate connections: exactly one gets it, every round', async () => {
    const pools = Array.from({ length: 4 }, () => createPool(db.url, 5));
    try {
      const racers = pools.map((p) => new PostgresJobLeases(p));
      for (let round = 0; round < 10; round++) {
        const won = await Promise.all(Array.from({ length: 20 }, (_, i) => racers[i % racers.length].acquire('race', round, `w${i}`, LONG)));
        expect(won.filter(Boolean), `round ${round}`).to.have.length(1);
        expect((await leases.holder('race', round))?.owner).to.equal(`w${won.indexOf(true)}`);
      }
      // And for one expired lease.
      expect(await leases.acquire('race', 100, 'old', SHORT)).to.equal(true);
      await expired('race', 100);
      const won = await Promise.all(Array.from({ length: 20 }, (_, i) => racers[i % racers.length].acquire('race', 100, `w${i}`, LONG)));
      expect(won.filter(Boolean)).to.have.length(1);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it('refuses a TTL that is not a positive number of milliseconds', async () => {
    for (const ttl of [0, -1, Number.NaN]) {
      let error: unknown = null;
      await leases.acquire('resultImport', 9, 'w1', ttl).catch((e) => (error = e));
      expect(error, String(ttl)).to.be.instanceOf(RangeError);
    }
    expect(await leases.holder('resultImport', 9)).to.equal(null);
  });
  it('lists the owners of the leases not expired, and ends every lease of the owners named at once (another takes the job at once)', async () => {
    expect(await leases.acquire('resultImport', 1, 'host:10:aa', LONG)).to.equal(true);
    expect(await leases.acquire('externalImport', 2, 'host:10:aa', LONG)).to.equal(true);
    expect(await leases.acquire('resultImport', 3, 'host:20:bb', LONG)).to.equal(true);
    expect(await leases.acquire('resultImport', 4, 'host:30:cc', SHORT)).to.equal(true);
    await expired('resultImport', 4);
    expect(await leases.owners()).to.deep.equal(['host:10:aa', 'host:20:bb']);
    expect(await leases.acquire('resultImport', 1, 'host:40:dd', LONG)).to.equal(false);

    expect(await leases.expire(['host:10:aa', 'host:99:zz'])).to.equal(2);
    expect(await leases.owners()).to.deep.equal(['host:20:bb']);
    expect(await leases.acquire('resultImport', 1, 'host:40:dd', LONG)).to.equal(true);
    expect(await leases.acquire('externalImport', 2, 'host:40:dd', LONG)).to.equal(true);
    expect((await leases.holder('resultImport', 3))?.owner).to.equal('host:20:bb');
    expect(await leases.expire([])).to.equal(0);
  });
});
