import { expect } from 'chai';
import type { Knex } from 'knex';
import pino from 'pino';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { touchedNothing } from '../../projections/statistics';
import { queueStatistics, startStatisticsWorker, STATISTICS_WORKER, type StatisticsWorker } from '../../projections/statisticsQueue';
import { statisticsCounted } from '../../services/model/statisticsCounted';
import { HttpError } from '../../services/shared/errors';
import { createMigratedDatabase, type TestDatabase } from '../support/database';

const at = '2026-11-01T10:00:00.000Z';

/**
 * The statistics counted after the batch (projections/statisticsQueue.ts): a batch queues what it
 * touched in its transaction, a worker counts it after the commit, and a reader of statistics
 * waits for what was waiting when it arrived; a pass that fails with a bug is kept as failed and
 * the worker goes on.
 */
describe('statistics: counted after the batch by a worker', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  let worker: StatisticsWorker | undefined;
  const logged: Record<string, unknown>[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line)) });

  before(async () => {
    db = await createMigratedDatabase('statistics_queue');
    knex = createKnex(db.url, 4);
    await migrateReadModel(knex);
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const run = async (id: number) => knex('test_runs').insert({ id, name: `Run ${id}`, project_id: 1, created_at: at, updated_at: at, revision: 0 });
  /** A batch that created run `id`: the row and its queued statistics, in one transaction. */
  const batchCreatingRun = (id: number) => knex.transaction(async (trx) => {
    await trx('test_runs').insert({ id, name: `Run ${id}`, project_id: 1, created_at: at, updated_at: at, revision: 0 });
    const touched = touchedNothing();
    touched.runs.add(id);
    await queueStatistics(trx, touched);
  });
  const counted = async (id: number) => (await knex('test_run_statistics').where({ test_run_id: id }).first('total')) ?? null;
  const waitUntilNothingWaits = async (ms: number) => {
    const deadline = Date.now() + ms;
    while (await waiting() > 0) {
      if (Date.now() > deadline) throw new Error(`still ${await waiting()} batches waiting after ${ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const waiting = async () => Number((await knex('statistics_pending').whereNull('failed_at').count('* as n').first())!.n);

  it('queues nothing for a batch that touched nothing counted', async () => {
    await knex.transaction((trx) => queueStatistics(trx, touchedNothing()));
    expect(await waiting()).to.equal(0);
  });

  it('counts a batch after it commits; a reader that arrives meanwhile waits until it is counted', async () => {
    await batchCreatingRun(1);
    expect(await counted(1), 'not counted in the batch\'s transaction').to.equal(null);
    const read = statisticsCounted(knex, 10_000).then(() => counted(1));
    await new Promise((resolve) => setTimeout(resolve, 100));
    worker = startStatisticsWorker({ knex, logger, budgetMs: 5_000 });
    expect(await read, 'the reader sees the batch counted').to.deep.equal({ total: 0 });
    expect(await waiting()).to.equal(0);
    // A worker running: the next batch is counted as soon as it commits.
    await batchCreatingRun(2);
    await statisticsCounted(knex, 10_000);
    expect(await counted(2)).to.deep.equal({ total: 0 });
    expect(worker.status()).to.include({ name: STATISTICS_WORKER, state: 'running', lastError: null });
    expect(Number(worker.status().position), 'the last row counted').to.be.greaterThan(1);
  });

  it('without a worker, a reader waits the write timeout and is answered 503 statistics-behind; nothing is lost', async () => {
    await batchCreatingRun(3);
    const started = Date.now();
    const error = await statisticsCounted(knex, 300).then(() => null, (e: unknown) => e);
    expect(error).to.be.instanceOf(HttpError);
    expect(error).to.include({ status: 503, code: 'statistics-behind' });
    expect(Date.now() - started).to.be.at.least(300);
    worker = startStatisticsWorker({ knex, logger, budgetMs: 5_000 });
    await statisticsCounted(knex, 10_000);
    expect(await counted(3)).to.deep.equal({ total: 0 });
  });

  it('batches that keep coming are counted once they pause, or at once when a reader asks', async () => {
    worker = startStatisticsWorker({ knex, databaseUrl: db.url, logger, budgetMs: 5_000, quietMs: 400, maxWaitMs: 60_000 });
    // A burst: a batch every 100 ms for 1.5 s; nothing is counted while it lasts.
    const waitingDuring: number[] = [];
    for (let id = 10; id < 25; id++) {
      await batchCreatingRun(id);
      waitingDuring.push(await waiting());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(Math.min(...waitingDuring.slice(5)), 'batches waiting during the burst').to.be.greaterThan(4);
    await waitUntilNothingWaits(5_000);
    expect(await knex('test_run_statistics').whereBetween('test_run_id', [10, 24]).count('* as n').first()).to.deep.equal({ n: '15' });
    await worker.stop();

    // Never quiet long enough, never waited long enough: a reader's ask has them counted.
    worker = startStatisticsWorker({ knex, databaseUrl: db.url, logger, budgetMs: 5_000, quietMs: 60_000, maxWaitMs: 60_000 });
    await batchCreatingRun(30);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await waiting(), 'not counted on its own').to.equal(1);
    const started = Date.now();
    await statisticsCounted(knex, 10_000);
    expect(Date.now() - started, 'counted when asked').to.be.below(5_000);
    expect(await counted(30)).to.deep.equal({ total: 0 });
  });

  it('a worker polling with nothing waiting runs no pass: a batch that arrives meanwhile waits for its pause like any other', async () => {
    // A pass is a transaction of the worker's: counted here. A worker that ran one whenever it found
    // nothing waiting would also take a batch committed between its look and its pass at once,
    // without its pause (the test above failed on it once).
    let passes = 0;
    const counting = new Proxy(knex, {
      get: (target, key) => (key === 'transaction'
        ? (...args: Parameters<Knex['transaction']>) => {
          passes++;
          return target.transaction(...args);
        }
        : Reflect.get(target, key)),
    });
    worker = startStatisticsWorker({ knex: counting, databaseUrl: db.url, logger, budgetMs: 5_000, pollMs: 1, quietMs: 60_000, maxWaitMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(passes, 'passes with nothing waiting').to.equal(0);
    for (let id = 100; id < 120; id++) {
      await new Promise((resolve) => setTimeout(resolve, 2 + (id % 7) * 2));
      await batchCreatingRun(id);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await waiting(), 'every batch still waits for the pause').to.equal(20);
    expect(passes).to.equal(0);
    // A reader's ask has them counted, in one pass.
    await statisticsCounted(knex, 10_000);
    expect(await waiting()).to.equal(0);
    expect(passes).to.equal(1);
  });

  it('a pass that fails with a bug: its rows are kept failed with the error and a logged correlation id, readers stop waiting for them, later batches are counted', async () => {
    await run(4);
    // What no batch writes: a row its pass cannot read (a bug's stand-in), queued with run 4's.
    await knex('statistics_pending').insert({ touched: JSON.stringify({ runs: [4] }) });
    logged.length = 0;
    worker = startStatisticsWorker({ knex, logger, budgetMs: 5_000 });
    await statisticsCounted(knex, 10_000);
    const [failed] = await knex('statistics_pending').whereNotNull('failed_at').select('error', 'correlation_id');
    expect(failed.error).to.match(/not iterable/);
    expect(logged.map((l) => l.correlationId)).to.include(failed.correlation_id);
    expect(worker.status()).to.include({ state: 'running', correlationId: failed.correlation_id });
    expect(worker.status().lastError).to.match(/^1 waiting row\(s\) failed: /);
    expect(await counted(4), 'the failed pass counted nothing').to.equal(null);
    await batchCreatingRun(5);
    await statisticsCounted(knex, 10_000);
    expect(await counted(5)).to.deep.equal({ total: 0 });
    await knex('statistics_pending').del();
  });
});
