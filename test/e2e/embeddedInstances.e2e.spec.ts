import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { HttpClient, runScript, startServer, type RunningServer } from '../support/server';

const ADMIN = { email: 'owner@example.com', password: 'embedded-default-1' };

/**
 * Several `npm start`s on one machine, each with its DATA_DIR and PORT and no
 * EMBEDDED_POSTGRES_PORT: each embedded PostgreSQL takes a free port of its own. A start that
 * cannot go on says why.
 * Slow: starts the service with its embedded PostgreSQL three times as processes (two at once, initdb each), and waits for a refused start to end
 */
describe('embedded default: instances side by side', function () {
  this.timeout(180_000);
  const dataDirs: string[] = [];
  const servers: RunningServer[] = [];
  // Under /tmp: as root, the embedded server runs as `postgres`, who must reach the directory.
  const env = (dataDir: string, more: NodeJS.ProcessEnv = {}) => ({
    DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, EMBEDDED_POSTGRES_PORT: '', DATABASE_URL: '', ...more,
  });
  const newDataDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-instances-'));
    dataDirs.push(dir);
    return dir;
  };

  after(async () => {
    for (const server of servers) await server.stop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('two instances start at once, and each orders titles naturally (alpha, Beta, Zeta)', async () => {
    const [a, b] = [newDataDir(), newDataDir()];
    const started = await Promise.allSettled([startServer(env(a)), startServer(env(b))]);
    for (const s of started) if (s.status === 'fulfilled') servers.push(s.value);
    for (const s of started) if (s.status === 'rejected') throw s.reason;
    expect(fs.readFileSync(path.join(a, 'postgres.port'), 'utf8')).to.not.equal(fs.readFileSync(path.join(b, 'postgres.port'), 'utf8'));

    for (const [i, server] of servers.entries()) {
      const login = new HttpClient(server.url);
      expect((await login.post('/api/auth/login', ADMIN)).status).to.equal(200);
      const project = await login.post('/api/model/project/create', { data: { name: `Instance ${i}` } });
      expect(project.status, JSON.stringify(project.body)).to.equal(201);
      for (const title of ['Zeta', 'alpha', 'Beta', 'beta', 'Äpfel']) {
        const created = await login.post('/api/model/repositoryCase/create', { data: { title, project: { connect: { id: project.body.data.id } } } });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
      }
      const cases = await login.post('/api/model/repositoryCase/findMany', { where: { projectId: project.body.data.id }, orderBy: [{ title: 'asc' }, { id: 'asc' }], select: { title: true } });
      expect(cases.status, JSON.stringify(cases.body)).to.equal(200);
      expect(cases.body.data.map((c: { title: string }) => c.title)).to.deep.equal(['alpha', 'Äpfel', 'beta', 'Beta', 'Zeta']);
    }
  });

  it('a start that fails says why: a configured EMBEDDED_POSTGRES_PORT that is taken', async () => {
    const squatter = await new Promise<net.Server>((resolve) => {
      const s = net.createServer((socket) => socket.destroy()).listen(0, '127.0.0.1', () => resolve(s));
    });
    const port = (squatter.address() as net.AddressInfo).port;
    try {
      const run = await runScript('services/process/main.ts', [], { ...env(newDataDir(), { EMBEDDED_POSTGRES_PORT: String(port) }), PORT: '0' });
      expect(run.code).to.equal(1);
      const fatal = run.output.split('\n').filter((l) => l.includes('"level":"fatal"')).map((l) => JSON.parse(l));
      expect(fatal, run.output).to.have.length(1);
      expect(fatal[0].msg).to.equal('cannot start');
      expect(fatal[0].err).to.include({ type: 'Error', code: 'EADDRINUSE', port });
      expect(fatal[0].err.message).to.include(`port ${port}`).and.include('Address already in use');
      expect(fatal[0].err.stack).to.be.a('string');
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
