import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { expect } from 'chai';
import type { Logger } from 'pino';
import { secretBox } from '../../../infra/crypto/secretBox';
import { createLogger } from '../../../infra/logger';
import { runIndexer, type IndexerRole } from '../../../services/process/roles';
import type { Platform } from '../../../services/process/platform';
import { SearchConnection } from '../../../services/process/searchConnection';
import { followSavedSettings } from '../../../services/process/searchSettings';
import { appliedSettings, ConnectionSettingsStore } from '../../../services/searchAdmin/connectionSettings';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { DEFAULT_SEARCH_SETTINGS, type SearchSettings } from '../../../services/shared/search';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { dropIndices, requireOpenSearch, searchAnswers, searchFetch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../../support/search';
import { serveSearchAdmin } from '../../support/searchAdminApp';
import { HttpClient, newToken, signIn } from '../../support/server';
import { waitUntil } from '../../support/wait';

const PATH = '/api/admin/search/connection';
const PASSWORD = 'connection-password-1';
/** Credentials given to the engine: none of them may show in an answer, an event, a log line or a stored row. */
const SECRET_PASSWORD = 'pw-Zq8-plaintext-never-shown';
const SECRET_API_KEY = 'ak-Wm3-plaintext-never-shown';
const SECRETS = [SECRET_PASSWORD, SECRET_API_KEY];
const DEAD_URL = 'http://127.0.0.1:1';
const FAST_RETRY = { budgetMs: 60_000, firstMs: 50, maxMs: 1000 };

const expectNoSecret = (what: string, text: string) => {
  for (const secret of SECRETS) expect(text, `${what} holds a secret`).not.to.include(secret);
};

/**
 * The search engine connection's administration over HTTP (docs/search.md, "Connection"), with a
 * real SearchConnection and indexer (services/process), real PostgreSQL search and the real
 * OpenSearch: status, test, change and reset, each way; the indexer and search switching engines
 * without a restart; a change another process saved followed by a second connection; a failed
 * change keeping everything; credentials sealed in the row and absent from every answer, event and
 * log line at trace level.
 */
for (const start of ['postgres', 'opensearch'] as const) describe(`search administration: connection (SEARCH_* on ${start})`, function () {
  this.timeout(180_000);
  const prefix = uniqueIndexPrefix();
  let logs = '';
  let logger: Logger;
  let app: TestApp;
  let environment: SearchSettings;
  let store: ConnectionSettingsStore;
  let connection: SearchConnection;
  let indexer: IndexerRole;
  let replica: SearchConnection;
  let replicaFollower: { stop(): Promise<void> };
  let replicaSwitches = 0;
  let panel: { url: string; stop(): Promise<void> };
  let admin: HttpClient;
  let alice: HttpClient;
  let anonymous: HttpClient;
  let adminId: number;
  const other = start === 'postgres' ? 'opensearch' : 'postgres';
  const urlOf = (engine: 'postgres' | 'opensearch') => (engine === 'opensearch' ? SEARCH_TEST_URL : null);

  /**
   * Starting on PostgreSQL, the reads, refusals and a test of an engine that does not answer need
   * no OpenSearch: only what switches to it (or tries it) does, and skips with its own line.
   */
  const needsOtherEngine = async (ctx: Mocha.Context) => {
    if (start === 'postgres') await requireOpenSearch(ctx, `search administration connection (SEARCH_* on postgres): ${ctx.test?.title ?? ''}`);
  };

  before(async function () {
    if (start === 'opensearch') await requireOpenSearch(this, 'search administration connection (SEARCH_* on opensearch)');
    logger = createLogger('trace', { write: (line: string) => void (logs += line) });
    app = await startTestApp({ logger });
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    adminId = await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    await registerUser(app.deps, { email: 'alice@example.com', name: 'Alice', password: PASSWORD, access: 'USER' }, meta);
    environment = Object.freeze({ ...DEFAULT_SEARCH_SETTINGS, url: urlOf(start), indexPrefix: prefix, refreshInterval: '200ms', requestTimeoutMs: 5000, maxRetries: 1 });
    store = new ConnectionSettingsStore(app.deps.knex, secretBox(randomBytes(32)));
    connection = new SearchConnection(appliedSettings(environment, await store.latest()), environment, { knex: app.deps.knex, logger, retry: FAST_RETRY });
    const platform: Platform = {
      databaseUrl: app.databaseUrl, pool: app.appDeps.pool, knex: app.deps.knex, store: app.deps.store, adapter: app.deps.store, chainLedger: null,
      secrets: { sessionSecret: 's'.repeat(40), tokenSecret: 't'.repeat(40) }, close: async () => undefined,
    };
    indexer = runIndexer(platform, logger, null, FAST_RETRY, connection, environment);
    // Another process over the same database (another API replica, the indexer role): it follows saved changes.
    replica = new SearchConnection(appliedSettings(environment, await store.latest()), environment, { knex: app.deps.knex, logger, retry: FAST_RETRY });
    replica.onSwitch(async () => void replicaSwitches++);
    replicaFollower = followSavedSettings(replica, store, environment, { logger, budgetMs: 5000, pollMs: 200 });
    panel = await serveSearchAdmin(app, () => connection.engine(), { connection, connectionSettings: store });
    const tokenOf = async (email: string) => (await newToken(await signIn(app.url, email, PASSWORD), 'connection')).token;
    admin = new HttpClient(panel.url, await tokenOf('admin@example.com'));
    alice = new HttpClient(panel.url, await tokenOf('alice@example.com'));
    anonymous = new HttpClient(panel.url);
    expect(await connection.ready(), JSON.stringify(connection.status())).not.to.equal(null);
  });

  after(async () => {
    await panel?.stop();
    await replicaFollower?.stop();
    await replica?.close();
    await indexer?.stop();
    await connection?.close();
    await app?.stop();
    await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  const put = (body: unknown) => admin.request('PUT', PATH, body);
  const test = (body: unknown) => admin.post(`${PATH}/test`, body);
  const rows = () => app.deps.knex('search_connection_settings').orderBy('id');
  const adminEvents = async () => app.deps.store.readStream('searchAdministration');
  const lastEvent = async () => (await adminEvents()).at(-1)!;

  /** A project created through the model API, then found by search (the indexer wrote it to the engine in force). */
  const createdAndFound = async (name: string) => {
    const created = await new HttpClient(app.url, admin.bearer).post('/api/model/project/create', { data: { name } });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    await waitUntil(async () => {
      const res = await admin.get(`/api/search?q=${encodeURIComponent(name)}&type=projects`);
      return res.status === 200 && res.body.hits.some((h: { title: string }) => h.title === name);
    }, `search to find ${name}`, 60_000, async () => JSON.stringify({ indexer: indexer.status(), search: (await admin.get(`/api/search?q=${encodeURIComponent(name)}`)).body }));
  };
  /** Whether OpenSearch holds a project document with that title under this suite's prefix. */
  const inOpenSearch = async (name: string) => {
    await searchFetch(SEARCH_TEST_URL, `/${prefix}projects/_refresh`, { method: 'POST' });
    const res = await searchFetch(SEARCH_TEST_URL, `/${prefix}projects/_search`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: { match_phrase: { title: name } } }),
    });
    if (res.status === 404) return false;
    return ((await res.json()) as { hits: { total: { value: number } } }).hits.total.value > 0;
  };

  it('GET: the engine asked now (reachable, version, latency), the connection\'s state, the SEARCH_* settings without secrets; appends nothing', async () => {
    const before = await app.deps.store.headPosition();
    const res = await admin.get(PATH);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.have.all.keys('reachable', 'engine', 'version', 'latencyMs', 'error', 'state', 'lastError', 'source', 'settingsId', 'settings', 'changedAt', 'changedBy');
    expect(res.body).to.deep.include({ reachable: true, engine: start, error: null, state: 'open', lastError: null, source: 'environment', settingsId: null, changedAt: null, changedBy: null });
    expect(res.body.version).to.be.a('string').and.match(/^\d+\.\d+/);
    expect(res.body.latencyMs).to.be.a('number').at.least(0);
    expect(res.body.settings).to.deep.equal({
      engine: 'auto', url: urlOf(start), username: null, hasPassword: false, hasApiKey: false, sslVerify: true, sslCaPath: null, hasSslCa: false,
    });
    expect(await app.deps.store.headPosition()).to.equal(before);
  });

  it('POST /test: tries other settings on a temporary engine, saves nothing, records the test with its actor and outcome', async function () {
    await needsOtherEngine(this);
    const res = await test({ url: urlOf(other), username: 'svc', password: SECRET_PASSWORD });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.have.all.keys('reachable', 'engine', 'version', 'latencyMs', 'error');
    expect(res.body).to.deep.include({ reachable: true, engine: other, error: null });
    expect(res.body.latencyMs).to.be.a('number');
    expectNoSecret('the answer', JSON.stringify(res.body));
    const event = await lastEvent();
    expect(event.type).to.equal('SearchOperationPerformed');
    expect(event.position).to.equal(res.headers.get('x-event-position'));
    expect(event.data).to.deep.include({ operation: 'connection-test', engine: other, targets: [urlOf(other) ?? 'postgres'], outcome: 'succeeded', error: null });
    expect((event.data as { details: { settings: unknown } }).details.settings).to.deep.include({ url: urlOf(other), username: 'svc', hasPassword: true });
    expect(event.metadata.actor).to.deep.include({ userId: adminId, via: 'api' });
    expect(await rows()).to.deep.equal([]);
    expect(connection.applied().source).to.equal('environment');
    expect((await admin.get(PATH)).body.engine).to.equal(start);
  });

  it('POST /test: an engine that does not answer is reachable: false with the reason, recorded as failed; {} tests the settings in force', async () => {
    const res = await test({ url: DEAD_URL });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.include({ reachable: false, version: null, latencyMs: null });
    expect(res.body.error).to.be.a('string').and.include('127.0.0.1:1');
    expect((await lastEvent()).data).to.deep.include({ operation: 'connection-test', outcome: 'failed', error: res.body.error, targets: [DEAD_URL] });
    const current = await test({});
    expect(current.body).to.deep.include({ reachable: true, engine: start });
  });

  it('POST /test: a CA file that cannot be read (missing, a directory, not a certificate, not allowed) is said to be "not readable", nothing more', async () => {
    const probes = ['/nonexistent-dir-8f3a/ca.pem', '/etc', path.join(__dirname, 'connection.int.spec.ts'), '/proc/1/environ', '/etc/shadow'];
    for (const sslCaPath of probes) {
      const res = await test({ engine: 'opensearch', url: DEAD_URL, sslCaPath });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body, sslCaPath).to.deep.include({ reachable: false, error: 'sslCaPath is not readable' });
      expect((await lastEvent()).data, sslCaPath).to.deep.include({ operation: 'connection-test', outcome: 'failed', error: 'sslCaPath is not readable' });
    }
  });

  it('refuses bad settings with 400 invalid-argument naming the field, never echoing a value, appending nothing', async () => {
    const bad: [unknown, string][] = [
      [{ url: 'http://user:hunter2@127.0.0.1:9200' }, 'url'],
      [{ url: 'ftp://127.0.0.1' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 42 }, 'url'],
      [{ engine: 'solr' }, 'engine'],
      [{ engine: 'opensearch', url: null }, 'url'],
      [{ engine: 'postgres', url: SEARCH_TEST_URL }, 'url'],
      [{ password: 'hunter2' }, 'username'],
      [{ username: 'only-user', password: null }, 'password'],
      [{ sslVerify: 'no' }, 'sslVerify'],
      [{ sslCa: 'hunter2 is not a certificate' }, 'sslCa'],
      [{ sslCa: '-----BEGIN CERTIFICATE-----\nhunter2\n-----END CERTIFICATE-----' }, 'sslCa'],
      [{ apiKey: '' }, 'apiKey'],
      [{ url: urlOf(other), token: 'hunter2' }, 'token'],
      [[{ url: null }], ''],
    ];
    for (const [body, path] of bad) {
      for (const send of [() => test(body), () => put(body)]) {
        const error = await expectRefused(app, send, 400);
        expect(error.code, JSON.stringify(body)).to.equal('invalid-argument');
        expect(error.details.path, JSON.stringify(body)).to.equal(path);
        expect(JSON.stringify(error)).not.to.include('hunter2');
      }
    }
    expect(await rows()).to.deep.equal([]);
  });

  it('401 without authentication and 403 below ADMIN on every route, appending nothing', async () => {
    const calls = (client: HttpClient) => [
      () => client.get(PATH), () => client.post(`${PATH}/test`, {}), () => client.request('PUT', PATH, { url: DEAD_URL }), () => client.request('DELETE', PATH),
    ];
    for (const call of calls(anonymous)) expect((await expectRefused(app, call, 401)).code).to.equal('unauthenticated');
    for (const call of calls(alice)) expect((await expectRefused(app, call, 403)).code).to.equal('forbidden');
    expect(await rows()).to.deep.equal([]);
  });

  it(`PUT: switches to ${other} without a restart (tested, saved sealed, recorded without secrets); search and the indexer follow, so does another process`, async function () {
    await needsOtherEngine(this);
    await createdAndFound(`Before the switch ${start}`);
    const res = await put({ url: urlOf(other), username: 'svc', password: SECRET_PASSWORD, apiKey: SECRET_API_KEY });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expectNoSecret('the answer', JSON.stringify(res.body));
    expect(res.body).to.deep.include({ reachable: true, engine: other, state: 'open', source: 'administrator' });
    expect(res.body.settings).to.deep.equal({
      engine: 'auto', url: urlOf(other), username: 'svc', hasPassword: true, hasApiKey: true, sslVerify: true, sslCaPath: null, hasSslCa: false,
    });
    expect(res.body.changedBy).to.deep.equal({ userId: adminId, name: 'Admin', email: 'admin@example.com' });
    expect(res.body.changedAt).to.equal(app.clock.now.toISOString());

    // The row: credentials sealed, not the plaintext.
    const [row] = await rows();
    expect(Number(row.id)).to.equal(res.body.settingsId);
    expect(row).to.deep.include({ source: 'administrator', engine: 'auto', url: urlOf(other), username: 'svc', changed_by: adminId });
    for (const column of ['password_sealed', 'api_key_sealed']) expect(row[column]).to.match(/^v1\.[0-9a-f]{8}\./);
    expectNoSecret('the stored row', JSON.stringify(row));

    // The event: who, what changed, no secret.
    const event = await lastEvent();
    expect(event.position).to.equal(res.headers.get('x-event-position'));
    expect(event.type).to.equal('SearchConnectionChanged');
    expect(event.data).to.deep.equal({
      settingsId: res.body.settingsId, source: 'administrator', engine: 'auto', url: urlOf(other), username: 'svc', hasPassword: true, hasApiKey: true,
      sslVerify: true, sslCaPath: null, hasSslCa: false, changed: ['url', 'username', 'password', 'apiKey'], changedAt: app.clock.now.toISOString(),
    });
    expect(event.metadata.actor).to.deep.include({ userId: adminId, via: 'api' });

    // Search answers from the new engine; the indexer wrote there (it built the engine's first version from the read model).
    await createdAndFound(`After the switch ${start}`);
    await createdAndFound(`Before the switch ${start}`);
    expect(await inOpenSearch(`After the switch ${start}`)).to.equal(other === 'opensearch');
    expect(indexer.status()).to.deep.include({ engine: other });

    // Another process follows the saved change.
    await waitUntil(() => replica.applied().settingsId === res.body.settingsId && replica.status().engine === other, 'the other process to switch', 20_000);
    expect(replica.applied()).to.deep.include({ source: 'administrator' });
    expect(replica.applied().settings).to.deep.include({ url: urlOf(other), password: SECRET_PASSWORD, apiKey: SECRET_API_KEY });
    expect(replicaSwitches).to.equal(1);
  });

  it('PUT: a change that does not work is 400 search-connection-failed with the reason; nothing saved, the old settings stay, search works', async function () {
    await needsOtherEngine(this);
    const rowsBefore = await rows();
    const error = await expectRefused(app, () => put({ url: DEAD_URL, password: 'hunter2-dead' }), 400);
    expect(error.code).to.equal('search-connection-failed');
    expect(error.details).to.deep.include({ url: DEAD_URL });
    expect(error.details.error).to.be.a('string').and.include('127.0.0.1:1');
    expect(JSON.stringify(error)).not.to.include('hunter2');
    expect(await rows()).to.deep.equal(rowsBefore);
    const status = (await admin.get(PATH)).body;
    expect(status).to.deep.include({ reachable: true, engine: other, source: 'administrator', settingsId: Number(rowsBefore[0].id) });
    await createdAndFound(`After a failed switch ${start}`);
    expect(replica.applied().settingsId).to.equal(Number(rowsBefore[0].id));
  });

  it('PUT: the same settings again change nothing and append nothing', async function () {
    await needsOtherEngine(this);
    const before = await app.deps.store.headPosition();
    const res = await put({ url: urlOf(other), username: 'svc' });
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-event-position')).to.equal(null);
    expect(await app.deps.store.headPosition()).to.equal(before);
    expect(await rows()).to.have.length(1);
  });

  it(`PUT: back to ${start}, the secrets kept unless cleared; the indexer catches up there from its own checkpoint`, async function () {
    await needsOtherEngine(this);
    const res = await put({ url: urlOf(start), password: null, username: null });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.include({ engine: start, source: 'administrator' });
    expect(res.body.settings).to.deep.include({ url: urlOf(start), username: null, hasPassword: false, hasApiKey: true });
    expect((await lastEvent()).data).to.deep.include({ changed: ['url', 'username', 'password'], hasApiKey: true });
    // Written while the other engine was in force: the indexer here catches up from its checkpoint.
    await createdAndFound(`After a failed switch ${start}`);
    await createdAndFound(`Back on ${start}`);
    expect(await inOpenSearch(`Back on ${start}`)).to.equal(start === 'opensearch');
    await waitUntil(() => replica.applied().settingsId === res.body.settingsId && replica.status().engine === start, 'the other process to switch back', 20_000);
  });

  it('DELETE: back to the SEARCH_* variables, recorded as source environment; again: changes nothing', async function () {
    await needsOtherEngine(this);
    const res = await admin.request('DELETE', PATH);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.deep.include({ engine: start, source: 'environment', reachable: true });
    expect(res.body.settings).to.deep.equal({
      engine: 'auto', url: urlOf(start), username: null, hasPassword: false, hasApiKey: false, sslVerify: true, sslCaPath: null, hasSslCa: false,
    });
    const event = await lastEvent();
    expect(event.type).to.equal('SearchConnectionChanged');
    expect(event.data).to.deep.include({ source: 'environment', settingsId: res.body.settingsId, changed: ['apiKey'] });
    expect(event.metadata.actor).to.deep.include({ userId: adminId });
    expect((await rows()).at(-1)).to.deep.include({ source: 'environment', password_sealed: null, api_key_sealed: null });
    expect(connection.applied()).to.deep.include({ source: 'environment', settings: environment });
    const before = await app.deps.store.headPosition();
    expect((await admin.request('DELETE', PATH)).status).to.equal(200);
    expect(await app.deps.store.headPosition()).to.equal(before);
    await createdAndFound(`From the environment again ${start}`);
    await waitUntil(() => replica.applied().source === 'environment' && replica.applied().settingsId === res.body.settingsId, 'the other process to go back', 20_000);
  });

  it('no event, log line (at trace level) or answer held a credential', async () => {
    expect(logs.length).to.be.greaterThan(1000);
    // Starting on PostgreSQL without OpenSearch nothing switched: the refusals' secrets are still checked.
    if (start === 'opensearch' || await searchAnswers(SEARCH_TEST_URL)) expect(logs).to.include('search engine switched');
    expectNoSecret('the log', logs);
    expect(logs).not.to.include('hunter2');
    expectNoSecret('the events', JSON.stringify(await app.deps.store.readAll()));
  });
});
