import { Router, type Request, type Response } from 'express';
import { metadataFor } from '../shared/context';
import { badRequest } from '../shared/errors';
import { describeError } from '../shared/faults';
import { asyncHandler } from '../shared/http';
import type { SearchSettings } from '../shared/search';
import { applyChange, changedFields, parseConnectionChange, publicSettings, type ConnectionProbe, type ConnectionSource } from './connection';
import { recordOperation, SEARCH_ADMINISTRATION_STREAM } from './operations';
import type { SearchAdminDeps } from './searchAdmin.deps';

export const CONNECTION_PATH = '/api/admin/search/connection';

/**
 * The engine connection (docs/search.md, "Connection"): GET its status, POST /test other settings
 * without saving them, PUT new settings (tested first; saved with their credentials sealed, then
 * search and the indexer switch without a restart), DELETE to go back to the SEARCH_* variables.
 * No answer, event or log line holds a credential.
 */
export function connectionRouter(deps: SearchAdminDeps): Router {
  const router = Router();

  router.get(CONNECTION_PATH, asyncHandler(async (_req, res) => {
    res.json(await connectionStatus(deps));
  }));

  router.post(`${CONNECTION_PATH}/test`, asyncHandler(async (req, res) => {
    const settings = applyChange(deps.connection.applied().settings, parseConnectionChange(req.body));
    const probe = await deps.connection.test(settings);
    const position = await recordOperation(deps, metadataFor(req.auth!, req), {
      operation: 'connection-test', engine: probe.engine, targets: [targetOf(settings)], outcome: probe.reachable ? 'succeeded' : 'failed', error: probe.error,
      details: { settings: publicSettings(settings), latencyMs: probe.latencyMs, version: probe.version },
    });
    res.setHeader('X-Event-Position', position);
    res.json(probe);
  }));

  router.put(CONNECTION_PATH, asyncHandler(async (req, res) => {
    const settings = applyChange(deps.connection.applied().settings, parseConnectionChange(req.body));
    await change(deps, req, res, settings, 'administrator');
  }));

  router.delete(CONNECTION_PATH, asyncHandler(async (req, res) => {
    await change(deps, req, res, deps.connection.environment(), 'environment');
  }));
  return router;
}

/** What a URL-less engine is named by in an operation's targets. */
const targetOf = (settings: Readonly<SearchSettings>) => settings.url ?? 'postgres';

/**
 * Switches to `settings`: tested by opening the engine that will serve; if it answers, saved (row
 * and SearchConnectionChanged in one go: the row is committed only once the event is appended),
 * then in force. Nothing changed: nothing saved or appended.
 */
async function change(deps: SearchAdminDeps, req: Request, res: Response, settings: Readonly<SearchSettings>, source: ConnectionSource): Promise<void> {
  const before = deps.connection.applied();
  const changed = changedFields(before.settings, settings);
  if (before.source === source && changed.length === 0) {
    res.json(await connectionStatus(deps));
    return;
  }
  const metadata = metadataFor(req.auth!, req);
  let position: string | null = null;
  const probe = await deps.connection.switchTo(settings, () => deps.knex.transaction(async (trx) => {
    const changedAt = deps.clock();
    const settingsId = await deps.connectionSettings.save(trx, { settings: source === 'environment' ? null : settings, changedAt, changedBy: req.auth!.user.id });
    ({ position } = await deps.store.append(SEARCH_ADMINISTRATION_STREAM, [{
      type: 'SearchConnectionChanged', data: { settingsId, source, ...publicSettings(settings), changed, changedAt: changedAt.toISOString() },
    }], { expectedRevision: 'any', metadata }));
    return { settingsId, source };
  }));
  if (!probe.reachable) {
    throw badRequest('search-connection-failed', `The search engine does not answer with these settings (${probe.error}): nothing was saved, the settings in force stay`, {
      url: settings.url, engine: probe.engine, error: probe.error,
    });
  }
  if (position !== null) res.setHeader('X-Event-Position', position);
  res.json(await connectionStatus(deps));
}

/** The answer of GET (and of a change): the engine asked now (info(), timed), the connection's state, the settings without secrets. */
async function connectionStatus(deps: SearchAdminDeps) {
  const applied = deps.connection.applied();
  const connection = deps.connection.status();
  let probe: ConnectionProbe;
  try {
    const engine = deps.engine();
    const started = process.hrtime.bigint();
    const info = await engine.info();
    probe = { reachable: true, engine: info.engine, version: info.version, latencyMs: Math.round(Number(process.hrtime.bigint() - started) / 1e5) / 10, error: null };
  } catch (error) {
    probe = { reachable: false, engine: connection.engine, version: null, latencyMs: null, error: describeError(error) };
  }
  const change = applied.settingsId === null ? null : await deps.connectionSettings.changeOf(applied.settingsId);
  return {
    ...probe,
    state: connection.state,
    lastError: connection.lastError,
    source: applied.source,
    settingsId: applied.settingsId,
    settings: publicSettings(applied.settings),
    changedAt: change?.changedAt ?? null,
    changedBy: change?.changedBy ?? null,
  };
}
