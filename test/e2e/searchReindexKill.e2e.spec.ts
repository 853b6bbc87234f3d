import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { PostgresEventStore } from '../../infra/eventstore/postgres';
import { createPool } from '../../infra/postgres/database';
import { postImport } from '../imports/importClient';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { dropIndices, requireOpenSearch, SEARCH_TEST_URL, searchFetch, uniqueIndexPrefix } from '../support/search';
import { HttpClient, startServer, type RunningServer } from '../support/server';
import { waitUntil } from '../support/wait';

const ADMIN = { email: 'reindex-admin@example.com', password: 'reindex e2e password' };
const CASES = 3000;
const BATCH = 25;

/** A JUnit report of CASES cases in 10 suites, every third failing with an IllegalStateException. */
function bigReport(): string {
  const suites: string[] = [];
  for (let s = 0; s < 10; s++) {
    const cases: string[] = [];
    for (let c = 0; c < CASES / 10; c++) {
      const n = s * (CASES / 10) + c;
      cases.push(n % 3 === 0
        ? `<testcase classname="pkg.Suite${s}" name="case ${n}"><failure message="java.lang.IllegalStateException: broken ${n}" type="java.lang.IllegalStateException">trace ${n}</failure></testcase>`
        : `<testcase classname="pkg.Suite${s}" name="case ${n}"/>`);
    }
    suites.push(`<testsuite name="pkg.Suite${s}" tests="${cases.length}">${cases.join('')}</testsuite>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?><testsuites>${suites.join('')}</testsuites>`;
}

/**
 * THE reindex kill test: a full reindex run by `services/process/main.ts` (every role in one
 * process, OpenSearch) is killed with SIGKILL mid-way; a new process on the same database takes
 * the job up after its last recorded batch and finishes it. Every document is in the new version
 * once (its count per type is the read model's), and search answered throughout: the engine
 * directly, every 100 ms, from before the job to after the switch (the old version serving until
 * then), and the API before the kill and after the restart.
 * Slow: starts services/process/main.ts on OpenSearch twice, imports and indexes a 3,000-case JUnit report, then reindexes it all in batches of 25, SIGKILLed after 400 documents and resumed
 */
describe('search reindex end to end (a started server, killed mid-reindex)', function () {
  this.timeout(300_000);
  const prefix = uniqueIndexPrefix();
  let db: TestDatabase;
  let dataDir: string;
  let server: RunningServer | null = null;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    await requireOpenSearch(this, 'search reindex kill test on OpenSearch');
    db = await createTestDatabase('reindex_kill');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-reindex-e2e-'));
    env = {
      DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40),
      SEARCH_URL: SEARCH_TEST_URL, SEARCH_INDEX_PREFIX: prefix, SEARCH_REFRESH_INTERVAL: '200ms',
    };
  });
  after(async function () {
    if (this.currentTest?.state === 'failed' && server) console.log(server.output().slice(-6000));
    if (server) await server.stop();
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    await dropIndices(SEARCH_TEST_URL, prefix).catch(() => undefined);
  });

  /** Documents of a type behind its alias (the live version), as the engine counts them; null if it did not answer. */
  const liveCount = async (type: string): Promise<number | null> => {
    const res = await searchFetch(SEARCH_TEST_URL, `/${prefix}${type}/_count`, { timeoutMs: 5000 }).catch(() => null);
    return res?.ok ? ((await res.json()) as { count: number }).count : null;
  };
  const liveIndex = async (type: string): Promise<string> =>
    Object.keys(await (await searchFetch(SEARCH_TEST_URL, `/_alias/${prefix}${type}`)).json() as Record<string, unknown>)[0];

  it('a full reindex killed with SIGKILL resumes in the next process: every document once, search answering throughout', async () => {
    server = await startServer(env);
    const session = new HttpClient(server.url);
    expect((await session.post('/api/auth/login', ADMIN)).status).to.equal(200);
    const token = (await session.post('/api/tokens', { name: 'reindex e2e' })).body.token as string;
    let api = new HttpClient(server.url, token);
    const project = (await api.post('/api/model/project/create', { data: { name: 'Reindexed' } })).body.data.id as number;
    const imported = await postImport(server.url, '/api/junit/import', { projectId: project, name: 'big' }, [{ name: 'big.xml', content: bigReport() }], token);
    expect(imported.status).to.equal(200);
    expect(imported.events[imported.events.length - 1], JSON.stringify(imported.events.slice(-1))).to.include({ complete: true });
    // The indexer has every document in version 1.
    await waitUntil(async () => (await liveCount('repository_cases')) === CASES && (await liveCount('failures')) === CASES / 3, 'the indexer caught up', 120_000);
    expect(await liveIndex('repository_cases')).to.equal(`${prefix}repository_cases_v1`);

    // Search, asked directly every 100 ms from now on: always the whole live version.
    const answers: { at: number; cases: number | null; failures: number | null }[] = [];
    let asking = true;
    const asker = (async () => {
      while (asking) {
        answers.push({ at: Date.now(), cases: await liveCount('repository_cases'), failures: await liveCount('failures') });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();

    const requested = await api.post('/api/admin/search/reindex', { mode: 'full', confirm: prefix, batchSize: BATCH });
    expect(requested.status, JSON.stringify(requested.body)).to.equal(202);
    const jobId = requested.body.data.jobId as number;
    let job: any;
    await waitUntil(async () => (job = (await api.get(`/api/admin/search/reindex/${jobId}`)).body.data).progress.documents >= 400,
      'the job well under way', 60_000, () => JSON.stringify(job));
    const viaApi = await api.get(`/api/search?q=IllegalStateException&type=failures&limit=1`);
    expect(viaApi.status).to.equal(200);
    expect(viaApi.body.total).to.equal(CASES / 3);
    await server.kill();
    server = null;
    const atKill = job;
    expect(atKill.phase, 'killed before it completed').to.equal('running');
    expect(atKill.progress.documents).to.be.lessThan(atKill.progress.total);
    expect(await liveIndex('repository_cases'), 'the old version still live').to.equal(`${prefix}repository_cases_v1`);
    await new Promise((r) => setTimeout(r, 500)); // search keeps answering with no process at all

    server = await startServer(env);
    api = new HttpClient(server.url, token);
    await waitUntil(async () => ['completed', 'failed'].includes((job = (await api.get(`/api/admin/search/reindex/${jobId}`)).body.data).phase),
      'the job finished by the new process', 120_000, () => JSON.stringify(job));
    asking = false;
    await asker;
    expect(job.phase, JSON.stringify(job.error)).to.equal('completed');
    expect(server.output()).to.include('resuming reindex job');
    expect(job).to.include({ version: 2, replacesVersion: 1, switched: true });
    expect(job.droppedVersions).to.deep.equal([1]);
    expect(await liveIndex('repository_cases')).to.equal(`${prefix}repository_cases_v2`);

    // Every document once: per type, the live version's count is the read model's (counted at the start; nothing changed since).
    const totals = Object.fromEntries(job.progress.types.map((t: { type: string; total: number }) => [t.type, t.total]));
    expect(totals).to.include({ repository_cases: CASES, failures: CASES / 3, projects: 1, test_runs: 1 });
    for (const t of job.progress.types) {
      expect(t.documents, t.type).to.equal(t.total);
      expect(await liveCount(t.type), t.type).to.equal(t.total);
    }
    const count = async (entity: string, where: unknown) => (await api.post(`/api/model/${entity}/count`, { where })).body.data as number;
    expect(await count('repositoryCase', { projectId: project })).to.equal(CASES);
    // The stream records each batch once, cursors only moving on: the resumed part went on after the last one recorded.
    const pool = createPool(db.url);
    try {
      const events = await new PostgresEventStore(pool, db.url).readStream(`searchReindex-${jobId}`);
      const batches = events.filter((e) => e.type === 'SearchReindexProgressed').map((e) => e.data as { type: string; afterId: number; documents: number });
      for (const type of Object.keys(totals)) {
        const own = batches.filter((b) => b.type === type);
        // (An empty last page ends a type at the cursor it had, adding nothing.)
        for (let i = 1; i < own.length; i++) {
          if (own[i].afterId === own[i - 1].afterId && i === own.length - 1 && own[i].documents === own[i - 1].documents) continue;
          expect(own[i].afterId, `${type} cursor`).to.be.greaterThan(own[i - 1].afterId);
        }
        expect(own[own.length - 1].documents, type).to.equal(totals[type]);
      }
      expect(events.filter((e) => e.type === 'SearchReindexStarted')).to.have.length(1);
      expect(events.map((e) => e.type).slice(-1)).to.deep.equal(['SearchReindexCompleted']);
    } finally {
      await pool.end();
    }

    // Search answered throughout, never a partial version: before, during, with no process, after the switch.
    expect(answers.length).to.be.greaterThan(20);
    const wrong = answers.filter((a) => a.cases !== CASES || a.failures !== CASES / 3);
    expect(wrong, JSON.stringify(wrong.slice(0, 5))).to.deep.equal([]);
    const after = await api.get(`/api/search?q=IllegalStateException&type=failures&limit=1`);
    expect(after.status).to.equal(200);
    expect(after.body.total).to.equal(CASES / 3);
  });
});
