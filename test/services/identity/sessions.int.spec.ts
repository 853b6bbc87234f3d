import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import type { SessionData } from 'express-session';
import pg from 'pg';
import { registerUser } from '../../../services/identity/identity.handlers';
import { SESSION_COOKIE, SessionStore } from '../../../services/identity/sessions';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { createTestDatabase } from '../../support/database';
import { HttpClient } from '../../support/server';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SESSION_SECRET = 's'.repeat(40); // startTestApp's
const MINUTE = 60_000;
const IDLE = 30 * MINUTE; // the defaults startTestApp uses
const ABSOLUTE = 12 * 60 * MINUTE;

/** A session cookie for a session id, signed as express-session signs it. */
const signedCookie = (sid: string) =>
  `${SESSION_COOKIE}=${encodeURIComponent(`s:${sid}.${createHmac('sha256', SESSION_SECRET).update(sid).digest('base64').replace(/=+$/, '')}`)}`;

async function login(app: TestApp, headers: Record<string, string> = {}) {
  const res = await fetch(`${app.url}/api/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(ANN),
  });
  return { status: res.status, setCookie: res.headers.getSetCookie(), body: await res.json() };
}

const me = (app: TestApp, cookie: string) => fetch(`${app.url}/api/auth/me`, { headers: { cookie } }).then(async (r) => ({ status: r.status, body: await r.json() as { code: string } }));

describe('sessions', function () {
  this.timeout(60_000);
  let app: TestApp;

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { ...ANN, name: 'Ann', access: 'USER' }, systemMetadata('test'));
  });
  after(() => app.stop());

  const loggedIn = async () => {
    const c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', ANN)).status).to.equal(200);
    return c;
  };

  describe('the session id is regenerated at login', () => {
    it('logging in again gives a new cookie, and the one from before no longer authenticates', async () => {
      const c = await loggedIn();
      const before = c.cookie!;
      expect((await c.post('/api/auth/login', ANN)).status).to.equal(200);
      expect(c.cookie).to.match(new RegExp(`^${SESSION_COOKIE.replace('.', '\\.')}=`)).and.not.equal(before);
      expect((await me(app, c.cookie!)).status).to.equal(200);
      expect((await me(app, before)).status).to.equal(401);
    });

    it('a session planted before login (session fixation) is replaced, and never becomes authenticated', async () => {
      // An anonymous session the attacker made the victim's browser carry.
      const planted = 'planted-session-id-0123456789abcdef';
      await app.deps.knex('http_sessions').insert({
        sid: planted, sess: JSON.stringify({ cookie: { originalMaxAge: IDLE, httpOnly: true, path: '/' } }), expire: new Date(Date.now() + IDLE),
      });
      const cookie = signedCookie(planted);
      expect((await me(app, cookie)).status, 'anonymous before login').to.equal(401);
      const res = await fetch(`${app.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify(ANN) });
      expect(res.status).to.equal(200);
      const issued = res.headers.getSetCookie()[0].split(';')[0];
      expect(issued).to.not.equal(cookie);
      expect((await me(app, issued)).status).to.equal(200);
      const replayed = await me(app, cookie);
      expect(replayed.status).to.equal(401);
      expect(replayed.body.code).to.equal('unauthenticated');
      expect(await app.deps.knex('http_sessions').where({ sid: planted }).first(), 'the planted session was destroyed').to.equal(undefined);
    });
  });

  describe('timeouts', () => {
    it('ends after SESSION_IDLE_TIMEOUT_MS without a request; each request starts the wait again', async () => {
      const c = await loggedIn();
      app.clock.advance(IDLE - 1);
      expect((await c.get('/api/auth/me')).status).to.equal(200);
      app.clock.advance(IDLE - 1); // longer than the timeout since login, but not since the last request
      expect((await c.get('/api/auth/me')).status).to.equal(200);
      app.clock.advance(IDLE);
      const expired = await c.get('/api/auth/me');
      expect(expired.status).to.equal(401);
      expect(expired.body).to.deep.equal({ error: expired.body.error, code: 'session-expired', details: { reason: 'idle' } });
      // Destroyed server-side: the same cookie is now simply unknown, even with time standing still.
      const replayed = await c.get('/api/auth/me');
      expect(replayed.status).to.equal(401);
      expect(replayed.body.code).to.equal('unauthenticated');
    });

    it('ends SESSION_ABSOLUTE_TIMEOUT_MS after login however active it is', async () => {
      const c = await loggedIn();
      let elapsed = 0;
      while (elapsed + 25 * MINUTE < ABSOLUTE) {
        app.clock.advance(25 * MINUTE);
        elapsed += 25 * MINUTE;
        expect((await c.get('/api/auth/me')).status, `after ${elapsed / MINUTE} minutes`).to.equal(200);
      }
      app.clock.advance(ABSOLUTE - elapsed - 1);
      expect((await c.get('/api/auth/me')).status, 'a millisecond before').to.equal(200);
      app.clock.advance(1);
      const expired = await c.post('/api/tokens', { name: 'too late' });
      expect(expired.status).to.equal(401);
      expect(expired.body.code).to.equal('session-expired');
      expect(expired.body.details).to.deep.equal({ reason: 'absolute' });
      expect((await c.get('/api/auth/me')).body.code).to.equal('unauthenticated');
    });

    it('a session without the login time (from before it was recorded) has ended', async () => {
      const sid = 'legacy-session-id-0123456789abcdef';
      await app.deps.knex('http_sessions').insert({
        sid, sess: JSON.stringify({ cookie: { originalMaxAge: IDLE, httpOnly: true, path: '/' }, userId: 1 }), expire: new Date(Date.now() + IDLE),
      });
      const res = await me(app, signedCookie(sid));
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('session-expired');
    });

    it('bearer requests are not sessions: no session timeout applies to them', async () => {
      const c = await loggedIn();
      const token = (await c.post('/api/tokens', { name: 'long-lived' })).body.token;
      app.clock.advance(ABSOLUTE);
      expect((await new HttpClient(app.url, token).get('/api/auth/me')).status).to.equal(200);
    });
  });

  it('logout destroys the session server-side: the old cookie replayed is a 401', async () => {
    const c = await loggedIn();
    const cookie = c.cookie!;
    const out = await c.post('/api/auth/logout');
    expect(out.status).to.equal(204);
    expect(out.headers.getSetCookie().join()).to.match(new RegExp(`^${SESSION_COOKIE.replace('.', '\\.')}=;.*Expires=Thu, 01 Jan 1970`));
    const replayed = await me(app, cookie);
    expect(replayed.status).to.equal(401);
    expect(replayed.body.code).to.equal('unauthenticated');
  });

  describe('cookie attributes', () => {
    it('HttpOnly, SameSite=Lax, Path=/, and not Secure over plain HTTP', async () => {
      const { status, setCookie } = await login(app);
      expect(status).to.equal(200);
      expect(setCookie).to.have.length(1);
      const attributes = setCookie[0].split(';').slice(1).map((a) => a.trim().split('=')[0].toLowerCase());
      expect(attributes).to.include.members(['path', 'expires', 'httponly', 'samesite']);
      expect(setCookie[0]).to.match(/; SameSite=Lax(;|$)/);
      expect(attributes).to.not.include('secure');
    });

    it('without TRUST_PROXY, X-Forwarded-Proto is not believed: no Secure', async () => {
      const { setCookie } = await login(app, { 'x-forwarded-proto': 'https' });
      expect(setCookie[0]).to.match(/HttpOnly/);
      expect(setCookie[0]).to.not.match(/;\s*Secure/i);
    });

    describe('behind an HTTPS proxy (TRUST_PROXY)', () => {
      let proxied: TestApp;
      before(async () => {
        proxied = await startTestApp({ trustProxy: true });
        await registerUser(proxied.deps, { ...ANN, name: 'Ann', access: 'USER' }, systemMetadata('test'));
      });
      after(() => proxied.stop());

      it('a request that came over HTTPS gets a Secure cookie', async () => {
        const { status, setCookie } = await login(proxied, { 'x-forwarded-proto': 'https' });
        expect(status).to.equal(200);
        expect(setCookie[0]).to.match(/; HttpOnly/).and.match(/; Secure/).and.match(/; SameSite=Lax/);
      });

      it('a plain HTTP request gets no Secure cookie (the browser would not send it back)', async () => {
        const { status, setCookie } = await login(proxied);
        expect(status).to.equal(200);
        expect(setCookie[0]).to.match(/; HttpOnly/).and.not.match(/; Secure/);
      });
    });
  });

  describe('the session store', () => {
    it('reports a failed pruning of expired rows to the service log, not the console', async () => {
      const dbOwn = await createTestDatabase('sessions_prune');
      const own = new pg.Pool({ connectionString: dbOwn.url });
      const warnings: { obj: { err?: Error }; msg: string }[] = [];
      const pruning = new SessionStore(own, { warn: ((obj: { err?: Error }, msg: string) => void warnings.push({ obj, msg })) as never });
      await new Promise((r) => setTimeout(r, 200)); // its first pruning, at creation, succeeds
      await own.end();
      await dbOwn.drop();
      const printed: unknown[] = [];
      const consoleError = console.error;
      console.error = (...args: unknown[]) => void printed.push(args);
      try {
        (pruning as unknown as { pruneSessions(): void }).pruneSessions(); // as its timer does
        await new Promise((r) => setTimeout(r, 300));
      } finally {
        console.error = consoleError;
        pruning.close();
      }
      expect(printed).to.deep.equal([]);
      expect(warnings).to.have.length(1);
      expect(warnings[0].msg).to.match(/^session store: Failed to prune sessions/);
      expect(warnings[0].obj.err?.message).to.match(/pool after calling end/);
    });

    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    let pool: pg.Pool;
    let store: SessionStore;
    before(async () => {
      db = await createTestDatabase('sessions');
      pool = new pg.Pool({ connectionString: db.url });
      store = new SessionStore(pool, { warn: () => undefined });
    });
    after(async () => {
      store.close();
      await pool.end();
      await db.drop();
    });
    const data = (userId: number) => ({ cookie: { originalMaxAge: IDLE, expires: new Date(Date.now() + IDLE), httpOnly: true, path: '/' }, userId }) as unknown as SessionData;
    const set = (sid: string, d: SessionData) => new Promise<void>((resolve, reject) => store.set(sid, d, (err) => (err ? reject(err) : resolve())));
    const get = (sid: string) => new Promise<SessionData | null | undefined>((resolve, reject) => store.get(sid, (err, d) => (err ? reject(err) : resolve(d))));
    const destroy = (sid: string) => new Promise<void>((resolve, reject) => store.destroy(sid, (err) => (err ? reject(err) : resolve())));

    it('only a login inserts a session; a request ending after its session was destroyed does not bring it back', async () => {
      expect(await get('other') ?? null).to.equal(null); // creates the table, as the first request with a cookie does
      store.expectLogin('s1');
      await set('s1', data(1));
      expect(await get('s1')).to.deep.include({ userId: 1 });
      await set('s1', { ...data(1), lastSeenAt: 5 });
      expect(await get('s1')).to.deep.include({ userId: 1, lastSeenAt: 5 });
      // Logout (or expiry, or a new login) while another request of the session is still running...
      await destroy('s1');
      // ...which then saves the session it loaded before.
      await set('s1', { ...data(1), lastSeenAt: 6 });
      expect(await get('s1') ?? null).to.equal(null);
      await set('never-logged-in', data(2));
      expect(await get('never-logged-in') ?? null).to.equal(null);
    });
  });
});
