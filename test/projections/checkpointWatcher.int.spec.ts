// The read-your-writes watcher hears checkpoint moves by LISTEN: a lost connection is replaced,
// also when the database refuses new connections for a while.
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { advanceCheckpoint } from '../../projections/runtime/checkpoints';
import { CheckpointWatcher } from '../../projections/runtime/checkpointWatcher';
import { createTestDatabase, cutConnections, restoreConnections, withApplicationName, type TestDatabase } from '../support/database';
import { waitUntil } from '../support/wait';

const VICTIM = 'watcher-under-test';

describe('CheckpointWatcher: its LISTEN connection lost (PostgreSQL)', function () {
  this.timeout(30_000);
  let db: TestDatabase;
  let knex: Knex;
  let watcher: CheckpointWatcher | undefined;

  before(async () => {
    db = await createTestDatabase('watcher');
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
});
