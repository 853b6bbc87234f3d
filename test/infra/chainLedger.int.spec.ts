import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { GENESIS_HASH, chainHash } from '../../contracts/chain';
import type { EventEnvelope, EventMetadata, NewEvent } from '../../contracts/envelope';
import { ChainLedger, LedgerChainedStore, startChainFollower } from '../../infra/eventstore/chainLedger';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { anchorNow, checkAnchors, loggedAnchors } from '../../services/integrity/anchors';
import { verifyIntegrity } from '../../services/integrity/integrity';
import { HttpError } from '../../services/shared/errors';
import type { EventStore, ExpectedRevision, ReadAllOptions, ReadStreamOptions, Subscription } from '../../services/shared/eventStore';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { stopOutcome } from '../support/wait';
import { eventStoreContract, meta } from './eventStoreContract';

/**
 * The hash chain kept by a checkpointed projection, for an event store that cannot chain its
 * events as it appends them (EventStoreDB; docs/compliance.md). No EventStoreDB server can be had
 * on this machine, so the store under the ledger is the PostgreSQL adapter without its own chain
 * (only the port's operations are used) and with positions made sparse as EventStoreDB's are
 * (byte offsets in its log: increasing, never contiguous). Tampering is done with SQL on the
 * events' table, as an operator of the store's files could.
 */

/** Position p of the PostgreSQL log shows as p * 10 + 3. */
const sparse = (p: string) => (p === '0' ? '0' : (BigInt(p) * 10n + 3n).toString());
const dense = (p: string) => (BigInt(p) < 3n ? '0' : ((BigInt(p) - 3n) / 10n).toString());

/** The port's operations of a store, with sparse positions, and nothing of its own chain. */
class SparseStore implements EventStore {
  readonly kind = 'eventstoredb' as const;
  constructor(private readonly base: EventStore) {}
  private out = (e: EventEnvelope): EventEnvelope => ({ ...e, position: sparse(e.position) });
  async append(streamId: string, events: NewEvent[], options: { expectedRevision: ExpectedRevision; metadata: EventMetadata }) {
    const r = await this.base.append(streamId, events, options);
    return { ...r, position: sparse(r.position) };
  }
  async readStream(streamId: string, options?: ReadStreamOptions) {
    return (await this.base.readStream(streamId, options)).map(this.out);
  }
  async readAll(options: ReadAllOptions = {}) {
    return (await this.base.readAll({ ...options, ...(options.after !== undefined && { after: dense(options.after) }) })).map(this.out);
  }
  subscribeToAll(options: { after?: string; shallow?: readonly string[] } = {}): Subscription {
    const sub = this.base.subscribeToAll({ ...options, ...(options.after !== undefined && { after: dense(options.after) }) });
    const out = this.out;
    return {
      close: () => sub.close(),
      async *[Symbol.asyncIterator]() {
        for await (const e of sub) yield out(e);
      },
    };
  }
  async headPosition() {
    return sparse(await this.base.headPosition());
  }
  async positionAt(time: string) {
    return sparse(await this.base.positionAt(time));
  }
  close() {
    return this.base.close();
  }
}

const silent = pino({ level: 'silent' });

