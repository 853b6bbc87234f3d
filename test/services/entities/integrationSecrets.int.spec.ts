import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { EventEnvelope } from '../../../contracts/envelope';
import { isSealedSecret, REDACTED, type SealedSecret } from '../../../contracts/secrets';
import { secretBox } from '../../../infra/crypto/secretBox';
import { postgresSecretVault } from '../../../infra/crypto/secretVault';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { loadConfig } from '../../../services/process/config';
import { runApi } from '../../../services/process/roles';
import { readYourWrites } from '../../../services/shared/commandBus';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient, runScript } from '../../support/server';

const PASSWORD = 'secrets-password-1';
const TOKEN = 'jira-token-Qx7-never-shown';
const NESTED = 'nested-password-Lm2-never-shown';
const OLD_TOKEN = 'old-token-Vb9-recorded-in-clear';

/**
 * Issue 35, section 2: an integration's `settings.apiToken` sat in clear in its events, and
 * /api/events, the model API and the log showed it. Now a secret is sealed with a key of its own
 * before it enters an event; every answer shows a reference (or, for a value an older version
 * recorded in clear, REDACTED); the start-up migration seals clear secrets with a new event; and
 * deleting a secret's key forgets it.
 */
describe('integration secrets: sealed before they enter an event, never in an answer', function () {
  this.timeout(180_000);
  let app: TestApp;
  let admin: HttpClient;
  /** Every answer of the suite, to check none holds a secret. */
  const answers: string[] = [];

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
  });
  after(async () => {
    for (const secret of [TOKEN, NESTED, OLD_TOKEN]) for (const answer of answers) expect(answer, 'an answer holds a secret').not.to.include(secret);
    await app?.stop();
  });

  const call = async (method: string, url: string, body?: unknown) => {
    const res = await admin.request(method, url, body);
    answers.push(JSON.stringify(res.body));
    return res;
  };
  const eventsOf = (id: number) => app.deps.store.readStream(`integration-${id}`);
  const eventLog = async () => {
    const res = await fetch(`${app.url}/api/events?types=IntegrationCreated,IntegrationUpdated`, { headers: { cookie: admin.cookie! } });
    expect(res.status).to.equal(200);
    const text = await res.text();
    answers.push(text);
    return text.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as EventEnvelope);
  };
  const settingsOf = (event: EventEnvelope) => {
    const data = event.data as { settings?: Record<string, unknown>; changes?: { settings?: Record<string, unknown> } };
    return data.settings ?? data.changes!.settings!;
  };

  it('a new write seals the secrets: the event holds them sealed, answers by reference; a reference keeps one, a value replaces it', async () => {
    const created = await call('POST', '/api/model/integration/create', {
      data: { name: 'Jira', provider: 'JIRA', url: 'https://jira.example.com', settings: { apiToken: TOKEN, project: 'QA', auth: { user: 'bot', password: NESTED } } },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const { id, settings } = created.body.data;
    expect(settings.project).to.equal('QA');
    expect(settings.auth.user).to.equal('bot');
    expect(Object.keys(settings.apiToken)).to.deep.equal(['$secret']);
    expect(Object.keys(settings.auth.password)).to.deep.equal(['$secret']);

    // The event: sealed, each secret with its own key, which opens it.
    const [event] = await eventsOf(id);
    expect(JSON.stringify(event)).not.to.include(TOKEN).and.not.to.include(NESTED);
    const sealedToken = settingsOf(event).apiToken as SealedSecret;
    expect(isSealedSecret(sealedToken)).to.equal(true);
    expect(sealedToken.secretId).to.equal(settings.apiToken.$secret);
    expect(await app.deps.secrets!.open(sealedToken)).to.equal(TOKEN);
    expect(await app.deps.secrets!.open((settingsOf(event).auth as Record<string, SealedSecret>).password)).to.equal(NESTED);
    const keys = await app.deps.knex('secret_keys').select('secret_id', 'label', 'key_sealed');
    expect(keys.map((k) => k.label).sort()).to.deep.equal([`integration ${id} settings.apiToken`, `integration ${id} settings.auth.password`]);
    expect(JSON.stringify(keys)).not.to.include(TOKEN);

    // Every read path: by reference.
    const row = await app.deps.knex('integrations').where({ id }).first();
    expect(JSON.stringify(row)).not.to.include(TOKEN);
    const read = await call('POST', '/api/model/integration/findUnique', { where: { id } });
    expect(read.body.data.settings).to.deep.equal(settings);
    const asOf = await call('POST', '/api/model/integration/findMany', { asOf: (await app.deps.store.headPosition()).toString() });
    expect(asOf.status, JSON.stringify(asOf.body)).to.equal(200);
    const logged = (await eventLog()).find((e) => e.streamId === `integration-${id}`)!;
    expect(settingsOf(logged).apiToken).to.deep.equal({ $secret: sealedToken.secretId });
    expect((await call('GET', `/api/history/integration/${id}`)).status).to.equal(200);
    expect((await call('GET', `/api/history/diff?entity=integration&id=${id}&from=1`)).status).to.equal(200);

    // Written back as answered (a reference), the secret stays as it was: the update changes only the project.
    const kept = await call('POST', '/api/model/integration/update', { where: { id }, data: { settings: { ...settings, project: 'QB' } } });
    expect(kept.status, JSON.stringify(kept.body)).to.equal(200);
    expect(kept.body.data.settings).to.deep.equal({ ...settings, project: 'QB' });
    const [, update] = await eventsOf(id);
    expect(settingsOf(update).apiToken).to.deep.equal(sealedToken);

    // A reference to a secret the row does not hold is refused, appending nothing.
    await expectRefusedAs(app, () => call('POST', '/api/model/integration/update', {
      where: { id }, data: { settings: { ...settings, apiToken: { $secret: '00000000-0000-4000-8000-000000000000' } } },
    }), 400, 'invalid-argument', 'data.settings.apiToken');

    // So is an updateMany whose reference only one of its rows holds: no row changes.
    const other = await call('POST', '/api/model/integration/create', { data: { name: 'GitLab', provider: 'GITLAB', settings: { apiToken: `${TOKEN}-gitlab` } } });
    expect(other.status, JSON.stringify(other.body)).to.equal(201);
    await expectRefusedAs(app, () => call('PATCH', '/api/model/integration/updateMany', {
      where: { id: { in: [id, other.body.data.id] } }, data: { settings: { apiToken: settings.apiToken } },
    }), 400, 'invalid-argument', 'data.settings.apiToken');

    // A new value is a new secret.
    const replaced = await call('POST', '/api/model/integration/update', { where: { id }, data: { settings: { ...settings, apiToken: `${TOKEN}-2` } } });
    expect(replaced.body.data.settings.apiToken.$secret).not.to.equal(sealedToken.secretId);
  });

  it('forgetting a secret (npm run forget-secret) deletes its key: the sealed value no longer opens, anywhere it was copied', async () => {
    const created = await call('POST', '/api/model/integration/create', { data: { name: 'GitHub', provider: 'GITHUB', settings: { apiToken: TOKEN } } });
    const [event] = await eventsOf(created.body.data.id);
    const sealed = settingsOf(event).apiToken as SealedSecret;
    expect(await app.deps.secrets!.open(sealed)).to.equal(TOKEN);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-forget-'));
    const forget = (id: string) => runScript('scripts/forgetSecret.ts', [id], { DATABASE_URL: app.databaseUrl, DATA_DIR: dataDir, SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40) });
    try {
      const forgot = await forget(sealed.secretId);
      expect(forgot.code, forgot.output).to.equal(0);
      expect(await app.deps.secrets!.open(sealed)).to.equal(null);
      const again = await forget(sealed.secretId);
      expect(again.code, again.output).to.equal(1);
      expect(again.output).to.include('forgotten already');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    // The row still answers, by reference: the secret is gone, not the integration.
    expect((await call('POST', '/api/model/integration/findUnique', { where: { id: created.body.data.id } })).body.data.settings).to.deep.equal({ apiToken: { $secret: sealed.secretId } });
  });

  it('a secret an older version recorded in clear: redacted on every read path, sealed by a new event at start-up, once', async () => {
    // As the version before sealing wrote it.
    const meta = { ...systemMetadata('older-version'), actor: { userId: null, via: 'api' as const } };
    const id = await app.deps.ids.next('integration', meta);
    const result = await app.deps.store.append(`integration-${id}`, [{
      type: 'IntegrationCreated',
      data: { integrationId: id, name: 'Old Jira', provider: 'JIRA', url: null, isEnabled: true, settings: { apiToken: OLD_TOKEN, project: 'OLD' }, createdAt: new Date().toISOString() },
    }], { expectedRevision: 'no-stream', metadata: meta });
    await readYourWrites(app.deps, { position: result.position, streamId: `integration-${id}` });

    expect((await call('POST', '/api/model/integration/findUnique', { where: { id } })).body.data.settings).to.deep.equal({ apiToken: REDACTED, project: 'OLD' });
    expect(settingsOf((await eventLog()).find((e) => e.streamId === `integration-${id}`)!).apiToken).to.equal(REDACTED);
    expect((await call('GET', `/api/history/integration/${id}`)).status).to.equal(200);
    expect((await call('GET', `/api/history/diff?entity=integration&id=${id}&from=1`)).status).to.equal(200);

    // The API role's start-up (services/process/roles.ts runApi) over the same database.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-secrets-'));
    const secretsKey = randomBytes(32);
    const config = loadConfig({
      DATABASE_URL: app.databaseUrl, DATA_DIR: dataDir, PORT: '0', SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), SECRETS_KEY: secretsKey.toString('base64'),
    });
    const platform = {
      databaseUrl: app.databaseUrl, pool: app.appDeps.pool, knex: app.deps.knex, store: app.deps.store, adapter: app.deps.store, chainLedger: null,
      secrets: { sessionSecret: 's'.repeat(40), tokenSecret: 't'.repeat(40) }, close: async () => undefined,
    };
    const startApi = async () => {
      const api = await runApi(config, platform, pino({ level: 'silent' }), []);
      await api.stop();
    };
    try {
      await startApi();
      const events = await eventsOf(id);
      expect(events.map((e) => e.type)).to.deep.equal(['IntegrationCreated', 'IntegrationUpdated']);
      expect(events[1].metadata.actor).to.deep.include({ userId: null, via: 'system' });
      const sealed = settingsOf(events[1]).apiToken as SealedSecret;
      expect(isSealedSecret(sealed)).to.equal(true);
      expect(settingsOf(events[1]).project, 'the rest of the settings as they were').to.equal('OLD');
      // Sealed with the process's SECRETS_KEY.
      expect(await postgresSecretVault(app.deps.knex, secretBox(secretsKey)).open(sealed)).to.equal(OLD_TOKEN);
      // The old event's bytes still hold the value (the log is append-only): every answer redacts it.
      expect(JSON.stringify(events[0].data)).to.include(OLD_TOKEN);
      const logged = (await eventLog()).filter((e) => e.streamId === `integration-${id}`);
      expect(logged.map((e) => settingsOf(e).apiToken)).to.deep.equal([REDACTED, { $secret: sealed.secretId }]);
      expect((await call('POST', '/api/model/integration/findUnique', { where: { id } })).body.data.settings).to.deep.equal({ apiToken: { $secret: sealed.secretId }, project: 'OLD' });
      // Once: a second start finds nothing in clear.
      await startApi();
      expect((await eventsOf(id)).length).to.equal(2);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
