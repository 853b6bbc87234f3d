import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import pino from 'pino';
import { deriveSecretKey, secretBox } from '../../../infra/crypto/secretBox';
import { createKnex } from '../../../infra/postgres/database';
import { migrateReadModel } from '../../../projections/migrations';
import { connectSearch } from '../../../services/process/searchSettings';
import { ConnectionSettingsStore, SavedSecretsUnreadable } from '../../../services/searchAdmin/connectionSettings';
import { DEFAULT_SEARCH_SETTINGS, type SearchSettings } from '../../../services/shared/search';
import { createTestDatabase, type TestDatabase } from '../../support/database';
import { runScript } from '../../support/server';

const PLAINTEXT = 'pw-Kx7-saved-by-an-administrator';
const SESSION_SECRET = 's'.repeat(40);
const ENTRY_POINTS = ['services/process/main.ts', 'services/process/api/main.ts', 'services/process/indexer/main.ts'];

/**
 * Saved search credentials that the process's key cannot open: every entry point (npm start, the
 * api role, the indexer role) refuses to start, exits non-zero and says to set SEARCH_SECRETS_KEY;
 * the key they were saved with (given, or derived from SESSION_SECRET) opens them.
 */
describe('search connection: a key that cannot open the saved credentials refuses to start', function () {
  this.timeout(180_000);
  let db: TestDatabase;
  let knex: Knex;
  let dataDir: string;
  const keyA = randomBytes(32);
  const settings: SearchSettings = { ...DEFAULT_SEARCH_SETTINGS, url: 'http://127.0.0.1:1', username: 'svc', password: PLAINTEXT };

  const save = (key: Buffer) => knex.transaction((trx) =>
    new ConnectionSettingsStore(knex, secretBox(key)).save(trx, { settings, changedAt: new Date(), changedBy: null }));
  const env = (extra: NodeJS.ProcessEnv) => ({
    DATABASE_URL: db.url, DATA_DIR: dataDir, SESSION_SECRET, TOKEN_SECRET: 't'.repeat(40), LOG_LEVEL: 'trace', PORT: '0', ...extra,
  });
  const connect = (searchSecretsKey: Buffer | null, sessionSecret = SESSION_SECRET) => connectSearch(
    { search: DEFAULT_SEARCH_SETTINGS, searchSecretsKey, retryBudgetMs: 1000 }, { knex, secrets: { sessionSecret, tokenSecret: 't'.repeat(40) } }, pino({ level: 'silent' }),
  );

  before(async () => {
    db = await createTestDatabase('connkey');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-connkey-'));
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('SEARCH_SECRETS_KEY other than the one they were saved with: each entry point exits non-zero, naming SEARCH_SECRETS_KEY, never the secret', async () => {
    const id = await save(keyA);
    for (const script of ENTRY_POINTS) {
      const { code, output } = await runScript(script, [], env({ SEARCH_SECRETS_KEY: randomBytes(32).toString('base64') }));
      expect(code, `${script}: ${output}`).to.equal(1);
      expect(output, script).to.include('cannot start').and.include('SEARCH_SECRETS_KEY').and.include(`search_connection_settings row ${id}`)
        .and.include('cannot be decrypted').and.include(`sealed with key ${secretBox(keyA).keyId}`);
      expect(output, script).not.to.include(PLAINTEXT);
      expect(output, script).not.to.include('API listening');
    }
  });

  it('the key they were saved with opens them: the saved settings are in force', async () => {
    const id = await save(keyA);
    const search = await connect(keyA);
    try {
      expect(search.connection.applied()).to.deep.include({ source: 'administrator', settingsId: id });
      expect(search.connection.applied().settings).to.deep.include({ url: 'http://127.0.0.1:1', username: 'svc', password: PLAINTEXT });
    } finally {
      await search.close();
    }
    let refused: unknown = null;
    await connect(randomBytes(32)).catch((error) => (refused = error));
    expect(refused).to.be.instanceOf(SavedSecretsUnreadable);
  });

  it('without SEARCH_SECRETS_KEY the key is derived from SESSION_SECRET: another SESSION_SECRET refuses to start, the same one opens them', async () => {
    const id = await save(deriveSecretKey(SESSION_SECRET));
    const { code, output } = await runScript('services/process/indexer/main.ts', [], env({ SESSION_SECRET: 'o'.repeat(40) }));
    expect(code, output).to.equal(1);
    expect(output).to.include('SEARCH_SECRETS_KEY').and.include('SESSION_SECRET').and.include(`row ${id}`);
    const search = await connect(null);
    try {
      expect(search.connection.applied()).to.deep.include({ source: 'administrator', settingsId: id });
      expect(search.connection.applied().settings.password).to.equal(PLAINTEXT);
    } finally {
      await search.close();
    }
  });

  it('a malformed SEARCH_SECRETS_KEY refuses to start with what it must be, without showing it', async () => {
    const { code, output } = await runScript('services/process/indexer/main.ts', [], env({ SEARCH_SECRETS_KEY: 'not-a-key-but-a-secret-all-the-same' }));
    expect(code, output).to.equal(1);
    expect(output).to.include('SEARCH_SECRETS_KEY must be 32 bytes');
    expect(output).not.to.include('not-a-key-but-a-secret-all-the-same');
  });
});
