import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { openSearchEngine } from '../../infra/search';
import { urlWithoutCredentials } from '../../infra/search/documentEngine';
import type { AppliedSettings, ConnectionProbe, ConnectionSource, SearchConnectionControl, SearchConnectionStatus } from '../searchAdmin/connection';
import { budgetOf, describeError, RetryBudgetSpent, type RetryPolicy } from '../shared/faults';
import { SearchUnavailable, type SearchEngine, type SearchSettings } from '../shared/search';

export type { SearchConnectionStatus };

interface Deps { knex: Knex; logger: Logger; retry?: RetryPolicy }

/**
 * The search engine a process uses, opened in the background: a process starts (and its API
 * answers everything but search) while the engine is away. Until it answered, `engine()` throws
 * SearchUnavailable (the API's 503 `search-unavailable`). An engine that does not answer is tried
 * again (1 s doubling to 30 s) within the retry budget; a server that answers as something else, or
 * a budget spent, fails the connection (logged once) until the process restarts or the settings change.
 *
 * `switchTo` changes the settings while the process runs (an administrator's change, or one another
 * process saved, services/process/searchSettings.ts): the new engine is opened and must answer
 * before it replaces the old one; those who follow the engine (the indexer) move to it; then the
 * old one is closed. A new engine that does not answer leaves everything as it was.
 */
export class SearchConnection implements SearchConnectionControl {
  private current: SearchEngine | null = null;
  private settingsInForce: AppliedSettings;
  private state: SearchConnectionStatus = { state: 'connecting', engine: null, lastError: null };
  private closed = false;
  /** Bumped by each switch: the first opening stops trying once superseded. */
  private generation = 0;
  private wake: (() => void) | null = null;
  private switching: Promise<unknown> = Promise.resolve();
  private readonly followers: ((engine: SearchEngine) => Promise<void>)[] = [];
  private readonly opened: Promise<SearchEngine | null>;

  constructor(applied: AppliedSettings, private readonly environmentSettings: Readonly<SearchSettings>, private readonly deps: Deps) {
    this.settingsInForce = applied;
    this.opened = this.open();
  }

  engine(): SearchEngine {
    if (this.current) return this.current;
    throw new SearchUnavailable(expectedEngine(this.settingsInForce.settings), this.state.lastError === null ? undefined : new Error(this.state.lastError));
  }

  /** Resolves with the engine once open (the first opening, or a switch that superseded it); null if that failed or the connection was closed first. */
  ready(): Promise<SearchEngine | null> {
    return this.opened;
  }

  /** Told (and awaited) each time a switch makes a new engine current, before the old one closes. */
  onSwitch(follower: (engine: SearchEngine) => Promise<void>): void {
    this.followers.push(follower);
  }

  status(): SearchConnectionStatus {
    return { ...this.state };
  }

  applied(): AppliedSettings {
    return this.settingsInForce;
  }

  environment(): Readonly<SearchSettings> {
    return this.environmentSettings;
  }

  async test(settings: Readonly<SearchSettings>): Promise<ConnectionProbe> {
    // A test is answered promptly: no retries of its own.
    const probe = await this.probe({ ...settings, maxRetries: 0 });
    await probe.engine?.close().catch((err) => this.deps.logger.warn({ err }, 'closing a tested search engine failed'));
    return probe.result;
  }

  switchTo(settings: Readonly<SearchSettings>, save: () => Promise<{ settingsId: number; source: ConnectionSource }>): Promise<ConnectionProbe> {
    return this.serially(() => this.switchNow(settings, save));
  }

  /**
   * Switches to a change another process saved (services/process/searchSettings.ts), unless it is
   * already in force by the time the switches before it are done: null then.
   */
  follow(target: AppliedSettings & { settingsId: number }): Promise<ConnectionProbe | null> {
    return this.serially(async () => (this.settingsInForce.settingsId === target.settingsId
      ? null
      : this.switchNow(target.settings, async () => ({ settingsId: target.settingsId, source: target.source }))));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.opened;
    await this.switching;
    await this.current?.close();
    this.current = null;
  }

  /** One switch at a time, in the order asked. */
  private serially<T>(run: () => Promise<T>): Promise<T> {
    const result = this.switching.then(run);
    this.switching = result.catch(() => undefined);
    return result;
  }

