/**
 * The indexer role alone (docker-compose `indexer`): keeps the search engine current, following the
 * event store directly, or its own Kafka consumer group when KAFKA_BROKERS is set.
 */
import { loadConfig } from '../config';
import { applyHeapGrowth } from '../heap';
import { createLogger, logFatal } from '../../../infra/logger';
import { openPlatform } from '../platform';
import { openKafka, runIndexer } from '../roles';
import { connectSearch } from '../searchSettings';
import { onShutdown } from '../shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  applyHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel).child({ role: 'indexer' });
  const platform = await openPlatform(config, logger);
  const retry = { budgetMs: config.retryBudgetMs };
  const search = await connectSearch(config, platform, logger, { retry });
  // An indexer that failed for good has nothing left to do: it exits non-zero, so whatever
  // supervises it sees the failure.
  const indexer = runIndexer(platform, logger, await openKafka(config, logger), retry, search.connection, config.search, () => void stop('the search indexer failed', 1));
  const stop = onShutdown(logger, [{ name: 'indexer', stop: () => indexer.stop() }, { name: 'search', stop: () => search.close() }, { name: 'platform', stop: () => platform.close() }], config.shutdownTimeoutMs);
}

main().catch((err) => {
  logFatal('cannot start', err);
  process.exit(1);
});
