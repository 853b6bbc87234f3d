// A private OpenSearch node for suites that stop and start their engine (an outage mid-burst):
// the same jars and launcher as infra/opensearch/up.sh (.cache/opensearch/lib, the launcher
// src/OpenSearchNode.java), started with up.sh's java command line but on free ports and in a
// home directory of its own, so that it can be killed and started again on its data without
// touching the shared node on 127.0.0.1:9200 that other suites use.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const INFRA = path.join(ROOT, 'infra/opensearch');
const SOURCE = path.join(INFRA, 'src/OpenSearchNode.java');
const DIST = process.env.OPENSEARCH_DIST_DIR ?? path.join(ROOT, '.cache/opensearch');
const LIB = path.join(DIST, 'lib');
const HEAP = process.env.OPENSEARCH_HEAP_OPTS ?? '-Xms512m -Xmx512m';

const commandWorks = (command: string, args: string[]) => {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
};

/** Why a private node cannot be started here (no jars, no Java), or null. */
export function privateNodeUnavailable(): string | null {
  if (!fs.existsSync(path.join(LIB, '.complete'))) return `no OpenSearch jars in ${LIB} (npm run search:up fetches them)`;
  if (!commandWorks('java', ['-version'])) return 'no java on the PATH (OpenSearch 2.19 needs Java 17+)';
  return null;
}

/**
 * In a `before`: skips the suite with one visible line when no private node can be started (no
 * OpenSearch jars or Java), or fails with REQUIRE_SERVICES=1 (CI runs npm run search:up first,
 * which fetches the jars), as requireOpenSearch (test/support/search.ts) does for the shared node.
 */
export function requirePrivateOpenSearch(ctx: Mocha.Context, suite: string): void {
  const missing = privateNodeUnavailable();
  if (missing === null) return;
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${suite}: ${missing} and REQUIRE_SERVICES=1`);
  console.log(`  SKIPPED ${suite}: ${missing}`);
  ctx.skip();
}

/** A TCP port nothing listens on now (the kernel's choice). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * The launcher's classes: up.sh's compiled ones when they were compiled from the current source,
 * else compiled here into `into` (javac, a few seconds).
 */
function launcherClasses(into: string): string {
  const shared = path.join(DIST, 'classes');
  const sourceStamp = createHash('sha256').update(fs.readFileSync(SOURCE)).digest('hex').slice(0, 16);
  const stamp = fs.existsSync(path.join(shared, '.complete')) ? fs.readFileSync(path.join(shared, '.complete'), 'utf8') : '';
  if (stamp.startsWith(`${sourceStamp} `) && fs.existsSync(path.join(shared, 'OpenSearchNode.class'))) return shared;
  const own = path.join(into, 'classes');
  fs.mkdirSync(own, { recursive: true });
  execFileSync('javac', ['-nowarn', '-d', own, '-cp', `${LIB}/*`, SOURCE], { stdio: 'pipe', timeout: 120_000 });
  return own;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every private node of this process, killed if the process exits without stopping them. */
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

export interface StartTiming { startMs: number }

/**
 * One private node: `start()` launches it (again, on the same data) and waits until the cluster is
 * yellow or green; `kill()` sends a signal and waits for the process to exit; `remove()` kills it
 * and deletes its directory (data, logs, classes compiled here).
 */
export class PrivateOpenSearchNode {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();

  private constructor(readonly dir: string, readonly httpPort: number, readonly transportPort: number, private readonly classes: string) {}

  /** A node directory under the system's temporary directory, on two free ports; not started yet. */
  static async create(): Promise<PrivateOpenSearchNode> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-opensearch-'));
    try {
      const classes = launcherClasses(dir);
      const httpPort = await freePort();
      let transportPort = await freePort();
      while (transportPort === httpPort) transportPort = await freePort();
      fs.mkdirSync(path.join(dir, 'home/config'), { recursive: true });
      fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
      fs.copyFileSync(path.join(INFRA, 'log4j2.properties'), path.join(dir, 'home/config/log4j2.properties'));
      return new PrivateOpenSearchNode(dir, httpPort, transportPort, classes);
    } catch (error) {
      fs.rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  get url(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Starts the node (on the data of any earlier start) and waits until it is yellow or green: the time it took. */
  async start(timeoutMs = 180_000): Promise<number> {
    if (this.child) throw new Error('the private OpenSearch node is already running');
    const started = Date.now();
    const out = fs.openSync(path.join(this.dir, 'opensearch.out'), 'a');
    // up.sh's command line (infra/opensearch/up.sh, step 3), with this node's home, ports and temporary directory.
    const child = spawn('java', [
      ...HEAP.split(/\s+/).filter(Boolean), '-XX:+UseG1GC', '-XX:+ExitOnOutOfMemoryError', '-XX:-UsePerfData',
      '-Djava.awt.headless=true', '-Dfile.encoding=UTF-8', '-Djava.locale.providers=SPI,COMPAT',
      `-Djava.io.tmpdir=${path.join(this.dir, 'tmp')}`, '-Dlog4j.shutdownHookEnabled=false', '-Dlog4j2.disable.jmx=true',
      `-Dtestament.opensearch.dist=${this.dir}`,
      '-cp', `${this.classes}:${LIB}/*`, 'OpenSearchNode', path.join(this.dir, 'home'), '127.0.0.1', String(this.httpPort), String(this.transportPort),
    ], { stdio: ['ignore', out, out], detached: true });
    fs.closeSync(out);
    child.unref();
    this.child = child;
    live.add(child);
    let gone = false;
    this.exited = new Promise<void>((resolve) => child.once('exit', () => {
      gone = true;
      live.delete(child);
      if (this.child === child) this.child = null;
      resolve();
    }));
    const deadline = started + timeoutMs;
    for (;;) {
      if (gone) throw new Error(`the private OpenSearch node exited during start-up\n${this.logTail()}`);
      if (await this.healthy()) return Date.now() - started;
      if (Date.now() > deadline) {
        await this.kill('SIGKILL');
        throw new Error(`the private OpenSearch node was not yellow or green on ${this.url} within ${timeoutMs} ms\n${this.logTail()}`);
      }
      await sleep(250);
    }
  }

  /** Sends `signal` (SIGKILL: the harsh case, nothing flushed) and waits until the process exited. */
  async kill(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL', timeoutMs = 60_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const outcome = await Promise.race([this.exited.then(() => 'exited' as const), late]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** Kills the node if it runs and deletes its directory. */
  async remove(): Promise<void> {
    await this.kill('SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  private async healthy(): Promise<boolean> {
    try {
      const response = await fetch(`${this.url}/_cluster/health?wait_for_status=yellow&timeout=1s`, { signal: AbortSignal.timeout(4000) });
      if (!response.ok) return false;
      const body = (await response.json()) as { status?: string };
      return body.status === 'green' || body.status === 'yellow';
    } catch {
      return false;
    }
  }

  /** The end of the node's log and of what the JVM printed, for an error message. */
  logTail(lines = 30): string {
    const tail = (file: string) => {
      try {
        return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
      } catch {
        return '(none)';
      }
    };
    return `----- ${this.dir}/home/logs/opensearch.log -----\n${tail(path.join(this.dir, 'home/logs/opensearch.log'))}\n`
      + `----- ${this.dir}/opensearch.out -----\n${tail(path.join(this.dir, 'opensearch.out'))}`;
  }
}
