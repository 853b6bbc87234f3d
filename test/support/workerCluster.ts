import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, type RunningServer } from './server';

/**
 * Two processes on one database and upload directory, as the worker e2e tests run them:
 * `services/process/main.ts` (API, projector and a worker) and a second worker
 * (`services/process/worker/main.ts`), each with its own DATA_DIR. `stop` prints both outputs when
 * the test failed, stops them and removes the temporary directories.
 */
export class WorkerCluster {
  api: RunningServer | null = null;
  worker: RunningServer | null = null;
  private readonly dirs: string[] = [];

  /** A temporary directory, removed by stop(). */
  tmp(name: string): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `testament-${name}-`));
    this.dirs.push(dir);
    return dir;
  }

  /** Starts both; `env` is shared (DATABASE_URL, UPLOAD_DIR, secrets, WORKER_*), DATA_DIR is each one's own. */
  async start(env: NodeJS.ProcessEnv): Promise<{ api: RunningServer; worker: RunningServer }> {
    const api = (this.api = await startServer({ ...env, DATA_DIR: this.tmp('api') }));
    const worker = (this.worker = await startServer({ ...env, DATA_DIR: this.tmp('worker') }, 'services/process/worker/main.ts', 'worker running'));
    return { api, worker };
  }

  /** SIGKILLs the second worker (it is gone: stop() leaves it). */
  async killWorker(): Promise<void> {
    await this.worker?.kill();
    this.worker = null;
  }

  async stop(failed: boolean): Promise<void> {
    if (failed) {
      if (this.api) console.log(this.api.output().slice(-5000));
      if (this.worker) console.log(this.worker.output().slice(-5000));
    }
    await this.worker?.stop();
    await this.api?.stop();
    for (const dir of this.dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}
