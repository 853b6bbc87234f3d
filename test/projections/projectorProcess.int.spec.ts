// The projector role on its own (services/process/projector/main.ts, direct transport): once every
// projection has failed for good the process has nothing left to do, so it exits 1 and says why
// once per projection, instead of staying up with nothing running.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { ALL_PROJECTIONS } from '../../projections';
import { ADMIN_URL, createTestDatabase, type TestDatabase } from '../support/database';
import { waitUntil } from '../support/wait';

const SECRET = 's'.repeat(40);

describe('projector role: every projection failed (PostgreSQL, a real process)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let dataDir: string;

  before(async () => {
    db = await createTestDatabase('projproc');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-projector-'));
  });
  after(async () => {
    await db.drop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('its database is dropped (3D000, not transient): each projection fails once and the process exits 1', async () => {
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', '..', 'services', 'process', 'projector', 'main.ts')], {
      env: {
        ...process.env, LOG_LEVEL: 'info', DATABASE_URL: db.url, EVENTSTORE_URL: '', KAFKA_BROKERS: '', DATA_DIR: dataDir,
        SESSION_SECRET: SECRET, TOKEN_SECRET: SECRET, RETRY_BUDGET_MS: '600000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      // Running: its subscriptions listen on the database (one LISTEN session, which they share).
      await waitUntil(async () => (await sessionsOn(db)) >= 1, 'the projector to follow the log', 30_000, () => output);
      await db.drop();
      expect(await exited, output).to.equal(1);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    }
    const failed = output.split('\n').filter((l) => l.includes('"projection failed; stopped until restarted"')).map((l) => JSON.parse(l));
    expect(failed.map((l) => l.projection).sort(), 'one error line per projection').to.deep.equal(ALL_PROJECTIONS.map((p) => p.name).sort());
    for (const line of failed) expect(line.err.message, line.projection).to.match(/does not exist/);
  });
});

async function sessionsOn(db: TestDatabase): Promise<number> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query ILIKE 'LISTEN %'", [db.name]);
    return rows[0].n;
  } finally {
    await admin.end();
  }
}
