/**
 * `npm run rebuild -- <projection> [<projection> ...]` or `npm run rebuild -- --all`: rebuilds read
 * models from position 0. On the embedded default, stop the server first (same DATA_DIR); with
 * DATABASE_URL it runs against that server.
 */
import { loadConfig } from '../services/process/config';
import { createLogger, logFatal } from '../infra/logger';
import { openPlatform } from '../services/process/platform';
import { ALL_PROJECTIONS, projectionByName } from '../projections';
import { rebuildProjection } from '../projections/runtime/rebuild';
import type { Projection } from '../projections/runtime/projection';

function usage(message: string): never {
  console.error(`${message}\nusage: npm run rebuild -- <projection>... | --all\nprojections: ${ALL_PROJECTIONS.map((p) => p.name).join(', ')}`);
  process.exit(2);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length === 0) usage('name a projection to rebuild');
  const projections: Projection[] = args.includes('--all')
    ? [...ALL_PROJECTIONS]
    : args.map((name) => projectionByName(name) ?? usage(`unknown projection "${name}"`));
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const platform = await openPlatform(config, logger);
  try {
    for (const projection of projections) {
      let lastReport = Date.now();
      const result = await rebuildProjection(projection, {
        store: platform.store,
        knex: platform.knex,
        onProgress: (events, position) => {
          if (Date.now() - lastReport < 2000) return;
          lastReport = Date.now();
          logger.info({ projection: projection.name, events, position }, 'rebuilding');
        },
      });
      logger.info({ ...result, eventsPerSecond: Math.round(result.events / Math.max(result.seconds, 1e-9)) }, 'rebuilt');
    }
  } finally {
    await platform.close();
  }
}

main().catch((err) => {
  logFatal('rebuild failed', err);
  process.exit(1);
});
