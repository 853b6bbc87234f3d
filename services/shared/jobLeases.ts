import { randomBytes } from 'node:crypto';
import os from 'node:os';

/**
 * The port of job leases: which worker runs a background job (an import, a migration) now. A lease
 * expires unless its holder renews it, so a job whose worker died is taken over by another once
 * the lease runs out. Expiry is judged by the store's clock, never the caller's: workers on
 * machines with skewed clocks agree on who holds what. Implemented by infra/postgres/jobLeases.ts;
 * services/process/worker/jobRunner.ts acquires, renews and releases them.
 */
export interface JobLeases {
  /** Takes the lease of (kind, jobId) for `owner` for ttlMs, unless another owner holds one that has not expired. True: taken (or already ours, renewed). */
  acquire(kind: string, jobId: number, owner: string, ttlMs: number): Promise<boolean>;
  /** Extends our lease; false when it is no longer ours (expired and taken by another). */
  renew(kind: string, jobId: number, owner: string, ttlMs: number): Promise<boolean>;
  release(kind: string, jobId: number, owner: string): Promise<void>;
  /** Who holds it now (null when free or expired): for status pages and tests. */
  holder(kind: string, jobId: number): Promise<{ owner: string; expiresAt: Date } | null>;
}

/**
 * A lease owner name: `<host>:<pid>:<random>`. The random part tells apart two runners of one
 * process, and a process that reuses the pid of one that died on the same host.
 */
export function newLeaseOwner(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}
