import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { bigReport, expectEveryResultOnce, jobWhenEnded, tokenAndProject } from '../imports/bigImport';
import { HttpClient, runScript, startServer, type RunningServer } from '../support/server';

const ADMIN = { email: 'owner@example.com', password: 'embedded-default-1' };

/**
 * `npm start` with no configuration: embedded PostgreSQL under DATA_DIR, PostgreSQL event store,
 * direct transport. Data survives a restart and a SIGKILL; rebuild works on the same DATA_DIR.
 * Slow: starts the service with its embedded PostgreSQL (initdb the first time) five times, rebuilds the read model, and imports 2,000 cases killed mid-way
 */
/** Waits on the checkpoints (through /readyz) until every projection has applied the head of the log. */
async function caughtUp(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const r = await fetch(`${url}/readyz`).then((res) => res.json() as Promise<any>);
    const head = r.checks.find((c: { name: string }) => c.name === 'eventStore').details.head;
    const projections = r.checks.find((c: { name: string }) => c.name === 'projections').details.projections;
    if (projections.every((p: { position: string }) => p.position === head)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('projections did not catch up');
}

describe('embedded default (no DATABASE_URL)', function () {
  this.timeout(180_000);
  let dataDir: string;
  let server: RunningServer | null = null;
  // A port of its own so that a parallel run or the developer's own server does not collide.
  const env = () => ({
    DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
    EMBEDDED_POSTGRES_PORT: String(55000 + (process.pid % 1000)), DATABASE_URL: '',
  });

  before(() => {
    // Under /tmp: as root, the embedded server runs as `postgres`, who must reach the directory.
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-embedded-'));
  });
  after(async () => {
    if (server) await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts with no configuration, keeps data across a restart and a SIGKILL, and rebuilds on the same DATA_DIR', async () => {
    server = await startServer(env());
    const login = new HttpClient(server.url);
    expect((await login.post('/api/auth/login', ADMIN)).status).to.equal(200);
    const token = (await login.post('/api/tokens', { name: 'embedded' })).body.token as string;
    const api = () => new HttpClient(server!.url, token);

    const project = await api().post('/api/model/project/create', { data: { name: 'Embedded' } });
    expect(project.status).to.equal(201);
    const projectId = project.body.data.id;

    // A burst of writes, killed in the middle: every acknowledged write is there after restart.
    const acknowledged: number[] = [];
    const burst = Array.from({ length: 40 }, (_, i) =>
      api().post('/api/model/repositoryCase/create', { data: { title: `case ${i}`, project: { connect: { id: projectId } } } })
        .then((r) => {
          if (r.status === 201) acknowledged.push(r.body.data.id);
        }, () => undefined));
    await new Promise((r) => setTimeout(r, 150));
    await server.kill();
    server = null;
    await Promise.all(burst);

    // Refused while another process owns the data directory is checked below; here the owner is dead.
    server = await startServer(env());
    await caughtUp(server.url);
    const cases = await api().post('/api/model/repositoryCase/findMany', { where: { projectId }, orderBy: { id: 'asc' } });
    const ids = cases.body.data.map((c: { id: number }) => c.id);
    for (const id of acknowledged) expect(ids).to.include(id);

    // The read model is a fold of the event store: after the projector catches up it holds exactly
    // the created cases (acknowledged, plus any that were written but not acknowledged before the kill).
    const readyz = await fetch(`${server.url}/readyz`).then((r) => r.json() as Promise<any>);
    expect(readyz.status).to.equal('ready');
    const { embeddedPostgresPassword } = JSON.parse(fs.readFileSync(path.join(dataDir, 'secrets.json'), 'utf8'));
    const db = new pg.Client({ connectionString: `postgres://postgres:${embeddedPostgresPassword}@127.0.0.1:${env().EMBEDDED_POSTGRES_PORT}/testament` });
    await db.connect();
    try {
      const stored = await db.query("SELECT (data->>'caseId')::int AS id FROM es_events WHERE type = 'RepositoryCaseCreated' ORDER BY 1");
      expect(ids).to.deep.equal(stored.rows.map((r) => r.id));
    } finally {
      await db.end();
    }

    const before = (await api().post('/api/model/project/findMany', { include: { repositoryCases: true } })).body.data;

    // A second process may not take the data directory of a running server.
    const refused = await runScript('scripts/rebuild.ts', ['readModel'], env());
    expect(refused.code).to.not.equal(0);
    expect(refused.output).to.include('is in use by process');

    expect(await server.stop()).to.equal(0);
    server = null;
    const rebuild = await runScript('scripts/rebuild.ts', ['--all'], env());
    expect(rebuild.code, rebuild.output).to.equal(0);

    server = await startServer(env());
    const after = (await api().post('/api/model/project/findMany', { include: { repositoryCases: true } })).body.data;
    expect(after).to.deep.equal(before);
  });

  it('a result import killed with the process goes on as soon as it starts again: the dead process\'s lease is ended, not waited out', async () => {
    // A lease that would outlast the test: only ending it at the start lets the job go on.
    const withLongLease = () => ({ ...env(), WORKER_LEASE_TTL_MS: '600000', IMPORT_CHUNK_SIZE: '20' });
    if (server) await server.stop();
    server = await startServer(withLongLease());
    const { token, project } = await tokenAndProject(server.url, ADMIN, 'Killed import');
    const form = new FormData();
    form.append('name', 'Killed mid-way');
    form.append('projectId', String(project));
    form.append('files', new Blob([bigReport(2000)]), 'big.xml');
    const res = await fetch(`${server.url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    expect(res.status).to.equal(200);
    const jobId = Number(res.headers.get('x-import-job-id'));
    const reader = res.body!.getReader();
    let seen = '';
    while (!/Imported ([6-9]\d|\d{3,}) of/.test(seen)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before three chunks were in:\n${seen}`);
      seen += Buffer.from(value).toString();
    }
    await server.kill();
    server = null;
    await reader.cancel().catch(() => undefined);
    expect(seen, 'killed before the job completed').to.not.include('"complete"');

    server = await startServer(withLongLease());
    const admin = new HttpClient(server.url, token);
    const job = await jobWhenEnded(admin, jobId, 90_000);
    expect(server.output()).to.include('ended the job leases of processes that no longer run');
    await expectEveryResultOnce(admin, project, job, 2000);
  });
});
