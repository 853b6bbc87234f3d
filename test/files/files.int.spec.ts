import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { expect } from 'chai';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { expectError } from '../support/errors';

const LIMIT = 64 * 1024;
const sha256 = (content: string | Buffer) => createHash('sha256').update(content).digest('hex');

interface Part { field?: string; name?: string; content: string | Buffer; type?: string }

/** The files of the store's directory, by kind. */
function listing(dir: string) {
  const names = fs.readdirSync(dir);
  return {
    content: names.filter((n) => /^[a-f0-9]{64}$/.test(n)),
    meta: names.filter((n) => n.endsWith('.meta.json')),
    temp: names.filter((n) => n.startsWith('.upload-')),
    all: names,
  };
}

/**
 * The mechanics of uploads and downloads for one user in one project (who may read what, quotas
 * and the files of imports and attachments: fileAccess.int.spec.ts).
 */
describe('files: POST /api/files/upload and GET /api/files/:key', function () {
  this.timeout(60_000);
  let app: TestApp;
  let token: string;
  let session: HttpClient;
  let projectId: number;
  /** The key the upload answered for each content. */
  const keyOf = new Map<string, string>();

  const auth = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

  async function send(body: RequestInit['body'], headers: Record<string, string> = auth(), urlPath = '/api/files/upload') {
    const res = await fetch(app.url + urlPath, { method: 'POST', headers, body });
    const text = await res.text();
    let parsed: any = text;
    try { parsed = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  function form(parts: Part[]): FormData {
    const f = new FormData();
    f.append('projectId', String(projectId));
    for (const p of parts) f.append(p.field ?? 'file', new Blob([p.content], { type: p.type ?? 'text/plain' }), p.name ?? 'a.txt');
    return f;
  }

  const upload = async (parts: Part[], headers?: Record<string, string>) => {
    const res = await send(form(parts), headers);
    if (res.status === 201) parts.forEach((p, i) => keyOf.set(p.content.toString(), res.body.data[i].key));
    return res;
  };

  /** GET through node:http: the path goes out as written (fetch would normalise dot segments and add Cache-Control). */
  function download(key: string, headers: Record<string, string> = auth()): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: Buffer }> {
    return new Promise((resolve, reject) => {
      const { hostname, port } = new URL(app.url);
      http.get({ hostname, port, path: `/api/files/${key}`, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
        res.on('error', reject);
      }).on('error', reject);
    });
  }

  /** A multipart body written by hand, for what FormData cannot express. */
  function rawMultipart(parts: string[], boundary = 'XyZ'): { body: string; headers: Record<string, string> } {
    parts = [`Content-Disposition: form-data; name="projectId"\r\n\r\n${projectId}`, ...parts];
    const body = parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('') + `--${boundary}--\r\n`;
    return { body, headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}` } };
  }

  before(async () => {
    app = await startTestApp({ maxUploadBytes: LIMIT });
    await registerUser(app.deps, { email: 'files@example.com', name: 'Files', password: 'files-password-1', access: 'PROJECTADMIN' }, systemMetadata('test'));
    session = new HttpClient(app.url);
    expect((await session.post('/api/auth/login', { email: 'files@example.com', password: 'files-password-1' })).status).to.equal(200);
    token = (await session.post('/api/tokens', { name: 'files' })).body.token;
    projectId = (await session.post('/api/model/project/create', { data: { name: 'Files' } })).body.data.id;
  });
  after(() => app.stop());

  it('stores an upload under a key of its own and streams it back as an attachment', async () => {
    const content = 'hello, files\n';
    const res = await upload([{ name: 'hello.txt', content, type: 'text/plain' }]);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const [file] = res.body.data;
    expect(file.key).to.match(/^[a-f0-9]{64}$/).and.not.equal(sha256(content));
    expect(file).to.deep.include({
      url: `/api/files/${file.key}`, name: 'hello.txt', size: Buffer.byteLength(content), mimeType: 'text/plain', sha256: sha256(content), projectId, owner: 'project',
    });
    expect(fs.readFileSync(path.join(app.uploadDir, file.key), 'utf8')).to.equal(content);

    const got = await download(file.key);
    expect(got.status).to.equal(200);
    expect(got.bytes.toString()).to.equal(content);
    expect(got.headers['content-type']).to.equal('text/plain');
    expect(got.headers['content-length']).to.equal(String(Buffer.byteLength(content)));
    expect(got.headers['content-disposition']).to.equal('attachment; filename="hello.txt"');
    expect(got.headers['x-content-type-options']).to.equal('nosniff');
    expect(got.headers['content-security-policy']).to.equal("default-src 'none'; sandbox");
  });

  it('takes several files in one request, in order, with binary content intact', async () => {
    const binary = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
    const res = await upload([
      { name: 'one.bin', content: binary, type: 'application/octet-stream' },
      { name: 'two.json', content: '{"a":1}', type: 'application/json; charset=utf-8' },
    ]);
    expect(res.status).to.equal(201);
    expect(res.body.data.map((d: any) => [d.name, d.key, d.size, d.mimeType])).to.deep.equal([
      ['one.bin', keyOf.get(binary.toString()), 3000, 'application/octet-stream'],
      ['two.json', keyOf.get('{"a":1}'), 7, 'application/json'],
    ]);
    expect(res.body.data.map((d: any) => d.sha256)).to.deep.equal([sha256(binary), sha256('{"a":1}')]);
    expect((await download(res.body.data[0].key)).bytes.equals(binary)).to.equal(true);
  });

  it('every upload of the same content keeps its own key, name and type, in the answer and in the download', async () => {
    const content = `same content ${Date.now()}`;
    const first = await upload([{ name: 'first.txt', content }]);
    const second = await upload([{ name: 'second.md', content, type: 'text/markdown' }, { name: 'third.csv', content, type: 'text/csv' }]);
    expect(second.status).to.equal(201);
    const files = [first.body.data[0], ...second.body.data];
    expect(new Set(files.map((d: any) => d.key)).size).to.equal(3);
    expect(files.map((d: any) => d.sha256)).to.deep.equal([sha256(content), sha256(content), sha256(content)]);
    const downloads = await Promise.all(files.map((d: any) => download(d.key)));
    expect(downloads.map((d) => [d.headers['content-disposition'], d.headers['content-type'], d.bytes.toString()])).to.deep.equal([
      ['attachment; filename="first.txt"', 'text/plain', content],
      ['attachment; filename="second.md"', 'text/markdown', content],
      ['attachment; filename="third.csv"', 'text/csv', content],
    ]);
  });

  it('works with the session cookie as well as with a bearer token', async () => {
    const res = await upload([{ name: 's.txt', content: 'via session' }], { cookie: session.cookie!, origin: app.url });
    expect(res.status).to.equal(201);
    expect((await download(res.body.data[0].key, { cookie: session.cookie! })).bytes.toString()).to.equal('via session');
  });

  it('refuses an upload and a download without credentials (401), storing nothing', async () => {
    const before = listing(app.uploadDir).all.length;
    expectError(await upload([{ content: 'anonymous' }], {}), 401, 'unauthenticated');
    expectError(await upload([{ content: 'bad token' }], { authorization: 'Bearer tst_nope' }), 401, 'invalid-token');
    const res = await fetch(`${app.url}/api/files/${keyOf.get('hello, files\n')}`);
    expect(res.status).to.equal(401);
    expect(((await res.json()) as any).code).to.equal('unauthenticated');
    expect(listing(app.uploadDir).all.length).to.equal(before);
  });

  it('accepts a file of exactly MAX_UPLOAD_BYTES and refuses one byte more with 413, leaving nothing behind', async () => {
    const exact = Buffer.alloc(LIMIT, 1);
    expect((await upload([{ name: 'exact.bin', content: exact }])).status).to.equal(201);
    const before = listing(app.uploadDir).all.sort();
    const over = Buffer.alloc(LIMIT + 1, 2);
    const res = await upload([{ name: 'over.bin', content: over }]);
    expectError(res, 413, 'payload-too-large');
    expect(res.body.details.limit).to.equal(LIMIT);
    expect(listing(app.uploadDir).all.sort()).to.deep.equal(before);
  });

  it('a request whose second file is too large stores neither file', async () => {
    const before = listing(app.uploadDir).all.sort();
    const good = `good but refused ${Date.now()}`;
    const res = await upload([{ name: 'good.txt', content: good }, { name: 'big.bin', content: Buffer.alloc(LIMIT * 3, 3) }]);
    expectError(res, 413, 'payload-too-large');
    expect(listing(app.uploadDir).all.sort()).to.deep.equal(before);
    expect(keyOf.has(good)).to.equal(false);
  });

  it('refuses more than 20 files in one request with 413', async () => {
    const before = listing(app.uploadDir).all.sort();
    const res = await upload(Array.from({ length: 21 }, (_, i) => ({ name: `${i}.txt`, content: `many ${i}` })));
    expectError(res, 413, 'too-many-files');
    expect(res.body.details).to.deep.equal({ limit: 20, path: 'file' });
    expect(listing(app.uploadDir).all.sort()).to.deep.equal(before);
  });

  it('needs at least one file field named "file" (400, details.path)', async () => {
    const empty = rawMultipart([]);
    const none = await send(empty.body, empty.headers);
    expectError(none, 400, 'file-required');
    expect(none.body.details.path).to.equal('file');

    const text = rawMultipart(['Content-Disposition: form-data; name="file"\r\n\r\nnot a file']);
    const asText = await send(text.body, text.headers);
    expectError(asText, 400, 'invalid-file');
    expect(asText.body.details.path).to.equal('file');

    const before = listing(app.uploadDir).all.sort();
    const other = await upload([{ field: 'document', name: 'x.txt', content: 'elsewhere' }]);
    expectError(other, 400, 'unexpected-field');
    expect(other.body.details.path).to.equal('document');

    const extra = new FormData();
    extra.append('file', new Blob(['with a note']), 'n.txt');
    extra.append('note', 'hello');
    const withField = await send(extra);
    expectError(withField, 400, 'unexpected-field');
    expect(withField.body.details.path).to.equal('note');
    expect(listing(app.uploadDir).all.sort()).to.deep.equal(before);
  });

  it('refuses a body that is not multipart/form-data with 415', async () => {
    const json = await send(JSON.stringify({ file: 'x' }), { ...auth(), 'content-type': 'application/json' });
    expectError(json, 415, 'unsupported-media-type');
    expectError(await send('plain', { ...auth(), 'content-type': 'text/plain' }), 415, 'unsupported-media-type');
    expectError(await send(undefined), 415, 'unsupported-media-type');
  });

  it('refuses a malformed multipart body with 400', async () => {
    const noBoundary = await send('--x\r\n', { ...auth(), 'content-type': 'multipart/form-data' });
    expectError(noBoundary, 400, 'invalid-multipart');
    const truncated = await send('--XyZ\r\nContent-Disposition: form-data; name="file"; filename="t.txt"\r\n\r\nno end', { ...auth(), 'content-type': 'multipart/form-data; boundary=XyZ' });
    expectError(truncated, 400, 'invalid-multipart');
    expect(listing(app.uploadDir).temp).to.deep.equal([]);
  });

  it('makes path traversal impossible: names lose their path, keys must be 64 lower-case hex digits', async () => {
    const parent = path.dirname(app.uploadDir);
    const sneaky = rawMultipart(['Content-Disposition: form-data; name="file"; filename="../../evil.txt"\r\nContent-Type: text/plain\r\n\r\nevil']);
    const res = await send(sneaky.body, sneaky.headers);
    expect(res.status).to.equal(201);
    expect(res.body.data[0].name).to.equal('evil.txt');
    expect(fs.existsSync(path.join(parent, 'evil.txt'))).to.equal(false);
    const windows = rawMultipart(['Content-Disposition: form-data; name="file"; filename="C:\\\\Users\\\\x\\\\..\\\\win.txt"\r\n\r\nwin']);
    expect((await send(windows.body, windows.headers)).body.data[0].name).to.equal('win.txt');

    const key = keyOf.get('hello, files\n')!;
    for (const attempt of ['..%2F..%2Fetc%2Fpasswd', '..%2F' + key, key.toUpperCase(), key.slice(1), `${key}.meta.json`, `${key}0`, '%2E%2E', '..', '.upload-x.tmp', `${key}%00`]) {
      const got = await download(attempt);
      expect(got.status, attempt).to.equal(404);
      expect(JSON.parse(got.bytes.toString()).code, attempt).to.equal('file-not-found');
    }
    const traversal = await download('../../etc/passwd');
    expect(traversal.status).to.equal(404);
    expect(JSON.parse(traversal.bytes.toString()).code).to.equal('route-not-found');
  });

  it('answers 404 file-not-found for a well-formed key that holds nothing', async () => {
    const res = await fetch(`${app.url}/api/files/${'0'.repeat(64)}`, { headers: auth() });
    expect(res.status).to.equal(404);
    expect(await res.json()).to.deep.equal({ error: 'No file you may read is stored under this key', code: 'file-not-found', details: { key: '0'.repeat(64) } });
  });

  it('sanitises names (controls, reserved characters) and keeps Unicode, encoded in Content-Disposition', async () => {
    const res = await upload([
      { name: 'Prüfbericht ✓.pdf', content: 'unicode name', type: 'application/pdf' },
      { name: 'a\u202Etxt.exe', content: 'bidi' },
      { name: 'what?<>.txt', content: 'reserved' },
    ]);
    expect(res.status).to.equal(201);
    expect(res.body.data.map((d: any) => [d.name, d.mimeType])).to.deep.equal([
      ['Prüfbericht ✓.pdf', 'application/pdf'], ['atxt.exe', 'text/plain'], ['what___.txt', 'text/plain'],
    ]);
    const got = await download(keyOf.get('unicode name')!);
    expect(got.headers['content-disposition']).to.equal(`attachment; filename="Prüfbericht ?.pdf"; filename*=UTF-8''Pr%C3%BCfbericht%20%E2%9C%93.pdf`);
    expect(got.headers['content-type']).to.equal('application/pdf');
  });

  it('serves a stored file with a strong ETag (its SHA-256), to be checked again before each use, and answers 304 to If-None-Match', async () => {
    const key = keyOf.get('hello, files\n')!;
    const first = await download(key);
    expect(first.headers.etag).to.equal(`"${sha256('hello, files\n')}"`);
    expect(first.headers['cache-control']).to.equal('private, no-cache');
    const again = await download(key, { ...auth(), 'if-none-match': `"${sha256('hello, files\n')}"` });
    expect(again.status).to.equal(304);
    expect(again.bytes.length).to.equal(0);
  });

  it('an upload cut off by the client leaves no temporary file', async () => {
    const storedBefore = listing(app.uploadDir).content.sort();
    const boundary = 'CutOff';
    let sawTemporaryFile = false;
    await new Promise<void>((resolve) => {
      const req = http.request(`${app.url}/api/files/upload`, {
        method: 'POST',
        headers: { ...auth(), 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(LIMIT) },
      });
      req.on('error', () => resolve());
      req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`);
      req.write(Buffer.alloc(8 * 1024, 7), () => {
        // Wait until the server has started writing the temporary file, then hang up.
        const started = Date.now();
        const poll = () => {
          sawTemporaryFile = listing(app.uploadDir).temp.length > 0;
          if (sawTemporaryFile || Date.now() - started > 5000) return req.destroy();
          setImmediate(poll);
        };
        poll();
      });
    });
    expect(sawTemporaryFile, 'the server had begun writing').to.equal(true);
    for (let i = 0; i < 500 && listing(app.uploadDir).temp.length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(listing(app.uploadDir).temp).to.deep.equal([]);
    expect(listing(app.uploadDir).content.sort()).to.deep.equal(storedBefore);
  });

  it('every stored content has its metadata sidecar, and no temporary file is left', () => {
    const { content, meta, temp } = listing(app.uploadDir);
    expect(meta.sort()).to.deep.equal(content.map((k) => `${k}.meta.json`).sort());
    expect(temp).to.deep.equal([]);
  });
});
