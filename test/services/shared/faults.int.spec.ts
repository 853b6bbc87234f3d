// The transient/permanent rule, checked on errors the real clients produce (PostgreSQL through pg
// and knex, kafkajs against a closed port, ajv through the contracts) and on the budget's arithmetic.
import { expect } from 'chai';
import knexFactory from 'knex';
import { Kafka, KafkaJSNonRetriableError, logLevel } from 'kafkajs';
import pg from 'pg';
import { loadContracts } from '../../../contracts/validator';
import { ConfigError, loadConfig } from '../../../services/process/config';
import { DomainError } from '../../../services/shared/errors';
import { RetryBudgetSpent, describeError, isTransient, retryBudget } from '../../../services/shared/faults';
import { createTestDatabase, cutConnections, restoreConnections, type TestDatabase } from '../../support/database';

const QUIET = { warn: () => undefined, error: () => undefined, deprecate: () => undefined, debug: () => undefined };

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function rejection(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('faults: which errors a background loop retries (real clients)', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let client: pg.Client;

  before(async () => {
    db = await createTestDatabase('faults');
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  after(async () => {
    await client?.end().catch(() => undefined);
    await restoreConnections(db).catch(() => undefined);
    await db?.drop();
  });

  describe('transient', () => {
    it('pg connecting to a closed port (ECONNREFUSED)', async () => {
      const err = await rejection(async () => {
        const c = new pg.Client({ host: '127.0.0.1', port: await closedPort(), user: 'postgres' });
        await c.connect();
      });
      expect((err as { code?: string }).code).to.equal('ECONNREFUSED');
      expect(isTransient(err)).to.equal(true);
    });

    it('a database that refuses new connections (55000 "not currently accepting connections")', async () => {
      await cutConnections(db, 'nobody');
      try {
        const err = await rejection(async () => {
          const c = new pg.Client({ connectionString: db.url });
          await c.connect();
        });
        expect(String(err)).to.match(/not currently accepting connections/);
        expect(isTransient(err)).to.equal(true);
      } finally {
        await restoreConnections(db);
      }
    });

    it('a session ended by an administrator (57P01 or the connection cut)', async () => {
      const victim = new pg.Client({ connectionString: db.url });
      victim.on('error', () => undefined);
      await victim.connect();
      const { rows } = await victim.query('SELECT pg_backend_pid() AS pid');
      await client.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      const err = await rejection(() => victim.query('SELECT 1'));
      await victim.end().catch(() => undefined);
      expect(isTransient(err), describeError(err)).to.equal(true);
    });

    it('a deadlock (40P01) between two real transactions', async () => {
      await client.query('CREATE TABLE dl (id int PRIMARY KEY, v int); INSERT INTO dl VALUES (1, 0), (2, 0)');
      const other = new pg.Client({ connectionString: db.url });
      await other.connect();
      try {
        await client.query('BEGIN');
        await other.query('BEGIN');
        await client.query('UPDATE dl SET v = 1 WHERE id = 1');
        await other.query('UPDATE dl SET v = 1 WHERE id = 2');
        const results = await Promise.allSettled([client.query('UPDATE dl SET v = 2 WHERE id = 2'), other.query('UPDATE dl SET v = 2 WHERE id = 1')]);
        const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(failed).to.have.length(1);
        expect(failed[0].reason.code).to.equal('40P01');
        expect(isTransient(failed[0].reason)).to.equal(true);
      } finally {
        await client.query('ROLLBACK');
        await other.query('ROLLBACK');
        await other.end();
      }
    });

    it('serialization failure (40001) and too many connections (53300) as PostgreSQL raises them', async () => {
      for (const code of ['40001', '53300']) {
        const err = await rejection(() => client.query(`DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '${code}'; END $$`));
        expect((err as { code?: string }).code).to.equal(code);
        expect(isTransient(err), code).to.equal(true);
      }
    });

    it("knex's pool acquire timeout (KnexTimeoutError)", async () => {
      const knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 1 }, acquireConnectionTimeout: 200, log: QUIET });
      try {
        const err = await rejection(() => knex.transaction(async () => {
          await knex.raw('SELECT 1'); // needs a second connection, and the pool has one
        }));
        expect((err as Error).name).to.equal('KnexTimeoutError');
        expect(isTransient(err)).to.equal(true);
      } finally {
        await knex.destroy();
      }
    });

    it('kafkajs with no broker at the address (connection error, retries exceeded)', async () => {
      const kafka = new Kafka({ clientId: 'faults-test', brokers: [`127.0.0.1:${await closedPort()}`], logLevel: logLevel.NOTHING, retry: { retries: 1, initialRetryTime: 50 } });
      const producer = kafka.producer();
      const err = await rejection(() => producer.connect());
      await producer.disconnect().catch(() => undefined);
      expect((err as Error).name).to.match(/^KafkaJS/);
      expect(isTransient(err), describeError(err)).to.equal(true);
    });
  });

  describe('not transient', () => {
    it('a SQL syntax error (42601), a division by zero (22012), a unique violation (23505)', async () => {
      await client.query('CREATE TABLE u (id int PRIMARY KEY)');
      const errors = [
        await rejection(() => client.query('SELEC 1')),
        await rejection(() => client.query('SELECT 1/0')),
        await rejection(() => client.query('INSERT INTO u VALUES (1), (1)')),
      ];
      expect(errors.map((e) => (e as { code?: string }).code)).to.deep.equal(['42601', '22012', '23505']);
      for (const err of errors) expect(isTransient(err), describeError(err)).to.equal(false);
    });

    it('a contract violation from the real validator', () => {
      let err: unknown;
      try {
        loadContracts().check({ type: 'ProjectCreated', data: { nonsense: true } });
      } catch (e) {
        err = e;
      }
      expect((err as Error).name).to.equal('ContractViolation');
      expect(isTransient(err)).to.equal(false);
    });

    it('a domain error, a TypeError, a RangeError, a plain Error, a string', () => {
      let typeError: unknown;
      try {
        (null as unknown as { x: number }).x.toFixed();
      } catch (e) {
        typeError = e;
      }
      let rangeError: unknown;
      try {
        (1).toFixed(1000);
      } catch (e) {
        rangeError = e;
      }
      expect(typeError).to.be.instanceOf(TypeError);
      expect(rangeError).to.be.instanceOf(RangeError);
      for (const err of [new DomainError('test-run-not-open'), typeError, rangeError, new Error('boom'), 'boom', null, undefined]) {
        expect(isTransient(err), String(err)).to.equal(false);
      }
    });

    it('kafkajs giving up on a programming error; a loop that spent its budget on a transient one', () => {
      // kafkajs's typings leave out the `cause` its constructor takes.
      const NonRetriable = KafkaJSNonRetriableError as unknown as new (e: Error, o: { cause: unknown }) => Error;
      const bug = new TypeError('x is undefined');
      expect(isTransient(new NonRetriable(bug, { cause: bug }))).to.equal(false);
      const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      expect(isTransient(new NonRetriable(refused, { cause: refused })), 'wrapping a transient one').to.equal(true);
      const budget = retryBudget({ firstMs: 1, maxMs: 1, budgetMs: 0 });
      budget.next();
      expect(isTransient(new RetryBudgetSpent(refused, budget))).to.equal(false);
    });
  });

  describe('retryBudget', () => {
    it('pauses double from firstMs up to maxMs, never past the budget, then it is spent; a success resets it', () => {
      let t = 1000;
      const budget = retryBudget({ firstMs: 100, maxMs: 1000, budgetMs: 3000, now: () => t });
      const pauses: (number | null)[] = [];
      for (let i = 0; i < 8; i++) {
        const pause = budget.next();
        pauses.push(pause);
        if (pause === null) break;
        t += pause;
      }
      expect(pauses).to.deep.equal([100, 200, 400, 800, 1000, 500, null]);
      expect(budget.failures).to.equal(7);
      expect(budget.elapsedMs()).to.equal(3000);
      budget.reset();
      expect(budget.elapsedMs()).to.equal(0);
      expect(budget.next()).to.equal(100);
    });

    it('a budget of 0 is spent at the first failure', () => {
      expect(retryBudget({ firstMs: 100, maxMs: 1000, budgetMs: 0 }).next()).to.equal(null);
    });
  });

  describe('RETRY_BUDGET_MS', () => {
    it('defaults to 30 minutes and takes a value in ms', () => {
      expect(loadConfig({}).retryBudgetMs).to.equal(30 * 60_000);
      expect(loadConfig({ RETRY_BUDGET_MS: '5000' }).retryBudgetMs).to.equal(5000);
    });
    for (const bad of ['999', 'forever', '-1', '1.5'])
      it(`refuses RETRY_BUDGET_MS=${bad}`, () => expect(() => loadConfig({ RETRY_BUDGET_MS: bad })).to.throw(ConfigError, /RETRY_BUDGET_MS/));
  });
});
