import { startAnchoring } from '../integrity/anchors';
import { startChainFollower } from '../../infra/eventstore/chainLedger';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { loadContracts } from '../../contracts/validator';
import { openLocalFileStore } from '../../infra/files/localFileStore';
import { PostgresRateLimitStore } from '../../infra/rateLimit/postgres';
import { createKafka, ensureTopic, partitionOf } from '../../infra/kafka';
import { ALL_PROJECTIONS } from '../../projections';
import { startStatisticsWorker } from '../../projections/statisticsQueue';
import { CheckpointWatcher, directCheckpointKey, type CheckpointKeyOf } from '../../projections/runtime/checkpointWatcher';
import { kafkaCheckpointKey, startKafkaProjector } from '../../projections/runtime/kafkaProjector';
import { startProjector, type ProjectionStatus, type Projector } from '../../projections/runtime/projector';
import { kafkaReadModelCheckpoints, startSearchIndexer, type SearchIndexer, type SearchIndexerStatus } from '../../projections/search/indexer';
import { publishIndexingRate } from '../../projections/search/indexingRate';
import { searchBuilder } from '../../projections/search/rebuild';
import { startRelay, type Relay, type RelayStatus } from './relay/relay';
import { startParkingNotices } from '../parking/notices';
import { parkedSummary } from '../parking/parkedEvents.routes';
import { parkedEventsPort } from '../../projections/runtime/parking';
import type { SearchConnection } from './searchConnection';
import type { ConnectionSettingsStore } from '../searchAdmin/connectionSettings';
import { kafkaCheckpointKeys } from '../search/search.service';
import { SearchMetrics } from '../search/metrics';
import type { SearchEngine, SearchSettings } from '../shared/search';
import { buildApp } from '../api/app';
import type { ReadinessCheck } from '../api/health.routes';
import type { Config } from './config';
import { bootstrapAdministrator } from '../identity/identity.handlers';
import { startClaimReconciler } from '../claims/claimReconciler';
import { seedDefaults } from '../entities/seed';
import { sealClearSecrets } from '../entities/sealClearSecrets';
import { ImportSaga } from '../imports/importJob.saga';
import { DEFAULT_REINDEX_SETTINGS, ReindexSaga } from '../searchAdmin/reindex.saga';
import { StoredFiles } from '../files/storedFiles';
import { type Platform, secretVaultOf } from './platform';
import type { CommandDeps } from '../shared/commandBus';
import { systemMetadata } from '../shared/context';
import type { RetryPolicy } from '../shared/faults';
import { IdAllocator } from '../shared/ids';
import { PostgresJobLeases } from '../../infra/postgres/jobLeases';
import { goneOwnersOfThisHost } from '../shared/jobLeases';
import { DEFAULT_EXTERNAL_IMPORT_SETTINGS, ExternalImportSaga } from '../migration/externalImport.saga';
import { startJobRunner, type JobRunner } from './worker/jobRunner';
import { externalImportKind, resultImportKind } from './worker/kinds';

/** Kafka set-up shared by the roles: the client, and the topic with its real partition count. */
export async function openKafka(config: Readonly<Config>, logger: Logger) {
  if (!config.kafka) return null;
  const kafka = createKafka({ brokers: config.kafka.brokers, clientId: config.kafka.clientId, logger });
  const partitions = await ensureTopic(kafka, config.kafka.topic, config.kafka.partitions);
  return { kafka, topic: config.kafka.topic, partitions };
}
export type KafkaLink = NonNullable<Awaited<ReturnType<typeof openKafka>>>;

/** Which checkpoint holds a stream's events: per projection (direct), per projection and partition (Kafka). */
export function checkpointKeyOf(link: KafkaLink | null): CheckpointKeyOf {
  if (!link) return directCheckpointKey;
  return (projection, streamId) => kafkaCheckpointKey(projection, partitionOf(streamId, link.partitions));
}

/** The projector role: the projections, and the statistics worker beside the read model's (projections/statisticsQueue.ts). */
export interface ProjectorRole extends Projector {
  statistics(): ProjectionStatus;
}

/**
 * The projector role: direct subscriptions to the event store, or one Kafka consumer whose fetches
 * serve every projection; administrators are told of the events they park (services/parking/notices.ts).
 */
