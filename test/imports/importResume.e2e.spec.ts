import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createMigratedDatabase, cutConnections, restoreConnections, type TestDatabase } from '../support/database';
import { HttpClient, startServer, type RunningServer } from '../support/server';

const ADMIN = { email: 'import-admin@example.com', password: 'import e2e password' };
const CASES = 4000;
const CHUNK = 20;

/** A JUnit report of `CASES` cases in 20 suites, every fifth failing. */
function bigReport(): string {
  const suites: string[] = [];
  for (let s = 0; s < 20; s++) {
    const cases: string[] = [];
    for (let c = 0; c < CASES / 20; c++) {
      const n = s * (CASES / 20) + c;
      cases.push(n % 5 === 0
        ? `<testcase classname="pkg.Suite${s}" name="case ${n}" time="0.${n % 10}"><failure message="m${n}" type="E">trace ${n}</failure></testcase>`
        : `<testcase classname="pkg.Suite${s}" name="case ${n}" time="0.${n % 10}"/>`);
    }
    suites.push(`<testsuite name="pkg.Suite${s}" tests="${cases.length}">${cases.join('')}</testsuite>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?><testsuites>${suites.join('')}</testsuites>`;
}

/** The job completed with every case, run case and result exactly once. */
async function expectEveryResultOnce(admin: HttpClient, project: number, job: any): Promise<void> {
  expect(job.state, JSON.stringify(job)).to.equal('completed');
  expect(job.processedCases).to.equal(CASES);
  expect(job.counts).to.deep.equal({ results: CASES, newCases: CASES, newFolders: 20, newRunCases: CASES, passed: CASES * 0.8, failed: CASES * 0.2, error: 0, skipped: 0 });
  const count = async (entity: string, where: unknown) => (await admin.post(`/api/model/${entity}/count`, { where })).body.data as number;
  expect(await count('repositoryCase', { projectId: project })).to.equal(CASES);
  expect(await count('testRunCase', { testRunId: job.testRunId })).to.equal(CASES);
  expect(await count('testRunResult', { testRunId: job.testRunId })).to.equal(CASES);
  expect(await count('testRunResult', { testRunId: job.testRunId, attempt: { gt: 1 } }), 'no result twice').to.equal(0);
  const perCase = (await admin.post('/api/model/testRunResult/groupBy', { by: ['testRunCaseId'], where: { testRunId: job.testRunId }, _count: { _all: true }, having: { testRunCaseId: { _count: { gt: 1 } } } })).body.data;
  expect(perCase).to.deep.equal([]);
  const names = (await admin.post('/api/model/repositoryCase/findMany', { where: { projectId: project }, select: { title: true } })).body.data.map((c: any) => c.title);
  expect(new Set(names).size).to.equal(CASES);
  expect(await count('testRun', { projectId: project })).to.equal(1);
}

/** The administrator signs in, makes a token and a project; answers the token, the project and a client with the token. */
async function tokenAndProject(url: string, projectName: string) {
  const session = new HttpClient(url);
  expect((await session.post('/api/auth/login', ADMIN)).status).to.equal(200);
  const token = (await session.post('/api/tokens', { name: `import e2e ${projectName}` })).body.token as string;
  const client = new HttpClient(url, token);
  const project = (await client.post('/api/model/project/create', { data: { name: projectName } })).body.data.id as number;
  return { token, project, client };
}

/** Starts the import of `bigReport()` and reads its progress stream until three chunks are in. */
async function importUntilChunksAreIn(url: string, token: string, project: number, name: string) {
  const form = new FormData();
  form.append('name', name);
  form.append('projectId', String(project));
  form.append('files', new Blob([bigReport()]), 'big.xml');
  const res = await fetch(`${url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  expect(res.status).to.equal(200);
  const jobId = Number(res.headers.get('x-import-job-id'));
  const reader = res.body!.getReader();
  let seen = '';
  const imported = () => Math.max(0, ...[...seen.matchAll(/Imported (\d+) of/g)].map((m) => Number(m[1])));
  while (imported() < CHUNK * 3) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before three chunks were in:\n${seen}`);
    seen += Buffer.from(value).toString();
  }
  /** Reads the stream to its end. */
  const readToEnd = async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return seen;
      seen += Buffer.from(value).toString();
    }
  };
  return { jobId, reader, seen: () => seen, readToEnd };
}

/** Polls the job until it ends (or 60 s pass). */
async function jobWhenEnded(admin: HttpClient, jobId: number): Promise<any> {
  let job: any;
  for (let i = 0; i < 600; i++) {
    job = (await admin.get(`/api/imports/${jobId}`)).body.data;
    if (job?.state === 'completed' || job?.state === 'failed') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return job;
}

/**
 * The import saga survives a SIGKILL: `services/process/main.ts` is killed while it appends chunks; the
 * next start resumes the job from its stream, and the run ends with every result exactly once.
 */
describe('result import end to end (a started server, killed mid-import)', function () {
  this.timeout(180_000);
  let db: TestDatabase;
  let dataDir: string;
  let server: RunningServer | null = null;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    db = await createMigratedDatabase('import_resume');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-import-e2e-'));
    env = {
      DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), IMPORT_CHUNK_SIZE: String(CHUNK),
    };
  });
  after(async () => {
    if (server) await server.stop();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a job killed with SIGKILL between chunks resumes on restart: no duplicate, no missing result', async () => {
    server = await startServer(env);
    const { token, project } = await tokenAndProject(server.url, 'Crashy');

    const { jobId, reader, seen } = await importUntilChunksAreIn(server.url, token, project, 'Killed mid-way');
    await server.kill();
    expect(seen(), 'killed before the job completed').to.not.include('"complete"');
    server = null;
    await reader.cancel().catch(() => undefined);

    server = await startServer(env);
    const admin = new HttpClient(server.url, token);
    const job = await jobWhenEnded(admin, jobId);
    expect(server.output()).to.include('resuming unfinished import jobs');
    await expectEveryResultOnce(admin, project, job);
  });

  it('the database cuts the server off mid-import: the job says so, then goes on by itself once let in (no restart), every result once', async () => {
    if (server) await server.stop();
    server = await startServer(env);
    const { token, project, client } = await tokenAndProject(server.url, 'Cut off');

    const { jobId, readToEnd } = await importUntilChunksAreIn(server.url, token, project, 'Cut off mid-way');
    // Every session of the server ends, and for 3 s no new one is let in (a database restart, as the server sees it).
    expect(await cutConnections(db, null), 'sessions ended').to.be.greaterThan(0);
    await new Promise((r) => setTimeout(r, 3000));
    await restoreConnections(db);
    const told = await readToEnd();
    expect(told, 'the progress stream says the job was interrupted').to.include('"code":"import-interrupted"');
    expect(told).to.not.include('"complete"');

    const job = await jobWhenEnded(client, jobId);
    expect(server.output()).to.include('import job interrupted; resuming it');
    await expectEveryResultOnce(client, project, job);
    expect(server.output(), 'the same server: no restart').to.not.include('resuming unfinished import jobs');
    // Ready again, and the outage is nobody's fault: no event recorded as failing.
    const ready = (await client.get('/readyz')).body;
    expect(ready.status, JSON.stringify(ready)).to.equal('ready');
    expect(ready.checks.find((c: any) => c.name === 'projections').details.recentFailures).to.deep.equal([]);
  });
});
