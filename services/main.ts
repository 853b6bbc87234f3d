/**
 * `npm start`: every role in one process on embedded defaults (embedded PostgreSQL under DATA_DIR,
 * PostgreSQL event store, direct transport), or on DATABASE_URL / EVENTSTORE_URL when set.
 */
import { loadConfig } from './config';
import { createLogger } from '../infra/logger';
import { openPlatform } from './platform';
import { projectorReadiness, runApi, runProjector } from './roles';
import { onShutdown } from './shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));
  const platform = await openPlatform(config, logger, { poolSize: 20 });
  const projector = runProjector(platform, logger);
  const api = await runApi(config, platform, logger, projectorReadiness(projector, platform));
  onShutdown(logger, [() => api.stop(), () => projector.stop(), () => platform.close()]);
}

main().catch((err) => {
  console.error(JSON.stringify({ level: 'fatal', msg: 'cannot start', err: { message: err?.message, stack: err?.stack } }));
  process.exit(1);
});