export function runProjector(
  platform: Platform, logger: Logger, link: KafkaLink | null, retry: RetryPolicy, onFailed?: (status: ProjectionStatus) => void,
): ProjectorRole {
  const notices = startParkingNotices({ knex: platform.knex, store: platform.store, ids: new IdAllocator(platform.store), clock: () => new Date() }, logger.child({ role: 'parkingNotices' }));
  const onParked = () => notices.wake();
  const projector = link
    ? startKafkaProjector({
      kafka: link.kafka, knex: platform.knex, topic: link.topic, projections: ALL_PROJECTIONS, contracts: loadContracts(), logger, retry, onFailed, onParked,
    })
    : startProjector({ store: platform.store, knex: platform.knex, projections: ALL_PROJECTIONS, logger: logger.child({ role: 'projector' }), retry, onFailed, onParked });
  // The read model's batches queue their statistics; this counts them after each commits.
  const statistics = startStatisticsWorker({ knex: platform.knex, databaseUrl: platform.databaseUrl, logger, budgetMs: retry.budgetMs, onFailed });
  return {
    status: () => projector.status(),
    statistics: () => statistics.status(),
    async stop() {
      await projector.stop();
      await statistics.stop();
      await notices.stop();
    },
  };
}

/** What /readyz and a supervisor see of the indexer role: the engine connection, then the indexer. */
export interface IndexerRole {
  status(): SearchIndexerStatus & { connection: ReturnType<SearchConnection['status']> };
  stop(): Promise<void>;
}

/**
 * The indexer role: once the search engine answers, the search projection follows the log (a
 * subscription, or its own Kafka consumer group). `onFailed`: the connection or the indexer failed for good.
 */
export function runIndexer(
  platform: Platform, logger: Logger, link: KafkaLink | null, retry: RetryPolicy, search: SearchConnection, settings: Readonly<SearchSettings>, onFailed?: () => void,
): IndexerRole {
  let indexer: SearchIndexer | null = null;
  let stopped = false;
  const waiting: SearchIndexerStatus = { state: 'starting', engine: settings.engine, version: null, position: '0', lastError: null, documentsWritten: 0 };
  const status = () => {
    const connection = search.status();
    const own = indexer?.status() ?? { ...waiting, state: connection.state === 'failed' ? 'failed' : 'starting', lastError: connection.lastError };
    return { ...own, connection };
  };
  // The search administration's indexing rate and indexer state, read by the API wherever it runs.
  const rate = publishIndexingRate({ knex: platform.knex, logger: logger.child({ role: 'indexer' }), status });
  const indexerOn = (engine: SearchEngine) => startSearchIndexer({
    engine, knex: platform.knex, store: platform.store, kafka: link, databaseUrl: platform.databaseUrl,
    logger: logger.child({ role: 'indexer' }), retry, bulkSize: settings.bulkSize, onFailed, onIndexed: rate.indexed,
  });
  const started = search.ready().then((engine) => {
    if (stopped) return;
    if (engine === null) return onFailed?.();
    indexer = indexerOn(engine);
  });
  // The connection switched to other settings (an administrator's change): the indexer stops on the
  // old engine and starts on the new one, from its checkpoint there (none: it builds version 1).
  let moving: Promise<void> = Promise.resolve();
  search.onSwitch((engine) => (moving = moving.then(async () => {
    await started;
    if (stopped) return;
    await indexer?.stop();
    indexer = indexerOn(engine);
  })));
  return {
    status,
    async stop() {
      stopped = true;
      await started;
      await moving;
      await indexer?.stop();
      await rate.stop();
    },
  };
}

/**
 * The indexer in /readyz: not ready once failed for good. While the engine is away it reports
 * `retrying` (or `starting`) with the last error but stays ready: the API answers everything except
 * search (503 search-unavailable), and the indexer catches up from its checkpoint when the engine returns.
 * Documents the engine refused (recorded in search_failures, and gone on from) make it `degraded`.
 */
export function indexerReadiness(indexer: IndexerRole, knex: Platform['knex']): ReadinessCheck {
  return { name: 'searchIndexer', check: async () => {
    const status = indexer.status();
    const [{ n }] = status.version === null ? [{ n: 0 }]
      : await knex('search_failures').whereNull('resolved_at').where({ engine: status.engine, version: status.version }).count({ n: '*' });
    const refused = Number(n);
    return { ok: status.state !== 'failed', degraded: refused > 0, details: { ...status, refusedDocuments: refused } };
  } };
}

