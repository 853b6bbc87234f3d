import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { loadContracts } from '../../contracts/validator';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { openLocalFileStore } from '../../infra/files/localFileStore';
import { createKnex, createPool } from '../../infra/postgres/database';
import { secretBox } from '../../infra/crypto/secretBox';
import { postgresSecretVault } from '../../infra/crypto/secretVault';
import { ALL_PROJECTIONS } from '../../projections';
import { migrateReadModel } from '../../projections/migrations';
import { CheckpointWatcher } from '../../projections/runtime/checkpointWatcher';
import { startProjector } from '../../projections/runtime/projector';
import { startStatisticsWorker } from '../../projections/statisticsQueue';
import { parkedEventsPort } from '../../projections/runtime/parking';
import type { Projection } from '../../projections/runtime/projection';
import { buildApp, type AppDeps } from '../../services/api/app';
import { DEFAULT_IMPORT_SETTINGS, ImportSaga, type ImportSettings } from '../../services/imports/importJob.saga';
import { StoredFiles, type StoredFilesSettings } from '../../services/files/storedFiles';
import type { RateLimitSettings } from '../../services/shared/rateLimitStore';
import { PostgresRateLimitStore } from '../../infra/rateLimit/postgres';
import type { CommandDeps } from '../../services/shared/commandBus';
import { IdAllocator } from '../../services/shared/ids';
import { withContracts } from '../../services/shared/validatingEventStore';
import { PostgresJobLeases } from '../../infra/postgres/jobLeases';
import { DEFAULT_EXTERNAL_IMPORT_SETTINGS, ExternalImportSaga, type ExternalImportSettings } from '../../services/migration/externalImport.saga';
import { externalImportKind, resultImportKind } from '../../services/process/worker/kinds';
import { startJobRunner } from '../../services/process/worker/jobRunner';
import { createMigratedDatabase } from './database';

/** A settable clock: tests move time instead of sleeping. */
export class TestClock {
  constructor(public now = new Date('2026-06-01T12:00:00Z')) {}
  advance(ms: number) {
    this.now = new Date(this.now.getTime() + ms);
  }
  read = () => this.now;
}

export interface TestApp {
  url: string;
  deps: CommandDeps;
  clock: TestClock;
  /** The directory of the app's file store (removed on stop). */
  uploadDir: string;
  /** Stored files: `sweep()` runs a round of the clean-up (not in the background here). */
  storedFiles: StoredFiles;
  /** The result-import saga the app's worker runs (candidates(): the jobs it would take up). */
  imports: ImportSaga;
  /** The app's throw-away database, and what the app was built with (a second app over the same database: another replica). */
  databaseUrl: string;
  appDeps: AppDeps;
  stop(): Promise<void>;
}

export const TEST_TOKEN_SECRET = 'x'.repeat(40);

/** Rate limiting runs in every test app, with limits no suite reaches unless it sets its own. */
export const UNREACHED_RATE_LIMITS: RateLimitSettings = { windowMs: 60_000, max: 1e9, anonymousMax: 1e9, loginMax: 1e9, loginWindowMs: 15 * 60_000 };

