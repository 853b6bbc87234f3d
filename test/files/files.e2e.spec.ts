import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createTestDatabase, type TestDatabase } from '../support/database';
import { HttpClient, startServer, type RunningServer } from '../support/server';

const ADMIN = { email: 'files-admin@example.com', password: 'files e2e password' };
const LIMIT = 1024 * 1024;
const sha256 = (content: string | Buffer) => createHash('sha256').update(content).digest('hex');

/**
 * The files endpoints in the real process (`services/main.ts`): UPLOAD_DIR defaulting to
 * DATA_DIR/uploads, MAX_UPLOAD_BYTES from the environment, and an upload cut short by a SIGKILL
 * leaving a temporary file that the next start removes, while stored files survive.
 */
describe('files end to end (a started server, killed mid-upload)', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  let dataDir: string;
  let server: RunningServer | null = null;
  let env: NodeJS.ProcessEnv;
  const uploads = () => path.join(dataDir, 'uploads');
  const temporary = () => fs.readdirSync(uploads()).filter((n) => n.startsWith('.upload-'));

  async function token(): Promise<string> {
    const session = new HttpClient(server!.url);
    expect((await session.post('/api/auth/login', ADMIN)).status).to.equal(200);
    return (await session.post('/api/tokens', { name: 'files e2e' })).body.token;
  }

  async function upload(bearer: string, name: string, content: Buffer | string) {
    const form = new FormData();
    form.append('file', new Blob([content], { type: 'application/octet-stream' }), name);
    const res = await fetch(`${server!.url}/api/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` }, body: form });
    return { status: res.status, body: (await res.json()) as any };
  }

  before(async () => {
    db = await createTestDatabase('files');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-files-e2e-'));
    env = {
      DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password,
      SESSION_SECRET: 's'.repeat(40), TOKEN_SECRET: 't'.repeat(40), MAX_UPLOAD_BYTES: String(LIMIT),
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
    expect(stored.body.data[0]).to.include({ key: sha256(kept), name: 'kept.txt', size: kept.length });
    expect(fs.readFileSync(path.join(uploads(), sha256(kept))).equals(kept)).to.equal(true);

    const over = await upload(bearer, 'over.bin', Buffer.alloc(LIMIT + 1));
    expect(over.status).to.equal(413);
    expect(over.body).to.deep.include({ code: 'payload-too-large' });
    expect(over.body.details.limit).to.equal(LIMIT);
    expect(await upload(bearer, 'exact.bin', Buffer.alloc(LIMIT))).to.have.property('status', 201);

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
    expect(fs.readdirSync(uploads()).filter((n) => /^[a-f0-9]{64}$/.test(n)).sort()).to.deep.equal([sha256(kept), sha256(Buffer.alloc(LIMIT))].sort());
    const res = await fetch(`${server.url}/api/files/${sha256(kept)}`, { headers: { authorization: `Bearer ${bearer}` } });
    expect(res.status).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(kept)).to.equal(true);
    expect(res.headers.get('content-disposition')).to.equal('attachment; filename="kept.txt"');
    expect(server.output()).to.include('removed temporary files of interrupted uploads');
  });
});
