import type { Logger } from 'pino';
import type { SearchMetrics } from '../search/metrics';
import type { CommandDeps } from '../shared/commandBus';
import type { SearchEngine } from '../shared/search';
import type { SearchConnectionControl } from './connection';
import type { ConnectionSettingsStore } from './connectionSettings';

/** What the reindex routes ask of the worker: to look for jobs now, and to drop the version of a full job cancelled while it did not run. */
export interface ReindexWorker {
  wake(): void;
  cancelled(jobId: number): void;
  /** batchSize when the request gives none (SEARCH_BULK_SIZE). */
  readonly defaultBatchSize: number;
}

/**
 * What the search administration routes (/api/admin/search/*) need. The composition root
 * (services/process/roles.ts) builds it; tests build their own over a throw-away database.
 */
export interface SearchAdminDeps extends CommandDeps {
  logger: Logger;
  /** The engine in use now; throws SearchUnavailable while none answers (503 search-unavailable). */
  engine(): SearchEngine;
  /** The process's search connection: status, test, switch (services/process/searchConnection.ts). */
  connection: SearchConnectionControl;
  /** The connection settings administrators saved, credentials sealed (search_connection_settings). */
  connectionSettings: ConnectionSettingsStore;
  /**
   * On Kafka: the partition a stream's events go to, for the indices' lag (the indexer's
   * `search@<partition>` checkpoints). Absent on the direct transport.
   */
  indexerPartitionOf?: (streamId: string) => number;
  /** The search API's counters in this process (the same recorder the search router counts in): GET /api/admin/search/metrics. */
  searchMetrics: SearchMetrics;
  /** The worker that runs reindex jobs (reindex.saga.ts): woken when a job is requested, resumed or cancelled. */
  reindex: ReindexWorker;
}

/** What the application is given beyond its own command dependencies and logger. */
export type SearchAdminExtras = Omit<SearchAdminDeps, keyof CommandDeps | 'logger'>;
