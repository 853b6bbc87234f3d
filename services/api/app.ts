import express, { type Express } from 'express';
import session from 'express-session';
import connectPgSimple from 'connect-pg-simple';
import passport from 'passport';
import type pg from 'pg';
import type { Logger } from 'pino';
import { bearerStrategy, requireAuthentication, TokenUsageRecorder } from '../identity/authentication';
import { identityRoutes, loginRoutes } from '../identity/identity.routes';
import { modelRoutes } from '../model/model.routes';
import { fileRoutes, UPLOAD_PATH } from '../files/files.routes';
import type { FileStore } from '../files/fileStore';
import type { CommandDeps } from '../shared/commandBus';
import { accessLog, correlationId, errorHandler, jsonBodiesOnlyExcept, notFoundRoute } from './http';
import { docsRoutes } from './docs.routes';
import { docsPageRoutes } from './docsPage.routes';
import { healthRoutes, type ReadinessCheck } from './health.routes';

export const SESSION_COOKIE = 'testament.sid';

export interface AppDeps extends CommandDeps {
  logger: Logger;
  /** Pool for the session store. */
  pool: pg.Pool;
  sessionSecret: string;
  tokenSecret: string;
  sessionMaxAgeMs: number;
  trustProxy: boolean;
  readiness: ReadinessCheck[];
  /** Uploaded files (POST /api/files/upload, GET /api/files/:key). */
  files: FileStore;
  maxUploadBytes: number;
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
    next();
  });
  app.use(accessLog(deps.logger));
  app.use(healthRoutes(deps.readiness));
  app.use(docsPageRoutes());
  app.use('/api', express.json({ limit: '1mb' }), jsonBodiesOnlyExcept([UPLOAD_PATH]));

  const PgStore = connectPgSimple(session);
  const sessions = session({
    name: SESSION_COOKIE,
    secret: deps.sessionSecret,
    store: new PgStore({ pool: deps.pool, tableName: 'http_sessions', createTableIfMissing: true }),
    resave: false,
    saveUninitialized: false,
    rolling: true,
    cookie: { httpOnly: true, sameSite: 'lax', secure: deps.trustProxy ? 'auto' : false, maxAge: deps.sessionMaxAgeMs },
  });
  // A request with a bearer token and no cookie (CI, scripts) has no session to load: skip the store.
  app.use('/api', (req, res, next) =>
    req.headers.authorization?.startsWith('Bearer ') && req.headers.cookie === undefined && req.path !== '/auth/login' ? next() : sessions(req, res, next));

  const usage = new TokenUsageRecorder(deps.knex, deps.logger);
  passport.use(bearerStrategy({ knex: deps.knex, tokenSecret: deps.tokenSecret, clock: deps.clock, usage, identityGeneration: () => deps.watcher.generation('identity') }));
  app.use(passport.initialize());

  app.use(loginRoutes(deps));
  app.use(docsRoutes());
  app.use('/api', requireAuthentication({ knex: deps.knex, tokenSecret: deps.tokenSecret, clock: deps.clock, usage }));
  app.use(identityRoutes(deps, SESSION_COOKIE));
  app.use(modelRoutes(deps));
  app.use(fileRoutes(deps));
  app.use(notFoundRoute);
  app.use(errorHandler(deps.logger));
  return app;
}