/** The relay role: event store → Kafka. */
export function runRelay(platform: Platform, logger: Logger, link: KafkaLink, retry: RetryPolicy, onFailed?: (status: RelayStatus) => void): Relay {
  return startRelay({ store: platform.store, knex: platform.knex, kafka: link.kafka, topic: link.topic, logger, retry, onFailed });
}

export function relayReadiness(relay: Relay): ReadinessCheck {
  return { name: 'relay', check: async () => ({ ok: relay.status().state === 'running', details: relay.status() }) };
}

/**
 * The database, the event store and the projections in /readyz. A projection holding parked
 * events (it could not apply them, and went on: docs/architecture.md) is `degraded`: still ready
 * (the service answers; taking it out of rotation would not help), and named with what it holds.
 */
export function projectorReadiness(projector: Projector | ProjectorRole | null, platform: Platform): ReadinessCheck[] {
  const checks: ReadinessCheck[] = [
    { name: 'database', check: async () => (await platform.knex.raw('SELECT 1'), { ok: true }) },
    { name: 'eventStore', check: async () => ({ ok: true, details: { head: await platform.store.headPosition() } }) },
  ];
  if (projector) {
    checks.push({
      name: 'projections',
      check: async () => {
        const parked = await parkedSummary(platform.knex);
        const status = projector.status().map((s) => (s.state === 'running' && parked.some((p) => p.projection === s.name) ? { ...s, state: 'degraded' as const } : s));
        const recentParked = await platform.knex('parked_events').whereNull('resolved_at').whereNot({ kind: 'held' }).orderBy('id', 'desc').limit(10)
          .select('id', 'projection', 'kind', 'position', 'event_id as eventId', 'event_type as eventType', 'stream_id as streamId',
            'kafka_partition as partition', 'kafka_offset as offset', 'error', 'attempts', 'parked_at as parkedAt');
        return {
          ok: status.every((s) => s.state === 'running' || s.state === 'degraded'),
          degraded: parked.length > 0,
          details: { projections: status, parked, recentParked },
        };
      },
    });
  }
  if (projector && 'statistics' in projector) {
    // The statistics worker: batches waiting to be counted, and those whose counting failed (kept, with their error).
    checks.push({
      name: 'statistics',
      check: async () => {
        const status = projector.statistics();
        const { rows: [counts] } = await platform.knex.raw(`SELECT count(*) FILTER (WHERE failed_at IS NULL)::int AS waiting,
          count(*) FILTER (WHERE failed_at IS NOT NULL)::int AS failed FROM statistics_pending`);
        return { ok: status.state === 'running' || status.state === 'failing', degraded: counts.failed > 0, details: { ...status, ...counts } };
      },
    });
  }
  return checks;
}

/** The read-your-writes watcher: not ready once it gave up on its LISTEN connection. */
export function watcherReadiness(watcher: CheckpointWatcher): ReadinessCheck {
  return { name: 'checkpointWatcher', check: async () => ({ ok: watcher.status().state !== 'failed', details: watcher.status() }) };
}

/**
 * The worker role: sagas that run long (result imports, the external-tool migration) taken up by any worker with an
 * expiring, renewed lease (services/process/worker/jobRunner.ts), so a job runs once, and another
 * worker takes it over when its worker dies.
 */
