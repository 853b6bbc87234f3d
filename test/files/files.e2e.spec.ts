import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { HttpClient, startServer, type RunningServer } from '../support/server';

const ADMIN = { email: 'files-admin@example.com', password: 'files e2e password' };
const LIMIT = 1024 * 1024;
const sha256 = (content: string | Buffer) => createHash('sha256').update(content).digest('hex');

/**
 * The files endpoints in the real process (`services/process/main.ts`): UPLOAD_DIR defaulting to
 * DATA_DIR/uploads, MAX_UPLOAD_BYTES, USER_STORAGE_QUOTA_BYTES and IMPORT_FILE_RETENTION_DAYS from
 * the environment, an upload cut short by a SIGKILL leaving a temporary file that the next start
 * removes while stored files survive, and the file sweep running at start.
 */
describe('files end to end (a started server, killed mid-upload)', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  let dataDir: string;
  let server: RunningServer | null = null;
  let env: NodeJS.ProcessEnv;
  const uploads = () => path.join(dataDir, 'uploads');
  const temporary = () => fs.readdirSync(uploads()).filter((n) => n.startsWith('.upload-'));

  let projectId: number;
  async function token(): Promise<string> {
    const session = new HttpClient(server!.url);
    expect((await session.post('/api/auth/login', ADMIN)).status).to.equal(200);
    const bearer = (await session.post('/api/tokens', { name: 'files e2e' })).body.token;
    projectId = (await new HttpClient(server!.url, bearer).post('/api/model/project/create', { data: { name: 'Files e2e' } })).body.data.id;
    return bearer;
  }

  async function upload(bearer: string, name: string, content: Buffer | string) {
    const form = new FormData();
    form.append('projectId', String(projectId));
    form.append('file', new Blob([content], { type: 'application/octet-stream' }), name);
    const res = await fetch(`${server!.url}/api/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
    return { status: res.status, body: (await res.json()) as any };
  }

  before(async () => {
    db = await createMigratedDatabase('files');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-files-e2e-'));
    env = {
      DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), MAX_UPLOAD_BYTES: String(LIMIT),
      USER_STORAGE_QUOTA_BYTES: String(2 * LIMIT), IMPORT_FILE_RETENTION_DAYS: '0',
    };
  });
  after(async () => {
    if (server) await server.stop();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('stores under DATA_DIR/uploads, honours MAX_UPLOAD_BYTES, and cleans up after a crash mid-upload at the next start', async () => {
    server = await startServer(env);
    const bearer = await token();

    const kept = Buffer.from('kept across a crash\n');
    const stored = await upload(bearer, 'kept.txt', kept);
    expect(stored.status, JSON.stringify(stored.body)).to.equal(201);
    expect(stored.body.data[0]).to.include({ sha256: sha256(kept), name: 'kept.txt', size: kept.length });
    const keptKey = stored.body.data[0].key as string;
    expect(fs.readFileSync(path.join(uploads(), keptKey)).equals(kept)).to.equal(true);

    const over = await upload(bearer, 'over.bin', Buffer.alloc(LIMIT + 1));
    expect(over.status).to.equal(413);
    expect(over.body).to.deep.include({ code: 'payload-too-large' });
    expect(over.body.details.limit).to.equal(LIMIT);
    const exact = await upload(bearer, 'exact.bin', Buffer.alloc(LIMIT));
    expect(exact).to.have.property('status', 201);
    // USER_STORAGE_QUOTA_BYTES: 2 × LIMIT in all; the kept file and this one are in use.
    const quota = await upload(bearer, 'quota.bin', Buffer.alloc(LIMIT));
    expect(quota.status).to.equal(413);
    expect(quota.body).to.deep.include({ code: 'storage-quota-exceeded' });
    expect(quota.body.details).to.deep.equal({ quota: 2 * LIMIT, used: LIMIT + kept.length, requested: LIMIT });

    // An upload in flight when the process is killed.
    const { hostname, port } = new URL(server.url);
    const request = http.request({
      hostname, port, method: 'POST', path: '/api/files/upload',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'multipart/form-data; boundary=KILL', 'content-length': String(LIMIT) },
    });
    request.on('error', () => undefined); // the server goes away
    request.write('--KILL\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n');
    request.write(Buffer.alloc(64 * 1024, 9));
    for (let i = 0; i < 500 && temporary().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(temporary(), 'the upload had begun writing').to.have.length(1);
    await server.kill();
    server = null;
    request.destroy();
    expect(temporary(), 'a crash leaves the temporary file').to.have.length(1);

    server = await startServer(env);
    expect(temporary(), 'removed at start').to.deep.equal([]);
    expect(fs.readdirSync(uploads()).filter((n) => /^[a-f0-9]{64}$/.test(n)).sort()).to.deep.equal([keptKey, exact.body.data[0].key].sort());
    const res = await fetch(`${server.url}/api/files/${keptKey}`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(res.status).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(kept)).to.equal(true);
    expect(res.headers.get('content-disposition')).to.equal('attachment; filename="kept.txt"');
    expect(server.output()).to.include('removed temporary files of interrupted uploads');
  });

  it('IMPORT_FILE_RETENTION_DAYS=0: a completed import\'s files are deleted by the sweep the server runs (at start, then every few minutes)', async () => {
    const bearer = await token();
    const xml = '<?xml version="1.0"?><testsuite name="e2e"><testcase name="works" classname="E2e"/></testsuite>';
    const form = new FormData();
    form.append('projectId', String(projectId));
    form.append('name', 'Evidence');
    form.append('files', new Blob([xml]), 'TEST-e2e.xml');
    const res = await fetch(`${server!.url}/api/junit/import`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
    const complete = JSON.parse((await res.text()).split('\n\n').filter(Boolean).at(-1)!.slice('data: '.length));
    expect(complete).to.include({ complete: true });
    const listed = await new HttpClient(server!.url, bearer).get(`/api/test-runs/${complete.testRunId}/import-files`);
    expect(listed.body.data.map((f: any) => [f.name, f.expiresAt !== null])).to.deep.equal([['TEST-e2e.xml', true]]);
    const key = listed.body.data[0].key as string;
    expect(fs.readFileSync(path.join(uploads(), key), 'utf8')).to.equal(xml);
    await server!.stop();
    expect(fs.existsSync(path.join(uploads(), key)), 'kept until the sweep').to.equal(true);
    server = await startServer(env);
    const swept = '"deleted":{"retention":1},"retentionDays":0,"msg":"file sweep: deleted stored files whose owner no longer keeps them"';
    for (let i = 0; i < 500 && !server.output().includes(swept); i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.output()).to.include(swept);
    expect(fs.existsSync(path.join(uploads(), key)), 'deleted by the sweep at start').to.equal(false);
  });
});
