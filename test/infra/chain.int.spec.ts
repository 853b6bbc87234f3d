import { expect } from 'chai';
import pg from 'pg';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { meta } from './eventStoreContract';

/**
 * The hash chain of the PostgreSQL event store (docs/compliance.md): each event's hash covers its
 * content and the hash before it. A change of one stored byte, a rewritten hash, a deleted event
 * or a cut tail is found and named by its position.
 */
describe('PostgreSQL event store: the hash chain', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  let store: PostgresEventStore;
  const stored = async () => (await pool.query<{ position: string; hash: string }>(`SELECT position, encode(hash, 'hex') AS hash FROM es_events ORDER BY position`)).rows;

  before(async () => {
    db = await createTestDatabase('chain');
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    await setupPostgresEventStore(pool);
    store = new PostgresEventStore(pool, db.url);
    // Several streams, appended alone and together; data with nesting, numbers as written, text beyond ASCII.
    await store.append('case-1', [{ type: 'Made', data: { title: 'Login works', price: 1.50, big: 12345678901234, tags: ['a', 'b'] } }], { expectedRevision: 'no-stream', metadata: meta });
    await store.append('case-1', [{ type: 'Changed', data: { changes: { title: 'Login works — ü 漢字 🙂' } } }, { type: 'Changed', data: { nested: { deep: { list: [1, { x: null }] } } } }], { expectedRevision: 0n, metadata: meta });
    await store.appendMany([
      { streamId: 'run-1', events: [{ type: 'Made', data: { n: 1 } }, { type: 'Made', data: { n: 2 } }], expectedRevision: 'no-stream', metadata: meta },
      { streamId: 'run-2', events: [{ type: 'Made', data: { text: 'line\nbreak\t"quoted" \\ back' } }], expectedRevision: 'no-stream', metadata: meta },
    ]);
    for (let i = 0; i < 5; i++) await store.append(`more-${i}`, [{ type: 'Made', data: { i } }], { expectedRevision: 'no-stream', metadata: { ...meta, correlationId: `c-${i}` } });
  });
  after(async () => {
    await store?.close();
    await pool?.end();
    await db?.drop();
  });

  it('chains every event as it is appended, alone or with others, and the head keeps the last hash', async () => {
    const rows = await stored();
    expect(rows).to.have.length(11);
    expect(new Set(rows.map((r) => r.hash)).size).to.equal(11);
    for (const r of rows) expect(r.hash).to.match(/^[0-9a-f]{64}$/);
    const report = await store.verifyChain();
    expect(report).to.include({ from: '1', to: '11', checked: 11, intact: true, firstBreak: null });
    expect(report.head).to.deep.equal({ position: '11', hash: rows[10].hash });
  });

  it('names the event whose stored content changed by one byte, and holds again once it is put back', async () => {
    for (const [column, change, undo] of [
      ['data', `data = jsonb_set(data, '{title}', '"Login workz"')`, `data = jsonb_set(data, '{title}', '"Login works"')`],
      ['metadata', `metadata = jsonb_set(metadata, '{actor,userId}', '2')`, `metadata = jsonb_set(metadata, '{actor,userId}', '1')`],
      ['recorded_at', `recorded_at = recorded_at + interval '1 microsecond'`, `recorded_at = recorded_at - interval '1 microsecond'`],
      ['type', `type = 'Madf'`, `type = 'Made'`],
    ] as const) {
      await pool.query(`UPDATE es_events SET ${change} WHERE position = 1`);
      const report = await store.verifyChain();
      expect(report.intact, column).to.equal(false);
      expect(report.firstBreak, column).to.include({ position: '1', problem: 'altered' });
      expect(report.firstBreak!.detail).to.match(/Mad[ef] on case-1, revision 0/);
      expect(report.firstBreak!.recordedHash).to.not.equal(report.firstBreak!.computedHash);
      expect(report.checked).to.equal(1);
      await pool.query(`UPDATE es_events SET ${undo} WHERE position = 1`);
      expect((await store.verifyChain()).intact, `${column} put back`).to.equal(true);
    }
    // In the middle of the log, in a stream appended with others.
    await pool.query(`UPDATE es_events SET data = '{"n": 3}' WHERE position = 5`);
    expect((await store.verifyChain()).firstBreak).to.include({ position: '5', problem: 'altered' });
    await pool.query(`UPDATE es_events SET data = '{"n": 2}' WHERE position = 5`);
    expect((await store.verifyChain()).intact).to.equal(true);
  });

  it('tells a rewritten hash from a changed event, and finds a deleted event and a cut tail', async () => {
    const rows = await stored();
    await pool.query(`UPDATE es_events SET hash = sha256(hash) WHERE position = 6`);
    expect((await store.verifyChain()).firstBreak).to.include({ position: '6', problem: 'hash-altered' });
    await pool.query(`UPDATE es_events SET hash = decode($1, 'hex') WHERE position = 6`, [rows[5].hash]);

    // Set aside with SQL (a copy through JSON would lose the recorded time's microseconds), deleted, put back.
    await pool.query('CREATE TABLE chain_saved AS SELECT * FROM es_events WHERE position IN (7, 11)');
    await pool.query('DELETE FROM es_events WHERE position = 7');
    const gap = await store.verifyChain();
    expect(gap.firstBreak).to.include({ position: '8', problem: 'missing' });
    expect(gap.firstBreak!.detail).to.include('before position 8');
    await pool.query('INSERT INTO es_events SELECT * FROM chain_saved WHERE position = 7');
    expect((await store.verifyChain()).intact, 'put back').to.equal(true);

    await pool.query('DELETE FROM es_events WHERE position = 11');
    const cut = await store.verifyChain({ to: '11' });
    expect(cut.firstBreak).to.include({ position: '11', problem: 'head' });
    await pool.query('INSERT INTO es_events SELECT * FROM chain_saved WHERE position = 11');
    expect((await store.verifyChain()).intact).to.equal(true);
  });

  it('checks a range only: a break outside it is not reported, the event before the range is read for its hash', async () => {
    await pool.query(`UPDATE es_events SET data = '{"i": 99}' WHERE position = 10`);
    expect(await store.verifyChain({ from: '3', to: '9' })).to.include({ from: '3', to: '9', checked: 7, intact: true });
    expect((await store.verifyChain({ from: '10' })).firstBreak).to.include({ position: '10', problem: 'altered' });
    await pool.query(`UPDATE es_events SET data = '{"i": 3}' WHERE position = 10`);
    expect((await store.verifyChain({ from: '10' })).intact).to.equal(true);
  });

  it('checks ranges a few at a time and still reports the first break in the order of the log', async () => {
    const small = new PostgresEventStore(pool, db.url, 3n);
    const count = Number(await store.headPosition());
    expect(await small.verifyChain()).to.include({ checked: count, intact: true });
    // Two breaks in ranges checked at once ([1-3] and [4-6]), and one in a later pair: the first is named.
    for (const p of [2, 5, 9]) await pool.query(`UPDATE es_events SET data = jsonb_set(data, '{broken}', 'true') WHERE position = $1`, [p]);
    const first = await small.verifyChain();
    expect(first).to.include({ checked: 2, intact: false });
    expect(first.firstBreak).to.include({ position: '2', problem: 'altered' });
    await pool.query(`UPDATE es_events SET data = data - 'broken' WHERE position = 2`);
    expect((await small.verifyChain()).firstBreak).to.include({ position: '5' });
    await pool.query(`UPDATE es_events SET data = data - 'broken' WHERE position IN (5, 9)`);
    expect((await small.verifyChain()).intact).to.equal(true);
  });

  it('a log from before the chain gets its hashes once, when the store is set up; appends go on from its head', async () => {
    const before = await stored();
    await pool.query('UPDATE es_events SET hash = NULL');
    await pool.query('UPDATE es_head SET hash = NULL');
    expect((await store.verifyChain()).firstBreak).to.include({ position: '1', problem: 'unhashed' });
    await setupPostgresEventStore(pool);
    expect(await stored()).to.deep.equal(before);
    await store.append('after-upgrade', [{ type: 'Made', data: {} }], { expectedRevision: 'no-stream', metadata: meta });
    expect(await store.verifyChain()).to.include({ checked: 12, intact: true });
    // Hashes missing after the first one are a break to report, not something setup fills in.
    await pool.query('UPDATE es_events SET hash = NULL WHERE position = 12');
    await setupPostgresEventStore(pool);
    expect((await store.verifyChain()).firstBreak).to.include({ position: '12', problem: 'unhashed' });
  });
});
