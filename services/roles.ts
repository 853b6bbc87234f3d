import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { ALL_PROJECTIONS } from '../projections';
import { CheckpointWatcher } from '../projections/runtime/checkpointWatcher';
import { startProjector, type Projector } from '../projections/runtime/projector';
import { buildApp } from './api/app';
import type { ReadinessCheck } from './api/health.routes';
import type { Config } from './config';
import { bootstrapAdministrator } from './identity/identity.handlers';
import type { Platform } from './platform';
import type { CommandDeps } from './shared/commandBus';
import { systemMetadata } from './shared/context';
import { IdAllocator } from './shared/ids';

/** The projector role (direct transport): every projection follows the global log. */
export function runProjector(platform: Platform, logger: Logger): Projector {
  return startProjector({ store: platform.store, knex: platform.knex, projections: ALL_PROJECTIONS, logger: logger.child({ role: 'projector' }) });
}

export function projectorReadiness(projector: Projector | null, platform: Platform): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [
    { name: 'database', check: async () => (await platform.knex.raw('SELECT 1'), { ok: true }) },
    { name: 'eventStore', check: async () => ({ ok: true, details: { head: await platform.store.headPosition() } }) },
  ];
  if (projector) {
    checks.push({
      name: 'projections',
      check: async () => {
        const status = projector.status();
        const failures = await platform.knex('projection_failures').orderBy('id', 'desc').limit(10)
          .select('projection', 'position', 'event_id as eventId', 'event_type as eventType', 'reason', 'failed_at as failedAt');
        return { ok: status.every((s) => s.state === 'running'), details: { projections: status, recentFailures: failures } };
      },
    });
  }
  return checks;
}

/** The API role: HTTP, commands, read-your-writes through the projections' checkpoints. */
export async function runApi(
  config: Readonly<Config>, platform: Platform, logger: Logger, readiness: ReadinessCheck[],
): Promise<{ server: Server; stop(): Promise<void> }> {
  const watcher = new CheckpointWatcher(platform.knex, platform.databaseUrl, ALL_PROJECTIONS.map((p) => p.name));
  await watcher.start();
  const deps: CommandDeps = {
    store: platform.store, ids: new IdAllocator(platform.store), knex: platform.knex, watcher,
    writeTimeoutMs: config.writeTimeoutMs, clock: () => new Date(),
  };
  if (config.adminEmail && config.adminPassword) {
    const created = await bootstrapAdministrator(deps, { email: config.adminEmail, password: config.adminPassword, name: config.adminName }, systemMetadata('bootstrap'));
    if (created !== null) logger.info({ userId: created, email: config.adminEmail }, 'administrator created');
  }
  const app = buildApp({
    ...deps, logger, pool: platform.pool, ...platform.secrets,
    sessionMaxAgeMs: config.sessionMaxAgeMs, trustProxy: config.trustProxy, readiness,
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  logger.info({ address }, 'API listening');
  return {
    server,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive connections would hold close() open.
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs).unref();
      });
      await watcher.stop();
    },
  };
}