export async function runWorker(
  config: Readonly<Config>, platform: Platform, logger: Logger, keyOf: CheckpointKeyOf = directCheckpointKey,
): Promise<{ runner: JobRunner; readiness: ReadinessCheck; stop(): Promise<void> }> {
  const log = logger.child({ role: 'worker' });
  const watcher = new CheckpointWatcher(
    platform.knex, platform.databaseUrl, ALL_PROJECTIONS.map((p) => p.name), keyOf, { retry: { budgetMs: config.retryBudgetMs }, logger: log.child({ role: 'checkpointWatcher' }) },
  );
  await watcher.start();
  const deps: CommandDeps = {
    store: platform.store, ids: new IdAllocator(platform.store), knex: platform.knex, watcher, writeTimeoutMs: config.writeTimeoutMs, clock: () => new Date(),
    secrets: secretVaultOf(config, platform),
  };
  const files = await openLocalFileStore({ dir: config.uploadDir, logger: log });
  // The result imports' files are stored files (a failed job's are deleted); their sweep runs in the API role.
  const storedFiles = new StoredFiles({
    ...deps, files, logger: log.child({ role: 'files' }),
    settings: { quotaBytes: config.userStorageQuotaBytes, importFileRetentionDays: config.importFileRetentionDays, archiveDir: config.archiveDir },
  });
  const imports = new ImportSaga({ ...deps, files, storedFiles, logger: log.child({ saga: 'resultImport' }), imports: { ...config.imports, retryBudgetMs: config.retryBudgetMs } });
  const e = config.externalImports;
  const external = new ExternalImportSaga({
    ...deps, files, logger: log.child({ saga: 'externalImport' }),
    settings: { ...DEFAULT_EXTERNAL_IMPORT_SETTINGS, retryBudgetMs: config.retryBudgetMs, chunkSize: e.chunkSize, bulkChunkSize: e.bulkChunkSize, keepFiles: e.keepFiles, limits: { maxExpandedBytes: e.maxExpandedBytes, maxCompressionRatio: e.maxCompressionRatio } },
  });
  const leases = new PostgresJobLeases(platform.pool);
  if (config.databaseUrl === null) {
    // The embedded PostgreSQL: every worker runs on this host, so the leases of a process that is
    // gone (killed) end now, and its jobs go on at once rather than after WORKER_LEASE_TTL_MS.
    const gone = goneOwnersOfThisHost(await leases.owners());
    if (gone.length > 0) log.info({ owners: gone, leases: await leases.expire(gone) }, 'ended the job leases of processes that no longer run');
  }
  const runner = startJobRunner({
    leases, logger: log, ...config.worker,
    kinds: [resultImportKind(imports), externalImportKind(external)],
  });
  // EventStoreDB: the log's hash chain is this follower's projection (docs/compliance.md).
  const chain = platform.chainLedger
    ? startChainFollower({ store: platform.adapter, ledger: platform.chainLedger, logger: log.child({ role: 'chainFollower' }), retry: { budgetMs: config.retryBudgetMs } })
    : null;
  const anchors = config.integrityAnchor.intervalMs > 0
    ? startAnchoring({ store: platform.store, logger: log.child({ role: 'integrityAnchor' }), clock: () => new Date(), settings: config.integrityAnchor })
    : null;
  log.info({ owner: runner.status().owner, concurrency: config.worker.concurrency, anchorEveryMs: config.integrityAnchor.intervalMs }, 'worker running');
  return {
    runner,
    readiness: {
      name: 'worker',
      check: async () => ({
        ok: runner.status().state === 'running' && chain?.status().state !== 'failed',
        details: { ...runner.status(), ...(chain && { chain: chain.status() }) },
      }),
    },
    async stop() {
      await anchors?.stop();
      await chain?.stop();
      await runner.stop();
      await storedFiles.close();
      await files.close();
      await watcher.stop();
    },
  };
}

