import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { ChainLedger, LedgerChainedStore } from '../../infra/eventstore/chainLedger';
import { loadConfig } from '../../services/process/config';
import { openPlatform } from '../../services/process/platform';
import { runWorker } from '../../services/process/roles';
import { meta } from '../infra/eventStoreContract';
import { createTestDatabase, type TestDatabase } from '../support/database';

const SECRET = 'x'.repeat(32);

/** Opens the platform on a fresh DATA_DIR with `env`, and answers the lines it logged. */
async function openAndLog(db: TestDatabase, env: NodeJS.ProcessEnv): Promise<{ msg: string; unset?: string[] }[]> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-platform-'));
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  try {
    const platform = await openPlatform(loadConfig({ DATABASE_URL: db.url, DATA_DIR: dataDir, ...env }), logger, { poolSize: 2 });
    await platform.close();
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  return lines.map((l) => JSON.parse(l));
}

describe('platform: generated secrets', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('platform');
  });
  after(() => db?.drop());

  const generated = (lines: { msg: string; unset?: string[] }[]) => lines.filter((l) => l.msg.startsWith('generated secrets'));

  it('says nothing about generated secrets when SESSION_SECRET and TOKEN_SECRET are both set', async () => {
    expect(generated(await openAndLog(db, { SESSION_SECRET: SECRET, TOKEN_SECRET: SECRET }))).to.deep.equal([]);
  });

  it('names only the secrets the environment does not set', async () => {
    const [onlyToken] = generated(await openAndLog(db, { SESSION_SECRET: SECRET }));
    expect(onlyToken.msg).to.equal('generated secrets: set TOKEN_SECRET in production');
    expect(onlyToken.unset).to.deep.equal(['TOKEN_SECRET']);
    const [both] = generated(await openAndLog(db, {}));
    expect(both.msg).to.equal('generated secrets: set SESSION_SECRET and TOKEN_SECRET in production');
  });
});

describe('platform: the worker role runs the hash chain\'s follower when the chain is a projection (EventStoreDB)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('platformchain');
  });
  after(() => db?.drop());

  it('chains what is appended, and shows the follower in its readiness', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-platform-'));
    const logger = pino({ level: 'silent' });
    const config = loadConfig({ DATABASE_URL: db.url, DATA_DIR: dataDir, SESSION_SECRET: SECRET, TOKEN_SECRET: SECRET, INTEGRITY_ANCHOR_INTERVAL_MS: '0' });
    const platform = await openPlatform(config, logger, { poolSize: 4 });
    try {
      // The PostgreSQL platform as openPlatform builds it for EventStoreDB: the adapter's log, its chain in a ledger.
      expect(platform.chainLedger).to.equal(null);
      const ledger = new ChainLedger(platform.pool);
      await ledger.setup();
      const store = new LedgerChainedStore(platform.adapter, ledger);
      const worker = await runWorker(config, { ...platform, store, chainLedger: ledger }, logger);
      try {
        await store.append('chained-1', [{ type: 'Made', data: { n: 1 } }], { expectedRevision: 'no-stream', metadata: meta });
        const head = await store.headPosition();
        for (let i = 0; i < 100 && (await store.chainHead()).position !== head; i++) await new Promise((r) => setTimeout(r, 50));
        expect((await store.chainHead()).position).to.equal(head);
        const ready = await worker.readiness.check();
        expect(ready.ok).to.equal(true);
        expect((ready.details as { chain: { state: string; position: string } }).chain).to.include({ state: 'running' });
        expect(await store.verifyChain()).to.include({ intact: true });
      } finally {
        await worker.stop();
      }
    } finally {
      await platform.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
