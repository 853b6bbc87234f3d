import type { Logger } from 'pino';
import type { CommandDeps } from '../shared/commandBus';
import type { SearchEngine } from '../shared/search';

/**
 * What the search administration routes (/api/admin/search/*) need. The composition root
 * (services/process/roles.ts) builds it; tests build their own over a throw-away database.
 */
export interface SearchAdminDeps extends CommandDeps {
  logger: Logger;
  /** The engine in use now; throws SearchUnavailable while none answers (503 search-unavailable). */
  engine(): SearchEngine;
}

/** What the application is given beyond its own command dependencies and logger. */
export type SearchAdminExtras = Omit<SearchAdminDeps, keyof CommandDeps | 'logger'>;
