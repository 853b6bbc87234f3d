import express, { type Express } from 'express';
import type pg from 'pg';
import type { Logger } from 'pino';
import { requireAuthentication, TokenUsageRecorder } from '../identity/authentication';
import { identityRoutes, loginRoutes } from '../identity/identity.routes';
import { recordLoginFailure } from '../identity/loginAttempts';
import { loginOriginGuard, sessionGuard, sessionMiddleware, type SessionSettings } from '../identity/sessions';
import { adminRoutes } from '../admin/admin.routes';
import { parkedEventsRoutes } from '../parking/parkedEvents.routes';
import type { ParkedEventsPort } from '../shared/parkedEvents';
import { integrityRoutes } from '../integrity/integrity.routes';
import { auditRoutes } from '../audit/audit.routes';
import { historyRoutes } from '../history/history.routes';
import { analyticsRoutes } from '../analytics/analytics.routes';
import { quarantineRoutes } from '../quarantine/quarantine.routes';
import { signatureRoutes } from '../signatures/signatures.routes';
import { evidenceRoutes } from '../evidence/evidence.routes';
import { modelRoutes } from '../model/model.routes';
import { fileRoutes, UPLOAD_PATH } from '../files/files.routes';
import { importRoutes, IMPORT_PATHS, type ImportWorkers } from '../imports/imports.routes';
import { suiteOutputRoutes } from '../imports/suiteOutput.routes';
import { lookupRoutes } from '../lookup/lookup.routes';
import { EXTERNAL_IMPORT_PATH, externalImportRoutes } from '../migration/externalImport.routes';
import { notificationRoutes } from '../notifications/notifications.routes';
import { searchRouter, type SearchDeps } from '../search/search.routes';
import { searchAdminRouter } from '../searchAdmin/searchAdmin.routes';
import type { SearchAdminExtras } from '../searchAdmin/searchAdmin.deps';
import type { FileStore } from '../files/fileStore';
import type { StoredFiles } from '../files/storedFiles';
import type { CommandDeps } from '../shared/commandBus';
import { accessLog, correlationId, errorHandler, jsonBodiesOnlyExcept, notFoundRoute, wellFormedText } from '../shared/http';
import { docsRoutes } from './docs.routes';
import { docsPageRoutes } from './docsPage.routes';
import { webRoutes } from '../web/web.routes';
import { healthRoutes, type ReadinessCheck } from './health.routes';
import type { RateLimitSettings, RateLimitStore } from '../shared/rateLimitStore';
import { rateLimiters } from './rateLimit';

export interface AppDeps extends CommandDeps, SessionSettings {
  logger: Logger;
  /** Pool for the session store. */
  pool: pg.Pool;
  tokenSecret: string;
  readiness: ReadinessCheck[];
  /** Most rows one model API answer may hold, included rows counted (MODEL_MAX_ROWS; default DEFAULT_MAX_ROWS). */
  modelMaxRows?: number;
  /** Uploaded files (POST /api/files/upload, GET /api/files/:key). */
  files: FileStore;
  /** Stored files' owners, permissions, quota and clean-up (services/files/storedFiles.ts). */
  storedFiles: StoredFiles;
  maxUploadBytes: number;
  /** The external-tool migration's routes: the largest export, and how to tell the workers a job has work. */
  externalImports: { maxBytes: number; wakeWorkers(): void };
  /** The workers that run result-import jobs (POST /api/junit/import, /api/test-results/import): woken on a request, asked who holds a job. */
  imports: ImportWorkers;
  /** Request limits and the store their counters share with other replicas; null switches limiting off (logged). */
  rateLimits: { settings: RateLimitSettings; store: RateLimitStore } | null;
  /** Full-text search (GET/POST /api/search, GET /api/search/facets); absent: those routes are 404. */
  search?: Pick<SearchDeps, 'engine' | 'checkpointKeys' | 'metrics'>;
  /** The search administration panel (/api/admin/search/*, administrators only); absent: those routes are 404. */
  searchAdmin?: SearchAdminExtras;
  /** The projections' parked events (/api/admin/parked-events): their retry. */
  parkedEvents: ParkedEventsPort;
}

/** The HTTP application: plain wiring of routers over the dependencies given. */
export function buildApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  // Answers change with every event and most requests are POSTs: no ETag hashing of every body.
  app.set('etag', false);
  if (deps.trustProxy) app.set('trust proxy', 1);

  app.use((req, res, next) => {
    req.correlationId = correlationId(req.header('x-correlation-id'));
    res.setHeader('X-Correlation-Id', req.correlationId);
    // Every answer is what its Content-Type says: a browser never guesses (a JSON answer read as HTML or script).
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  app.use(accessLog(deps.logger));
  app.use(healthRoutes(deps.readiness));
  app.use(docsPageRoutes());
  app.use(webRoutes());
  app.use('/api', express.json({ limit: '1mb' }), jsonBodiesOnlyExcept([UPLOAD_PATH, ...IMPORT_PATHS, EXTERNAL_IMPORT_PATH]), wellFormedText);

  app.use('/api', sessionMiddleware(deps));

  const usage = new TokenUsageRecorder(deps.knex, deps.logger);

  // Per address before authentication (login also per e-mail), per token or user after it.
  const limits = deps.rateLimits && rateLimiters({
    ...deps.rateLimits, clock: deps.clock, logger: deps.logger,
    onLoginThrottled: (req, email) => recordLoginFailure(deps, { email, userId: null, reason: 'rate-limited', at: deps.clock() }, req),
  });
  if (!limits) deps.logger.warn('rate limiting is off (RATE_LIMIT_ENABLED=false)');
  // Every password check (login, signing, revoking) counts against one limit per account and address.
  const passwordLimiter = limits ? limits.passwords : null;
  app.post('/api/auth/login', loginOriginGuard(deps));
  app.use(loginRoutes({ ...deps, passwordLimiter }));
  app.use(docsRoutes());
  if (limits) app.use('/api', limits.anonymous);
  app.use('/api', sessionGuard(deps), requireAuthentication({ knex: deps.knex, tokenSecret: deps.tokenSecret, clock: deps.clock, usage, identityGeneration: () => deps.watcher.generation('identity') }));
  if (limits) app.use('/api', ...limits.afterAuthentication);
  app.use(identityRoutes(deps));
  app.use(adminRoutes(deps));
  app.use(parkedEventsRoutes(deps));
  app.use(integrityRoutes(deps));
  app.use(modelRoutes(deps));
  app.use(auditRoutes(deps));
  app.use(historyRoutes(deps));
  app.use(analyticsRoutes(deps));
  app.use(quarantineRoutes(deps));
  app.use(signatureRoutes({ ...deps, passwordLimiter }));
  app.use(evidenceRoutes(deps));
  app.use(fileRoutes(deps));
  app.use(importRoutes(deps));
  app.use(suiteOutputRoutes(deps));
  app.use(lookupRoutes(deps));
  app.use(notificationRoutes(deps));
  app.use(externalImportRoutes({ ...deps, externalImportMaxBytes: deps.externalImports.maxBytes, wakeWorkers: deps.externalImports.wakeWorkers }));
  if (deps.search) app.use(searchRouter({ ...deps.search, knex: deps.knex, store: deps.store, writeTimeoutMs: deps.writeTimeoutMs, logger: deps.logger }));
  if (deps.searchAdmin) app.use(searchAdminRouter({ ...deps, ...deps.searchAdmin }));
  app.use(notFoundRoute);
  app.use(errorHandler(deps.logger));
  return app;
}