/** The API role: HTTP, commands, read-your-writes through the projections' checkpoints. */
export async function runApi(
  config: Readonly<Config>, platform: Platform, logger: Logger, readiness: ReadinessCheck[], keyOf: CheckpointKeyOf = directCheckpointKey,
  search: { connection: SearchConnection; settings: ConnectionSettingsStore; link: KafkaLink | null } | null = null,
  /** Tells a worker in this process that a job has work (other workers find it when they poll). */
  wakeWorkers: () => void = () => undefined,
): Promise<{ server: Server; stop(): Promise<void> }> {
  const watcher = new CheckpointWatcher(
    platform.knex, platform.databaseUrl, ALL_PROJECTIONS.map((p) => p.name), keyOf, { retry: { budgetMs: config.retryBudgetMs }, logger: logger.child({ role: 'checkpointWatcher' }) },
  );
  await watcher.start();
  const deps: CommandDeps = {
    store: platform.store, ids: new IdAllocator(platform.store), knex: platform.knex, watcher,
    writeTimeoutMs: config.writeTimeoutMs, clock: () => new Date(), secrets: secretVaultOf(config, platform),
  };
  if (config.adminEmail && config.adminPassword) {
    const created = await bootstrapAdministrator(deps, { email: config.adminEmail, password: config.adminPassword, name: config.adminName }, systemMetadata('bootstrap'));
    if (created !== null) logger.info({ userId: created, email: config.adminEmail }, 'administrator created');
  }
  const seeded = await seedDefaults(deps, systemMetadata('seed-defaults'));
  if (seeded > 0) logger.info({ rows: seeded }, 'default workflows, statuses, template, roles and milestone types created');
  // Secrets an older version recorded in clear are sealed by a new event, once (docs/compliance.md, "Secrets").
  const sealed = await sealClearSecrets(deps, systemMetadata('seal-secrets'));
  if (sealed.length > 0) logger.warn({ rows: sealed }, 'secrets recorded in clear were sealed; the old events still hold them: rotate those secrets');
  const files = await openLocalFileStore({ dir: config.uploadDir, logger });
  const storedFiles = new StoredFiles({
    ...deps, files, logger: logger.child({ role: 'files' }),
    settings: { quotaBytes: config.userStorageQuotaBytes, importFileRetentionDays: config.importFileRetentionDays, archiveDir: config.archiveDir },
  });
  // The search API's counters, shown by the search administration (per process).
  const searchMetrics = new SearchMetrics();
  // Reindex jobs (search administration): run here, one at a time across processes.
  const reindex = search && new ReindexSaga({
    ...deps, logger: logger.child({ role: 'reindex' }), engine: () => search.connection.engine(),
    builder: searchBuilder({
      knex: platform.knex, logger: logger.child({ role: 'reindex' }),
      checkpointKeys: search.link ? () => kafkaReadModelCheckpoints(search.link!.kafka, search.link!.topic, platform.knex) : undefined,
    }),
    reindex: { ...DEFAULT_REINDEX_SETTINGS, retryBudgetMs: config.retryBudgetMs, defaultBatchSize: config.search.bulkSize },
  });
  const app = buildApp({
    ...deps, logger, pool: platform.pool, ...platform.secrets,
    sessionIdleTimeoutMs: config.sessionIdleTimeoutMs, sessionAbsoluteTimeoutMs: config.sessionAbsoluteTimeoutMs,
    modelMaxRows: config.modelMaxRows,
    trustProxy: config.trustProxy, allowedOrigins: config.allowedOrigins, readiness: [...readiness, watcherReadiness(watcher)],
    files, storedFiles, maxUploadBytes: config.maxUploadBytes,
    // Result imports run in the worker role: the routes wake it and ask who holds a job.
    imports: { wakeWorkers, leases: new PostgresJobLeases(platform.pool) },
    externalImports: { maxBytes: config.externalImports.maxBytes, wakeWorkers },
    ...(search && { search: {
      engine: () => search.connection.engine(),
      // On Kafka the indexer keeps a checkpoint per partition: a position waits for its stream's.
      checkpointKeys: search.link ? kafkaCheckpointKeys(platform.store, (streamId) => partitionOf(streamId, search.link!.partitions)) : undefined,
      metrics: searchMetrics,
    } }),
    ...(search && { searchAdmin: {
      engine: () => search.connection.engine(), searchMetrics,
      connection: search.connection, connectionSettings: search.settings, reindex: reindex!,
      // On Kafka the indices' lag is counted per partition (the indexer's `search@<partition>`).
      ...(search.link && { indexerPartitionOf: (streamId: string) => partitionOf(streamId, search.link!.partitions) }),
    } }),
    rateLimits: config.rateLimits && { settings: config.rateLimits, store: new PostgresRateLimitStore(platform.pool) },
    parkedEvents: parkedEventsPort({ knex: platform.knex, store: platform.store, projections: ALL_PROJECTIONS }),
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  const address = server.address();
  logger.info({ address }, 'API listening');
  // Reindex jobs a stopped process left running, and those due, are taken up (then every few seconds).
  // (Import jobs a stopped process left unfinished are the workers' business: runWorker.)
  reindex?.start();
  // Unique values claimed by a writer that stopped before writing their row: released in the background.
  const claims = startClaimReconciler({ store: platform.store, knex: platform.knex, logger: logger.child({ role: 'claimReconciler' }) }, { retry: { budgetMs: config.retryBudgetMs } });
  // Files whose owner no longer keeps them (failed imports, expired import evidence, deleted attachments): a bounded round every few minutes.
  storedFiles.startSweeping();
  return {
    server,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive connections would hold close() open.
        server.closeIdleConnections();
        // Requests get half of SHUTDOWN_TIMEOUT_MS; the roles stopped after the API, the rest (services/process/shutdown.ts).
        setTimeout(() => server.closeAllConnections(), config.shutdownTimeoutMs / 2).unref();
      });
      await claims.stop();
      await reindex?.stop();
      await storedFiles.close();
      await files.close();
      await watcher.stop();
    },
  };
}
