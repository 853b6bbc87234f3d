import { expect } from 'chai';
import { createApiToken, registerUser } from '../../../services/identity/identity.handlers';
import { hashToken } from '../../../services/identity/secrets';
import { systemMetadata } from '../../../services/shared/context';
import { TEST_TOKEN_SECRET, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { expectError } from '../../support/errors';

const ADMIN = { email: 'root@example.com', password: 'root-password-1' };
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const BOB = { email: 'bob@example.com', password: 'bob-password-1' };
const TOKEN_KEYS = ['id', 'owner', 'name', 'prefix', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'];

describe('admin: GET /api/admin/tokens, DELETE /api/admin/tokens/:id', function () {
  this.timeout(60_000);
  let app: TestApp;
  let admin: HttpClient;
  let ann: HttpClient;
  let bob: HttpClient;
  const ids: Record<string, number> = {};
  /** Every token value handed out in this suite, to look for in answers. */
  const values: string[] = [];
  const head = () => app.deps.store.headPosition();

  /** A token made through the API one minute after the previous one, so creation times differ. */
  async function tokenOf(client: HttpClient, name: string, expiresAt: string | null = null) {
    app.clock.advance(60_000);
    const res = await client.post('/api/tokens', { name, expiresAt });
    expect(res.status).to.equal(201);
    values.push(res.body.token);
    return res.body as { id: number; token: string; name: string };
  }
  const everything = async () => (await admin.get('/api/admin/tokens?take=500')).body.data as any[];

  before(async () => {
    app = await startTestApp();
    for (const [key, who, name, access] of [['admin', ADMIN, 'Root', 'ADMIN'], ['ann', ANN, 'Ann', 'USER'], ['bob', BOB, 'Bob', 'USER']] as const)
      ids[key] = await registerUser(app.deps, { ...who, name, access }, systemMetadata('test'));
    admin = new HttpClient(app.url);
    ann = new HttpClient(app.url);
    bob = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', ADMIN)).status).to.equal(200);
    expect((await ann.post('/api/auth/login', ANN)).status).to.equal(200);
    expect((await bob.post('/api/auth/login', BOB)).status).to.equal(200);
  });
  after(() => app.stop());

  describe('who may', () => {
    it('anonymous: 401 on both', async () => {
      const anonymous = new HttpClient(app.url);
      expectError(await anonymous.get('/api/admin/tokens'), 401, 'unauthenticated');
      expectError(await anonymous.request('DELETE', '/api/admin/tokens/1'), 401, 'unauthenticated');
    });

    it('a user who is not an administrator: 403 forbidden on both, by session or token, and nothing is appended', async () => {
      const bobs = await tokenOf(bob, 'bob-0'); // someone else's token to try on
      const annToken = new HttpClient(app.url, (await tokenOf(ann, 'ann-2')).token);
      const before = await head();
      for (const client of [ann, annToken]) {
        expectError(await client.get('/api/admin/tokens'), 403, 'forbidden');
        expectError(await client.request('DELETE', `/api/admin/tokens/${bobs.id}`), 403, 'forbidden');
        expectError(await client.request('DELETE', '/api/admin/tokens/999999'), 403, 'forbidden');
        expectError(await client.get('/api/admin/anything-else'), 403, 'forbidden');
      }
      expect(await head(), 'no event appended').to.equal(before);
      expect((await new HttpClient(app.url, bobs.token).get('/api/auth/me')).status, 'the token still works').to.equal(200);
    });

    it('an administrator, by session or by token', async () => {
      const adminToken = new HttpClient(app.url, (await tokenOf(admin, 'root-cli')).token);
      expect((await admin.get('/api/admin/tokens')).status).to.equal(200);
      expect((await adminToken.get('/api/admin/tokens')).status).to.equal(200);
      expectError(await admin.get('/api/admin/anything-else'), 404, 'route-not-found');
    });
  });

  describe('the list', () => {
    before(async () => {
      for (const name of ['bob-1', 'bob-2', 'bob-3']) await tokenOf(bob, name);
      await tokenOf(ann, 'ann-expiring', new Date(app.clock.now.getTime() + 2 * 60_000).toISOString());
      await tokenOf(ann, 'ann-3');
    });

    it('every user\'s tokens, newest first, with their owner and never a value or a hash', async () => {
      const res = await admin.get('/api/admin/tokens');
      expect(res.status).to.equal(200);
      expect(res.body).to.have.all.keys('data', 'nextCursor');
      expect(res.body.nextCursor).to.equal(null);
      const data = res.body.data as any[];
      expect(data.map((t) => t.name)).to.deep.equal(['ann-3', 'ann-expiring', 'bob-3', 'bob-2', 'bob-1', 'root-cli', 'ann-2', 'bob-0']);
      for (const t of data) expect(t).to.have.all.keys(...TOKEN_KEYS);
      const createdAt = data.map((t) => t.createdAt);
      expect(createdAt).to.deep.equal([...createdAt].sort().reverse());
      expect(data.find((t) => t.name === 'bob-1').owner).to.deep.equal({ id: ids.bob, email: BOB.email, name: 'Bob' });
      expect(data.find((t) => t.name === 'root-cli').owner).to.deep.equal({ id: ids.admin, email: ADMIN.email, name: 'Root' });
      const text = JSON.stringify(res.body);
      expect(values).to.have.length(data.length);
      for (const value of values) {
        expect(text).to.not.include(value);
        expect(text).to.not.include(hashToken(TEST_TOKEN_SECRET, value));
        expect(text).to.include(value.slice(0, 10)); // the prefix is there to recognise it
      }
    });

    it('filters by owner', async () => {
      const bobs = (await admin.get(`/api/admin/tokens?userId=${ids.bob}`)).body.data as any[];
      expect(bobs.map((t) => t.name)).to.deep.equal(['bob-3', 'bob-2', 'bob-1', 'bob-0']);
      expect((await admin.get('/api/admin/tokens?userId=999999')).body.data).to.deep.equal([]);
    });

    it('pages with take and the nextCursor, in the same order, each token once', async () => {
      const all = await everything();
      const seen: any[] = [];
      let url = '/api/admin/tokens?take=3';
      for (;;) {
        const page = await admin.get(url);
        expect(page.status).to.equal(200);
        expect(page.body.data.length).to.be.at.most(3);
        seen.push(...page.body.data);
        if (page.body.nextCursor === null) break;
        url = `/api/admin/tokens?take=3&cursor=${encodeURIComponent(page.body.nextCursor)}`;
      }
      expect(seen.map((t) => t.id)).to.deep.equal(all.map((t) => t.id));
      const filtered = await admin.get(`/api/admin/tokens?take=2&userId=${ids.bob}`);
      const next = await admin.get(`/api/admin/tokens?take=2&userId=${ids.bob}&cursor=${filtered.body.nextCursor}`);
      expect([...filtered.body.data, ...next.body.data].map((t: any) => t.name)).to.deep.equal(['bob-3', 'bob-2', 'bob-1', 'bob-0']);
      expect(next.body.nextCursor).to.equal(null);
    });

    it('pages with skip as well', async () => {
      const all = await everything();
      const page = await admin.get('/api/admin/tokens?skip=2&take=3');
      expect(page.body.data.map((t: any) => t.id)).to.deep.equal(all.slice(2, 5).map((t) => t.id));
      expect((await admin.get(`/api/admin/tokens?skip=${all.length}`)).body).to.deep.equal({ data: [], nextCursor: null });
    });

    it('refuses a bad query with 400 naming the parameter', async () => {
      const bad: [string, string][] = [
        ['take=0', 'take'], ['take=501', 'take'], ['take=ten', 'take'], ['take=1.5', 'take'], ['skip=-1', 'skip'],
        ['cursor=garbage', 'cursor'], ['cursor=WzFd', 'cursor'], [`cursor=${Buffer.from('["2026-01-01T00:00:00.000Z",1]').toString('base64url')}&skip=1`, 'skip'],
        ['userId=0', 'userId'], ['userId=ann', 'userId'], ['active=yes', 'active'], ['take=1&take=2', 'take'], ['owner=3', 'owner'],
      ];
      for (const [query, path] of bad) expectError(await admin.get(`/api/admin/tokens?${query}`), 400, 'invalid-argument', path);
      expect((await admin.get('/api/admin/tokens?take=500')).status).to.equal(200);
    });
  });

  describe('revocation', () => {
    it('revokes anyone\'s token: 204, an event with the administrator as actor, refused on the very next request', async () => {
      const target = await tokenOf(bob, 'bob-to-revoke');
      const bearer = new HttpClient(app.url, target.token);
      for (let i = 0; i < 3; i++) expect((await bearer.get('/api/auth/me')).status).to.equal(200); // its lookup is cached now

      const revoked = await admin.request('DELETE', `/api/admin/tokens/${target.id}`);
      expect(revoked.status).to.equal(204);
      const refused = await bearer.get('/api/auth/me');
      expectError(refused, 401, 'invalid-token');

      const events = await app.deps.store.readStream(`apiToken-${target.id}`);
      expect(events.map((e) => e.type)).to.deep.equal(['ApiTokenCreated', 'ApiTokenRevoked']);
      expect(events[1].data).to.deep.equal({ tokenId: target.id, userId: ids.bob, revokedAt: app.clock.now.toISOString() });
      expect(events[1].metadata.actor).to.include({ userId: ids.admin, via: 'session' });
      const listed = (await admin.get(`/api/admin/tokens?userId=${ids.bob}`)).body.data.find((t: any) => t.id === target.id);
      expect(listed.revokedAt).to.equal(app.clock.now.toISOString());
    });

    it('revoking a revoked token answers 204 and changes nothing, as for its owner', async () => {
      const target = await tokenOf(ann, 'ann-twice');
      expect((await admin.request('DELETE', `/api/admin/tokens/${target.id}`)).status).to.equal(204);
      const before = await head();
      expect((await admin.request('DELETE', `/api/admin/tokens/${target.id}`)).status).to.equal(204);
      expect((await ann.request('DELETE', `/api/tokens/${target.id}`)).status).to.equal(204);
      expect(await head()).to.equal(before);
    });

    it('an unknown token is 404 api-token-not-found (the owner route answers the same code for a token that is not yours); a bad id is 400', async () => {
      const before = await head();
      expectError(await admin.request('DELETE', '/api/admin/tokens/999999'), 404, 'api-token-not-found');
      const bobs = (await admin.get(`/api/admin/tokens?userId=${ids.bob}`)).body.data[0];
      expectError(await ann.request('DELETE', `/api/tokens/${bobs.id}`), 404, 'api-token-not-found');
      for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999']) expectError(await admin.request('DELETE', `/api/admin/tokens/${id}`), 400, 'invalid-argument', 'id');
      expect(await head()).to.equal(before);
    });
  });

  describe('active filter', () => {
    it('active=true: neither revoked nor expired now; active=false: the others', async () => {
      const all = await everything();
      app.clock.advance(24 * 60 * 60_000); // ann-expiring has expired now; so has the session
      expectError(await admin.get('/api/admin/tokens'), 401, 'session-expired');
      expect((await admin.post('/api/auth/login', ADMIN)).status).to.equal(200);
      const active = (await admin.get('/api/admin/tokens?take=500&active=true')).body.data as any[];
      const inactive = (await admin.get('/api/admin/tokens?take=500&active=false')).body.data as any[];
      expect(inactive.map((t) => t.name)).to.have.members(['ann-twice', 'bob-to-revoke', 'ann-expiring']);
      expect(active.map((t) => t.id)).to.deep.equal(all.filter((t) => !inactive.some((i) => i.id === t.id)).map((t) => t.id));
      expect(active.every((t) => t.revokedAt === null)).to.equal(true);
    });
  });

  describe('page size', () => {
    it('take defaults to 50', async () => {
      for (let i = 0; i < 50; i++) {
        const { token } = await createApiToken({ ...app.deps, tokenSecret: TEST_TOKEN_SECRET }, { userId: ids.ann, name: `bulk-${i}`, expiresAt: null }, systemMetadata('test'));
        values.push(token);
      }
      const page = await admin.get('/api/admin/tokens');
      expect(page.body.data).to.have.length(50);
      expect(page.body.nextCursor).to.be.a('string');
      const text = JSON.stringify((await admin.get('/api/admin/tokens?take=500')).body);
      for (const value of values) expect(text).to.not.include(value);
    });
  });
});
