/** The API role alone (docker-compose `api`): projections run in the `projector` role. */
import { loadConfig } from '../config';
import { createLogger } from '../../infra/logger';
import { openPlatform } from '../platform';
import { projectorReadiness, runApi } from '../roles';
import { onShutdown } from '../shutdown';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel).child({ role: 'api' });
  const platform = await openPlatform(config, logger, { poolSize: 20 });
  const api = await runApi(config, platform, logger, projectorReadiness(null, platform));
  onShutdown(logger, [() => api.stop(), () => platform.close()]);
}

main().catch((err) => {
  console.error(JSON.stringify({ level: 'fatal', msg: 'cannot start', err: { message: err?.message, stack: err?.stack } }));
  process.exit(1);
});
