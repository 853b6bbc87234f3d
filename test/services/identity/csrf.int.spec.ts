import { expect } from 'chai';
import { createApiToken, registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { TEST_TOKEN_SECRET, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const EVIL = 'https://evil.example';

interface Sent { status: number; body: any; setCookie: string[] }

/** One request with exactly the headers given (HttpClient would add an Origin). */
async function send(app: TestApp, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Sent> {
  const res = await fetch(app.url + path, {
    method, headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, setCookie: res.headers.getSetCookie() };
}

function expectRefused(res: Sent) {
  expect(res.status, JSON.stringify(res.body)).to.equal(403);
  expect(res.body).to.have.all.keys('error', 'code', 'details');
  expect(res.body.code).to.equal('csrf-rejected');
}

async function setUp(options: Parameters<typeof startTestApp>[0] = {}) {
  const app = await startTestApp(options);
  const userId = await registerUser(app.deps, { ...ANN, name: 'Ann', access: 'USER' }, systemMetadata('test'));
  const { token } = await createApiToken({ ...app.deps, tokenSecret: TEST_TOKEN_SECRET }, { userId, name: 'ci', expiresAt: null }, systemMetadata('test'));
  return { app, token };
}

describe('CSRF: cookie-authenticated unsafe requests must come from the application', function () {
  this.timeout(60_000);
  let app: TestApp;
  let token: string;
  let cookie: string;
  const own = () => new URL(app.url).origin;
  const head = () => app.deps.store.headPosition();
  /** POST /api/tokens with the session cookie and these headers: 201 when accepted. */
  const createToken = (headers: Record<string, string>) => send(app, 'POST', '/api/tokens', { cookie, ...headers }, { name: 'from a page' });

  before(async () => {
    ({ app, token } = await setUp());
    const c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', ANN)).status).to.equal(200);
    cookie = c.cookie!;
  });
  after(() => app.stop());

  describe('accepted', () => {
    it('Sec-Fetch-Site: same-origin', async () => expect((await createToken({ 'sec-fetch-site': 'same-origin' })).status).to.equal(201));
    it('Sec-Fetch-Site: none (typed by the user)', async () => expect((await createToken({ 'sec-fetch-site': 'none' })).status).to.equal(201));
    it('no Sec-Fetch-Site, Origin is the request\'s own origin', async () => expect((await createToken({ origin: own() })).status).to.equal(201));
    it('no Sec-Fetch-Site nor Origin, Referer is a page of the own origin', async () =>
      expect((await createToken({ referer: `${own()}/projects/1?tab=cases` })).status).to.equal(201));
    it('a safe method from anywhere', async () =>
      expect((await send(app, 'GET', '/api/auth/me', { cookie, origin: EVIL, 'sec-fetch-site': 'cross-site' })).status).to.equal(200));
    it('a bearer token from anywhere: it carries no ambient credentials', async () => {
      expect((await send(app, 'POST', '/api/tokens', { authorization: `Bearer ${token}`, origin: EVIL, 'sec-fetch-site': 'cross-site' }, { name: 'x' })).status).to.equal(201);
      expect((await send(app, 'POST', '/api/tokens', { authorization: `Bearer ${token}` }, { name: 'y' })).status).to.equal(201);
    });
  });

  describe('refused with 403 csrf-rejected, nothing written', () => {
    const cases: [string, Record<string, string>][] = [
      ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site', origin: EVIL }],
      ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
      ['Sec-Fetch-Site: cross-site, even with the own Origin', { 'sec-fetch-site': 'cross-site', origin: 'OWN' }],
      ['another Origin', { origin: EVIL }],
      ['the own host on another port', { origin: 'OWN_OTHER_PORT' }],
      ['the own host over https (another origin)', { origin: 'OWN_HTTPS' }],
      ['Origin: null (sandboxed or privacy-sensitive)', { origin: 'null', referer: 'OWN' }],
      ['an Origin that is not a URL', { origin: 'not a url' }],
      ['no Origin, Referer of another site', { referer: `${EVIL}/page` }],
      ['neither Sec-Fetch-Site nor Origin nor Referer', {}],
    ];
    for (const [name, headers] of cases) {
      it(name, async () => {
        const resolved = Object.fromEntries(Object.entries(headers).map(([k, v]) => {
          const url = new URL(own());
          if (v === 'OWN') return [k, own()];
          if (v === 'OWN_OTHER_PORT') return [k, `http://${url.hostname}:${Number(url.port) + 1}`];
          if (v === 'OWN_HTTPS') return [k, `https://${url.host}`];
          return [k, v];
        }));
        const before = await head();
        expectRefused(await createToken(resolved));
        expect(await head(), 'no event appended').to.equal(before);
      });
    }

    it('every unsafe method is checked; a refusal comes before routing', async () => {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        expectRefused(await send(app, method, '/api/nowhere', { cookie }));
        expect((await send(app, method, '/api/nowhere', { cookie, origin: own() })).body.code, method).to.equal('route-not-found');
      }
    });

    it('a forged logout does not end the session', async () => {
      expectRefused(await send(app, 'POST', '/api/auth/logout', { cookie, 'sec-fetch-site': 'cross-site' }));
      expect((await send(app, 'GET', '/api/auth/me', { cookie })).status).to.equal(200);
    });

    it('a forged revocation does not revoke', async () => {
      const c = new HttpClient(app.url);
      c.cookie = cookie;
      const created = await c.post('/api/tokens', { name: 'to keep' });
      expect(created.status).to.equal(201);
      expectRefused(await send(app, 'DELETE', `/api/tokens/${created.body.id}`, { cookie, origin: EVIL }));
      expect((await new HttpClient(app.url, created.body.token).get('/api/auth/me')).status).to.equal(200);
    });
  });

  describe('login (login CSRF)', () => {
    const login = (headers: Record<string, string>) => send(app, 'POST', '/api/auth/login', headers, ANN);

    it('from another site is refused, and no session is made', async () => {
      for (const headers of <Record<string, string>[]>[{ origin: EVIL }, { 'sec-fetch-site': 'cross-site' }, { referer: `${EVIL}/login` }, { 'sec-fetch-site': 'same-site', origin: EVIL }]) {
        const res = await login(headers);
        expectRefused(res);
        expect(res.setCookie, JSON.stringify(headers)).to.deep.equal([]);
      }
    });

    it('from the own origin, or from a client that sends none of the headers (curl, scripts), is accepted', async () => {
      for (const headers of <Record<string, string>[]>[{ origin: own() }, { 'sec-fetch-site': 'same-origin' }, { 'sec-fetch-site': 'none' }, { referer: `${own()}/login` }, {}]) {
        const res = await login(headers);
        expect(res.status, JSON.stringify(headers)).to.equal(200);
        expect(res.setCookie).to.have.length(1);
      }
    });
  });

  describe('ALLOWED_ORIGINS and TRUST_PROXY', () => {
    const APP = 'https://app.example.com';
    let proxied: TestApp;
    let proxiedCookie: string;
    before(async () => {
      ({ app: proxied } = await setUp({ trustProxy: true, allowedOrigins: [APP] }));
      const res = await send(proxied, 'POST', '/api/auth/login', { 'x-forwarded-proto': 'https' }, ANN);
      expect(res.status).to.equal(200);
      proxiedCookie = res.setCookie[0].split(';')[0];
    });
    after(() => proxied.stop());
    const post = (headers: Record<string, string>) =>
      send(proxied, 'POST', '/api/tokens', { cookie: proxiedCookie, 'x-forwarded-proto': 'https', ...headers }, { name: 'from the app' });

    it('an allowed origin is accepted, also when the browser says same-site or cross-site', async () => {
      expect((await post({ origin: APP })).status).to.equal(201);
      expect((await post({ origin: `${APP}:443` })).status, 'the default port is the same origin').to.equal(201);
      expect((await post({ origin: APP, 'sec-fetch-site': 'same-site' })).status).to.equal(201);
      expect((await post({ origin: APP, 'sec-fetch-site': 'cross-site' })).status).to.equal(201);
      expect((await post({ referer: `${APP}/runs/3` })).status).to.equal(201);
    });

    it('an origin that is not listed is refused', async () => {
      expectRefused(await post({ origin: 'https://other.example.com' }));
      expectRefused(await post({ origin: 'http://app.example.com' }));
      expectRefused(await post({ origin: EVIL, 'sec-fetch-site': 'cross-site' }));
    });

    it('behind the proxy the own origin is https: X-Forwarded-Proto is believed', async () => {
      const host = new URL(proxied.url).host;
      expect((await post({ origin: `https://${host}` })).status).to.equal(201);
      expectRefused(await post({ origin: `http://${host}` }));
      expectRefused(await send(proxied, 'POST', '/api/auth/login', { origin: `https://${host}` }, ANN)); // came over plain HTTP
    });
  });
});
