import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { dropIndices, requireOpenSearch, searchFetch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../support/search';
import { HttpClient, startServer, type RunningServer } from '../support/server';
import { waitUntil } from '../support/wait';

const ADMIN = { email: 'connection-admin@example.com', password: 'connection-admin-password' };
const SECRET = 'pw-e2e-Rt5-never-in-a-log';
const PATH = '/api/admin/search/connection';

/**
 * Two service processes (`npm start`) over one database, as two replicas: the search connection
 * changed through one is followed by the other within seconds (it polls the saved settings), its
 * search and indexer on the new engine, without a restart; and back to SEARCH_*.
 * Slow: starts the service as two processes on OpenSearch settings changed at run time, each waiting for the other to follow (it polls every few seconds), there and back
 */
describe('search connection change followed by another process (two npm start processes, one database)', function () {
  this.timeout(240_000);
  let db: TestDatabase;
  const dirs: string[] = [];
  const servers: RunningServer[] = [];
  const prefix = uniqueIndexPrefix();

  before(async function () {
    await requireOpenSearch(this, 'search connection e2e');
    db = await createTestDatabase('e2econn');
  });
  after(async function () {
    for (const server of servers) {
      const code = await server.stop();
      if (code !== 0 || this.currentTest?.state === 'failed') console.log(server.output().slice(-4000));
    }
    await db?.drop();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  const start = async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-e2e-conn-'));
    dirs.push(dataDir);
    const server = await startServer({
      DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, LOG_LEVEL: 'trace',
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), SEARCH_INDEX_PREFIX: prefix, SEARCH_REFRESH_INTERVAL: '200ms',
    });
    servers.push(server);
    return server;
  };

  it('a PUT through one process switches the other to OpenSearch (search answered from it), a DELETE brings both back', async () => {
    const a = await start();
    const b = await start();
    const browser = new HttpClient(a.url);
    expect((await browser.post('/api/auth/login', ADMIN)).status).to.equal(200);
    const token = (await browser.post('/api/tokens', { name: 'connection e2e' })).body.token as string;
    const onA = new HttpClient(a.url, token);
    const onB = new HttpClient(b.url, token);
    expect((await onB.get(PATH)).body).to.deep.include({ engine: 'postgres', source: 'environment' });

    const put = await onA.request('PUT', PATH, { url: SEARCH_TEST_URL, username: 'svc', password: SECRET });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    expect(put.body).to.deep.include({ engine: 'opensearch', source: 'administrator' });
    await waitUntil(async () => {
      const status = (await onB.get(PATH)).body;
      return status.engine === 'opensearch' && status.settingsId === put.body.settingsId && status.reachable === true;
    }, 'the other process to switch to OpenSearch', 30_000);

    const created = await onB.post('/api/model/project/create', { data: { name: 'Found on OpenSearch through the other process' } });
    expect(created.status).to.equal(201);
    await waitUntil(async () => (await onB.get('/api/search?q=OpenSearch+other+process&type=projects')).body.total === 1, 'search on the other process', 60_000);
    await searchFetch(SEARCH_TEST_URL, `/${prefix}projects/_refresh`, { method: 'POST' });
    const inEngine = await searchFetch(SEARCH_TEST_URL, `/${prefix}projects/_count`);
    expect(((await inEngine.json()) as { count: number }).count).to.equal(1);

    const reset = await onA.request('DELETE', PATH);
    expect(reset.status, JSON.stringify(reset.body)).to.equal(200);
    expect(reset.body).to.deep.include({ engine: 'postgres', source: 'environment' });
    await waitUntil(async () => (await onB.get(PATH)).body.source === 'environment', 'the other process to go back', 30_000);
    expect((await onB.get(PATH)).body).to.deep.include({ engine: 'postgres', reachable: true });
    await waitUntil(async () => (await onB.get('/api/search?q=OpenSearch+other+process&type=projects')).body.total === 1, 'search on PostgreSQL again', 60_000);

    expect(b.output()).to.include('search connection settings saved by another process applied');
    for (const server of [a, b]) expect(server.output()).not.to.include(SECRET);
  });
});
