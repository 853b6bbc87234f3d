import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../services/api/app';
import type { SearchAdminExtras } from '../../services/searchAdmin/searchAdmin.deps';
import type { SearchEngine } from '../../services/shared/search';
import type { TestApp } from './app';

/**
 * The test app's database and stores served again with search and the search administration
 * panel (as another replica would be): `extras` are the panel's dependencies beyond the engine
 * (only those the suite's routes use: each part of the panel has its own).
 * Answers its URL and how to stop it (the test app itself is stopped by its owner).
 */
export async function serveSearchAdmin(
  app: TestApp, engine: () => SearchEngine, extras: Partial<Omit<SearchAdminExtras, 'engine'>> = {},
): Promise<{ url: string; stop(): Promise<void> }> {
  const server = await new Promise<Server>((resolve) => {
    // The panel's metrics count this app's searches, as in a process (services/process/roles.ts runApi).
    const search = { engine, ...(extras.searchMetrics && { metrics: extras.searchMetrics }) };
    const s = buildApp({ ...app.appDeps, search, searchAdmin: { ...extras, engine } as SearchAdminExtras }).listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async stop() {
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
    },
  };
}
