import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

describe('API tokens', function () {
  this.timeout(60_000);
  let app: TestApp;
  let session: HttpClient;

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'ann@example.com', name: 'Ann', password: 'ann-password-1', access: 'USER' }, systemMetadata('test'));
    await registerUser(app.deps, { email: 'bob@example.com', name: 'Bob', password: 'bob-password-1', access: 'USER' }, systemMetadata('test'));
  });
  // A session of its own for each test: one that moves the clock by an hour outlives the session's idle timeout.
  beforeEach(async () => {
    session = new HttpClient(app.url);
    expect((await session.post('/api/auth/login', { email: 'ann@example.com', password: 'ann-password-1' })).status).to.equal(200);
  });
  after(() => app.stop());

  it("a second app in the same process leaves this one's tokens to this one's database", async () => {
    const created = await session.post('/api/tokens', { name: 'before the second app' });
    const other = await startTestApp();
    try {
      await registerUser(other.deps, { email: 'cy@example.com', name: 'Cy', password: 'cy-password-1', access: 'USER' }, systemMetadata('test'));
      const cy = new HttpClient(other.url);
      expect((await cy.post('/api/auth/login', { email: 'cy@example.com', password: 'cy-password-1' })).status).to.equal(200);
      const theirs = (await cy.post('/api/tokens', { name: 'theirs' })).body.token as string;
      // Each token is known to its own app only (the second app took over the first's token lookup before).
      expect((await new HttpClient(app.url, created.body.token).get('/api/auth/me')).body.user.email).to.equal('ann@example.com');
      expect((await new HttpClient(other.url, theirs).get('/api/auth/me')).body.user.email).to.equal('cy@example.com');
      expect((await new HttpClient(app.url, theirs).get('/api/auth/me')).status).to.equal(401);
      expect((await new HttpClient(other.url, created.body.token).get('/api/auth/me')).status).to.equal(401);
    } finally {
      await other.stop();
    }
  });

  it('an expired token is refused from its expiry on', async () => {
    const expiresAt = new Date(app.clock.now.getTime() + 60 * 60 * 1000).toISOString();
    const created = await session.post('/api/tokens', { name: 'short-lived', expiresAt });
    expect(created.status).to.equal(201);
    expect(created.body.expiresAt).to.equal(expiresAt);
    const bearer = new HttpClient(app.url, created.body.token);
    expect((await bearer.get('/api/auth/me')).status).to.equal(200);
    app.clock.advance(60 * 60 * 1000 - 1);
    expect((await bearer.get('/api/auth/me')).status).to.equal(200);
    app.clock.advance(1);
    const refused = await bearer.get('/api/auth/me');
    expect(refused.status).to.equal(401);
    expect(refused.body.code).to.equal('invalid-token');
  });

  it('a token creates tokens; its owner sees them without values; nobody else can revoke them', async () => {
    const first = await session.post('/api/tokens', { name: 'ci' });
    const viaToken = await new HttpClient(app.url, first.body.token).post('/api/tokens', { name: 'made by a token' });
    expect(viaToken.status).to.equal(201);
    const listed = await session.get('/api/tokens');
    const names = listed.body.data.map((t: { name: string }) => t.name);
    expect(names).to.include.members(['ci', 'made by a token']);
    for (const t of listed.body.data) expect(t).to.have.all.keys('id', 'name', 'prefix', 'expiresAt', 'createdAt', 'lastUsedAt', 'revokedAt');

    const bob = new HttpClient(app.url);
    await bob.post('/api/auth/login', { email: 'bob@example.com', password: 'bob-password-1' });
    expect((await bob.get('/api/tokens')).body.data).to.deep.equal([]);
    const stolen = await bob.request('DELETE', `/api/tokens/${first.body.id}`);
    expect(stolen.status).to.equal(404);
    expect((await new HttpClient(app.url, first.body.token).get('/api/auth/me')).status).to.equal(200);
    expect((await session.request('DELETE', '/api/tokens/abc')).status).to.equal(400);
  });

  it('a revoked token is refused on the very next request, though its lookups were being reused', async () => {
    const created = await session.post('/api/tokens', { name: 'soon revoked' });
    const bearer = new HttpClient(app.url, created.body.token);
    for (let i = 0; i < 3; i++) expect((await bearer.get('/api/auth/me')).status).to.equal(200);
    expect((await session.request('DELETE', `/api/tokens/${created.body.id}`)).status).to.equal(204);
    const refused = await bearer.get('/api/auth/me');
    expect(refused.status).to.equal(401);
    expect(refused.body.code).to.equal('invalid-token');
  });

  it('logout ends the session server-side', async () => {
    const c = new HttpClient(app.url);
    await c.post('/api/auth/login', { email: 'bob@example.com', password: 'bob-password-1' });
    const cookie = c.cookie;
    expect((await c.post('/api/auth/logout')).status).to.equal(204);
    c.cookie = cookie;
    expect((await c.get('/api/auth/me')).status).to.equal(401);
  });
});
