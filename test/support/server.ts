import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/**
 * The environment a spawned process inherits: this one's, without the transport and search
 * settings, which a test must give explicitly (a server that silently joined a shared topic or
 * search engine would mix databases).
 */
function baseEnv(): NodeJS.ProcessEnv {
  const { KAFKA_BROKERS: _b, KAFKA_TOPIC: _t, KAFKA_PARTITIONS: _p, EVENTSTORE_URL: _e, DATABASE_URL: _d, ...rest } = process.env;
  for (const name of Object.keys(rest)) if (name.startsWith('SEARCH_')) delete rest[name];
  return rest;
}

export interface RunningServer {
  /** The API's address ('' for a process without one, a worker). */
  url: string;
  pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM and wait for a clean exit (code 0 expected). */
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

/** Runs a script of this repository (TypeScript, through tsx) to completion. */
export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, script), ...args], { cwd: ROOT, env: { ...baseEnv(), ...env } });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, output }));
  });
}

const START_TIMEOUT_MS = 120_000;

/**
 * Starts `services/process/main.ts` (every role in one process), or another entry point, and waits
 * for its "API listening" log line (or `ready`, the message of another line: a worker's).
 */
export function startServer(env: NodeJS.ProcessEnv, script = 'services/process/main.ts', ready = 'API listening'): Promise<RunningServer> {
  const child: ChildProcess = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, script)], {
    cwd: ROOT,
    env: { ...baseEnv(), PORT: '0', LOG_LEVEL: 'info', ...env },
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    // 120 s: an embedded start runs initdb first, which took over 60 s on a loaded 2-core machine.
    // A start given up on is stopped (SIGTERM: it stops its embedded PostgreSQL too; SIGKILL 10 s
    // later), so it does not go on loading the machine for the rest of the run.
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      const hard = setTimeout(() => child.kill('SIGKILL'), 10_000);
      void exited.then(() => clearTimeout(hard));
      reject(new Error(`server did not start in time (120 s), stopped:\n${output}`));
    }, START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const line of chunk.toString().split('\n')) {
        if (!line.includes(`"${ready}"`)) continue;
        const { address } = JSON.parse(line);
        clearTimeout(timer);
        resolve({
          url: address ? `http://127.0.0.1:${address.port}` : '',
          pid: child.pid!,
          output: () => output,
          async stop() {
            child.kill('SIGTERM');
            return exited;
          },
          async kill() {
            child.kill('SIGKILL');
            await exited;
          },
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (output += d));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
}

/** A small fetch wrapper that keeps a cookie jar of one session cookie and sends Origin as a browser's page would. */
export class HttpClient {
  cookie: string | null = null;
  constructor(private readonly base: string, public bearer: string | null = null) {}

  async request(method: string, path: string, body?: unknown, raw?: string): Promise<{ status: number; body: any; headers: Headers }> {
    const headers: Record<string, string> = {};
    if (body !== undefined || raw !== undefined) headers['content-type'] = 'application/json';
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    if (this.cookie) headers.cookie = this.cookie;
    // What a browser sends with an unsafe request of its own page (the CSRF check reads it).
    if (!['GET', 'HEAD', 'OPTIONS'].includes(method.toUpperCase())) headers.origin = new URL(this.base).origin;
    const res = await fetch(this.base + path, { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) this.cookie = setCookie.split(';')[0];
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  post(path: string, body?: unknown) {
    return this.request('POST', path, body);
  }
  get(path: string) {
    return this.request('GET', path);
  }
}

/** A client of `base` signed in as `email` (its session cookie kept); the test fails if the sign-in is refused. */
export async function signIn(base: string, email: string, password: string): Promise<HttpClient> {
  const client = new HttpClient(base);
  const res = await client.post('/api/auth/login', { email, password });
  if (res.status !== 200) throw new Error(`signing in as ${email} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return client;
}

/** A new API token of the signed-in `client` (named `name`); the test fails if it is refused. */
export async function newToken(client: HttpClient, name: string, expiresAt?: string): Promise<{ token: string; id: number }> {
  const res = await client.post('/api/tokens', { name, ...(expiresAt && { expiresAt }) });
  if (res.status !== 201) throw new Error(`creating token ${name} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return { token: res.body.token as string, id: res.body.id as number };
}
