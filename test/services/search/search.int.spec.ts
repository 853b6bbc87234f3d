import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { PostgresSearchEngine } from '../../../infra/search/postgres';
import { createKnex } from '../../../infra/postgres/database';
import { buildApp } from '../../../services/api/app';
import { seedDefaults } from '../../../services/entities/seed';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { DEFAULT_SEARCH_SETTINGS, MAX_RESULT_WINDOW, type SearchDocument, type SearchEngine } from '../../../services/shared/search';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient, newToken, signIn } from '../../support/server';
import { searchDocument } from '../../infra/search/documents';

/**
 * The search API over HTTP against a real PostgresSearchEngine (PostgreSQL full-text search), its
 * documents written straight to the engine (the indexer is not part of this suite), its callers
 * real users with real project access (services/access).
 */
describe('search API (GET/POST /api/search, GET /api/search/facets)', function () {
  this.timeout(120_000);
  const PASSWORD = 'search-password-1';
  const WRITE_TIMEOUT_MS = 1500;
  let app: TestApp;
  let server: Server;
  let url: string;
  let engine: PostgresSearchEngine;
  /** What the app's engine getter answers: swapped to a dead engine by one test. */
  let current: SearchEngine;
  let engineAsked = 0;
  let deadKnex: ReturnType<typeof createKnex>;
  const clients: Record<'admin' | 'alice' | 'nobody' | 'none', HttpClient> = {} as never;
  let A: string;
  let B: string;
  const docs: Record<string, SearchDocument> = {};

  const tokenFor = async (email: string) => new HttpClient(url, (await newToken(await signIn(app.url, email, PASSWORD), 'search')).token);

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('search-spec');
    await seedDefaults(app.deps, meta);
    for (const [name, access] of [['admin', 'ADMIN'], ['alice', 'USER'], ['nobody', 'USER'], ['none', 'NONE']] as const) {
      await registerUser(app.deps, { email: `${name}@example.com`, name, password: PASSWORD, access }, meta);
    }
    engine = new PostgresSearchEngine(app.deps.knex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: 'apispec_', requestTimeoutMs: 2000 });
    current = engine;
    const searchApp = buildApp({ ...app.appDeps, writeTimeoutMs: WRITE_TIMEOUT_MS, search: { engine: () => (engineAsked++, current) } });
    server = await new Promise<Server>((resolve) => {
      const s = searchApp.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const name of ['admin', 'alice', 'nobody', 'none'] as const) clients[name] = await tokenFor(`${name}@example.com`);

    const created = async (body: unknown, entity = 'project') => {
      const res = await new HttpClient(app.url, clients.admin.bearer).post(`/api/model/${entity}/create`, { data: body });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      return res.body.data.id as number;
    };
    A = String(await created({ name: 'Web shop' }));
    B = String(await created({ name: 'Back office' }));
    const alice = (await new HttpClient(app.url, clients.admin.bearer).post('/api/model/user/findMany', { where: { email: 'alice@example.com' } })).body.data[0].id;
    await created({ user: { connect: { id: alice } }, project: { connect: { id: Number(A) } } }, 'projectAssignment');

    const inA = { projectId: A, project: 'Web shop' };
    const inB = { projectId: B, project: 'Back office' };
    Object.assign(docs, {
      c1: searchDocument('repository_cases', 'c1', {
        ...inA, title: 'Login with valid credentials', description: 'A registered user signs in.', content: 'Open the page and sign in',
        tags: ['smoke', 'auth'], folder: 'Web / Authentication', template: 'Steps', state: 'Active', createdAt: '2026-01-10T09:00:00.000Z',
        customFields: [{ name: 'Priority', value: 'High' }],
      }),
      c2: searchDocument('repository_cases', 'c2', {
        ...inA, title: 'Password reset e-mail', description: 'Covers the link below the login form.', tags: ['auth'],
        folder: 'Web / Authentication', template: 'Steps', state: 'Draft', createdAt: '2026-01-20T09:00:00.000Z',
      }),
      c3: searchDocument('repository_cases', 'c3', {
        ...inA, title: 'Export results', content: 'Name the export <script>alert("x")</script> & "quotes" then download',
        tags: ['export'], folder: 'Reports', template: 'Text', state: 'Active', createdAt: '2026-02-15T09:00:00.000Z',
      }),
      // Fields a type does not have, planted: a facet must not count them.
      r1: searchDocument('test_runs', 'r1', { ...inA, title: 'Nightly login run', tags: ['nightly'], state: 'In progress', template: 'Planted template', createdAt: '2026-03-01T00:00:00.000Z' }),
      s1: searchDocument('sessions', 's1', { ...inA, title: 'Explore login', tags: ['explore'], state: 'Done', template: 'Exploratory', folder: 'Planted folder', createdAt: '2026-03-02T00:00:00.000Z' }),
      f1: searchDocument('failures', 'f1', {
        ...inA, title: 'NullPointerException in login', status: 'failed', tags: ['planted-tag'], state: 'Planted state', folder: 'Planted folder 2',
        template: 'Planted template 2', createdAt: '2026-03-03T00:00:00.000Z',
      }),
      b1: searchDocument('repository_cases', 'b1', {
        ...inB, title: 'Login of the secret back office', description: 'secret login', tags: ['smoke', 'secret-b'], folder: 'Secret folder',
        template: 'Secret template', state: 'Secret state', createdAt: '2026-01-15T00:00:00.000Z',
      }),
      b2: searchDocument('failures', 'b2', { ...inB, title: 'NullPointerException in secret login', status: 'failed', createdAt: '2026-03-04T00:00:00.000Z' }),
    });
    // Thirty comments in A for paging, one minute apart.
    for (let i = 0; i < 30; i++) {
      docs[`m${i}`] = searchDocument('comments', `m${String(i).padStart(2, '0')}`, {
        ...inA, title: `pagination note ${i}`, createdAt: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
      });
    }
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    await engine.write(1, { upsert: Object.values(docs), remove: [] }, { search: '1' });
  });
  after(async () => {
    await new Promise((resolve) => server?.close(resolve));
    server?.closeAllConnections();
    await deadKnex?.destroy();
    await app?.stop();
  });

  const get = (who: keyof typeof clients, path: string) => clients[who].get(path);
  const post = (who: keyof typeof clients, body: unknown, query = '') => clients[who].post(`/api/search${query}`, body);
  const ids = (res: { body: { hits: { id: string }[] } }) => res.body.hits.map((h) => h.id);

  describe('answers', () => {
    it('GET: {total, took, hits: [{type, id, projectId, score, title, highlight, source}]}, the document as indexed, title matches first', async () => {
      const res = await get('admin', '/api/search?q=login');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('no-store');
      expect(res.body).to.have.all.keys('total', 'took', 'hits');
      expect(res.body.total).to.be.a('number').and.equal(res.body.hits.length);
      expect(res.body.took).to.be.a('number');
      expect(ids(res)).to.have.members(['c1', 'c2', 'r1', 's1', 'f1', 'b1', 'b2']);
      const c1 = res.body.hits.find((h: { id: string }) => h.id === 'c1');
      expect(c1).to.have.all.keys('type', 'id', 'projectId', 'score', 'title', 'highlight', 'source');
      expect(c1).to.deep.include({ type: 'repository_cases', id: 'c1', projectId: A, title: 'Login with valid credentials' });
      expect(c1.score).to.be.a('number').above(0);
      expect(c1.source).to.deep.equal(docs.c1);
      expect(c1.highlight.title[0]).to.match(/<mark>Login<\/mark>/);
      // c1 has "login" in its title, c2 in its description only.
      expect(ids(res).indexOf('c1')).to.be.below(ids(res).indexOf('c2'));
      const scores = res.body.hits.map((h: { score: number }) => h.score);
      expect(scores).to.deep.equal([...scores].sort((a, b) => b - a));
    });

    it('GET: type and project filters', async () => {
      expect(ids(await get('admin', '/api/search?q=login&type=failures'))).to.have.members(['f1', 'b2']);
      expect(ids(await get('admin', '/api/search?q=login&type=failures,sessions'))).to.have.members(['f1', 'b2', 's1']);
      expect(ids(await get('admin', `/api/search?q=login&project=${B}`))).to.have.members(['b1', 'b2']);
    });

    it('paging: limit 25 and offset 0 by default, then the rest; pages do not overlap', async () => {
      const first = await get('admin', '/api/search?q=pagination');
      expect(first.body.total).to.equal(30);
      expect(first.body.hits).to.have.length(25);
      const second = await get('admin', '/api/search?q=pagination&offset=25');
      expect(second.body.total).to.equal(30);
      expect(second.body.hits).to.have.length(5);
      expect(new Set([...ids(first), ...ids(second)]).size).to.equal(30);
      const small = await get('admin', '/api/search?q=pagination&limit=4&offset=2');
      expect(small.body.hits).to.have.length(4);
      expect((await get('admin', '/api/search?q=pagination&limit=1&offset=29')).body.hits).to.have.length(1);
      expect((await get('admin', '/api/search?q=pagination&offset=30')).body).to.deep.include({ total: 30, hits: [] });
    });

    it('POST: query object, filters (type, tags, projectId, dateRange), sort, highlight, paging', async () => {
      const res = await post('admin', {
        query: { multi_match: { query: 'login', fields: ['title^3', 'description'] } },
        filters: { type: ['repository_cases'], tags: ['smoke'], projectId: A, dateRange: { field: 'createdAt', from: '2026-01-01', to: '2026-01-31' } },
        highlight: { fields: { title: {} } },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(ids(res)).to.deep.equal(['c1']);
      expect(res.body.hits[0].highlight).to.have.all.keys('title');
      // Every tag must be present: smoke AND auth finds c1, smoke AND export nothing.
      expect(ids(await post('admin', { filters: { tags: ['smoke', 'auth'] } }))).to.deep.equal(['c1']);
      expect((await post('admin', { filters: { tags: ['smoke', 'export'] } })).body.total).to.equal(0);
      // No query: every document under the filters.
      expect((await post('admin', { filters: { type: ['comments'] }, limit: 1 })).body.total).to.equal(30);
      const bool = await post('admin', {
        query: { bool: { must: [{ match: { title: 'login' } }], must_not: [{ term: { type: 'failures' } }], filter: { range: { createdAt: { lt: '2026-03-02' } } } } },
      });
      expect(ids(bool)).to.have.members(['c1', 'r1', 'b1']);
      expect(ids(await post('admin', { query: { prefix: { 'title.keyword': 'Password' } } }))).to.deep.equal(['c2']);
      expect(ids(await post('admin', { query: { match_phrase: { title: 'valid credentials' } } }))).to.deep.equal(['c1']);
      expect(ids(await post('admin', { query: { match_phrase: { title: 'credentials valid' } } }))).to.deep.equal([]);
    });

    it('sort: by a date either way, by _score either way', async () => {
      const asc = await post('admin', { filters: { type: ['comments'] }, sort: [{ createdAt: { order: 'asc' } }], limit: 30 });
      const times = asc.body.hits.map((h: { source: SearchDocument }) => h.source.createdAt);
      expect(times).to.deep.equal([...times].sort()).and.to.have.length(30);
      const desc = await post('admin', { filters: { type: ['comments'] }, sort: [{ createdAt: 'desc' }], limit: 30 });
      expect(ids(desc)).to.deep.equal([...ids(asc)].reverse());
      const byScore = await post('admin', { query: { match: { title: 'login' } }, sort: [{ _score: { order: 'asc' } }] });
      const scores = byScore.body.hits.map((h: { score: number }) => h.score);
      expect(scores).to.deep.equal([...scores].sort((a, b) => a - b));
      expect(scores[0]).to.be.below(scores[scores.length - 1]);
    });

    it('highlights are HTML: the words in <mark>, the rest escaped', async () => {
      const res = await post('admin', { query: { match: { content: 'export' } }, highlight: { fields: { content: {} } } });
      const fragment = res.body.hits.find((h: { id: string }) => h.id === 'c3').highlight.content.join(' ');
      expect(fragment).to.include('<mark>export</mark>');
      expect(fragment).to.include('&lt;script&gt;');
      expect(fragment).not.to.include('<script>');
      expect(fragment.replace(/<\/?mark>/g, '')).not.to.match(/[<>]/);
    });
  });

  describe('facets', () => {
    it('count real documents per label, each facet over the types that have its field only', async () => {
      const res = await get('admin', '/api/search/facets');
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body).to.deep.equal({
        facets: {
          tags: { smoke: 2, auth: 2, export: 1, nightly: 1, explore: 1, 'secret-b': 1 },
          folders: { 'Web / Authentication': 2, Reports: 1, 'Secret folder': 1 },
          templates: { Steps: 2, Text: 1, Exploratory: 1, 'Secret template': 1 },
          states: { Active: 2, Draft: 1, 'In progress': 1, Done: 1, 'Secret state': 1 },
        },
      });
    });

    it('a type without a facet\'s field makes that facet {}', async () => {
      expect((await get('admin', '/api/search/facets?type=failures')).body).to.deep.equal({ facets: { tags: {}, folders: {}, templates: {}, states: {} } });
      expect((await get('admin', '/api/search/facets?type=test_runs')).body)
        .to.deep.equal({ facets: { tags: { nightly: 1 }, folders: {}, templates: {}, states: { 'In progress': 1 } } });
      expect((await get('admin', '/api/search/facets?type=sessions,comments')).body)
        .to.deep.equal({ facets: { tags: { explore: 1 }, folders: {}, templates: { Exploratory: 1 }, states: { Done: 1 } } });
    });

    it('project and q narrow the counts', async () => {
      expect((await get('admin', `/api/search/facets?project=${B}`)).body.facets.tags).to.deep.equal({ smoke: 1, 'secret-b': 1 });
      expect((await get('admin', '/api/search/facets?q=password&type=repository_cases')).body.facets)
        .to.deep.equal({ tags: { auth: 1 }, folders: { 'Web / Authentication': 1 }, templates: { Steps: 1 }, states: { Draft: 1 } });
    });
  });

  describe('access: only documents of projects the caller may read, counted, listed or highlighted', () => {
    const leaks = (body: unknown) => JSON.stringify(body).match(/secret|back office|b1|b2/gi);

    it('a member of A alone: never B\'s documents, by GET, POST or facets', async () => {
      const res = await get('alice', '/api/search?q=login');
      expect(res.status).to.equal(200);
      expect(ids(res)).to.have.members(['c1', 'c2', 'r1', 's1', 'f1']);
      expect(res.body.total).to.equal(5);
      expect(res.body.hits.every((h: { projectId: string }) => h.projectId === A)).to.equal(true);
      expect(leaks(res.body)).to.equal(null);
      const secret = await get('alice', '/api/search?q=secret');
      expect(secret.body).to.deep.include({ total: 0, hits: [] });
      const viaPost = await post('alice', { query: { multi_match: { query: 'secret login' } }, limit: 100 });
      expect(viaPost.body.total).to.equal(5);
      expect(leaks(viaPost.body)).to.equal(null);
      const facets = await get('alice', '/api/search/facets');
      expect(leaks(facets.body)).to.equal(null);
      expect(facets.body.facets.tags).to.deep.equal({ smoke: 1, auth: 2, export: 1, nightly: 1, explore: 1 });
    });

    it('filtering by B, or asking for B in the query, answers nothing (not 403)', async () => {
      expect((await get('alice', `/api/search?q=login&project=${B}`)).body).to.deep.include({ total: 0, hits: [] });
      expect((await post('alice', { filters: { projectId: B } })).body).to.deep.include({ total: 0, hits: [] });
      expect((await post('alice', { query: { term: { projectId: B } } })).body).to.deep.include({ total: 0, hits: [] });
      expect((await post('alice', { query: { bool: { should: [{ term: { projectId: B } }, { term: { projectId: A } }] } }, limit: 100 })).body.hits
        .every((h: { projectId: string }) => h.projectId === A)).to.equal(true);
      expect((await post('alice', { query: { terms: { tags: ['secret-b'] } } })).body.total).to.equal(0);
      expect((await get('alice', `/api/search/facets?project=${B}`)).body).to.deep.equal({ facets: { tags: {}, folders: {}, templates: {}, states: {} } });
    });

    it('a user who can read no project, and access level NONE: empty answers, the engine not asked', async () => {
      for (const who of ['nobody', 'none'] as const) {
        const before = engineAsked;
        expect((await get(who, '/api/search?q=login')).body).to.deep.equal({ total: 0, took: 0, hits: [] });
        expect((await post(who, {})).body).to.deep.equal({ total: 0, took: 0, hits: [] });
        expect((await get(who, '/api/search/facets')).body).to.deep.equal({ facets: { tags: {}, folders: {}, templates: {}, states: {} } });
        expect(engineAsked, who).to.equal(before);
      }
    });

    it('401 without authentication, on every route', async () => {
      const anonymous = new HttpClient(url);
      for (const [method, path] of [['GET', '/api/search?q=login'], ['POST', '/api/search'], ['GET', '/api/search/facets']]) {
        const res = await anonymous.request(method, path, method === 'POST' ? {} : undefined);
        expect(res.status, path).to.equal(401);
        expect(res.body).to.have.all.keys('error', 'code', 'details');
      }
    });
  });

  describe('refusals', () => {
    const refused = async (res: Promise<{ status: number; body: any }>, code: string, path?: string) => {
      const { status, body } = await res;
      expect(status, JSON.stringify(body)).to.equal(400);
      expect(body).to.have.all.keys('error', 'code', 'details');
      expect(body.code).to.equal(code);
      if (path !== undefined) expect(body.details.path).to.equal(path);
      return body;
    };

    it('GET: q missing or blank, limit and offset out of range, window too large, unknown type or parameter', async () => {
      await refused(get('alice', '/api/search'), 'invalid-argument', 'q');
      await refused(get('alice', '/api/search?q=%20%20'), 'invalid-argument', 'q');
      await refused(get('alice', '/api/search?q=a&limit=101'), 'invalid-argument', 'limit');
      await refused(get('alice', '/api/search?q=a&limit=x'), 'invalid-argument', 'limit');
      await refused(get('alice', '/api/search?q=a&limit=0'), 'invalid-argument', 'limit');
      await refused(get('alice', '/api/search?q=a&offset=-1'), 'invalid-argument', 'offset');
      await refused(get('alice', `/api/search?q=a&offset=${MAX_RESULT_WINDOW}&limit=1`), 'result-window-too-large');
      const unknownType = await refused(get('alice', '/api/search?q=a&type=cases'), 'invalid-argument', 'type');
      expect(unknownType.details.type).to.equal('cases');
      await refused(get('alice', '/api/search?q=a&sort=title'), 'invalid-argument', 'sort');
      await refused(get('alice', '/api/search?q=a&project=B'), 'invalid-argument', 'project');
      await refused(get('alice', '/api/search/facets?type=nope'), 'invalid-argument', 'type');
      await refused(get('alice', '/api/search?q=a&after=soon'), 'invalid-argument', 'after');
    });

    it('POST: parts of the query outside the subset, by path; filters, sort and paging', async () => {
      await refused(post('alice', { query: { bool: { must: [{ match: { title: 'a' } }, { script: { script: 'x' } }] } } }), 'invalid-search-query', 'query.bool.must[1].script');
      await refused(post('alice', { query: { query_string: { query: 'title:a' } } }), 'invalid-search-query', 'query.query_string');
      await refused(post('alice', { query: { term: { title: 'Login' } } }), 'invalid-search-query', 'query.term.title');
      await refused(post('alice', { query: { match: { passwordHash: 'x' } } }), 'invalid-search-query', 'query.match.passwordHash');
      await refused(post('alice', { sort: [{ _script: {} }] }), 'invalid-search-query', 'sort[0]._script');
      await refused(post('alice', { highlight: { fields: { tags: {} } } }), 'invalid-search-query', 'highlight.fields.tags');
      await refused(post('alice', { filters: { type: ['repository_cases', 'nope'] } }), 'invalid-argument', 'filters.type');
      await refused(post('alice', { filters: { dateRange: { field: 'title', from: '2026-01-01' } } }), 'invalid-argument', 'filters.dateRange.field');
      await refused(post('alice', { limit: 50, offset: MAX_RESULT_WINDOW - 49 }), 'result-window-too-large');
      await refused(post('alice', { from: 0 }), 'invalid-argument', 'from');
      await refused(post('alice', {}, '?q=x'), 'invalid-argument', 'q');
      const raw = await clients.alice.request('POST', '/api/search', undefined, '{"query": ');
      expect(raw.status).to.equal(400);
    });
  });

  describe('read-your-writes and an engine away', () => {
    /** The log's head: the indexer is not part of this suite, so the index's checkpoint is what the tests write. */
    let head: bigint;
    before(async () => {
      head = BigInt(await app.deps.store.headPosition());
      expect(head > 3n, `a log of ${head} events`).to.equal(true);
    });

    it('?after= (or X-Event-Position) past the log\'s head: 400 at once, naming the head (nothing will ever be applied there)', async () => {
      const past = (head + 1n).toString();
      for (const [call, path] of [
        [() => get('alice', `/api/search?q=zebra&after=${past}`), 'after'],
        [() => get('alice', `/api/search/facets?after=${past}`), 'after'],
        [() => post('alice', {}, `?after=${past}`), 'after'],
        [() => get('alice', '/api/search?q=zebra&after=9223372036854775807'), 'after'],
        [async () => {
          const res = await fetch(`${url}/api/search?q=zebra`, { headers: { authorization: `Bearer ${clients.alice.bearer}`, 'x-event-position': past } });
          return { status: res.status, body: await res.json() };
        }, 'X-Event-Position'],
      ] as const) {
        const started = Date.now();
        const res = await call();
        expect(res.status, JSON.stringify(res.body)).to.equal(400);
        expect(Date.now() - started, 'answered without waiting').to.be.below(WRITE_TIMEOUT_MS);
        expect(res.body.code).to.equal('invalid-argument');
        expect(res.body.details).to.deep.equal({ path, head: head.toString() });
        expect(res.body.error).to.include(`log's head (${head})`);
      }
    });

    it('?after= a position the index has not applied waits, then answers once the checkpoint moves', async () => {
      const late = searchDocument('repository_cases', 'late', { projectId: A, project: 'Web shop', title: 'Belated zebra case' });
      const applied = (head - 1n).toString();
      let settled = false;
      const pending = get('alice', `/api/search?q=zebra&after=${applied}`).then((r) => ((settled = true), r));
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(settled, `answered before the index applied position ${applied}`).to.equal(false);
      await engine.write(1, { upsert: [late], remove: [] }, { search: applied });
      const res = await pending;
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(ids(res)).to.deep.equal(['late']);
      // Already applied: no wait.
      const started = Date.now();
      expect((await get('alice', `/api/search?q=zebra&after=${applied}`)).status).to.equal(200);
      expect(Date.now() - started).to.be.below(WRITE_TIMEOUT_MS);
    });

    it('X-Event-Position likewise, and facets; beyond the index for longer than the write timeout: 503 search-lagging', async () => {
      const started = Date.now();
      const res = await fetch(`${url}/api/search?q=zebra`, { headers: { authorization: `Bearer ${clients.alice.bearer}`, 'x-event-position': head.toString() } });
      const body = (await res.json()) as { error: string; code: string };
      expect(res.status, JSON.stringify(body)).to.equal(503);
      expect(body).to.deep.equal({ error: body.error, code: 'search-lagging', details: { position: head.toString(), timeoutMs: WRITE_TIMEOUT_MS } });
      expect(Date.now() - started).to.be.within(WRITE_TIMEOUT_MS, WRITE_TIMEOUT_MS + 1500);
      expect((await get('alice', `/api/search/facets?after=${head}`)).body.code).to.equal('search-lagging');
      expect((await post('alice', {}, `?after=${head}`)).body.code).to.equal('search-lagging');
      const header = await fetch(`${url}/api/search?q=zebra`, { headers: { authorization: `Bearer ${clients.alice.bearer}`, 'x-event-position': (head - 1n).toString() } });
      expect(header.status).to.equal(200);
      const bad = await fetch(`${url}/api/search?q=zebra`, { headers: { authorization: `Bearer ${clients.alice.bearer}`, 'x-event-position': 'x' } });
      expect(bad.status).to.equal(400);
    });

    it('the engine away: 503 search-unavailable (details.engine) within its request timeout, never a 500; back: answers again', async () => {
      // Nothing listens on port 1: every connection is refused.
      deadKnex = createKnex('postgres://postgres@127.0.0.1:1/none', 2, { warn: () => undefined, error: () => undefined });
      current = new PostgresSearchEngine(deadKnex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: 'apispec_', requestTimeoutMs: 1000 });
      try {
        for (const call of [() => get('alice', '/api/search?q=login'), () => post('alice', {}), () => get('alice', '/api/search/facets'), () => get('alice', '/api/search?q=x&after=1')]) {
          const started = Date.now();
          const res = await call();
          expect(res.status, JSON.stringify(res.body)).to.equal(503);
          expect(res.body).to.deep.equal({ error: res.body.error, code: 'search-unavailable', details: { engine: 'postgres' } });
          expect(Date.now() - started).to.be.below(3000);
        }
      } finally {
        current = engine;
      }
      expect((await get('alice', '/api/search?q=login')).status).to.equal(200);
    });
  });
});