/** The API, projector, a worker (result imports) and stores in this process on a throw-away database, with a test clock. */
export async function startTestApp(options: { maxUploadBytes?: number; trustProxy?: boolean; allowedOrigins?: string[];
  /** Limits to set (the others stay unreached), or null for none at all. */
  rateLimits?: Partial<RateLimitSettings> | null;
  /** Import settings to change (smaller chunks, say). */
  imports?: Partial<ImportSettings>;
  /** Storage quota and import file retention (default: no quota, 30 days). */
  storedFiles?: Partial<StoredFilesSettings>;
  /** Where the app's logs go (default: nowhere, or TEST_LOG_LEVEL to stdout). */
  logger?: pino.Logger;
  /** MODEL_MAX_ROWS (default: DEFAULT_MAX_ROWS). */
  modelMaxRows?: number;
  /** EXTERNAL_IMPORT_MAX_BYTES (default 1 GiB). */
  externalImportMaxBytes?: number;
  /**
   * A worker runs in this process for result imports always (polling every 100 ms, woken by each
   * request); given this, it runs external import jobs too, with these settings (default: they wait).
   */
  worker?: Partial<ExternalImportSettings> & { pollMs?: number; leaseTtlMs?: number };
  /** false: no worker here runs result imports (they stay queued until a test starts one over `imports`). */
  resultImportWorker?: boolean;
  /** The projections the app runs and waits for (default: ALL_PROJECTIONS); a test may wrap one to make it fail. */
  projections?: readonly Projection[];
} = {}): Promise<TestApp> {
  const db = await createMigratedDatabase('app');
  const pool = createPool(db.url);
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  // Pool warnings (a test that cuts the database) go to the app's log, not the console.
  const knex = createKnex(db.url, 10, logger);
  await migrateReadModel(knex);
  await setupPostgresEventStore(pool);
  const store = withContracts(new PostgresEventStore(pool, db.url), loadContracts());
  const projections = options.projections ?? ALL_PROJECTIONS;
  const projector = startProjector({ store, knex, projections, logger });
  const statistics = startStatisticsWorker({ knex, databaseUrl: db.url, logger, budgetMs: 30_000 });
  const watcher = new CheckpointWatcher(knex, db.url, projections.map((p) => p.name));
  await watcher.start();
  const clock = new TestClock();
  const deps: CommandDeps = {
    store, ids: new IdAllocator(store), knex, watcher, writeTimeoutMs: 10_000, clock: clock.read, secrets: postgresSecretVault(knex, secretBox(randomBytes(32))),
  };
  const uploadDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-uploads-'));
  const files = await openLocalFileStore({ dir: uploadDir, logger });
  const storedFiles = new StoredFiles({ ...deps, files, logger, settings: { quotaBytes: 0, importFileRetentionDays: 30, ...options.storedFiles } });
  const imports = new ImportSaga({ ...deps, files, storedFiles, logger, imports: { ...DEFAULT_IMPORT_SETTINGS, ...options.imports } });
  const leases = new PostgresJobLeases(pool);
  const worker = startJobRunner({
    leases, logger, concurrency: 4, pollMs: options.worker?.pollMs ?? 100, leaseTtlMs: options.worker?.leaseTtlMs ?? 10_000,
    kinds: [
      ...(options.resultImportWorker === false ? [] : [resultImportKind(imports)]),
      ...(options.worker ? [externalImportKind(new ExternalImportSaga({ ...deps, files, logger, settings: { ...DEFAULT_EXTERNAL_IMPORT_SETTINGS, ...options.worker } }))] : []),
    ],
  });
  const appDeps: AppDeps = {
    ...deps, logger, pool, sessionSecret: 's'.repeat(40), tokenSecret: TEST_TOKEN_SECRET,
    sessionIdleTimeoutMs: 30 * 60_000, sessionAbsoluteTimeoutMs: 12 * 3_600_000,
    ...(options.modelMaxRows !== undefined && { modelMaxRows: options.modelMaxRows }),
    trustProxy: options.trustProxy ?? false, allowedOrigins: options.allowedOrigins ?? [], readiness: [], files, storedFiles, maxUploadBytes: options.maxUploadBytes ?? 50 * 1024 * 1024,
    imports: { wakeWorkers: () => worker.wake(), leases },
    externalImports: { maxBytes: options.externalImportMaxBytes ?? 1024 ** 3, wakeWorkers: () => worker.wake() },
    rateLimits: options.rateLimits === null ? null : { settings: { ...UNREACHED_RATE_LIMITS, ...options.rateLimits }, store: new PostgresRateLimitStore(pool) },
    parkedEvents: parkedEventsPort({ knex, store, projections }),
  };
  const app = buildApp(appDeps);
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    deps,
    clock,
    uploadDir,
    storedFiles,
    imports,
    databaseUrl: db.url,
    appDeps,
    async stop() {
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
      await worker.stop();
      await storedFiles.close();
      await watcher.stop();
      await projector.stop();
      await statistics.stop();
      await store.close();
      await knex.destroy();
      await pool.end();
      await db.drop();
      await files.close();
      fs.rmSync(uploadDir, { recursive: true, force: true });
    },
  };
}

/**
 * Sends a request that must be refused: asserts the status, the `{error, code, details}` shape and
 * that the event store's head did not move (a refusal appends nothing). Answers the error body.
 */
export async function expectRefused(
  app: TestApp, call: () => Promise<{ status: number; body: any }>, status: number,
): Promise<{ error: string; code: string; details: Record<string, unknown> }> {
  const before = (await app.deps.store.headPosition()).toString();
  const res = await call();
  expect(res.status, JSON.stringify(res.body)).to.equal(status);
  expect(Object.keys(res.body)).to.have.members(['error', 'code', 'details']);
  expect((await app.deps.store.headPosition()).toString(), 'a refusal appends nothing').to.equal(before);
  return res.body;
}

/** expectRefused, and the code (and `details.path`, when given) the refusal names. */
export async function expectRefusedAs(
  app: TestApp, call: () => Promise<{ status: number; body: any }>, status: number, code: string, path?: string,
): Promise<{ error: string; code: string; details: Record<string, unknown> }> {
  const body = await expectRefused(app, call, status);
  expect(body.code, body.error).to.equal(code);
  if (path !== undefined) expect(body.details.path, body.error).to.equal(path);
  return body;
}