describe('Hash chain kept by a projection (for EventStoreDB)', function () {
  this.timeout(120_000);

  describe('the chained store passes the event store contract', () => {
    eventStoreContract(async () => {
      const db = await createTestDatabase('ledgerc');
      const pool = new pg.Pool({ connectionString: db.url, max: 4 });
      await setupPostgresEventStore(pool);
      const ledger = new ChainLedger(pool);
      await ledger.setup();
      return {
        store: new LedgerChainedStore(new SparseStore(new PostgresEventStore(pool, db.url)), ledger),
        async dispose() {
          await pool.end();
          await db.drop();
        },
      };
    });
  });

  describe('the ledger', () => {
    let db: TestDatabase;
    let pool: pg.Pool;
    let base: SparseStore;
    let ledger: ChainLedger;
    let store: LedgerChainedStore;
    const links = async () => (await pool.query<{ seq: string; position: string; hash: string }>(
      `SELECT seq, position, encode(hash, 'hex') AS hash FROM chain_links ORDER BY seq`)).rows;
    const follow = () => startChainFollower({ store: base, ledger, logger: silent, pollMs: 50 });

    before(async () => {
      db = await createTestDatabase('ledger');
      pool = new pg.Pool({ connectionString: db.url, max: 6 });
      await setupPostgresEventStore(pool);
      ledger = new ChainLedger(pool);
      await ledger.setup();
      await ledger.setup(); // idempotent
      base = new SparseStore(new PostgresEventStore(pool, db.url));
      store = new LedgerChainedStore(base, ledger, 300);
      await base.append('case-1', [{ type: 'Made', data: { title: 'Login works', price: 1.5, big: 12345678901234, tags: ['a', 'b'] } }], { expectedRevision: 'no-stream', metadata: meta });
      await base.append('case-1', [{ type: 'Changed', data: { changes: { title: 'Login works — ü 漢字 🙂' } } }, { type: 'Changed', data: { nested: { deep: { list: [1, { x: null }] } } } }], { expectedRevision: 0n, metadata: meta });
      await base.append('run-1', [{ type: 'Made', data: { n: 1 } }, { type: 'Made', data: { text: 'line\nbreak\t"quoted" \\ back' } }], { expectedRevision: 'no-stream', metadata: meta });
      for (let i = 0; i < 5; i++) await base.append(`more-${i}`, [{ type: 'Made', data: { i } }], { expectedRevision: 'no-stream', metadata: { ...meta, correlationId: `c-${i}` } });
    });
    after(async () => {
      await store?.close();
      await pool?.end();
      await db?.drop();
    });

    it('chains every event in the order of the log, each hash over its content and the hash before it', async () => {
      expect(await store.chainHead()).to.deep.equal({ position: '0', hash: null });
      expect(await store.verifyChain()).to.include({ checked: 0, intact: true });
      const follower = follow();
      try {
        expect(await follower.catchUp()).to.equal('103');
      } finally {
        await follower.stop();
      }
      expect(follower.status()).to.include({ state: 'stopped', position: '103', chained: 10 });
      const rows = await links();
      expect(rows.map((r) => r.seq)).to.deep.equal(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
      expect(rows.map((r) => r.position)).to.deep.equal(['13', '23', '33', '43', '53', '63', '73', '83', '93', '103']);
      expect(await store.chainHead()).to.deep.equal({ position: '103', hash: rows[9].hash });
      const report = await store.verifyChain();
      expect(report).to.include({ from: '1', to: '103', checked: 10, intact: true, firstBreak: null });

      // readChained: what a bundle's reader checks offline with contracts/chain.ts alone.
      const events = await store.readChained({ streams: ['case-1'], positions: ['53', '103'] });
      expect(events.map((e) => e.position)).to.deep.equal(['13', '23', '33', '53', '103']);
      let previous = GENESIS_HASH;
      for (const e of events.slice(0, 3)) {
        expect(e.previousHash).to.equal(previous);
        expect(chainHash(e.previousHash, e)).to.equal(e.hash);
        previous = e.hash;
      }
      for (const e of events.slice(3)) expect(chainHash(e.previousHash, e)).to.equal(e.hash);
      // The data as the store gives it back, as JSON text (jsonb orders the keys its own way).
      expect(JSON.parse(events[0].data)).to.deep.equal({ title: 'Login works', price: 1.5, big: 12345678901234, tags: ['a', 'b'] });
      expect(await store.readChained({ streams: ['case-1'], upTo: '23' })).to.have.length(2);
    });

    it('verifies a range, and a range ends at the chain head', async () => {
      expect(await store.verifyChain({ from: '40', to: '80' })).to.include({ from: '40', to: '80', checked: 4, intact: true });
      expect(await store.verifyChain({ from: '93' })).to.include({ checked: 2, intact: true });
      expect(await store.verifyChain({ to: '1000' })).to.include({ to: '103', checked: 10, intact: true });
    });

    it('names the event whose stored content changed by one byte, and holds again once it is put back', async () => {
      for (const [column, change, undo] of [
        ['data', `data = jsonb_set(data, '{title}', '"Login workz"')`, `data = jsonb_set(data, '{title}', '"Login works"')`],
        ['metadata', `metadata = jsonb_set(metadata, '{actor,userId}', '2')`, `metadata = jsonb_set(metadata, '{actor,userId}', '1')`],
        ['recorded_at', `recorded_at = recorded_at + interval '1 millisecond'`, `recorded_at = recorded_at - interval '1 millisecond'`],
        ['type', `type = 'Madf'`, `type = 'Made'`],
        ['stream', `stream_id = 'case-2'`, `stream_id = 'case-1'`],
      ] as const) {
        await pool.query(`UPDATE es_events SET ${change} WHERE position = 1`);
        const report = await store.verifyChain();
        expect(report.intact, column).to.equal(false);
        expect(report.firstBreak, column).to.include({ position: '13', problem: 'altered' });
        expect(report.firstBreak!.detail, column).to.match(/position 13 \(Mad[ef] on case-[12], revision 0\)/);
        expect(report.checked).to.equal(0);
        await pool.query(`UPDATE es_events SET ${undo} WHERE position = 1`);
        expect((await store.verifyChain()).intact, `${column} put back`).to.equal(true);
      }
      await pool.query(`UPDATE es_events SET data = '{"n": 3}' WHERE position = 4`);
      const report = await store.verifyChain();
      expect(report.firstBreak).to.include({ position: '43', problem: 'altered' });
      expect(report.checked).to.equal(3);
      await pool.query(`UPDATE es_events SET data = '{"n": 1}' WHERE position = 4`);
      expect((await store.verifyChain()).intact).to.equal(true);
    });

    it('tells a rewritten hash from a changed event, and finds deleted events and links, unchained events and a rewritten head', async () => {
      const rows = await links();
      await pool.query(`UPDATE chain_links SET hash = sha256(hash) WHERE seq = 6`);
      expect((await store.verifyChain()).firstBreak).to.include({ position: '63', problem: 'hash-altered' });
      await pool.query(`UPDATE chain_links SET hash = decode($1, 'hex') WHERE seq = 6`, [rows[5].hash]);

      // An event deleted from the log (set aside with SQL, put back).
      await pool.query('CREATE TABLE ledger_saved AS SELECT * FROM es_events WHERE position = 7');
      await pool.query('DELETE FROM es_events WHERE position = 7');
      const gone = (await store.verifyChain()).firstBreak!;
      expect(gone).to.include({ position: '73', problem: 'missing' });
      expect(gone.detail).to.match(/gone from the log/);
      await pool.query('INSERT INTO es_events SELECT * FROM ledger_saved');

      // A link deleted from the ledger.
      await pool.query('CREATE TABLE links_saved AS SELECT * FROM chain_links WHERE seq = 8');
      await pool.query('DELETE FROM chain_links WHERE seq = 8');
      const lost = (await store.verifyChain()).firstBreak!;
      expect(lost).to.include({ position: '93', problem: 'missing' });
      expect(lost.detail).to.match(/links 8 to 8 are missing/);

      // ... and the links after it renumbered to hide the gap: the event is in the log, not in the chain.
      await pool.query('UPDATE chain_links SET seq = -seq WHERE seq > 8');
      await pool.query('UPDATE chain_links SET seq = -seq - 1 WHERE seq < 0');
      await pool.query('UPDATE chain_head SET seq = seq - 1');
      const unchained = (await store.verifyChain()).firstBreak!;
      expect(unchained).to.include({ position: '83', problem: 'unhashed' });
      await pool.query('UPDATE chain_head SET seq = seq + 1');
      await pool.query('UPDATE chain_links SET seq = -seq WHERE seq > 7');
      await pool.query('UPDATE chain_links SET seq = -seq + 1 WHERE seq < 0');
      await pool.query('INSERT INTO chain_links SELECT * FROM links_saved');
      expect((await store.verifyChain()).intact).to.equal(true);

      // The tail of the ledger cut, and the head rewritten.
      await pool.query('CREATE TABLE tail_saved AS SELECT * FROM chain_links WHERE seq = 10');
      await pool.query('DELETE FROM chain_links WHERE seq = 10');
      expect((await store.verifyChain()).firstBreak).to.include({ position: '103', problem: 'unhashed' });
      expect((await store.verifyChain({ to: '93' })).intact).to.equal(true);
      await pool.query('INSERT INTO chain_links SELECT * FROM tail_saved');
      await pool.query(`UPDATE chain_head SET hash = sha256(hash)`);
      expect((await store.verifyChain()).firstBreak).to.include({ position: '103', problem: 'head' });
      await pool.query(`UPDATE chain_head SET hash = decode($1, 'hex')`, [rows[9].hash]);
      expect((await store.verifyChain()).intact).to.equal(true);
    });

    it('two followers chain each event once, and a follower taken up again goes on from the head', async () => {
      for (let i = 0; i < 30; i++) await base.append(`burst-${i}`, [{ type: 'Made', data: { i } }, { type: 'Made', data: { i, again: true } }], { expectedRevision: 'no-stream', metadata: meta });
      const [a, b] = [follow(), follow()];
      try {
        await Promise.all([a.catchUp(), b.catchUp()]);
        expect(a.status().chained + b.status().chained).to.equal(60);
      } finally {
        await a.stop();
        await b.stop();
      }
      await base.append('late', [{ type: 'Made', data: {} }], { expectedRevision: 'no-stream', metadata: meta });
      const c = follow();
      await c.catchUp();
      await c.stop();
      expect(c.status().chained).to.equal(1);
      const rows = await links();
      expect(rows).to.have.length(71);
      expect(rows.map((r) => Number(r.seq))).to.deep.equal(Array.from({ length: 71 }, (_, i) => i + 1));
      expect(await store.verifyChain()).to.include({ checked: 71, intact: true });
    });

    it('serves the integrity check and the anchors as the PostgreSQL chain does', async () => {
      const follower = follow();
      try {
        const anchored = await anchorNow({ store, logger: silent, clock: () => new Date(), settings: { intervalMs: 0, file: null, url: null, token: null } });
        expect(anchored).to.include({ anchored: true, position: '713' });
        // The anchor event itself gets chained by the running follower; readChained waits for it.
        const report = await verifyIntegrity(store, {});
        expect(report.intact).to.equal(true);
        const anchors = await loggedAnchors(store, { from: '1', to: await store.headPosition() });
        expect(await checkAnchors(store, anchors)).to.deep.equal({ checked: 1, firstMismatch: null });
      } finally {
        await follower.stop();
      }
    });

    it('readChained waits for the follower, and answers 503 chain-behind when it does not come', async () => {
      await base.append('unchained', [{ type: 'Made', data: {} }], { expectedRevision: 'no-stream', metadata: meta });
      const error = await store.readChained({ streams: ['unchained'] }).then(() => null, (e: unknown) => e);
      expect(error).to.be.instanceOf(HttpError);
      expect(error).to.include({ status: 503, code: 'chain-behind' });
      const follower = follow();
      try {
        const [e] = await store.readChained({ streams: ['unchained'] });
        expect(e.hash).to.match(/^[0-9a-f]{64}$/);
      } finally {
        await follower.stop();
      }
    });

    it('checks anchors and ranges the chain holds without waiting for the rest of the log; a range past its head waits, then 503', async () => {
      const anchoring = follow();
      try {
        await anchoring.catchUp();
        await anchorNow({ store, logger: silent, clock: () => new Date(), settings: { intervalMs: 0, file: null, url: null, token: null } });
        await anchoring.catchUp();
      } finally {
        await anchoring.stop();
      }
      const anchors = await loggedAnchors(store, { from: '1', to: (await store.chainHead()).position });
      const anchor = anchors[anchors.length - 1];
      await base.append('ahead', [{ type: 'Made', data: {} }], { expectedRevision: 'no-stream', metadata: meta });
      const logHead = await store.headPosition();
      expect(BigInt((await store.chainHead()).position) < BigInt(logHead)).to.equal(true);
      // The anchor's position is chained: its hash at once, though the log has moved on.
      const [atAnchor] = await store.readChained({ positions: [anchor.position] });
      expect(atAnchor).to.include({ position: anchor.position, hash: anchor.hash });
      const report = await verifyIntegrity(store, {});
      expect(report).to.include({ intact: true, to: (await store.chainHead()).position });
      expect(report.anchors).to.deep.equal({ checked: anchors.length, firstMismatch: null });
      const behind = await store.verifyChain({ from: logHead }).then(() => null, (e: unknown) => e);
      expect(behind).to.be.instanceOf(HttpError);
      expect(behind).to.include({ status: 503, code: 'chain-behind' });
      const follower = follow();
      try {
        await follower.catchUp();
        expect(await store.verifyChain({ from: logHead })).to.include({ from: logHead, to: logHead, checked: 1, intact: true });
      } finally {
        await follower.stop();
      }
    });

    it('a follower retrying a fault the store may get over says so, and stops at once in the middle of a pause', async () => {
      const broken = Object.assign(Object.create(base) as EventStore, {
        readAll: async () => {
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:2113'), { code: 'ECONNREFUSED' });
        },
      });
      const follower = startChainFollower({ store: broken, ledger, pollMs: 20, logger: { ...silent, warn: () => undefined }, retry: { budgetMs: 600_000, firstMs: 60_000, maxMs: 60_000 } });
      for (let i = 0; i < 100 && follower.status().state !== 'retrying'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(follower.status()).to.include({ state: 'retrying' });
      // Its pause is a minute long: stop() ends it.
      expect(await stopOutcome(follower.stop(), 'stop() waited out the retry pause')).to.equal('stopped');
      expect(follower.status().state).to.equal('stopped');
    });

    it('a ledger whose head row was deleted by hand fails its follower once, saying what to do, instead of spinning', async () => {
      const { rows: [saved] } = await pool.query('SELECT * FROM chain_head');
      await pool.query('DELETE FROM chain_head');
      try {
        let reads = 0;
        const counting = Object.assign(Object.create(base) as EventStore, {
          readAll: async (o: ReadAllOptions) => {
            reads++;
            return base.readAll(o);
          },
        });
        const errors: unknown[] = [];
        const follower = startChainFollower({ store: counting, ledger, pollMs: 20, logger: { ...silent, warn: () => undefined, error: (o: object) => void errors.push(o) } });
        for (let i = 0; i < 100 && follower.status().state !== 'failed'; i++) await new Promise((r) => setTimeout(r, 20));
        expect(follower.status().state).to.equal('failed');
        expect(follower.status().lastError).to.match(/no head row.*TRUNCATE chain_links, chain_head/);
        expect(reads).to.equal(0);
        expect(errors).to.have.length(1);
        expect(await stopOutcome(follower.stop(), 'stop() hung', 2000)).to.equal('stopped');
        const verifying = await store.verifyChain().then(() => null, (e: unknown) => e);
        expect(String(verifying)).to.match(/no head row/);
      } finally {
        await pool.query('INSERT INTO chain_head (id, seq, position, hash) VALUES ($1, $2, $3, $4)', [saved.id, saved.seq, saved.position, saved.hash]);
      }
    });

    it('a follower that cannot read the log fails once, clearly, and is not retried', async () => {
      let reads = 0;
      const broken = Object.assign(Object.create(base) as EventStore, {
        readAll: async () => {
          reads++;
          throw new Error('relation "es_events" does not exist');
        },
      });
      const errors: unknown[] = [];
      const follower = startChainFollower({ store: broken, ledger, pollMs: 20, logger: { ...silent, info: () => undefined, warn: () => undefined, error: (o: object) => void errors.push(o) } });
      for (let i = 0; i < 50 && follower.status().state !== 'failed'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(follower.status()).to.include({ state: 'failed', lastError: 'relation "es_events" does not exist' });
      await new Promise((r) => setTimeout(r, 100));
      expect(reads).to.equal(1);
      expect(errors).to.have.length(1);
      await follower.stop();
    });
  });
});
