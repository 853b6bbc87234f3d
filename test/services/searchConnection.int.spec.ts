import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import pino, { type Logger } from 'pino';
import { secretBox } from '../../infra/crypto/secretBox';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { runIndexer } from '../../services/process/roles';
import type { Platform } from '../../services/process/platform';
import { SearchConnection } from '../../services/process/searchConnection';
import { followSavedSettings } from '../../services/process/searchSettings';
import { appliedSettings, ConnectionSettingsStore } from '../../services/searchAdmin/connectionSettings';
import { DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchSettings } from '../../services/shared/search';
import { startTestApp, type TestApp } from '../support/app';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { uniqueIndexPrefix } from '../support/search';
import { waitUntil } from '../support/wait';

const DEAD: SearchSettings = { ...DEFAULT_SEARCH_SETTINGS, url: 'http://127.0.0.1:1', engine: 'opensearch', requestTimeoutMs: 500, maxRetries: 0 };

/** A logger whose lines a test reads. */
function recordingLogger(): { logger: Logger; lines: () => { level: number; msg: string }[] } {
  let text = '';
  return { logger: pino({ level: 'trace' }, { write: (line: string) => void (text += line) }), lines: () => text.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

/**
 * SearchConnection switching settings while the process runs (services/process/searchConnection.ts)
 * and following the changes other processes save (searchSettings.ts), on real PostgreSQL search and
 * a URL where nothing answers.
 */
describe('search connection: switching settings without a restart', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  const postgres = (): SearchSettings => ({ ...DEFAULT_SEARCH_SETTINGS, indexPrefix: uniqueIndexPrefix() });
  const saved = (id: number) => async () => ({ settingsId: id, source: 'administrator' as const });

  before(async () => {
    db = await createMigratedDatabase('searchconn');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('a switch while the first opening still retries supersedes it: ready() answers the new engine', async () => {
    const { logger } = recordingLogger();
    const connection = new SearchConnection({ settings: DEAD, source: 'environment', settingsId: null }, DEAD, { knex, logger, retry: { budgetMs: 60_000, firstMs: 100, maxMs: 200 } });
    try {
      await waitUntil(() => connection.status().lastError !== null, 'a first failed attempt');
      expect(connection.status().state).to.equal('connecting');
      expect(() => connection.engine()).to.throw(SearchUnavailable);
      const probe = await connection.switchTo(postgres(), saved(7));
      expect(probe).to.deep.include({ reachable: true, engine: 'postgres', error: null });
      const engine = await connection.ready();
      expect(engine).to.equal(connection.engine());
      expect(engine?.engine).to.equal('postgres');
      expect(connection.status()).to.deep.equal({ state: 'open', engine: 'postgres', lastError: null });
      expect(connection.applied()).to.deep.include({ source: 'administrator', settingsId: 7 });
    } finally {
      await connection.close();
    }
  });

  it('settings that do not work, or a save that fails: the engine in use stays, followers are not told', async () => {
    const { logger } = recordingLogger();
    const settings = postgres();
    const connection = new SearchConnection({ settings, source: 'environment', settingsId: null }, settings, { knex, logger });
    let told = 0;
    connection.onSwitch(async () => void told++);
    try {
      const engine = await connection.ready();
      let saves = 0;
      const probe = await connection.switchTo(DEAD, async () => (saves++, { settingsId: 1, source: 'administrator' }));
      expect(probe.reachable).to.equal(false);
      expect(probe.error).to.include('127.0.0.1:1');
      expect(saves, 'nothing saved').to.equal(0);
      let thrown: unknown = null;
      await connection.switchTo(postgres(), async () => {
        throw new Error('the event store refused');
      }).catch((error) => (thrown = error));
      expect((thrown as Error).message).to.equal('the event store refused');
      expect(connection.engine()).to.equal(engine);
      expect(connection.applied()).to.deep.include({ source: 'environment', settingsId: null, settings });
      expect(told).to.equal(0);
      // The engine in use still answers.
      expect((await connection.engine().info()).engine).to.equal('postgres');
    } finally {
      await connection.close();
    }
  });

  describe('the indexer follows the engine', () => {
    let app: TestApp;
    before(async () => {
      app = await startTestApp();
    });
    after(async () => app?.stop());

    it('an engine given up at start, then settings that work: the indexer starts on them (npm start) and builds their first version', async () => {
      const { logger } = recordingLogger();
      const connection = new SearchConnection({ settings: DEAD, source: 'environment', settingsId: null }, DEAD, { knex: app.deps.knex, logger, retry: { budgetMs: 300, firstMs: 50, maxMs: 100 } });
      const platform = { databaseUrl: app.databaseUrl, pool: app.appDeps.pool, knex: app.deps.knex, store: app.deps.store } as Platform;
      const indexer = runIndexer(platform, logger, null, { budgetMs: 5000, firstMs: 50, maxMs: 100 }, connection, DEAD);
      try {
        expect(await connection.ready()).to.equal(null);
        expect(connection.status().state).to.equal('failed');
        expect(indexer.status().state).to.equal('failed');
        const settings = postgres();
        expect((await connection.switchTo(settings, saved(3))).reachable).to.equal(true);
        await waitUntil(() => indexer.status().state === 'running' && indexer.status().version === 1, 'the indexer on the new engine', 30_000, () => JSON.stringify(indexer.status()));
        expect(indexer.status()).to.deep.include({ engine: 'postgres' });
        expect(await connection.engine().liveVersion()).to.equal(1);
      } finally {
        await indexer.stop();
        await connection.close();
      }
    });
  });

  describe('following the settings other processes save', () => {
    const key = randomBytes(32);
    let store: ConnectionSettingsStore;
    const save = (settings: SearchSettings, with_ = store) => knex.transaction((trx) => with_.save(trx, { settings, changedAt: new Date(), changedBy: null }));
    before(() => {
      store = new ConnectionSettingsStore(knex, secretBox(key));
    });

    it('a saved change that does not answer here is tried again within the budget, then given up once (logged); the engine in use stays', async () => {
      const { logger, lines } = recordingLogger();
      const settings = postgres();
      const connection = new SearchConnection(appliedSettings(settings, null), settings, { knex, logger });
      const engine = await connection.ready();
      const follower = followSavedSettings(connection, store, settings, { logger, budgetMs: 600, pollMs: 50 });
      try {
        const id = await save(DEAD);
        await waitUntil(() => lines().some((l) => l.msg.startsWith('gave up switching')), 'giving up', 20_000);
        const attempts = lines().filter((l) => l.msg.includes('do not work here yet')).length;
        expect(attempts).to.be.at.least(2);
        expect(lines().filter((l) => l.msg.startsWith('gave up switching'))).to.have.length(1);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(lines().filter((l) => l.msg.includes('do not work here yet')), 'no retry after giving up').to.have.length(attempts);
        expect(connection.engine()).to.equal(engine);
        expect(connection.applied().settingsId).to.equal(null);
        // A newer change that works is taken.
        const next = await save(postgres());
        expect(next).to.be.greaterThan(id);
        await waitUntil(() => connection.applied().settingsId === next, 'the newer change');
        expect(connection.engine()).not.to.equal(engine);
      } finally {
        await follower.stop();
        await connection.close();
      }
    });

    it('a saved change this process\'s key cannot open is given up at once, logged at error level without the secret', async () => {
      const { logger, lines } = recordingLogger();
      const settings = postgres();
      // A change this key opens is in force from the start.
      await save(postgres());
      const initial = appliedSettings(settings, await store.latest());
      expect(initial.settingsId).not.to.equal(null);
      const connection = new SearchConnection(initial, settings, { knex, logger });
      await connection.ready();
      const follower = followSavedSettings(connection, store, settings, { logger, budgetMs: 60_000, pollMs: 50 });
      try {
        const other = new ConnectionSettingsStore(knex, secretBox(randomBytes(32)));
        await save({ ...postgres(), username: 'svc', password: 'pw-never-logged-Qm4' }, other);
        await waitUntil(() => lines().some((l) => l.level === 50 && l.msg.startsWith('cannot apply')), 'the refusal');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(lines().filter((l) => l.msg.startsWith('cannot apply'))).to.have.length(1);
        expect(JSON.stringify(lines())).not.to.include('pw-never-logged-Qm4');
        expect(JSON.stringify(lines())).to.include('SEARCH_SECRETS_KEY');
        expect(connection.applied().settingsId).to.equal(initial.settingsId);
      } finally {
        await follower.stop();
        await connection.close();
      }
    });
  });
});
