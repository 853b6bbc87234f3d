/**
 * `npm run rebuild -- <projection> [<projection> ...]` or `npm run rebuild -- --all`: rebuilds read
 * models from position 0. On the embedded default, stop the server first (same DATA_DIR); with
 * DATABASE_URL it runs against that server.
 *
 * `npm run rebuild -- search` builds the search indices again side by side (a new version behind
 * the aliases, filled from the read model, then switched to; projections/search/rebuild.ts): search
 * keeps answering from the old version meanwhile, and a running indexer moves to the new one. It
 * refuses to start while a reindex job builds a version (one build at a time).
 * `--all` leaves search out (it is rebuilt from the read model: name it after the read model).
 */
import { loadConfig } from '../services/process/config';
import { createLogger, logFatal } from '../infra/logger';
import { openPlatform } from '../services/process/platform';
import { ALL_PROJECTIONS, projectionByName } from '../projections';
import { rebuildProjection } from '../projections/runtime/rebuild';
import type { Projection } from '../projections/runtime/projection';
import { rebuildSearch } from '../projections/search/rebuild';
import { kafkaReadModelCheckpoints } from '../projections/search/indexer';
import { openSearchEngine } from '../infra/search';
import { openKafka } from '../services/process/roles';
import type { Config } from '../services/process/config';
import type { Logger } from 'pino';
import type { Platform } from '../services/process/platform';

const SEARCH = 'search';

function usage(message: string): never {
  console.error(`${message}\nusage: npm run rebuild -- <projection>... | --all\nprojections: ${[...ALL_PROJECTIONS.map((p) => p.name), SEARCH].join(', ')}`);
  process.exit(2);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length === 0) usage('name a projection to rebuild');
  const search = args.includes(SEARCH);
  const projections: Projection[] = args.includes('--all')
    ? [...ALL_PROJECTIONS]
    : args.filter((name) => name !== SEARCH).map((name) => projectionByName(name) ?? usage(`unknown projection "${name}"`));
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
      if (result.parked > 0) {
        logger.warn({ projection: projection.name, parked: result.parked },
          'events the projection cannot apply were parked, and everything else rebuilt: GET /api/admin/parked-events lists them; retry them after a fix (docs/architecture.md)');
      }
    }
    if (search) await rebuildSearchIndices(config, logger, platform);
  } finally {
    await platform.close();
  }
}

/** The search indices, side by side: on Kafka, the new version starts from the read model's committed offsets. */
async function rebuildSearchIndices(config: Config, logger: Logger, platform: Platform): Promise<void> {
  const engine = await openSearchEngine(config.search, { knex: platform.knex, logger });
  const link = await openKafka(config, logger);
  try {
    let lastReport = Date.now();
    const result = await rebuildSearch({
      engine, knex: platform.knex, logger, bulkSize: config.search.bulkSize, lock: 'refuse',
      ...(link && { checkpointKeys: () => kafkaReadModelCheckpoints(link.kafka, link.topic, platform.knex) }),
      onProgress: (type, documents) => {
        if (Date.now() - lastReport < 2000) return;
        lastReport = Date.now();
        logger.info({ projection: SEARCH, type, documents }, 'rebuilding');
      },
    });
    logger.info({ projection: SEARCH, ...result }, 'rebuilt');
  } finally {
    await engine.close();
  }
}

main().catch((err) => {
  logFatal('rebuild failed', err);
  process.exit(1);
});
