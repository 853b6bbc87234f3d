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
  /** The owners of the leases that have not expired. */
  owners(): Promise<string[]>;
  /**
   * Ends every lease of these owners now (owners known to be gone): their jobs are taken over at
   * the next poll, not once the leases run out. Answers how many leases it ended.
   */
  expire(owners: readonly string[]): Promise<number>;
}

/**
 * A lease owner name: `<host>:<pid>:<random>`. The random part tells apart two runners of one
 * process, and a process that reuses the pid of one that died on the same host.
 */
export function newLeaseOwner(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** Whether a process of this host runs (one of another user's answers EPERM: it runs). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Of these lease owners (newLeaseOwner's names), those that were processes of this host and no
 * longer run. Only for a database every worker reaches on this host (the embedded PostgreSQL
 * listens on loopback alone), where a pid names the same process for all of them; a pid taken
 * again by another process counts as running (its lease then runs out as any other).
 */
export function goneOwnersOfThisHost(owners: readonly string[], runs: (pid: number) => boolean = processRuns, host = os.hostname()): string[] {
  return owners.filter((owner) => {
    const m = /^(.*):(\d+):[0-9a-f]+$/.exec(owner);
    return m !== null && m[1] === host && Number(m[2]) !== process.pid && !runs(Number(m[2]));
  });
}