  private async switchNow(settings: Readonly<SearchSettings>, save: () => Promise<{ settingsId: number; source: ConnectionSource }>): Promise<ConnectionProbe> {
    if (this.closed) throw new Error('the search connection is closed');
    const { engine, result } = await this.probe(settings);
    if (engine === null) {
      this.deps.logger.warn({ url: where(settings), error: result.error }, 'the new search settings do not work; the search engine in use stays');
      return result;
    }
    let saved: { settingsId: number; source: ConnectionSource };
    try {
      saved = await save();
    } catch (error) {
      await engine.close().catch(() => undefined);
      throw error;
    }
    this.generation++;
    this.wake?.();
    const old = this.current;
    this.current = engine;
    this.settingsInForce = { settings: Object.freeze({ ...settings }), source: saved.source, settingsId: saved.settingsId };
    this.state = { state: 'open', engine: engine.engine, lastError: null };
    this.deps.logger.info({ engine: result.engine, version: result.version, url: where(settings), settingsId: saved.settingsId, source: saved.source }, 'search engine switched');
    for (const follow of this.followers) {
      await follow(engine).catch((err) => this.deps.logger.error({ err }, 'moving to the new search engine failed'));
    }
    if (old && old !== engine) await old.close().catch((err) => this.deps.logger.warn({ err }, 'closing the former search engine failed'));
    return result;
  }

  /** Opens an engine and asks it info(), timed; on failure nothing stays open. */
  private async probe(settings: Readonly<SearchSettings>): Promise<{ engine: SearchEngine | null; result: ConnectionProbe }> {
    let engine: SearchEngine | null = null;
    try {
      engine = await openSearchEngine(settings, { knex: this.deps.knex, logger: this.deps.logger });
      const started = process.hrtime.bigint();
      const info = await engine.info();
      const latencyMs = Number(process.hrtime.bigint() - started) / 1e6;
      return { engine, result: { reachable: true, engine: info.engine, version: info.version, latencyMs: Math.round(latencyMs * 10) / 10, error: null } };
    } catch (error) {
      await engine?.close().catch(() => undefined);
      return { engine: null, result: { reachable: false, engine: engine?.engine ?? null, version: null, latencyMs: null, error: describeError(error) } };
    }
  }

  private async open(): Promise<SearchEngine | null> {
    const { logger } = this.deps;
    const budget = budgetOf(this.deps.retry, { firstMs: 1000, maxMs: 30_000 });
    const settings = this.settingsInForce.settings;
    const generation = this.generation;
    const superseded = () => this.closed || this.generation !== generation;
    while (!superseded()) {
      let engine: SearchEngine | null = null;
      try {
        engine = await openSearchEngine(settings, { knex: this.deps.knex, logger });
        const info = await engine.info();
        if (superseded()) {
          await engine.close();
          break;
        }
        this.current = engine;
        this.state = { state: 'open', engine: engine.engine, lastError: null };
        logger.info({ engine: info.engine, version: info.version, url: where(settings), source: this.settingsInForce.source }, 'search engine connected');
        return engine;
      } catch (error) {
        // An engine opened whose info() failed: its client closed before the next attempt opens another.
        await engine?.close().catch(() => undefined);
        if (superseded()) break;
        this.state.lastError = describeError(error);
        const pause = error instanceof SearchUnavailable ? budget.next() : null;
        if (pause === null) {
          const reason = error instanceof SearchUnavailable ? new RetryBudgetSpent(error, budget) : error;
          this.state = { state: 'failed', engine: null, lastError: describeError(reason) };
          logger.error({ err: reason, url: where(settings) }, 'cannot use the search engine; search answers 503 until the process restarts or an administrator changes the settings');
          return null;
        }
        logger.warn({ err: error, url: where(settings), backoffMs: pause }, 'the search engine does not answer; trying again after a pause');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, pause);
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wake = null;
      }
    }
    return this.closed ? null : this.current;
  }
}

function expectedEngine(settings: Readonly<SearchSettings>): SearchEngine['engine'] {
  if (settings.engine !== 'auto') return settings.engine;
  return settings.url === null ? 'postgres' : 'opensearch';
}

const where = (settings: Readonly<SearchSettings>) => (settings.url === null ? null : urlWithoutCredentials(settings.url));
