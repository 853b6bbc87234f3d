import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { postImport } from '../imports/importClient';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { KAFKA_BROKERS, requireKafka } from '../support/kafka';
import { dropIndices, requireOpenSearch, SEARCH_TEST_URL, uniqueIndexPrefix } from '../support/search';
import { HttpClient, runScript, startServer, type RunningServer } from '../support/server';
import { waitUntil } from '../support/wait';

const ADMIN = { email: 'search-admin@example.com', password: 'search-admin-password' };

const JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.example.CartTest" tests="2" failures="1" errors="0" skipped="0" time="0.2" timestamp="2026-11-20T10:00:00">
  <testcase name="adds an item" classname="com.example.CartTest" time="0.1"/>
  <testcase name="removes the last item" classname="com.example.CartTest" time="0.1">
    <failure message="java.lang.NullPointerException: Cannot invoke &quot;Item.price()&quot; because &quot;item&quot; is null" type="java.lang.NullPointerException">java.lang.NullPointerException: Cannot invoke "Item.price()" because "item" is null
	at com.example.Cart.total(Cart.java:42)
	at com.example.CartTest.removesTheLastItem(CartTest.java:17)</failure>
  </testcase>
</testsuite>`;

type Setup = { transport: 'direct' | 'kafka'; engine: 'postgres' | 'opensearch' };
const SETUPS: Setup[] = [
  { transport: 'direct', engine: 'postgres' },
  { transport: 'kafka', engine: 'postgres' },
  { transport: 'direct', engine: 'opensearch' },
];

/**
 * Search through the whole process (`services/process/main.ts`: API, projector, indexer): what a
 * user writes is found, after the indexer applied it (read-your-writes with `after`), renamed tags
 * re-index the documents that show them, deleted rows leave the index, failures of an imported
 * JUnit file are found by their exception, and a rebuild switches versions while search answers.
 * Slow: runs in 3 setups (direct or Kafka transport, PostgreSQL or OpenSearch search), each starting services/process/main.ts as a process and scripts/rebuild.ts search as another
 */
for (const setup of SETUPS) describe(`search end to end (every role in one process, ${setup.transport} transport, ${setup.engine} search)`, function () {
  this.timeout(180_000);
  let db: TestDatabase;
  let dataDir: string;
  let server: RunningServer | undefined;
  let env: NodeJS.ProcessEnv;
  let api: HttpClient;
  let token: string;
  const prefix = uniqueIndexPrefix();
  const topic = `e2e-search-${prefix.slice(1, -1)}`;

  before(async function () {
    if (setup.transport === 'kafka') await requireKafka(this, `search end to end on Kafka`);
    if (setup.engine === 'opensearch') await requireOpenSearch(this, 'search end to end on OpenSearch');
    db = await createMigratedDatabase('e2esearch');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-e2e-search-'));
    env = {
      DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), SEARCH_INDEX_PREFIX: prefix,
      ...(setup.transport === 'kafka' && { KAFKA_BROKERS: KAFKA_BROKERS.join(','), KAFKA_TOPIC: topic, KAFKA_PARTITIONS: '3' }),
      ...(setup.engine === 'opensearch' && { SEARCH_URL: SEARCH_TEST_URL, SEARCH_REFRESH_INTERVAL: '200ms' }),
    };
    server = await startServer(env);
    const browser = new HttpClient(server.url);
    expect((await browser.post('/api/auth/login', ADMIN)).status).to.equal(200);
    token = (await browser.post('/api/tokens', { name: 'search e2e' })).body.token;
    api = new HttpClient(server.url, token);
  });

  after(async function () {
    if (server && (await server.stop()) !== 0) console.log(server.output().slice(-4000));
    if (this.currentTest?.state === 'failed' && server) console.log(server.output().slice(-4000));
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    if (setup.engine === 'opensearch') await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  const create = async (entity: string, data: unknown) => {
    const res = await api.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { id: res.body.data.id as number, position: res.headers.get('x-event-position')! };
  };
  const search = async (body: unknown, after: string) => {
    const res = await api.post(`/api/search?after=${after}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body as { total: number; hits: { type: string; id: string; projectId: string; title: string; source: Record<string, unknown>; highlight: Record<string, string[]> }[] };
  };

  it('finds what was just written, re-indexes what a rename changes, and forgets what was deleted', async () => {
    const project = await create('project', { name: 'Checkout' });
    const tag = await create('tag', { name: 'smoke' });
    const testCase = await create('repositoryCase', {
      title: 'Sign in with an expired password', description: 'The account password expired yesterday',
      project: { connect: { id: project.id } }, tags: { connect: [{ id: tag.id }] },
      steps: { create: [{ step: 'Open the sign-in page', expectedResult: 'A form asks for e-mail and password', order: 1 }] },
    });

    const found = await search({ query: { multi_match: { query: 'expired passwords', fields: ['title^3', 'content'] } }, highlight: { fields: { title: {} } } }, testCase.position);
    expect(found.total).to.equal(1);
    expect(found.hits[0]).to.include({ type: 'repository_cases', id: String(testCase.id), projectId: String(project.id) });
    expect(found.hits[0].source).to.include({ project: 'Checkout' });
    expect(found.hits[0].source.tags).to.deep.equal(['smoke']);
    expect(found.hits[0].highlight.title.join(' ')).to.match(/<mark>expired<\/mark>/i);
    const byGet = await api.get(`/api/search?q=${encodeURIComponent('sign-in page')}&type=repository_cases&after=${testCase.position}`);
    expect(byGet.status).to.equal(200);
    expect(byGet.body.hits.map((h: { id: string }) => h.id)).to.deep.equal([String(testCase.id)]);

    const renamed = await api.post('/api/model/tag/update', { where: { id: tag.id }, data: { name: 'regression' } });
    expect(renamed.status).to.equal(200);
    const byNewTag = await search({ query: { match: { title: 'password' } }, filters: { tags: ['regression'] } }, renamed.headers.get('x-event-position')!);
    expect(byNewTag.hits.map((h) => h.id)).to.deep.equal([String(testCase.id)]);
    expect((await search({ query: { match: { title: 'password' } }, filters: { tags: ['smoke'] } }, renamed.headers.get('x-event-position')!)).total).to.equal(0);
    const facets = await api.get(`/api/search/facets?type=repository_cases&project=${project.id}`);
    expect(facets.status).to.equal(200);
    expect(facets.body.facets.tags).to.deep.equal({ regression: 1 });

    const deleted = await api.post('/api/model/repositoryCase/delete', { where: { id: testCase.id } });
    expect(deleted.status).to.equal(200);
    expect((await search({ query: { match: { title: 'password' } } }, deleted.headers.get('x-event-position')!)).total).to.equal(0);
  });

  it('finds the failures of an imported JUnit file by their exception, with the run and the status', async () => {
    const project = await create('project', { name: 'Shop' });
    const answer = await postImport(server!.url, '/api/test-results/import', { projectId: project.id, name: 'nightly' }, [{ name: 'cart.xml', content: JUNIT }], token);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const done = answer.events[answer.events.length - 1];
    expect(done, JSON.stringify(answer.events)).to.include({ complete: true });
    let failures: Awaited<ReturnType<typeof search>> | undefined;
    await waitUntil(async () => {
      failures = await search({ query: { multi_match: { query: 'NullPointerException' } }, filters: { type: ['failures'] } }, '0');
      return failures.total === 1;
    }, 'the failure is indexed', 30_000);
    expect(failures!.hits[0].source).to.include({ failureType: 'java.lang.NullPointerException', runId: String(done.testRunId) });
    expect(String(failures!.hits[0].source.content)).to.contain('Cart.java:42');
  });

  it('rebuilds side by side (npm run rebuild -- search) while search answers, then finds the same', async () => {
    const project = await create('project', { name: 'Rebuilt' });
    const testCase = await create('repositoryCase', { title: 'Refund a cancelled order', project: { connect: { id: project.id } } });
    const before = await search({ query: { match: { title: 'refund' } } }, testCase.position);
    expect(before.total).to.equal(1);
    let searching = true;
    let answered = 0;
    const during = (async () => {
      while (searching) {
        const res = await api.post('/api/search', { query: { match: { title: 'refund' } } });
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        expect(res.body.total).to.equal(1);
        answered++;
      }
    })();
    const rebuilt = await runScript('scripts/rebuild.ts', ['search'], env);
    searching = false;
    await during;
    expect(rebuilt.code, rebuilt.output).to.equal(0);
    expect(answered).to.be.greaterThan(0);
    const readiness = await new HttpClient(server!.url).get('/readyz');
    const indexer = (readiness.body.checks as { name: string; ok: boolean; details: { state: string } }[]).find((c) => c.name === 'searchIndexer');
    expect(indexer, JSON.stringify(readiness.body)).to.include({ ok: true });
    await waitUntil(async () => {
      const checks = (await new HttpClient(server!.url).get('/readyz')).body.checks as { name: string; details: { version: number | null } }[];
      return checks.find((c) => c.name === 'searchIndexer')?.details.version === 2;
    }, 'the indexer follows the rebuilt version', 20_000);
    expect((await api.post('/api/search', { query: { match: { title: 'refund' } } })).body.total).to.equal(1);
  });
});
