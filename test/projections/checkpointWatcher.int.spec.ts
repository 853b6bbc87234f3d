// The read-your-writes watcher hears checkpoint moves by LISTEN: a lost connection is replaced,
// also when the database refuses new connections for a while; not past its retry budget, and not
// when the connection fails for good (services/shared/faults.ts).
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { advanceCheckpoint } from '../../projections/runtime/checkpoints';
import { CheckpointWatcher } from '../../projections/runtime/checkpointWatcher';
import { ReadModelWaitFailed } from '../../services/shared/errors';
import { createMigratedDatabase, createTestDatabase, cutConnections, restoreConnections, withApplicationName, type TestDatabase } from '../support/database';
import { waitUntil } from '../support/wait';

const VICTIM = 'watcher-under-test';

describe('CheckpointWatcher: its LISTEN connection lost (PostgreSQL)', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let knex: Knex;
  let watcher: CheckpointWatcher | undefined;

  before(async () => {
    db = await createMigratedDatabase('watcher');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
  });
  after(async () => {
    await restoreConnections(db).catch(() => undefined);
    await watcher?.stop();
    await knex.destroy();
    await db.drop();
  });

  it('connects again once the database lets it in, catches up on what it missed, and hears later moves', async () => {
    watcher = new CheckpointWatcher(knex, withApplicationName(db.url, VICTIM), ['readModel']);
    const w = watcher;
    await w.start();
    await advanceCheckpoint(knex, 'readModel', 5n);
    await waitUntil(() => w.generation('readModel') === '5', 'the watcher to hear the first move');

    expect(await cutConnections(db, VICTIM), 'LISTEN session ended').to.equal(1);
    // Refused for longer than one reconnection attempt (one a second).
    await new Promise((r) => setTimeout(r, 2500));
    await advanceCheckpoint(knex, 'readModel', 7n);
    expect(w.generation('readModel'), 'nothing heard while disconnected').to.equal('5');

    await restoreConnections(db);
    await waitUntil(() => w.generation('readModel') === '7', 'the watcher to catch up on the move it missed', 10_000);
    await advanceCheckpoint(knex, 'readModel', 9n);
    await waitUntil(() => w.generation('readModel') === '9', 'the watcher to hear a move by LISTEN again', 5_000);
    // Heard, not polled: no write waits, so nothing but the notification moves it.
    await w.waitFor({ position: '9', streamId: 'any' }, 1000);
  });

  it('a write the read models do not reach in time, still waiting when it stops, or waited for after: ReadModelWaitFailed (no HTTP below the API), with the position', async () => {
    const w = new CheckpointWatcher(knex, db.url, ['readModel']);
    await w.start();
    const lagging = await w.waitFor({ position: '1000', streamId: 'any' }, 200).then(() => null, (err: unknown) => err);
    expect(lagging).to.be.instanceOf(ReadModelWaitFailed);
    expect(lagging).to.deep.include({ code: 'read-model-lagging', details: { position: '1000' } });
    const waiting = w.waitFor({ position: '1001', streamId: 'any' }, 10_000).then(() => null, (err: unknown) => err);
    await w.stop();
    expect(await waiting).to.be.instanceOf(ReadModelWaitFailed).and.to.include({ code: 'shutting-down' });
    // Asked after the stop (a request that outlived the server's shutdown): refused at once, no timer or poller started.
    const late = await w.waitFor({ position: '1002', streamId: 'any' }, 10_000).then(() => null, (err: unknown) => err);
    expect(late).to.be.instanceOf(ReadModelWaitFailed).and.to.include({ code: 'shutting-down' });
    expect((w as unknown as { poller: unknown }).poller, 'no poller').to.equal(null);
  });

  it('applied(): every projection, at the partition that holds the stream (Kafka), has reached the position: read from the database, not waited for', async () => {
    // The Kafka shape: one checkpoint per projection and partition; the job's stream is on partition 2.
    const keyOf = (projection: string, streamId: string) => `${projection}#${streamId === 'importJob-1' ? 2 : 0}`;
    const kafka = new CheckpointWatcher(knex, db.url, ['readModel', 'imports'], keyOf);
    await advanceCheckpoint(knex, 'imports#2', 10n);
    await advanceCheckpoint(knex, 'readModel#2', 5n);
    await advanceCheckpoint(knex, 'readModel#0', 100n);
    const write = { position: '10', streamId: 'importJob-1' };
    expect(await kafka.applied(write), 'readModel#2 is behind, whatever another partition has').to.equal(false);
    await advanceCheckpoint(knex, 'readModel#2', 10n);
    // Never started (no LISTEN): the answer comes from the checkpoints read now.
    expect(await kafka.applied(write)).to.equal(true);
    expect(await kafka.applied({ position: '11', streamId: 'importJob-1' })).to.equal(false);
    expect(await kafka.applied({ position: '100', streamId: 'other-1' }), 'partition 0: readModel#0 at 100, imports#0 never moved').to.equal(false);
    await kafka.stop();
  });

  it('refused longer than its retry budget: failed once with the last error; writes still resolve through the re-read of the checkpoints', async () => {
    const w = new CheckpointWatcher(knex, withApplicationName(db.url, `${VICTIM}-budget`), ['budgeted'], undefined, { retry: { budgetMs: 1000, firstMs: 100, maxMs: 200 } });
    try {
      await w.start();
      expect(await cutConnections(db, `${VICTIM}-budget`), 'LISTEN session ended').to.equal(1);
      await waitUntil(() => w.status().state === 'failed', 'the watcher to give up', 10_000, () => JSON.stringify(w.status()));
      expect(w.status().lastError).to.match(/^gave up after \d+ failed attempts in \d+ s: .*not currently accepting connections/);
      expect(w.status().correlationId).to.be.a('string');

      await restoreConnections(db);
      const waiting = w.waitFor({ position: '3', streamId: 'any' }, 10_000);
      await advanceCheckpoint(knex, 'budgeted', 3n);
      await waiting;
      expect(w.status().state, 'it did not LISTEN again').to.equal('failed');
    } finally {
      await restoreConnections(db);
      await w.stop();
    }
  });

  it('its database is gone (3D000, not transient): failed at the first attempt, no budget spent', async () => {
    const doomed = await createTestDatabase('watchergone');
    const doomedKnex = createKnex(doomed.url);
    const w = new CheckpointWatcher(doomedKnex, doomed.url, ['readModel']);
    try {
      await migrateReadModel(doomedKnex);
      await w.start();
      await doomedKnex.destroy();
      await doomed.drop();
      await waitUntil(() => w.status().state === 'failed', 'the watcher to fail', 10_000, () => JSON.stringify(w.status()));
      expect(w.status().lastError).to.match(/does not exist/);
      expect(w.status().lastError).not.to.match(/^gave up after/);
    } finally {
      await w.stop();
      await doomedKnex.destroy().catch(() => undefined);
      await doomed.drop().catch(() => undefined);
    }
  });
});
