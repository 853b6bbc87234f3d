/** The projector role alone (docker-compose `projector`): keeps the read models up to date, from Kafka when KAFKA_BROKERS is set. */
import { loadConfig } from '../config';
import { applyHeapGrowth } from '../heap';
import { createLogger, logFatal } from '../../../infra/logger';
import { openPlatform } from '../platform';
import { openKafka, runProjector } from '../roles';
import { onShutdown } from '../shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  applyHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel).child({ role: 'projector' });
  const platform = await openPlatform(config, logger);
  // Once every projection (and the statistics worker) has failed for good this process has nothing
  // left to do: it exits non-zero, so whatever supervises it sees the failure. While one still runs, it goes on.
  const allFailed = () => [...projector.status(), projector.statistics()].every((s) => s.state === 'failed');
  const projector = runProjector(platform, logger, await openKafka(config, logger), { budgetMs: config.retryBudgetMs }, () => {
    if (allFailed()) void stop('every projection failed', 1);
  });
  const stop = onShutdown(logger, [{ name: 'projector', stop: () => projector.stop() }, { name: 'platform', stop: () => platform.close() }], config.shutdownTimeoutMs);
  if (allFailed()) void stop('every projection failed', 1);
}

main().catch((err) => {
  logFatal('cannot start', err);
  process.exit(1);
});
