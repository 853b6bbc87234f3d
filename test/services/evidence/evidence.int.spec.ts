import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { expect } from 'chai';
import { Parse as unzipParse, type Entry } from 'unzip-stream';
import yazl from 'yazl';
import { run as cli } from '../../../services/cli/main';
import { seedDefaults } from '../../../services/entities/seed';
import { verifyBundle } from '../../../services/shared/evidenceBundle';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { expectCompleted, postImport } from '../../imports/importClient';

const PASSWORD = 'evidence-password-1';

async function unzip(file: string): Promise<Map<string, Buffer>> {
  const entries = new Map<string, Buffer>();
  const parser = (fs.createReadStream(file).pipe(unzipParse()) as unknown as Readable).pipe(new PassThrough({ objectMode: true }));
  for await (const item of parser) {
    const entry = item as Entry;
    const chunks: Buffer[] = [];
    for await (const chunk of entry as unknown as AsyncIterable<Buffer>) chunks.push(chunk);
    entries.set(entry.path, Buffer.concat(chunks));
  }
  return entries;
}

async function rezip(entries: Map<string, Buffer>, file: string): Promise<void> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of entries) zip.addBuffer(content, name);
  zip.end();
  await new Promise<void>((resolve, reject) => zip.outputStream.pipe(fs.createWriteStream(file)).on('finish', resolve).on('error', reject));
}

/**
 * Evidence bundles against the whole application: a run with imported results, a result file kept,
 * an attachment and a signature, downloaded as a ZIP and checked offline (npm run verify's and the
 * CLI's check); one changed byte anywhere is found; the cases as executed; bad input.
 */
