import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The processes the chaos run starts, and what must be undone when it ends however it ends: every
 * child is SIGKILLed and every cleanup (a broker or search node stopped, a database dropped) runs
 * on exit, SIGINT and SIGTERM (synchronously: an `exit` handler cannot wait).
 */

export const ROOT = path.join(__dirname, '..', '..');

const children = new Set<ChildProcess>();
const cleanups: Array<{ name: string; run: () => void }> = [];
let hooked = false;

function cleanUpNow(): void {
  for (const child of children) {
    try {
      child.kill('SIGKILL');
    } catch { /* gone already */ }
  }
  children.clear();
  while (cleanups.length > 0) {
    const { name, run } = cleanups.pop()!;
    try {
      run();
    } catch (err) {
      console.error(`chaos: cleanup "${name}" failed: ${(err as Error).message}`);
    }
  }
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', cleanUpNow);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`chaos: ${signal}: stopping every process it started`);
      cleanUpNow();
      process.exit(130);
    });
  }
}

/**
 * Registers a synchronous cleanup, run at exit in reverse order; answers a function that runs it
 * now (once), or with `{ skip: true }` forgets it (what it would remove is kept).
 */
export function onCleanup(name: string, run: () => void): (opts?: { skip?: boolean }) => void {
  hook();
  const entry = { name, run };
  cleanups.push(entry);
  return (opts = {}) => {
    const i = cleanups.indexOf(entry);
    if (i < 0) return;
    cleanups.splice(i, 1);
    if (!opts.skip) run();
  };
}

/** Kills every child and runs every cleanup now (the end of a run). */
export function cleanUpAll(): void {
  cleanUpNow();
}

/** Runs a shell script of the repository to completion (its output appended to `log`); throws with its tail when it fails. */
export function runShell(script: string, args: string[], env: NodeJS.ProcessEnv, log: string, timeoutMs = 300_000): Promise<void> {
  hook();
  return new Promise((resolve, reject) => {
    const out = fs.openSync(log, 'a');
    const child = spawn('bash', [path.join(ROOT, script), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
    children.add(child);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      fs.closeSync(out);
      if (code === 0) return resolve();
      const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-15).join('\n');
      reject(new Error(`${script} ${args.join(' ')} exited with ${code ?? signal}:\n${tail}`));
    });
  });
}

/** The same, synchronously (for cleanups at exit). */
export function runShellSync(script: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): void {
  spawnSync('bash', [path.join(ROOT, script), ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'ignore', timeout: timeoutMs });
}

/** One started role of the service (a TypeScript entry point run through tsx), its output in a log file. */
export class ServiceProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  url = '';
  starts = 0;

  constructor(readonly name: string, readonly script: string, private readonly env: NodeJS.ProcessEnv, readonly logFile: string, private readonly readyLine: string | null) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** Starts it and, when it has a ready line, waits for it (the API's carries its address). */
  start(timeoutMs = 120_000): Promise<void> {
    hook();
    if (this.child) throw new Error(`${this.name} is already running`);
    this.starts++;
    const out = fs.openSync(this.logFile, 'a');
    fs.writeSync(out, `\n===== chaos: start ${this.starts} of ${this.name} at ${new Date().toISOString()} =====\n`);
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, this.script)], {
      cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', out],
    });
    this.child = child;
    children.add(child);
    this.exited = new Promise((resolve) => child.on('exit', () => {
      children.delete(child);
      if (this.child === child) this.child = null;
      fs.closeSync(out);
      resolve();
    }));
    let buffered = '';
    let ready = this.readyLine === null;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not log "${this.readyLine}" within ${timeoutMs} ms (log: ${this.logFile})`)), timeoutMs);
      if (ready) {
        clearTimeout(timer);
        resolve();
      }
      child.stdout!.on('data', (chunk: Buffer) => {
        try {
          fs.writeSync(out, chunk);
        } catch { /* closed at exit */ }
        if (ready) return;
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        for (const line of lines) {
          if (!line.includes(`"${this.readyLine}"`)) continue;
          ready = true;
          const { address } = JSON.parse(line) as { address?: { port: number } };
          if (address) this.url = `http://127.0.0.1:${address.port}`;
          clearTimeout(timer);
          resolve();
        }
      });
      void this.exited.then(() => {
        if (ready) return;
        clearTimeout(timer);
        reject(new Error(`${this.name} exited before it was ready (log: ${this.logFile}):\n${this.tail()}`));
      });
    });
  }

  /** The last lines of its log. */
  tail(lines = 20): string {
    return fs.readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
  }

  /** SIGKILL, and wait until it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (a clean stop), SIGKILL after `ms`. */
  async stop(ms = 15_000): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    await this.exited;
    clearTimeout(timer);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
