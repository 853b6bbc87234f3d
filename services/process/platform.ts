import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type pg from 'pg';
import type { Logger } from 'pino';
import { loadContracts } from '../../contracts/validator';
import type * as EsdbModule from '../../infra/eventstore/esdb';
import { ChainLedger, LedgerChainedStore } from '../../infra/eventstore/chainLedger';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { usePreparedStatements } from '../../infra/postgres/preparedStatements';
import { startEmbeddedPostgres } from '../../infra/postgres/embedded';
import { migrateReadModel } from '../../projections/migrations';
import type { Config } from './config';
import type { EventStore } from '../shared/eventStore';
import { withContracts } from '../shared/validatingEventStore';
import type { SecretVault } from '../shared/secretVault';
import { deriveSecretKey, secretBox } from '../../infra/crypto/secretBox';
import { postgresSecretVault, SECRET_KEYS_INFO } from '../../infra/crypto/secretVault';

// EventStoreDB's client (with gRPC) is loaded when EVENTSTORE_URL asks for it: about 20 MB of a
// process's memory that the PostgreSQL event store (npm start's default) does not need.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const eventStoreDbClient = () => require('../../infra/eventstore/esdb') as typeof EsdbModule;

/** The connections every role needs, opened in order and closed in reverse. */
export interface Platform {
  databaseUrl: string;
  pool: pg.Pool;
  knex: Knex;
  store: EventStore;
  /**
   * The ledger of the log's hash chain when the store cannot chain its events itself (EventStoreDB;
   * infra/eventstore/chainLedger.ts): the worker role runs its follower. Null on PostgreSQL.
   */
  chainLedger: ChainLedger | null;
  /** The adapter itself (no contract checks, no chain): what the chain's follower reads. */
  adapter: EventStore;
  secrets: { sessionSecret: string; tokenSecret: string };
  close(): Promise<void>;
}

interface StoredSecrets { sessionSecret: string; tokenSecret: string; embeddedPostgresPassword: string }

/**
 * Secrets not given in the environment are generated once and kept in DATA_DIR/secrets.json (mode
 * 600). The warning names only those the environment does not set: the ones actually used.
 */
function loadOrCreateSecrets(config: Readonly<Config>, logger: Logger): StoredSecrets {
  const file = path.join(config.dataDir, 'secrets.json');
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as StoredSecrets;
  const secrets: StoredSecrets = {
    sessionSecret: randomBytes(32).toString('hex'),
    tokenSecret: randomBytes(32).toString('hex'),
    embeddedPostgresPassword: randomBytes(16).toString('hex'),
  };
  fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  const unset = [config.sessionSecret === null && 'SESSION_SECRET', config.tokenSecret === null && 'TOKEN_SECRET'].filter((name) => name !== false);
  if (unset.length > 0) logger.warn({ file, unset }, `generated secrets: set ${unset.join(' and ')} in production`);
  return secrets;
}

export async function openPlatform(config: Readonly<Config>, logger: Logger, opts: { poolSize?: number } = {}): Promise<Platform> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch((err) => logger.error({ err }, 'error while closing'));
  };
  try {
    const stored = loadOrCreateSecrets(config, logger);
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const embedded = await startEmbeddedPostgres({
        dataDir: config.dataDir, port: config.embeddedPostgresPort, password: stored.embeddedPostgresPassword, logger, statementStats: config.embeddedPostgresStatementStats,
      });
      closers.push(() => embedded.stop());
      databaseUrl = embedded.url;
    }
    const pool = createPool(databaseUrl, opts.poolSize ?? 10, (err) => logger.warn({ err }, 'idle database connection lost'));
    closers.push(() => pool.end());
    const knexLog = logger.child({ component: 'knex' });
    const knex = createKnex(databaseUrl, opts.poolSize ?? 10, { warn: (msg) => knexLog.warn(msg), error: (msg) => knexLog.error(msg) });
    usePreparedStatements(knex, config.preparedStatements);
    closers.push(() => knex.destroy());
    await migrateReadModel(knex);

    let adapter: EventStore;
    let chained: EventStore;
    let chainLedger: ChainLedger | null = null;
    if (config.eventstoreUrl) {
      adapter = await eventStoreDbClient().connectEventStoreDb(config.eventstoreUrl);
      chainLedger = new ChainLedger(pool);
      await chainLedger.setup();
      chained = new LedgerChainedStore(adapter, chainLedger);
    } else {
      await setupPostgresEventStore(pool);
      adapter = new PostgresEventStore(pool, databaseUrl);
      chained = adapter;
    }
    closers.push(() => adapter.close());
    const store = withContracts(chained, loadContracts());
    return {
      databaseUrl, pool, knex, store, chainLedger, adapter,
      secrets: { sessionSecret: config.sessionSecret ?? stored.sessionSecret, tokenSecret: config.tokenSecret ?? stored.tokenSecret },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The vault of the secrets writes seal (docs/compliance.md, "Secrets"): each secret's key sealed with SECRETS_KEY, else a key derived from the session secret. */
export function secretVaultOf(config: Pick<Config, 'secretsKey'>, platform: Pick<Platform, 'knex' | 'secrets'>): SecretVault {
  return postgresSecretVault(platform.knex, secretBox(config.secretsKey ?? deriveSecretKey(platform.secrets.sessionSecret, SECRET_KEYS_INFO)));
}
