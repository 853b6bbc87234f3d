import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { loadConfig } from '../../services/process/config';
import { openPlatform } from '../../services/process/platform';
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
