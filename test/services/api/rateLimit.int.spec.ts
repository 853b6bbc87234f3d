import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import pg from 'pg';
import { PostgresRateLimitStore } from '../../../infra/rateLimit/postgres';
import { buildApp } from '../../../services/api/app';
import type { RateLimitSettings } from '../../../services/shared/rateLimitStore';
import { createEntity } from '../../../services/entities/entity.handlers';
import { createApiToken, registerUser } from '../../../services/identity/identity.handlers';
import { loginAttemptsStream } from '../../../services/identity/loginAttempts';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, TEST_TOKEN_SECRET, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const LIMITS: RateLimitSettings = { windowMs: 10_000, max: 3, anonymousMax: 2, loginMax: 3, loginWindowMs: 60_000 };

interface Answer { status: number; body: any; headers: Headers }

/**
 * One request; `ip` arrives as X-Forwarded-For, which the app (TRUST_PROXY) takes as the client's
 * address, so that one test process can be several clients.
 */
async function send(base: string, path: string, o: { method?: string; ip?: string; bearer?: string; cookie?: string | null; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (o.ip) headers['x-forwarded-for'] = o.ip;
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  if (o.cookie) headers.cookie = o.cookie;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method: o.method ?? (o.body === undefined ? 'GET' : 'POST'), headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

function expectRateLimited(res: Answer, limit: number, windowMs: number): number {
  expect(res.status, JSON.stringify(res.body)).to.equal(429);
  expect(res.body).to.have.all.keys('error', 'code', 'details');
  expect(res.body.code).to.equal('rate-limited');
  expect(res.body.error).to.be.a('string');
  expect(res.body.details).to.have.all.keys('limit', 'windowMs', 'retryAfterSeconds');
  expect(res.body.details).to.include({ limit, windowMs });
  const retryAfter = res.body.details.retryAfterSeconds as number;
  expect(retryAfter).to.be.within(1, Math.ceil(windowMs / 1000));
  expect(res.headers.get('retry-after')).to.equal(String(retryAfter));
  expect(res.headers.get('ratelimit-limit')).to.equal(String(limit));
  expect(res.headers.get('ratelimit-remaining')).to.equal('0');
  return retryAfter;
}

describe('rate limits over HTTP', function () {
  this.timeout(60_000);
  let app: TestApp;
  let annId: number;
  const tokens: string[] = [];

  before(async () => {
    app = await startTestApp({ trustProxy: true, rateLimits: LIMITS });
    const deps = { ...app.deps, tokenSecret: TEST_TOKEN_SECRET };
    annId = await registerUser(app.deps, { email: 'ann@example.com', name: 'Ann', password: 'ann-password-1', access: 'USER' }, systemMetadata('test'));
    await registerUser(app.deps, { email: 'bob@example.com', name: 'Bob', password: 'bob-password-1', access: 'USER' }, systemMetadata('test'));
    await registerUser(app.deps, { email: 'carol@example.com', name: 'Carol', password: 'carol-password-1', access: 'USER' }, systemMetadata('test'));
    for (const name of ['one', 'two', 'three']) tokens.push((await createApiToken(deps, { userId: annId, name, expiresAt: null }, systemMetadata('test'))).token);
  });
  after(() => app?.stop());
  // Every test starts in fresh windows of every key.
  beforeEach(() => app.clock.advance(LIMITS.loginWindowMs));

  it('a token over its limit gets 429 rate-limited with Retry-After; its other tokens and sessions are not affected', async () => {
    for (let i = 0; i < LIMITS.max; i++) {
      const res = await send(app.url, '/api/auth/me', { bearer: tokens[0] });
      expect(res.status).to.equal(200);
      expect(res.headers.get('ratelimit-limit')).to.equal('3');
      expect(res.headers.get('ratelimit-remaining')).to.equal(String(LIMITS.max - 1 - i));
      expect(Number(res.headers.get('ratelimit-reset'))).to.be.within(1, 10);
      expect(res.headers.get('ratelimit-policy')).to.equal('3;w=10');
    }
    expectRateLimited(await send(app.url, '/api/auth/me', { bearer: tokens[0] }), 3, 10_000);
    expectRateLimited(await send(app.url, '/api/model/project/findMany', { bearer: tokens[0], body: {} }), 3, 10_000);
    expect((await send(app.url, '/api/auth/me', { bearer: tokens[1] })).status).to.equal(200);
    const session = new HttpClient(app.url);
    expect((await session.post('/api/auth/login', { email: 'ann@example.com', password: 'ann-password-1' })).status).to.equal(200);
    expect((await session.get('/api/auth/me')).status).to.equal(200);
  });

  it('once Retry-After has passed the token is let through again, and not a second earlier', async () => {
    for (let i = 0; i < LIMITS.max; i++) expect((await send(app.url, '/api/auth/me', { bearer: tokens[0] })).status).to.equal(200);
    const retryAfter = expectRateLimited(await send(app.url, '/api/auth/me', { bearer: tokens[0] }), 3, 10_000);
    app.clock.advance((retryAfter - 1) * 1000);
    expectRateLimited(await send(app.url, '/api/auth/me', { bearer: tokens[0] }), 3, 10_000);
    app.clock.advance(1000);
    const again = await send(app.url, '/api/auth/me', { bearer: tokens[0] });
    expect(again.status).to.equal(200);
    expect(again.headers.get('ratelimit-remaining')).to.equal('2');
  });

  it('a session user is limited as one caller, whichever of their sessions asks', async () => {
    const first = new HttpClient(app.url);
    const second = new HttpClient(app.url);
    for (const c of [first, second]) expect((await c.post('/api/auth/login', { email: 'bob@example.com', password: 'bob-password-1' })).status).to.equal(200);
    expect((await first.get('/api/auth/me')).status).to.equal(200);
    expect((await first.get('/api/tokens')).status).to.equal(200);
    expect((await second.get('/api/auth/me')).status).to.equal(200);
    expectRateLimited(await second.get('/api/auth/me'), 3, 10_000);
    expectRateLimited(await first.get('/api/tokens'), 3, 10_000);
  });

  it('requests without credentials are limited per client address; health checks and documentation are not limited', async () => {
    for (let i = 0; i < LIMITS.anonymousMax; i++) {
      const res = await send(app.url, '/api/auth/me', { ip: '198.51.100.1' });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('unauthenticated');
      expect(res.headers.get('ratelimit-remaining')).to.equal(String(LIMITS.anonymousMax - 1 - i));
    }
    expectRateLimited(await send(app.url, '/api/model/project/findMany', { ip: '198.51.100.1', body: {} }), 2, 10_000);
    expect((await send(app.url, '/api/auth/me', { ip: '198.51.100.2' })).status).to.equal(401);
    for (let i = 0; i < 5; i++) {
      for (const path of ['/healthz', '/readyz', '/api/docs', '/docs/api']) {
        const res = await fetch(app.url + path, { headers: { 'x-forwarded-for': '198.51.100.1' } });
        expect(res.status, path).to.equal(200);
        expect(res.headers.get('ratelimit-limit'), path).to.equal(null);
        await res.arrayBuffer();
      }
    }
    // The same address with a token counts by the token.
    expect((await send(app.url, '/api/auth/me', { ip: '198.51.100.1', bearer: tokens[2] })).status).to.equal(200);
  });

  it('a failed authentication counts for the address: guessing tokens is limited like anonymous requests', async () => {
    for (let i = 0; i < LIMITS.anonymousMax; i++) {
      const res = await send(app.url, '/api/auth/me', { ip: '198.51.100.3', bearer: `tst_guess-${i}` });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('invalid-token');
    }
    expectRateLimited(await send(app.url, '/api/auth/me', { ip: '198.51.100.3', bearer: 'tst_guess-x' }), 2, 10_000);
    expectRateLimited(await send(app.url, '/api/auth/me', { ip: '198.51.100.3', cookie: 'testament.sid=s%3Anothing.at-all' }), 2, 10_000);
    expect((await send(app.url, '/api/auth/me', { ip: '198.51.100.3', bearer: tokens[2] })).status).to.equal(200);
  });

  it('wrong passwords from one address lock that address out, not the account: its owner logs in from another address', async () => {
    const login = (password: string, ip: string) => send(app.url, '/api/auth/login', { ip, body: { email: 'Carol@Example.com', password } });
    for (let i = 0; i < LIMITS.loginMax; i++) {
      const res = await login(`wrong-${i}`, '203.0.113.10');
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('invalid-credentials');
    }
    // The guessing address is refused before any password is checked, the right one included (by
    // its own limit and, the account being over its limit now, by its two attempts at it).
    const locked = await login('carol-password-1', '203.0.113.10');
    expect(locked.status).to.equal(429);
    expect(locked.body.code).to.equal('rate-limited');
    const retryAfter = locked.body.details.retryAfterSeconds as number;
    expect(locked.headers.get('retry-after')).to.equal(String(retryAfter));
    expectRateLimited(await send(app.url, '/api/auth/login', { ip: '203.0.113.10', body: { email: 'ann@example.com', password: 'ann-password-1' } }), 3, 60_000);
    // The owner, elsewhere, with the right password: in, again and again.
    for (let i = 0; i < 3; i++) expect((await login('carol-password-1', '198.51.100.77')).status, `owner's login ${i + 1}`).to.equal(200);
    // The first throttled attempt of the window is recorded, not every one.
    const events = await app.deps.store.readStream(loginAttemptsStream('carol@example.com'));
    expect(events.map((e) => (e.data as { reason: string }).reason)).to.deep.equal(['wrong-password', 'wrong-password', 'wrong-password', 'rate-limited']);
    expect(events.at(-1)!.data).to.deep.equal({ email: 'carol@example.com', userId: null, reason: 'rate-limited', ip: '203.0.113.10', attemptedAt: app.clock.now.toISOString() });

    app.clock.advance(retryAfter * 1000);
    expect((await login('carol-password-1', '203.0.113.10')).status).to.equal(200);
  });

  it('guessing one e-mail address from many addresses: once it is over the limit each address has two attempts at it; its owner still gets in', async () => {
    const login = (password: string, ip: string) => send(app.url, '/api/auth/login', { ip, body: { email: 'carol@example.com', password } });
    for (let i = 0; i < LIMITS.loginMax; i++) expect((await login('wrong', `203.0.113.${20 + i}`)).status).to.equal(401);
    // Over the e-mail address's limit: a fresh address has two attempts at it (of its three), then waits.
    for (const ip of ['203.0.113.30', '203.0.113.31']) {
      expect((await login('wrong', ip)).status).to.equal(401);
      expect((await login('wrong', ip)).status).to.equal(401);
      const refused = await login('carol-password-1', ip);
      expect(refused.status).to.equal(429);
      expect(refused.body.details).to.include({ limit: 2, windowMs: 60_000 });
    }
    // The owner, from an address of their own, gets in, even after a typo.
    expect((await login('carol-password-', '198.51.100.78')).status).to.equal(401);
    expect((await login('carol-password-1', '198.51.100.78')).status).to.equal(200);
  });

  it('login is limited per address, over any number of e-mail addresses; other addresses are not affected', async () => {
    for (let i = 0; i < LIMITS.loginMax; i++) {
      expect((await send(app.url, '/api/auth/login', { ip: '203.0.113.50', body: { email: `nobody${i}@example.com`, password: 'guess' } })).status).to.equal(401);
    }
    expectRateLimited(await send(app.url, '/api/auth/login', { ip: '203.0.113.50', body: { email: 'ann@example.com', password: 'ann-password-1' } }), 3, 60_000);
    expect((await send(app.url, '/api/auth/login', { ip: '203.0.113.51', body: { email: 'ann@example.com', password: 'ann-password-1' } })).status).to.equal(200);
  });

  it('a malformed login body is a 400 and no password check: it never counts towards the limit', async () => {
    const ip = '203.0.113.55';
    for (const body of [{ password: 'no e-mail at all' }, { email: 'ann@example.com' }, { email: '   ', password: 'x' }, { email: 'ann@example.com', password: '' }, { email: 'ann@example.com', password: 'x', more: 1 }]) {
      for (let i = 0; i < LIMITS.loginMax; i++) {
        const res = await send(app.url, '/api/auth/login', { ip, body });
        expect(res.status, JSON.stringify([body, res.body])).to.equal(400);
      }
    }
    const raw = await fetch(`${app.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: '{"email":' });
    expect(raw.status).to.equal(400);
    // The address has all its attempts: loginMax wrong passwords answered as such, then the limit.
    for (let i = 0; i < LIMITS.loginMax; i++) expect((await send(app.url, '/api/auth/login', { ip, body: { email: 'ann@example.com', password: `wrong-${i}` } })).status).to.equal(401);
    expectRateLimited(await send(app.url, '/api/auth/login', { ip, body: { email: 'bob@example.com', password: 'bob-password-1' } }), 3, 60_000);
  });

  it('every password check shares the login limit per account and address: wrong passwords to sign or revoke lock that address out of signing and logging in; the owner signs from elsewhere', async () => {
    const meta = systemMetadata('test');
    const doraId = await registerUser(app.deps, { email: 'dora@example.com', name: 'Dora', password: 'dora-password-1', access: 'ADMIN' }, meta);
    const projectId = await createEntity(app.deps, 'project', { data: { name: 'Signed' }, connect: {} }, meta);
    const runId = await createEntity(app.deps, 'testRun', { data: { name: 'Release 1' }, connect: { project: projectId } }, meta);
    // A token per request, so that no token reaches its own limit (LIMITS.max) meanwhile.
    const token = async () => (await createApiToken({ ...app.deps, tokenSecret: TEST_TOKEN_SECRET }, { userId: doraId, name: `sign ${tokens.length}-${Math.random()}`, expiresAt: null }, meta)).token;
    const sign = async (password: string, ip: string) => send(app.url, '/api/signatures', { ip, bearer: await token(), body: { entity: 'testRun', id: runId, meaning: 'approved', password } });
    const guesser = '203.0.113.70';
    const signed = await sign('dora-password-1', guesser);
    expect(signed.status, JSON.stringify(signed.body)).to.equal(201);
    const revoke = async (password: string, ip: string) =>
      send(app.url, `/api/signatures/${signed.body.data.id}/revoke`, { ip, bearer: await token(), body: { entity: 'testRun', id: runId, reason: 'a typo', password } });
    // The right password given back, loginMax wrong ones: signing, revoking and logging in alike.
    for (const wrong of [() => sign('wrong-1', guesser), () => revoke('wrong-2', guesser), () => send(app.url, '/api/auth/login', { ip: guesser, body: { email: 'dora@example.com', password: 'wrong-3' } })]) {
      const res = await wrong();
      expect(res.status, JSON.stringify(res.body)).to.equal(401);
      expect(res.body.code).to.be.oneOf(['reauthentication-failed', 'invalid-credentials']);
    }
    // Refused before any password is checked, the right one included, whichever way it comes.
    for (const right of [() => sign('dora-password-1', guesser), () => revoke('dora-password-1', guesser), () => send(app.url, '/api/auth/login', { ip: guesser, body: { email: 'dora@example.com', password: 'dora-password-1' } })]) {
      const res = await right();
      expect(res.status, JSON.stringify(res.body)).to.equal(429);
      expect(res.body.code).to.equal('rate-limited');
    }
    // The owner, from an address of their own, signs.
    expect((await sign('dora-password-1', '198.51.100.90')).status).to.equal(201);
    const events = await app.deps.store.readStream(loginAttemptsStream('dora@example.com'));
    expect(events.map((e) => (e.data as { reason: string }).reason)).to.deep.equal(['wrong-password', 'wrong-password', 'wrong-password', 'rate-limited']);
  });

  it('a successful login is given back: logging in again and again is never throttled', async () => {
    for (let i = 0; i < 3 * LIMITS.loginMax; i++) {
      const res = await send(app.url, '/api/auth/login', { ip: '203.0.113.60', body: { email: 'bob@example.com', password: 'bob-password-1' } });
      expect(res.status, `login ${i + 1}`).to.equal(200);
    }
  });

  it('two API instances on one database share the counters', async () => {
    const pool = new pg.Pool({ connectionString: app.databaseUrl, max: 2 });
    const second = buildApp({ ...app.appDeps, pool, rateLimits: { settings: LIMITS, store: new PostgresRateLimitStore(pool) } });
    const server = await new Promise<Server>((resolve) => {
      const s = second.listen(0, '127.0.0.1', () => resolve(s));
    });
    const secondUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect((await send(app.url, '/api/auth/me', { bearer: tokens[1] })).status).to.equal(200);
      expect((await send(secondUrl, '/api/auth/me', { bearer: tokens[1] })).status).to.equal(200);
      const third = await send(app.url, '/api/auth/me', { bearer: tokens[1] });
      expect(third.status).to.equal(200);
      expect(third.headers.get('ratelimit-remaining')).to.equal('0');
      expectRateLimited(await send(secondUrl, '/api/auth/me', { bearer: tokens[1] }), 3, 10_000);
      expectRateLimited(await send(app.url, '/api/auth/me', { bearer: tokens[1] }), 3, 10_000);

      for (let i = 0; i < LIMITS.loginMax; i++) {
        const base = i % 2 === 0 ? app.url : secondUrl;
        expect((await send(base, '/api/auth/login', { ip: '203.0.113.70', body: { email: `nobody${i}@example.com`, password: 'wrong' } })).status).to.equal(401);
      }
      expectRateLimited(await send(secondUrl, '/api/auth/login', { ip: '203.0.113.70', body: { email: 'ann@example.com', password: 'ann-password-1' } }), 3, 60_000);
    } finally {
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
      await pool.end();
    }
  });
});

describe('rate limits over HTTP: large per-caller limits leased in blocks', function () {
  this.timeout(60_000);
  const LARGE = { ...LIMITS, max: 100 }; // leased 5 counts at a time

  it('two instances on one database let through at most the limit together, and lose at most a block each', async () => {
    const app = await startTestApp({ rateLimits: LARGE });
    const pool = new pg.Pool({ connectionString: app.databaseUrl, max: 2 });
    const second = buildApp({ ...app.appDeps, pool, rateLimits: { settings: LARGE, store: new PostgresRateLimitStore(pool) } });
    const server = await new Promise<Server>((resolve) => {
      const s = second.listen(0, '127.0.0.1', () => resolve(s));
    });
    const secondUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const userId = await registerUser(app.deps, { email: 'dan@example.com', name: 'Dan', password: 'dan-password-1', access: 'USER' }, systemMetadata('test'));
      const { token } = await createApiToken({ ...app.deps, tokenSecret: TEST_TOKEN_SECRET }, { userId, name: 'busy', expiresAt: null }, systemMetadata('test'));
      const statuses: number[] = [];
      for (let i = 0; i < 120; i++) statuses.push((await send(i % 3 === 0 ? secondUrl : app.url, '/api/auth/me', { bearer: token })).status);
      const passed = statuses.filter((s) => s === 200).length;
      expect(passed, 'never more than the limit').to.be.at.most(100);
      expect(passed, 'at most one unused block of 5 per instance is lost').to.be.at.least(100 - 2 * 4);
      // (an instance may still hold a few numbers of its last block after the other ran out)
      expect(statuses.slice(-10), 'once both are out, everything is refused').to.deep.equal(new Array(10).fill(429));
      const { rows: [{ count }] } = await pool.query("SELECT count FROM rate_limit_counters WHERE key LIKE 'token:%'");
      expect(count, 'the counter holds whole blocks').to.be.at.least(120).and.satisfy((n: number) => n % 5 === 0);
    } finally {
      await new Promise((r) => server.close(r));
      server.closeAllConnections();
      await pool.end();
      await app.stop();
    }
  });
});
