/**
 * The worker role alone (docker-compose `worker`): runs the jobs of the sagas that run long (result
 * imports, the external-tool migration), each taken with a lease so that, with several workers, a job runs once
 * and survives its worker.
 */
import { loadConfig } from '../config';
import { applyHeapGrowth } from '../heap';
import { createLogger, logFatal } from '../../../infra/logger';
import { openPlatform } from '../platform';
import { checkpointKeyOf, openKafka, runWorker } from '../roles';
import { onShutdown } from '../shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  applyHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel).child({ role: 'worker' });
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  const platform = await openPlatform(config, logger);
  const link = await openKafka(config, logger);
  const worker = await runWorker(config, platform, logger, checkpointKeyOf(link));
  onShutdown(logger, [{ name: 'worker', stop: () => worker.stop() }, { name: 'platform', stop: () => platform.close() }], config.shutdownTimeoutMs);
}

main().catch((err) => {
  logFatal('cannot start', err);
  process.exit(1);
});
