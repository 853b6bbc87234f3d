/**
 * `npm run replay -- <projection>... | --all --schema <name> [--until <position|time>] [--replace]`:
 * builds projections as of a point of the log into a PostgreSQL schema of their own, for SQL
 * analysis, without touching the live read model (projections/runtime/replay.ts). `--until` is a
 * position or an ISO 8601 time with a zone (the last position recorded at or before it); absent:
 * the head. Projections that read each other's tables (the read model reads users) belong
 * together: `--all` builds every one. On the embedded default, stop the server first (same
 * DATA_DIR); with DATABASE_URL it runs beside a running server.
 */
import { createLogger, logFatal } from '../infra/logger';
import { ALL_PROJECTIONS, projectionByName } from '../projections';
import { ReplayError, type ReplayPoint, replayIntoSchema } from '../projections/runtime/replay';
import { loadConfig } from '../services/process/config';
import { openPlatform } from '../services/process/platform';
import { isIsoTime } from '../services/shared/validate';

const USAGE = `usage: npm run replay -- <projection>... | --all --schema <name> [--until <position|ISO time>] [--replace]
projections: ${ALL_PROJECTIONS.map((p) => p.name).join(', ')}`;

function usage(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function pointOf(raw: string): ReplayPoint {
  if (/^(0|[1-9][0-9]{0,18})$/.test(raw)) return { position: raw };
  if (isIsoTime(raw)) return { time: new Date(raw).toISOString() };
  return usage(`--until "${raw}" is neither a position nor an ISO 8601 time with a zone (2026-06-01T12:00:00Z)`);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(USAGE);
    return;
  }
  let schema: string | null = null;
  let until: ReplayPoint | null = null;
  let replace = false;
  let all = false;
  const names: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--schema' || arg === '--until') {
      const value = args[++i];
      if (value === undefined || value.startsWith('--')) usage(`${arg} needs a value`);
      if (arg === '--schema') schema = value;
      else until = pointOf(value);
    } else if (arg === '--replace') replace = true;
    else if (arg === '--all') all = true;
    else if (arg.startsWith('--')) usage(`unknown option "${arg}"`);
    else names.push(arg);
  }
  if (schema === null) usage('--schema <name> is required: the schema the replay is built in');
  const projections = all ? [...ALL_PROJECTIONS] : names.map((name) => projectionByName(name) ?? usage(`unknown projection "${name}"`));
  if (projections.length === 0) usage('name a projection to replay, or --all');
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const platform = await openPlatform(config, logger);
  try {
    let lastReport = Date.now();
    const result = await replayIntoSchema(projections, {
      store: platform.store, databaseUrl: platform.databaseUrl, schema, until, replace,
      onProgress: (projection, events, position) => {
        if (Date.now() - lastReport < 2000) return;
        lastReport = Date.now();
        logger.info({ projection, events, position }, 'replaying');
      },
    });
    for (const r of result.projections) logger.info({ ...r, schema: result.schema, until: result.until }, 'replayed');
    console.log(`replayed ${result.projections.map((p) => p.projection).join(', ')} as of position ${result.until} into schema "${result.schema}"`);
  } catch (err) {
    if (err instanceof ReplayError) {
      console.error(err.message);
      process.exitCode = 2;
      return;
    }
    throw err;
  } finally {
    await platform.close();
  }
}

main().catch((err) => {
  logFatal('replay failed', err);
  process.exit(1);
});
