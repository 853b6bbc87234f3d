/** The relay role alone (docker-compose `relay`): publishes the event store's log to Kafka. Needs KAFKA_BROKERS. */
import { loadConfig } from '../config';
import { applyHeapGrowth } from '../heap';
import { createLogger, logFatal } from '../../../infra/logger';
import { openPlatform } from '../platform';
import { openKafka, runRelay } from '../roles';
import { onShutdown } from '../shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  applyHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel).child({ role: 'relay' });
  if (!config.kafka) throw new Error('the relay needs KAFKA_BROKERS');
  const platform = await openPlatform(config, logger);
  // A relay that failed for good leaves nothing for this process to do: it exits non-zero, so
  // whatever supervises it sees the failure (the reason is in the log line before).
  const relay = runRelay(platform, logger, (await openKafka(config, logger))!, { budgetMs: config.retryBudgetMs }, () => void stop('relay failed', 1));
  const stop = onShutdown(logger, [{ name: 'relay', stop: () => relay.stop() }, { name: 'platform', stop: () => platform.close() }], config.shutdownTimeoutMs);
  if (relay.status().state === 'failed') void stop('relay failed', 1);
}

main().catch((err) => {
  logFatal('cannot start', err);
  process.exit(1);
});
