/** The API role alone (docker-compose `api`): projections run in the `projector` role, the search indexer in `indexer`. */
import { loadConfig } from '../config';
import { applyHeapGrowth } from '../heap';
import { createLogger, logFatal } from '../../../infra/logger';
import { openPlatform } from '../platform';
import { checkpointKeyOf, openKafka, projectorReadiness, runApi } from '../roles';
import { connectSearch } from '../searchSettings';
import { onShutdown } from '../shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  applyHeapGrowth(config.heapGrowthPercent);
  const logger = createLogger(config.logLevel).child({ role: 'api' });
  const platform = await openPlatform(config, logger, { poolSize: 20 });
  const link = await openKafka(config, logger);
  const search = await connectSearch(config, platform, logger);
  const api = await runApi(config, platform, logger, projectorReadiness(null, platform), checkpointKeyOf(link), { connection: search.connection, settings: search.settings, link });
  onShutdown(logger, [{ name: 'api', stop: () => api.stop() }, { name: 'search', stop: () => search.close() }, { name: 'platform', stop: () => platform.close() }], config.shutdownTimeoutMs);
}

main().catch((err) => {
  logFatal('cannot start', err);
  process.exit(1);
});
