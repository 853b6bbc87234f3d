/**
 * `npm start`: every role in one process on embedded defaults (embedded PostgreSQL under DATA_DIR,
 * PostgreSQL event store, direct transport, PostgreSQL search), or on DATABASE_URL / EVENTSTORE_URL /
 * KAFKA_BROKERS / SEARCH_URL when set (with Kafka, the relay runs here too and projections consume from the topic).
 */
import { loadConfig } from './config';
import { applyHeapGrowth } from './heap';
import { createLogger, logFatal } from '../../infra/logger';
import { openPlatform } from './platform';
import { checkpointKeyOf, indexerReadiness, openKafka, projectorReadiness, relayReadiness, runApi, runIndexer, runProjector, runRelay, runWorker } from './roles';
import { connectSearch } from './searchSettings';
import { onShutdown } from './shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  applyHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel);
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  const platform = await openPlatform(config, logger, { poolSize: 20 });
  const link = await openKafka(config, logger);
  const retry = { budgetMs: config.retryBudgetMs };
  const relay = link && runRelay(platform, logger, link, retry);
  const projector = runProjector(platform, logger, link, retry);
  const search = await connectSearch(config, platform, logger, { retry });
  const indexer = runIndexer(platform, logger, link, retry, search.connection, config.search);
  // One worker runs here (docker-compose runs them as a service of their own).
  const worker = await runWorker(config, platform, logger, checkpointKeyOf(link));
  const readiness = [...projectorReadiness(projector, platform), ...(relay ? [relayReadiness(relay)] : []), indexerReadiness(indexer, platform.knex), worker.readiness];
  const api = await runApi(config, platform, logger, readiness, checkpointKeyOf(link), { connection: search.connection, settings: search.settings, link }, () => worker.runner.wake());
  onShutdown(logger, [
    { name: 'api', stop: () => api.stop() }, { name: 'worker', stop: () => worker.stop() }, { name: 'relay', stop: async () => relay?.stop() },
    { name: 'indexer', stop: () => indexer.stop() }, { name: 'projector', stop: () => projector.stop() }, { name: 'search', stop: () => search.close() },
    { name: 'platform', stop: () => platform.close() },
  ], config.shutdownTimeoutMs);
}

main().catch((err) => {
  logFatal('cannot start', err);
  process.exit(1);
});
