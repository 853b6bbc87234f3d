import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { openSearchEngine } from '../../infra/search';
import { budgetOf, describeError, RetryBudgetSpent, type RetryPolicy } from '../shared/faults';
import { SearchUnavailable, type SearchEngine, type SearchSettings } from '../shared/search';

export interface SearchConnectionStatus {
  /** connecting: the engine has not answered yet (retried within the budget); open; failed: given up until restart. */
  state: 'connecting' | 'open' | 'failed';
  engine: SearchEngine['engine'] | null;
  lastError: string | null;
}

/**
 * The search engine a process uses, opened in the background: a process starts (and its API
 * answers everything but search) while the engine is away. Until it answered, `engine()` throws
 * SearchUnavailable (the API's 503 `search-unavailable`). An engine that does not answer is tried
 * again (1 s doubling to 30 s) within the retry budget; a server that answers as something else, or
 * a budget spent, fails the connection for good (logged once), until the process restarts.
 */
export class SearchConnection {
  private current: SearchEngine | null = null;
  private state: SearchConnectionStatus = { state: 'connecting', engine: null, lastError: null };
  private closed = false;
  private wake: (() => void) | null = null;
  private readonly opened: Promise<SearchEngine | null>;

  constructor(private readonly settings: Readonly<SearchSettings>, deps: { knex: Knex; logger: Logger; retry?: RetryPolicy }) {
    this.opened = this.open(deps);
  }

  engine(): SearchEngine {
    if (this.current) return this.current;
    throw new SearchUnavailable(this.expectedEngine(), this.state.lastError === null ? undefined : new Error(this.state.lastError));
  }

  /** Resolves with the engine once open; null if the connection failed or was closed first. */
  ready(): Promise<SearchEngine | null> {
    return this.opened;
  }

  status(): SearchConnectionStatus {
    return { ...this.state };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    const engine = await this.opened;
    await engine?.close();
  }

  private expectedEngine(): SearchEngine['engine'] {
    if (this.settings.engine !== 'auto') return this.settings.engine;
    return this.settings.url === null ? 'postgres' : 'opensearch';
  }

  private async open(deps: { knex: Knex; logger: Logger; retry?: RetryPolicy }): Promise<SearchEngine | null> {
    const budget = budgetOf(deps.retry, { firstMs: 1000, maxMs: 30_000 });
    while (!this.closed) {
      try {
        const engine = await openSearchEngine(this.settings, { knex: deps.knex, logger: deps.logger });
        if (this.closed) {
          await engine.close();
          return null;
        }
        const info = await engine.info();
        this.current = engine;
        this.state = { state: 'open', engine: engine.engine, lastError: null };
        deps.logger.info({ engine: info.engine, version: info.version, url: this.settings.url }, 'search engine connected');
        return engine;
      } catch (error) {
        this.state.lastError = describeError(error);
        const pause = error instanceof SearchUnavailable ? budget.next() : null;
        if (pause === null) {
          const reason = error instanceof SearchUnavailable ? new RetryBudgetSpent(error, budget) : error;
          this.state = { state: 'failed', engine: null, lastError: describeError(reason) };
          deps.logger.error({ err: reason, url: this.settings.url }, 'cannot use the search engine; search answers 503 until the process restarts');
          return null;
        }
        deps.logger.warn({ err: error, url: this.settings.url, backoffMs: pause }, 'the search engine does not answer; trying again after a pause');
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
    return null;
  }
}
