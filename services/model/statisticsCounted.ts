import type { Knex } from 'knex';
import { HttpError } from '../shared/errors';

/** How often a reader waiting for the statistics looks again. */
const POLL_MS = 20;

/**
 * How long a read of statistics waits at least (WRITE_TIMEOUT_MS when longer): the batches a
 * worker counts in one pass may have waited up to STATISTICS_MAX_WAIT_MS (20 s) while a result
 * import kept writing, and counting them takes about as long again.
 */
export const STATISTICS_WAIT_MS = 30_000;

/**
 * Resolves once every batch of the read model that was waiting to be counted into the statistics
 * when it was called has been counted (projections/statisticsQueue.ts; a batch whose counting
 * failed is not waited for): a read of a statistics entity is never behind the runs and results a
 * read made at the same time shows. After `timeoutMs` (no statistics worker running, or one far
 * behind): 503 statistics-behind.
 */
export async function statisticsCounted(knex: Knex, timeoutMs: number): Promise<void> {
  const { rows: [head] } = await knex.raw('SELECT max(id) AS id FROM statistics_pending WHERE failed_at IS NULL');
  if (head.id === null) return;
  // The statistics workers count what waits once a burst of batches pauses; a reader has them count now.
  await knex.raw("SELECT pg_notify('statistics_wanted', '')");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows: [left] } = await knex.raw('SELECT EXISTS (SELECT 1 FROM statistics_pending WHERE id <= ? AND failed_at IS NULL) AS waiting', [head.id]);
    if (!left.waiting) return;
    if (Date.now() > deadline) {
      throw new HttpError(503, 'statistics-behind', `The statistics were not counted up to the runs and results written before this read within ${timeoutMs / 1000} s; try again`, { waitedMs: timeoutMs });
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
