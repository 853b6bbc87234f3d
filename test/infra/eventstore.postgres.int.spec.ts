import pg from 'pg';
import { expect } from 'chai';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { waitUntil } from '../support/wait';
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

  it('subscriptions of one store share one LISTEN session; killed, it is replaced and every subscription goes on live; the last closed ends it', async function () {
    this.timeout(60000);
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    await setupPostgresEventStore(pool);
    const store = new PostgresEventStore(pool, db.url);
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const listening = async () => (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN %' AND pid <> pg_backend_pid()")).rows.map((r) => r.pid);
    try {
      const start = await store.headPosition();
      const received = Array.from({ length: 5 }, () => take(store.subscribeToAll({ after: start }), 4));
      await store.append(`shared-${start}`, [ev(0), ev(1)], { expectedRevision: 'any', metadata: meta });
      await waitUntil(async () => (await listening()).length === 1, 'the subscriptions to listen', 10_000);
      await new Promise((r) => setTimeout(r, 300));
      const [pid] = await listening();
      expect(await listening(), 'five subscriptions, one session').to.have.length(1);
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await store.append(`shared-${start}`, [ev(2), ev(3)], { expectedRevision: 'any', metadata: meta });
      for (const seen of await Promise.all(received)) expect(seen.map((e) => (e.data as { n: number }).n)).to.deep.equal([0, 1, 2, 3]);
      await waitUntil(async () => (await listening()).length === 0, 'the session to end with the last subscription', 10_000);
    } finally {
      await admin.end();
      await store.close();
      await pool.end();
    }
  });

  it('subscriptions of one store read the log\'s end once between them, each still given every event in order with its own shallow types', async function () {
    this.timeout(60000);
    const pool = new pg.Pool({ connectionString: db.url, max: 10 });
    await setupPostgresEventStore(pool);
    const store = new PostgresEventStore(pool, db.url);
    // Counts the subscriptions' page reads (the statement readAll with maxBytes sends too).
    let pageReads = 0;
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('pg_column_size(page.data)')) pageReads++;
      return query(...args);
    };
    try {
      const start = await store.headPosition();
      const appends = 40;
      const total = appends * 5 + 1;
      const shallowLists = [undefined, undefined, undefined, ['Bulky'], ['Bulky'], ['Bulky', 'Other'], ['Other'], ['Other'], undefined];
      const following = shallowLists.map((shallow) => take(store.subscribeToAll({ after: start, shallow }), total));
      // One bulky event, read whole by some and shallow by others, then a steady stream.
      await store.append(`recent-${start}`, [{ type: 'Bulky', data: { jobId: 1, rows: [[1, 2]] } }], { expectedRevision: 'any', metadata: meta });
      for (let i = 0; i < appends; i++) {
        await store.append(`recent-${start}-${i % 3}`, [ev(5 * i), ev(5 * i + 1), ev(5 * i + 2), ev(5 * i + 3), ev(5 * i + 4)], { expectedRevision: 'any', metadata: meta });
        await new Promise((r) => setTimeout(r, 5));
      }
      const seen = await Promise.all(following);
      for (const [k, events] of seen.entries()) {
        const positions = events.map((e) => BigInt(e.position));
        expect(positions[0]).to.equal(BigInt(start) + 1n);
        for (let i = 1; i < positions.length; i++) expect(positions[i], `subscription ${k}: in order, none missed`).to.equal(positions[i - 1] + 1n);
        expect(events[0].data, `subscription ${k}'s own shallow types`).to.deep.equal(shallowLists[k]?.includes('Bulky') ? { jobId: 1, rows: {} } : { jobId: 1, rows: [[1, 2]] });
        expect(events.slice(1).map((e) => (e.data as { n: number }).n)).to.deep.equal([...Array(appends * 5).keys()]);
      }
      // Each on its own read every page and an empty one after each append: nine times appends × 2 at least.
      expect(pageReads, `${pageReads} page reads for nine subscriptions and ${appends} appends`).to.be.below(appends * 4);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it('a page of readAll stops at maxBytes of stored data (at least one event); a subscription still delivers every big event', async function () {
    this.timeout(60000);
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    await setupPostgresEventStore(pool);
    const store = new PostgresEventStore(pool, db.url);
    const start = await store.headPosition();
    // Incompressible data: random hex, 64 KiB an event.
    const big = (i: number) => ({ type: 'Big', data: { i, blob: Array.from({ length: 2048 }, () => Math.random().toString(16).slice(2, 10).padEnd(8, '0')).join('') } });
    const received = take(store.subscribeToAll({ after: start }), 12);
    for (let i = 0; i < 12; i++) await store.append(`big-${start}`, [big(i)], { expectedRevision: 'any', metadata: meta });
    const { rows } = await pool.query('SELECT pg_column_size(data) AS size FROM es_events WHERE position > $1 ORDER BY position', [start]);
    const sizes = rows.map((r) => Number(r.size));
    const budget = sizes[0] + sizes[1] + sizes[2] - 1; // the third event starts below the budget, the fourth past it
    expect((await store.readAll({ after: start, maxBytes: budget })).length).to.equal(3);
    expect((await store.readAll({ after: start, maxBytes: 1 })).length, 'always at least one').to.equal(1);
    expect((await store.readAll({ after: start })).length).to.equal(12);
    expect((await received).map((e) => (e.data as { i: number }).i)).to.deep.equal([...Array(12).keys()]);
    await store.close();
    await pool.end();
  });

  it('one append call naming a stream in several requests checks each against the revision the requests before it left', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    await setupPostgresEventStore(pool);
    const store = new PostgresEventStore(pool, db.url);
    const start = await store.headPosition();
    const a = `repeat-a-${start}`;
    const b = `repeat-b-${start}`;
    await store.append(b, [ev(0)], { expectedRevision: 'no-stream', metadata: meta });
    const outcomes = await store.appendMany([
      { streamId: a, expectedRevision: 'no-stream', events: [ev(1), ev(2)], metadata: meta },
      { streamId: b, expectedRevision: 'no-stream', events: [ev(3)], metadata: meta },
      { streamId: a, expectedRevision: 1n, events: [ev(4)], metadata: meta },
      { streamId: a, expectedRevision: 'no-stream', events: [ev(5)], metadata: meta },
      { streamId: a, expectedRevision: 1n, events: [ev(6)], metadata: meta },
      { streamId: b, expectedRevision: 0n, events: [ev(7)], metadata: meta },
      { streamId: a, expectedRevision: 'any', events: [ev(8)], metadata: meta },
    ]);
    expect(outcomes.map((o) => o.ok)).to.deep.equal([true, false, true, false, false, true, true]);
    expect(outcomes.filter((o) => !o.ok).map((o) => (o as { actual: string }).actual)).to.deep.equal(['0', '2', '2']);
    expect((await store.readStream(a)).map((e) => [e.revision, (e.data as { n: number }).n])).to.deep.equal([['0', 1], ['1', 2], ['2', 4], ['3', 8]]);
    expect((await store.readStream(b)).map((e) => (e.data as { n: number }).n)).to.deep.equal([0, 7]);
    // The streams' revisions were kept as the last request left them: the next appends check against them.
    await store.append(a, [ev(9)], { expectedRevision: 3n, metadata: meta });
    await store.append(b, [ev(10)], { expectedRevision: 1n, metadata: meta });
    const positions = (await store.readAll({ after: start })).map((e) => BigInt(e.position));
    for (let i = 1; i < positions.length; i++) expect(positions[i]).to.equal(positions[i - 1] + 1n);
    expect((await store.verifyChain()).intact).to.equal(true);
    await store.close();
    await pool.end();
  });

  it('reads the types asked for shallow: top-level keys and scalars kept, nested objects and arrays empty; other types whole', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    await setupPostgresEventStore(pool);
    const store = new PostgresEventStore(pool, db.url);
    const start = await store.headPosition();
    const bulky = { jobId: 9, chunk: 0, note: null, results: { resultId: [1, 2], message: ['a', null] }, tags: [1, 2] };
    await store.append(`shallow-${start}`, [{ type: 'Bulky', data: bulky }, { type: 'Thing', data: { n: 1, list: [1] } }], { expectedRevision: 'any', metadata: meta });
    for (const maxBytes of [undefined, 1_000_000]) {
      const [a, b] = await store.readAll({ after: start, shallow: ['Bulky'], maxBytes });
      expect(a.data).to.deep.equal({ jobId: 9, chunk: 0, note: null, results: {}, tags: {} });
      expect(b.data).to.deep.equal({ n: 1, list: [1] });
    }
    const whole = await store.readAll({ after: start });
    expect(whole[0].data).to.deep.equal(bulky);
    const seen = await take(store.subscribeToAll({ after: start, shallow: ['Bulky'] }), 2);
    expect(seen[0].data).to.deep.equal({ jobId: 9, chunk: 0, note: null, results: {}, tags: {} });
    // A stream read shallow too, both ways, with its other options.
    const stream = await store.readStream(`shallow-${start}`, { shallow: ['Bulky'] });
    expect(stream.map((e) => e.data)).to.deep.equal([{ jobId: 9, chunk: 0, note: null, results: {}, tags: {} }, { n: 1, list: [1] }]);
    const [last] = await store.readStream(`shallow-${start}`, { shallow: ['Thing'], direction: 'backwards', maxCount: 1 });
    expect(last.data).to.deep.equal({ n: 1, list: {} });
    expect((await store.readStream(`shallow-${start}`))[0].data).to.deep.equal(bulky);
    await store.close();
    await pool.end();
  });

  it('stores a large event\'s shallow form when appending it, and reads an event appended without one shallow from its data', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    await setupPostgresEventStore(pool);
    const store = new PostgresEventStore(pool, db.url);
    const start = await store.headPosition();
    const rows = Array.from({ length: 2000 }, (_, i) => [i, `row ${i}`]);
    const large = { jobId: 3, entity: 'testRunResult', fields: ['id', 'title'], rows };
    const small = { jobId: 4, entity: 'testRunResult', fields: ['id'], rows: [[1]] };
    await store.append(`shallow-large-${start}`, [{ type: 'Bulky', data: large }, { type: 'Bulky', data: small }], { expectedRevision: 'any', metadata: meta });
    const stored = (await pool.query('SELECT shallow FROM es_events WHERE position > $1 ORDER BY position', [start])).rows.map((r) => r.shallow);
    expect(stored).to.deep.equal([{ jobId: 3, entity: 'testRunResult', fields: {}, rows: {} }, null]);
    const read = async () => (await store.readAll({ after: start, shallow: ['Bulky'] })).map((e) => e.data);
    const expected = [{ jobId: 3, entity: 'testRunResult', fields: {}, rows: {} }, { jobId: 4, entity: 'testRunResult', fields: {}, rows: {} }];
    expect(await read()).to.deep.equal(expected);
    // An event appended before the column existed: the same answer, made from its data.
    await pool.query('UPDATE es_events SET shallow = NULL WHERE position > $1', [start]);
    expect(await read()).to.deep.equal(expected);
    expect((await store.readAll({ after: start }))[0].data).to.deep.equal(large);
    await store.close();
    await pool.end();
  });
});
