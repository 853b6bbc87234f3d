import type { Logger } from 'pino';
import { deriveSecretKey, secretBox } from '../../infra/crypto/secretBox';
import { appliedSettings, ConnectionSettingsStore } from '../searchAdmin/connectionSettings';
import { describeError, type RetryPolicy } from '../shared/faults';
import type { SearchSettings } from '../shared/search';
import type { Config } from './config';
import type { Platform } from './platform';
import { SearchConnection } from './searchConnection';

/** How often a process looks for settings another process saved. */
export const SETTINGS_POLL_MS = 5000;

/** The key of the saved credentials: SEARCH_SECRETS_KEY, else HKDF-SHA256 of the session secret. */
export function searchSecretBox(config: Pick<Config, 'searchSecretsKey'>, platform: Pick<Platform, 'secrets'>) {
  return secretBox(config.searchSecretsKey ?? deriveSecretKey(platform.secrets.sessionSecret));
}

export interface SearchLink {
  connection: SearchConnection;
  settings: ConnectionSettingsStore;
  close(): Promise<void>;
}

/**
 * A process's search connection, on the settings an administrator saved if any (their credentials
 * opened with this process's key: a key that cannot open them refuses to start, throwing
 * SavedSecretsUnreadable), else on SEARCH_*; and following the settings other processes save.
 */
export async function connectSearch(
  config: Pick<Config, 'search' | 'searchSecretsKey' | 'retryBudgetMs'>, platform: Pick<Platform, 'knex' | 'secrets'>, logger: Logger,
  opts: { retry?: RetryPolicy; pollMs?: number } = {},
): Promise<SearchLink> {
  const settings = new ConnectionSettingsStore(platform.knex, searchSecretBox(config, platform));
  const applied = appliedSettings(config.search, await settings.latest());
  if (applied.source === 'administrator') logger.info({ settingsId: applied.settingsId }, 'search connection settings saved by an administrator in force (not SEARCH_*)');
  const retry = opts.retry ?? { budgetMs: config.retryBudgetMs };
  const connection = new SearchConnection(applied, config.search, { knex: platform.knex, logger, retry });
  const follower = followSavedSettings(connection, settings, config.search, { logger, budgetMs: retry.budgetMs, pollMs: opts.pollMs ?? SETTINGS_POLL_MS });
  return {
    connection,
    settings,
    async close() {
      await follower.stop();
      await connection.close();
    },
  };
}

/**
 * Every `pollMs`, the newest saved settings: when another process saved a change, this one switches
 * to it. A change whose engine does not answer here is tried again at the next polls for at most
 * `budgetMs` (RETRY_BUDGET_MS), then given up (logged once at error level; the engine in use stays)
 * until a newer change is saved. A change this process cannot decrypt is given up at once.
 */
export function followSavedSettings(
  connection: SearchConnection, settings: ConnectionSettingsStore, environment: Readonly<SearchSettings>,
  opts: { logger: Logger; budgetMs: number; pollMs: number },
): { stop(): Promise<void> } {
  const { logger } = opts;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let round: Promise<void> = Promise.resolve();
  let failing: { id: number; since: number } | null = null;
  let givenUp: number | null = null;
  let pollFailing = false;

  async function poll(): Promise<void> {
    const latest = await settings.latestId();
    if (latest === null || latest === connection.applied().settingsId || latest === givenUp) return;
    let reason: string;
    try {
      const saved = await settings.latest();
      if (saved === null || saved.id === connection.applied().settingsId) return;
      const target = appliedSettings(environment, saved);
      const probe = await connection.follow({ ...target, settingsId: saved.id });
      if (probe === null) return;
      if (probe.reachable) {
        failing = null;
        logger.info({ settingsId: saved.id, source: target.source, engine: probe.engine }, 'search connection settings saved by another process applied');
        return;
      }
      reason = probe.error ?? 'the engine does not answer';
    } catch (error) {
      // Settings this key cannot open will not open later either.
      givenUp = latest;
      logger.error({ err: error, settingsId: latest }, 'cannot apply the search connection settings another process saved; the search engine in use stays');
      return;
    }
    const now = Date.now();
    if (failing?.id !== latest) failing = { id: latest, since: now };
    if (now - failing.since >= opts.budgetMs) {
      givenUp = latest;
      logger.error({ settingsId: latest, error: reason, budgetMs: opts.budgetMs }, 'gave up switching to the search connection settings another process saved; the search engine in use stays');
    } else {
      logger.warn({ settingsId: latest, error: reason }, 'the search connection settings another process saved do not work here yet; trying again at the next poll');
    }
  }

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      round = poll().then(() => {
        if (pollFailing) logger.info('reading the saved search connection settings works again');
        pollFailing = false;
      }, (err) => {
        if (!pollFailing) logger.warn({ err: describeError(err) }, 'cannot read the saved search connection settings; trying again at the next poll');
        pollFailing = true;
      }).finally(schedule);
    }, opts.pollMs);
    timer.unref();
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await round;
    },
  };
}
