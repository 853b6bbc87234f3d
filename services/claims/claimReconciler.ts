import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { systemMetadata } from '../shared/context';
import type { EventStore } from '../shared/eventStore';
import { type RetryPolicy, RetryBudgetSpent, budgetOf, describeError, isTransient } from '../shared/faults';
import { activeClaim, lastEventOf, ownerAppeared, releaseClaim } from './uniqueClaims';

/**
 * Releases unique-value claims whose owner never appeared: a writer stopped (killed, its database
 * gone) between appending the claim and appending the row it was for, so the value would stay
 * taken by nobody. The `claims` projection lists claims still waiting for their owner; a claim
 * older than the grace period is checked against the store itself: an owner found there settles it,
 * no owner releases it (UniqueValueReleased, reason owner-never-appeared, at the claim's revision).
 */

export interface ClaimReconcilerDeps { store: EventStore; knex: Knex; logger: Logger }

export interface ReconcileOptions {
  now: Date;
  /** How long a claim's owner may take to appear. */
  graceMs: number;
  /** At most this many claims per pass. */
  batchSize: number;
  /** Claim streams to leave alone (their last attempt failed for good). */
  skip?: ReadonlySet<string>;
  /** Told of a claim whose check failed for a reason that is not transient; the pass goes on. */
  onClaimFailed?: (streamId: string, error: unknown) => void;
}

export interface ReconcileResult { released: number; settled: number; unchanged: number }

interface PendingRow { stream_id: string; scope: string; value: string; owner_id: number; revision: string; claimed_at: Date }

/** One pass over the claims pending longer than the grace period, oldest first. Transient store or database errors are thrown. */
export async function reconcileClaims(deps: ClaimReconcilerDeps, opts: ReconcileOptions): Promise<ReconcileResult> {
  const result: ReconcileResult = { released: 0, settled: 0, unchanged: 0 };
  const rows: PendingRow[] = await deps.knex('unique_claims')
    .where('state', 'pending').andWhere('claimed_at', '<', new Date(opts.now.getTime() - opts.graceMs))
    .whereNotIn('stream_id', [...(opts.skip ?? [])])
    .orderBy([{ column: 'claimed_at' }, { column: 'stream_id' }]).limit(opts.batchSize)
    .select('stream_id', 'scope', 'value', 'owner_id', 'revision', 'claimed_at');
  for (const row of rows) {
    try {
      const outcome = await reconcileOne(deps, row);
      result[outcome]++;
    } catch (error) {
      if (isTransient(error) || !opts.onClaimFailed) throw error;
      opts.onClaimFailed(row.stream_id, error);
    }
  }
  return result;
}

async function reconcileOne(deps: ClaimReconcilerDeps, row: PendingRow): Promise<keyof ReconcileResult> {
  const claim = activeClaim(await lastEventOf(deps.store, row.stream_id));
  // Released or claimed again since: the projection has not applied it yet, and will.
  if (!claim || claim.revision !== BigInt(row.revision) || claim.ownerId !== row.owner_id) return 'unchanged';
  const held = { streamId: row.stream_id, scope: claim.scope, value: claim.value, ownerId: claim.ownerId, revision: claim.revision };
  if (await ownerAppeared(deps.store, held)) return settle(deps, row);
  const outcome = await releaseClaim(deps.store, held, 'owner-never-appeared', systemMetadata('claim-reconciler'));
  if (outcome === 'owner-appeared') return settle(deps, row);
  if (outcome === 'claim-moved-on') return 'unchanged';
  deps.logger.info({ claimStream: row.stream_id, scope: row.scope, ownerId: row.owner_id, claimedAt: row.claimed_at },
    'released a unique value whose owner never appeared');
  return 'released';
}

/** The owner exists: the claim needs no more checks (the projection settles most claims itself, when it sees the owner begin). */
async function settle(deps: ClaimReconcilerDeps, row: PendingRow): Promise<'settled'> {
  await deps.knex('unique_claims').where({ stream_id: row.stream_id, revision: row.revision, state: 'pending' }).update({ state: 'settled' });
  return 'settled';
}

export interface ClaimReconcilerSettings {
  /** Pause between passes (default 60 s). */
  intervalMs?: number;
  /** How long a claim's owner may take to appear before its claim is released (default 60 s, as services/entities honours a claim). */
  graceMs?: number;
  /** Claims checked per pass (default 100). */
  batchSize?: number;
  /** The retry budget of a run of transient failures (RETRY_BUDGET_MS). */
  retry?: RetryPolicy;
}

export type ClaimReconcilerState = 'running' | 'retrying' | 'failed' | 'stopped';

export interface ClaimReconciler {
  status(): { state: ClaimReconcilerState; lastError: string | null; released: number };
  stop(): Promise<void>;
}

export const CLAIM_RECONCILER_DEFAULTS = { intervalMs: 60_000, graceMs: 60_000, batchSize: 100 } as const;

/**
 * Runs a pass every `intervalMs` in the background, each bounded by `batchSize`. A transient
 * failure (the database away) is retried with capped backoff within the retry budget; when the
 * budget is spent, or anything else fails the pass, the reconciler logs it once and stops until
 * the process restarts. A single claim whose check fails for good is logged once and left alone.
 */
export function startClaimReconciler(deps: ClaimReconcilerDeps, settings: ClaimReconcilerSettings = {}): ClaimReconciler {
  const { intervalMs, graceMs, batchSize } = { ...CLAIM_RECONCILER_DEFAULTS, ...settings };
  const log = deps.logger;
  const budget = budgetOf(settings.retry, { firstMs: 1_000, maxMs: 60_000 });
  const failedClaims = new Set<string>();
  let state: ClaimReconcilerState = 'running';
  let lastError: string | null = null;
  let released = 0;
  let timer: NodeJS.Timeout | null = null;
  let pass: Promise<void> | null = null;

  const schedule = (ms: number) => {
    if (state === 'stopped' || state === 'failed') return;
    timer = setTimeout(() => {
      timer = null;
      pass = runPass().finally(() => (pass = null));
    }, ms);
    timer.unref();
  };

  async function runPass(): Promise<void> {
    try {
      const result = await reconcileClaims(deps, {
        now: new Date(), graceMs, batchSize, skip: failedClaims,
        onClaimFailed: (streamId, error) => {
          failedClaims.add(streamId);
          log.error({ err: error, claimStream: streamId }, 'cannot reconcile a unique-value claim; left alone until restarted');
        },
      });
      budget.reset();
      released += result.released;
      if (state === 'retrying') state = 'running';
      lastError = null;
      if (result.released > 0 || result.settled > 0) log.info(result, 'unique-value claims reconciled');
      schedule(intervalMs);
    } catch (error) {
      if (state === 'stopped') return;
      lastError = describeError(error);
      const pause = isTransient(error) ? budget.next() : null;
      if (pause === null) {
        state = 'failed';
        log.error({ err: isTransient(error) ? new RetryBudgetSpent(error, budget) : error }, 'claim reconciler failed; stopped until restarted');
        return;
      }
      state = 'retrying';
      log.warn({ err: error, backoffMs: pause, failures: budget.failures }, 'claim reconciler pass failed; retrying');
      schedule(pause);
    }
  }

  schedule(intervalMs);
  return {
    status: () => ({ state, lastError, released }),
    async stop() {
      state = 'stopped';
      if (timer) clearTimeout(timer);
      await pass;
    },
  };
}