describe('evidence bundles: GET /api/evidence, verified offline', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let outsider: HttpClient;
  let projectId: number;
  let runId: number;
  let milestoneId: number;
  let token: string;
  let dir: string;

  const model = async (entity: string, op: string, body: unknown) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(op === 'create' ? 201 : 200);
    return res.body.data;
  };
  const download = async (query: string, file: string) => {
    const res = await fetch(`${app.url}/api/evidence?${query}`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status, await res.clone().text()).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/zip');
    fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    return file;
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evidence-'));
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: PASSWORD, access: 'ADMIN' }, meta);
    await registerUser(app.deps, { email: 'out@example.com', name: 'Oz', password: PASSWORD, access: 'USER' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: PASSWORD })).status).to.equal(200);
    outsider = new HttpClient(app.url);
    expect((await outsider.post('/api/auth/login', { email: 'out@example.com', password: PASSWORD })).status).to.equal(200);
    token = (await admin.post('/api/tokens', { name: 'ci' })).body.token as string;
    projectId = (await model('project', 'create', { data: { name: 'Infusion pump' } })).id;
    milestoneId = (await model('milestone', 'create', { data: { name: 'Release 7', project: { connect: { id: projectId } } } })).id;
    const junit = '<testsuite name="dosing"><testcase classname="pump" name="doses 5 ml — «µ»" time="0.5"/><testcase classname="pump" name="alarms on occlusion" time="1.25"><failure message="late">expected 2 s</failure></testcase></testsuite>';
    runId = await expectCompleted(await postImport(app.url, '/api/junit/import', { projectId, name: 'Verification', milestoneId }, [{ name: 'dosing.xml', content: junit }], token));
    // An attachment on the run, and a signature.
    const form = new FormData();
    form.append('projectId', String(projectId));
    form.append('file', new Blob(['bench log: all green\n'], { type: 'text/plain' }), 'bench log.txt');
    const uploaded = await fetch(`${app.url}/api/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    expect(uploaded.status).to.equal(201);
    const file = ((await uploaded.json()) as { data: { url: string; size: number }[] }).data[0];
    await model('attachment', 'create', { data: { name: 'bench log.txt', url: file.url, size: file.size, project: { connect: { id: projectId } }, testRun: { connect: { id: runId } } } });
    expect((await admin.post('/api/signatures', { entity: 'testRun', id: runId, meaning: 'approved', password: PASSWORD })).status).to.equal(201);
    // The case changes after it was executed: the bundle shows it as executed.
    const [paced] = await model('repositoryCase', 'findMany', { where: { title: 'alarms on occlusion' } });
    await model('repositoryCase', 'update', { where: { id: paced.id }, data: { title: 'alarms on occlusion within 2 s' } });
  });
  after(async () => {
    await app?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('holds the run\'s events, results with the cases as executed, the signature and the files, and checks intact offline', async () => {
    const file = await download(`runId=${runId}`, path.join(dir, 'run.zip'));
    const report = await verifyBundle(file);
    expect(report.problems).to.deep.equal([]);
    expect(report.ok).to.equal(true);
    expect(report.subject).to.deep.equal({ entity: 'testRun', id: runId, projectId });
    expect(report.checked.signatures).to.equal(1);
    expect(report.checked.keptFiles, 'the imported result file and the attachment').to.equal(2);

    const entries = await unzip(file);
    expect([...entries.keys()].sort()).to.include.members(['README.txt', 'events.ndjson', 'manifest.json', 'signatures.json', `runs/${runId}.json`]);
    const doc = JSON.parse(entries.get(`runs/${runId}.json`)!.toString('utf8'));
    expect(doc.run).to.include({ id: runId, name: 'Verification', exists: true });
    expect(doc.results).to.have.length(2);
    const titles = doc.results.map((r: any) => r.caseAsExecuted.title).sort();
    expect(titles, 'the cases as they were when executed').to.deep.equal(['alarms on occlusion', 'doses 5 ml — «µ»']);
    const events = entries.get('events.ndjson')!.toString('utf8').trim().split('\n').map((l) => JSON.parse(l));
    const types = new Set(events.map((e) => e.type));
    for (const type of ['TestRunCreated', 'TestResultsImported', 'RecordSigned', 'FileStored', 'RepositoryCaseUpdated']) expect(types.has(type), type).to.equal(true);
    const [signature] = JSON.parse(entries.get('signatures.json')!.toString('utf8'));
    expect(signature).to.include({ entity: 'testRun', entityId: runId, contentIncluded: true, revokedAt: null });

    // The CLI checks it the same way.
    const lines: string[] = [];
    expect(await cli(['verify', file], (l) => lines.push(l))).to.equal(0);
    expect(lines.join('\n')).to.match(/intact/);
  });

  it('finds one changed byte: in an event (manifest rewritten too), in a kept file, a file added, a cut archive', async () => {
    const file = await download(`runId=${runId}`, path.join(dir, 'original.zip'));
    const entries = await unzip(file);
    const problems = async (name: string, change: (e: Map<string, Buffer>) => void, rewriteManifest: boolean) => {
      const copy = new Map([...entries].map(([k, v]) => [k, Buffer.from(v)]));
      change(copy);
      if (rewriteManifest) {
        const manifest = JSON.parse(copy.get('manifest.json')!.toString('utf8'));
        const { createHash } = await import('node:crypto');
        manifest.files = manifest.files.map((f: any) => (copy.has(f.path) ? { ...f, bytes: copy.get(f.path)!.length, sha256: createHash('sha256').update(copy.get(f.path)!).digest('hex') } : f));
        copy.set('manifest.json', Buffer.from(JSON.stringify(manifest)));
      }
      const tampered = path.join(dir, `${name}.zip`);
      await rezip(copy, tampered);
      const report = await verifyBundle(tampered);
      expect(report.ok, name).to.equal(false);
      return report.problems;
    };
    // One byte of a result's message in its import chunk, the manifest made to match: the chain names the event.
    const altered = await problems('event', (e) => {
      const text = e.get('events.ndjson')!.toString('utf8').replace('expected 2 s', 'expected 3 s');
      e.set('events.ndjson', Buffer.from(text));
    }, true);
    expect(altered.some((p) => p.check === 'event' && /altered/.test(p.detail)), JSON.stringify(altered)).to.equal(true);
    // Without rewriting the manifest: the manifest names the file too.
    const unlisted = await problems('event-manifest', (e) => e.set('events.ndjson', Buffer.from(e.get('events.ndjson')!.toString('utf8').replace('expected 2 s', 'expected 3 s'))), false);
    expect(unlisted.some((p) => p.check === 'file' && p.path === 'events.ndjson')).to.equal(true);
    // A kept file changed (the manifest made to match): its FileStored event recorded other bytes.
    const kept = [...entries.keys()].find((k) => k.startsWith('files/') && k.endsWith('bench_log.txt'))!;
    const changedFile = await problems('file', (e) => e.set(kept, Buffer.from('bench log: all red\n')), true);
    expect(changedFile.map((p) => [p.check, p.path])).to.deep.include(['file', kept]);
    // A file added without the manifest knowing.
    const added = await problems('added', (e) => e.set('extra.txt', Buffer.from('hello')), false);
    expect(added.map((p) => [p.check, p.path])).to.deep.include(['file', 'extra.txt']);
    // A cut archive.
    const cut = path.join(dir, 'cut.zip');
    fs.writeFileSync(cut, fs.readFileSync(file).subarray(0, 2000));
    const report = await verifyBundle(cut);
    expect(report.problems.map((p) => p.check)).to.deep.equal(['archive']);
    const lines: string[] = [];
    expect(await cli(['verify', cut], (l) => lines.push(l))).to.equal(1);
  });

  it('bundles a milestone with its runs; the CLI downloads and checks one', async () => {
    const previous = { url: process.env.SERVICE_URL, token: process.env.SERVICE_TOKEN };
    process.env.SERVICE_URL = app.url;
    process.env.SERVICE_TOKEN = token;
    try {
      const file = path.join(dir, 'milestone.zip');
      const lines: string[] = [];
      const code = await cli(['evidence', '--milestone', String(milestoneId), '-o', file], (l) => lines.push(l));
      expect(code, lines.join('\n')).to.equal(0);
      const entries = await unzip(file);
      expect(entries.has('milestone.json')).to.equal(true);
      expect(entries.has(`runs/${runId}.json`)).to.equal(true);
      expect(JSON.parse(entries.get('milestone.json')!.toString('utf8'))).to.include({ id: milestoneId, name: 'Release 7' });
      const errors: string[] = [];
      expect(await cli(['evidence', '--run', '999999', '-o', path.join(dir, 'none.zip')], () => undefined, (l) => errors.push(l))).to.equal(1);
      expect(errors.join('\n')).to.match(/404/);
      expect(fs.existsSync(path.join(dir, 'none.zip'))).to.equal(false);
      expect(await cli(['evidence', '--run', '1', '--milestone', '1'], () => undefined, () => undefined)).to.equal(2);
    } finally {
      if (previous.url === undefined) delete process.env.SERVICE_URL;
      else process.env.SERVICE_URL = previous.url;
      if (previous.token === undefined) delete process.env.SERVICE_TOKEN;
      else process.env.SERVICE_TOKEN = previous.token;
    }
  });

  it('refuses bad input with the error shape', async () => {
    for (const query of ['', '?runId=1&milestoneId=1', '?runId=x', '?runId=0', '?projectId=1']) {
      const res = await admin.get(`/api/evidence${query}`);
      expect(res.status, query).to.equal(400);
      expect(res.body.code).to.equal('invalid-argument');
    }
    await expectRefusedAs(app, () => outsider.get(`/api/evidence?runId=${runId}`), 404, 'not-found');
    await expectRefusedAs(app, () => admin.get('/api/evidence?milestoneId=999999'), 404, 'not-found');
  });
});
