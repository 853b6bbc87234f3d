// SIGTERM ends the process within SHUTDOWN_TIMEOUT_MS whatever a projection waits for: here the
// read model's statement is stuck behind a lock another session holds on its checkpoint row (as a
// projection stuck on a slow or locked statement would be), so the projector cannot stop by itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { PostgresEventStore } from '../../infra/eventstore/postgres';
import { createPool } from '../../infra/postgres/database';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { startServer, type RunningServer } from '../support/server';
import { waitUntil } from '../support/wait';

describe('shutdown: every role stops within SHUTDOWN_TIMEOUT_MS (a real process)', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  let dataDir: string;
  let server: RunningServer | undefined;
  let locker: pg.Client | undefined;

  before(async () => {
    db = await createMigratedDatabase('shutdown');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-shutdown-'));
  });
  after(async () => {
    await locker?.end().catch(() => undefined);
    if (server) await server.kill().catch(() => undefined);
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a projection stuck on a lock: SIGTERM still ends the process, naming the role that did not stop', async () => {
    server = await startServer({
      DATABASE_URL: db.url, DATA_DIR: dataDir, SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), SHUTDOWN_TIMEOUT_MS: '3000',
    });
    // Another session holds the read model's checkpoint row; an event makes the projector wait for it.
    locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query("SELECT position FROM projection_checkpoints WHERE name = 'readModel' FOR UPDATE");
    const pool = createPool(db.url);
    const store = new PostgresEventStore(pool, db.url);
    try {
      await store.append('tag-900001', [{ type: 'TagCreated', data: { tagId: 900001, name: 'stuck', createdAt: new Date().toISOString() } }],
        { expectedRevision: 'any', metadata: { actor: { userId: null, via: 'system' }, correlationId: 'shutdown-test', causationId: null } });
    } finally {
      await store.close();
      await pool.end();
    }
    await waitUntil(async () => {
      const { rows } = await locker!.query("SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted AND a.datname = current_database()");
      return rows[0].n > 0;
    }, 'the projector to wait for the lock');

    const running = server;
    const exited = new Promise<number | null>((resolve) => {
      const check = setInterval(() => {
        try {
          process.kill(running.pid, 0);
        } catch {
          clearInterval(check);
          resolve(null);
        }
      }, 100);
    });
    process.kill(running.pid, 'SIGTERM');
    // Past SHUTDOWN_TIMEOUT_MS (3 s) the process must be gone; before the fix it waited for ever.
    await Promise.race([exited, new Promise((_, reject) => setTimeout(() => reject(new Error(`still running long after SHUTDOWN_TIMEOUT_MS:\n${running.output()}`)), 30_000))]);
    server = undefined;
    expect(running.output()).to.match(/shutdown took longer than SHUTDOWN_TIMEOUT_MS; exiting now/);
    const line = running.output().split('\n').find((l) => l.includes('shutdown took longer'))!;
    expect(JSON.parse(line).stillStopping).to.deep.equal(['projector']);
  });
});
