import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createMigratedDatabase, cutConnections, restoreConnections, type TestDatabase } from '../support/database';
import { HttpClient, startServer, type RunningServer } from '../support/server';
import { bigReport, expectEveryResultOnce, jobWhenEnded, tokenAndProject } from './bigImport';

const ADMIN = { email: 'import-admin@example.com', password: 'import e2e password' };
const CASES = 4000;
const CHUNK = 20;

/** Starts the import of `bigReport(CASES)` and reads its progress stream until three chunks are in. */
async function importUntilChunksAreIn(url: string, token: string, project: number, name: string) {
  const form = new FormData();
  form.append('name', name);
  form.append('projectId', String(project));
  form.append('files', new Blob([bigReport(CASES)]), 'big.xml');
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

/**
 * The import saga survives a SIGKILL: `services/process/main.ts` is killed while its worker appends
 * chunks; the next start's worker takes the job over once the dead one's lease expired and resumes
 * it from its stream, and the run ends with every result exactly once.
 * Slow: starts the service as a process three times and imports 4,000 cases in 20-case chunks twice: once killed (SIGKILL) and resumed after a 4 s lease, once cut off from the database and let in again
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
      // The killed process's lease on the job expires this soon; the restarted worker then takes it over.
      WORKER_LEASE_TTL_MS: '4000',
    };
  });
  after(async () => {
    if (server) await server.stop();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a job killed with SIGKILL between chunks resumes on restart: no duplicate, no missing result', async () => {
    server = await startServer(env);
    const { token, project } = await tokenAndProject(server.url, ADMIN, 'Crashy');

    const { jobId, reader, seen } = await importUntilChunksAreIn(server.url, token, project, 'Killed mid-way');
    await server.kill();
    expect(seen(), 'killed before the job completed').to.not.include('"complete"');
    server = null;
    await reader.cancel().catch(() => undefined);

    server = await startServer(env);
    const admin = new HttpClient(server.url, token);
    const job = await jobWhenEnded(admin, jobId);
    expect(server.output(), 'the worker of the restarted process took the job up').to.include('resuming an unfinished import job');
    await expectEveryResultOnce(admin, project, job, CASES);
  });

  it('the database cuts the server off mid-import: the job says so, then goes on by itself once let in (no restart), every result once', async () => {
    if (server) await server.stop();
    server = await startServer(env);
    const { token, project, client } = await tokenAndProject(server.url, ADMIN, 'Cut off');

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
    await expectEveryResultOnce(client, project, job, CASES);
    expect(server.output().split('"API listening"').length - 1, 'the same server: no restart').to.equal(1);
    // Ready again, and the outage is nobody's fault: no event recorded as failing.
    const ready = (await client.get('/readyz')).body;
    expect(ready.status, JSON.stringify(ready)).to.equal('ready');
    expect(ready.checks.find((c: any) => c.name === 'projections').details).to.deep.include({ parked: [], recentParked: [] });
  });
});
