import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { createEntity } from '../../services/entities/entity.handlers';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { importJobDecider, importJobStream } from '../../services/imports/importJob.decider';
import { readYourWrites } from '../../services/shared/commandBus';
import { systemMetadata } from '../../services/shared/context';
import type { AccessLevel } from '../../contracts/events';
import { expectCompleted, postImport } from '../imports/importClient';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient, newToken, signIn } from '../support/server';
import { waitUntil } from '../support/wait';

const PASSWORD = 'file-lifecycle-password-1';
const DAY_MS = 24 * 60 * 60 * 1000;
/** Files per round of the sweep here (the default is 200). */
const SWEEP_BATCH = 3;
const JUNIT = (name: string) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.acme.${name}" tests="2" failures="1">
  <testcase name="works" classname="com.acme.${name}" time="0.1"/>
  <testcase name="breaks" classname="com.acme.${name}" time="0.2"><failure message="expected 1">at ${name}.java:3</failure></testcase>
</testsuite>
`;

interface Caller { id: number; token: string; client: HttpClient }

async function registered(app: TestApp, name: string, access: AccessLevel): Promise<Caller> {
  const email = `${name}@example.com`;
  const id = await registerUser(app.deps, { email, name, password: PASSWORD, access }, systemMetadata('test'));
  const client = await signIn(app.url, email, PASSWORD);
  return { id, token: (await newToken(client, 'files')).token, client };
}

async function upload(app: TestApp, who: Caller, projectId: number, sizes: number[]) {
  const form = new FormData();
  form.append('projectId', String(projectId));
  sizes.forEach((size, i) => form.append('file', new Blob([Buffer.alloc(size, 97 + i)]), `f${i}.bin`));
  const res = await fetch(`${app.url}/api/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${who.token}` }, body: form });
  return { status: res.status, body: (await res.json()) as any };
}

/** A staged upload, as the routes hand it to storedFiles.store. */
async function staged(app: TestApp, content: string) {
  return { staged: await app.appDeps.files.stage(Readable.from([Buffer.from(content)]), { maxBytes: 1024 }), name: 'left.xml', mimeType: 'application/xml' };
}

/**
 * A per-user storage quota (USER_STORAGE_QUOTA_BYTES): every stored file of a user counts, uploads
 * and import files alike, until it is deleted; a request that would pass it is refused with 413
 * storage-quota-exceeded before anything is written, also when requests arrive at once.
 */
describe('files: the storage quota', function () {
  this.timeout(120_000);
  let app: TestApp;
  let alice: Caller;
  let bob: Caller;
  let projectId: number;

  before(async () => {
    app = await startTestApp({ storedFiles: { quotaBytes: 1000 } });
    await seedDefaults(app.deps, systemMetadata('test'));
    alice = await registered(app, 'alice', 'PROJECTADMIN');
    bob = await registered(app, 'bob', 'ADMIN');
    projectId = (await alice.client.post('/api/model/project/create', { data: { name: 'Quota' } })).body.data.id;
  });
  after(() => app?.stop());

  it('counts what a user keeps and refuses what would pass the quota (413, nothing written)', async () => {
    expect((await upload(app, alice, projectId, [600])).status).to.equal(201);
    expect((await alice.client.get('/api/files/usage')).body).to.deep.equal({ data: { used: 600, quota: 1000 } });
    const before = fs.readdirSync(app.uploadDir).sort();
    const refusal = await expectRefused(app, () => upload(app, alice, projectId, [300, 200]), 413);
    expect(refusal).to.deep.include({ code: 'storage-quota-exceeded', details: { quota: 1000, used: 600, requested: 500 } });
    const imported = await expectRefused(app, () => postImport(app.url, '/api/junit/import', { name: 'Too much', projectId }, [{ name: 'big.xml', content: JUNIT('Big').padEnd(500, ' ') }], alice.token), 413);
    expect(imported.code).to.equal('storage-quota-exceeded');
    expect(fs.readdirSync(app.uploadDir).sort()).to.deep.equal(before);
    // Another user's quota is their own.
    expect((await upload(app, bob, projectId, [900])).status).to.equal(201);
  });

  it('of requests arriving at once, only as many are kept as fit', async () => {
    const answers = await Promise.all([1, 2, 3, 4].map(() => upload(app, alice, projectId, [300])));
    expect(answers.map((a) => a.status).sort()).to.deep.equal([201, 413, 413, 413]);
    expect((await alice.client.get('/api/files/usage')).body.data.used).to.equal(900);
  });

  it('a deleted file frees its space', async () => {
    const files = await app.deps.knex('stored_files').where({ uploaded_by_id: alice.id }).whereNull('deleted_at').orderBy('size', 'desc').select('key');
    expect((await fetch(`${app.url}/api/files/${files[0].key}`, { method: 'DELETE', headers: { authorization: `Bearer ${alice.token}` } })).status).to.equal(204);
    expect((await alice.client.get('/api/files/usage')).body.data.used).to.equal(300);
    expect((await upload(app, alice, projectId, [700])).status).to.equal(201);
  });
});

/**
 * The files of result imports: a refused import keeps nothing, a failed one's files are deleted, a
 * completed one's are the run's evidence (listed and read with the run's permission) for
 * IMPORT_FILE_RETENTION_DAYS, then deleted by the sweep — bounded, logged, and audited — which also
 * removes what a crash left (files of a job never requested, of a job failed without clean-up).
 */
describe('files: the files of result imports', function () {
  this.timeout(180_000);
  let app: TestApp;
  let admin: Caller;
  let tester: Caller;
  let testerB: Caller;
  const ids: Record<string, number> = {};
  const logged: string[] = [];
  const connect = (id: number) => ({ connect: { id } });

  const importFiles = (fields: Record<string, string | number>, files: { name: string; content: string }[], who = admin) =>
    postImport(app.url, '/api/junit/import', { projectId: ids.a, ...fields }, files, who.token);
  const get = async (who: Caller, urlPath: string) => {
    const res = await fetch(app.url + urlPath, { headers: { authorization: `Bearer ${who.token}` } });
    const text = await res.text();
    return { status: res.status, text, body: res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : null };
  };
  const jobFiles = (jobId: number) => app.deps.knex('stored_files').where({ import_job_id: jobId }).orderBy('stored_at').select('key', 'deleted_at', 'delete_reason');
  const onDisk = (key: string) => fs.existsSync(path.join(app.uploadDir, key));

  before(async () => {
    const sink = new Writable({ write(chunk, _encoding, done) { logged.push(String(chunk)); done(); } });
    app = await startTestApp({ logger: pino({ level: 'info' }, sink), storedFiles: { importFileRetentionDays: 30, sweepBatch: SWEEP_BATCH } });
    await seedDefaults(app.deps, systemMetadata('test'));
    admin = await registered(app, 'admin', 'ADMIN');
    tester = await registered(app, 'tester', 'USER');
    testerB = await registered(app, 'testerb', 'USER');
    ids.a = (await admin.client.post('/api/model/project/create', { data: { name: 'A' } })).body.data.id;
    ids.b = (await admin.client.post('/api/model/project/create', { data: { name: 'B' } })).body.data.id;
    await admin.client.post('/api/model/projectAssignment/create', { data: { user: connect(tester.id), project: connect(ids.a) } });
    await admin.client.post('/api/model/projectAssignment/create', { data: { user: connect(testerB.id), project: connect(ids.b) } });
  });
  after(() => app?.stop());

  it('an import refused before it starts stores nothing', async () => {
    const before = fs.readdirSync(app.uploadDir).sort();
    const files = [{ name: 'r.xml', content: JUNIT('Refused') }];
    expect((await expectRefused(app, () => importFiles({ name: 'x', milestoneId: 999_999 }, files), 404)).details.path).to.equal('milestoneId');
    expect((await expectRefused(app, () => importFiles({ name: 'x', projectId: ids.b }, files, tester), 404)).details.path).to.equal('projectId');
    expect(fs.readdirSync(app.uploadDir).sort()).to.deep.equal(before);
  });

  it('a failed import\'s files are deleted with it (FileDeleted import-failed), nothing of them readable', async () => {
    const answer = await importFiles({ name: 'Broken' }, [{ name: 'ok.xml', content: JUNIT('Fine') }, { name: 'broken.xml', content: '<testsuite name="x"><testcase' }]);
    expect(answer.events.at(-1).code).to.equal('malformed-file');
    const jobId = Number(answer.headers.get('x-import-job-id'));
    // The worker deletes them right after it records the failure, which the stream may tell first.
    await waitUntil(async () => (await jobFiles(jobId)).every((f) => f.delete_reason !== null), 'the failed job\'s files to be deleted', 10_000);
    const files = await jobFiles(jobId);
    expect(files.map((f) => f.delete_reason)).to.deep.equal(['import-failed', 'import-failed']);
    for (const f of files) {
      expect(onDisk(f.key)).to.equal(false);
      expect((await get(admin, `/api/files/${f.key}`)).status).to.equal(404);
      const last = (await app.deps.store.readStream(`file-${f.key}`)).at(-1)!;
      expect([last.type, last.metadata.actor.userId]).to.deep.equal(['FileDeleted', admin.id]);
    }
    expect((await admin.client.get('/api/files/usage')).body.data.used).to.equal(0);
  });

  it('a completed import\'s files are its run\'s evidence: listed and read with the run\'s permission, each with its own name', async () => {
    const answer = await importFiles({ name: 'Nightly' }, [{ name: 'TEST-one.xml', content: JUNIT('One') }, { name: 'TEST-two.xml', content: JUNIT('Two') }]);
    ids.run = expectCompleted(answer);
    ids.job = Number(answer.headers.get('x-import-job-id'));
    const listed = await get(tester, `/api/test-runs/${ids.run}/import-files`);
    expect(listed.status, listed.text).to.equal(200);
    const finishedAt = (await app.deps.knex('import_jobs').where({ job_id: ids.job }).first('finished_at')).finished_at as Date;
    expect(listed.body.data.map((f: any) => [f.name, f.owner, f.importJobId, f.projectId, f.uploadedById, f.expiresAt])).to.deep.equal([
      ['TEST-one.xml', 'importJob', ids.job, ids.a, admin.id, new Date(finishedAt.getTime() + 30 * DAY_MS).toISOString()],
      ['TEST-two.xml', 'importJob', ids.job, ids.a, admin.id, new Date(finishedAt.getTime() + 30 * DAY_MS).toISOString()],
    ]);
    ids.files = listed.body.data.length;
    const [one] = listed.body.data;
    const read = await get(tester, one.url);
    expect([read.status, read.text]).to.deep.equal([200, JUNIT('One')]);
    expect((await get(testerB, one.url)).status).to.equal(404);
    expect((await get(testerB, `/api/test-runs/${ids.run}/import-files`)).body.code).to.equal('test-run-not-found');
    // The job's stream names its files by their keys.
    const stored = (await app.deps.store.readStream(importJobStream(ids.job))).filter((e) => e.type === 'ImportFileStored').map((e) => (e.data as any).storedAs);
    expect(stored).to.deep.equal(listed.body.data.map((f: any) => f.key));
  });

  it('the sweep deletes what a crash left: files of a job never requested (after an hour), of a job failed without clean-up', async () => {
    const metadata = systemMetadata('test');
    const orphan = await app.storedFiles.store({ userId: admin.id, projectId: ids.a, importJobId: 999_999, metadata, uploads: [await staged(app, 'never imported')] });
    const jobId = await app.deps.ids.next('importJob', metadata);
    const [left] = await app.storedFiles.store({ userId: admin.id, projectId: ids.a, importJobId: jobId, metadata, uploads: [await staged(app, 'failed, not cleaned')] });
    const now = app.clock.now.toISOString();
    const requested = importJobDecider.decide({
      type: 'Request', jobId, now,
      options: {
        projectId: ids.a, endpoint: 'junit', format: 'junit', testRunName: 'Crashed', testRunId: null, stateId: null, parentFolderId: null, configId: null,
        milestoneId: null, tagIds: [], templateId: null, branch: null, commit: null, buildUrl: null, ciJobId: null, attempt: null, newAttempt: false,
      },
      files: [{ index: 0, fileName: left.name, storedAs: left.key, sizeBytes: left.size, sha256: left.sha256 }],
    }, importJobDecider.initialState);
    const failed = { type: 'ImportFailed', data: { jobId, code: 'no-tests', error: 'none', details: {}, failedAt: now } };
    const appended = await app.deps.store.append(importJobStream(jobId), [...requested, failed], { expectedRevision: 'no-stream', metadata });
    await readYourWrites(app.deps, { position: appended.position, streamId: importJobStream(jobId) });

    expect((await app.storedFiles.sweep()).deleted).to.deep.equal({ 'import-failed': 1 });
    expect(onDisk(left.key)).to.equal(false);
    expect(onDisk(orphan[0].key)).to.equal(true);
    app.clock.advance(61 * 60 * 1000);
    expect((await app.storedFiles.sweep()).deleted).to.deep.equal({ 'import-not-started': 1 });
    expect(onDisk(orphan[0].key)).to.equal(false);
  });

  it('a completed import\'s files are kept for the retention, then deleted by the sweep: logged and in the audit trail', async () => {
    const keys = (await jobFiles(ids.job)).map((f) => f.key);
    app.clock.advance(29 * DAY_MS);
    expect((await app.storedFiles.sweep()).deleted).to.deep.equal({});
    expect(keys.every(onDisk)).to.equal(true);
    app.clock.advance(DAY_MS);
    const logLines = logged.length;
    expect((await app.storedFiles.sweep()).deleted).to.deep.equal({ retention: ids.files });
    expect(keys.some(onDisk)).to.equal(false);
    expect((await get(tester, `/api/test-runs/${ids.run}/import-files`)).body.data).to.deep.equal([]);
    expect((await get(tester, `/api/files/${keys[0]}`)).status).to.equal(404);
    const line = logged.slice(logLines).map((l) => JSON.parse(l)).find((l) => /file sweep/.test(l.msg));
    expect(line).to.deep.include({ deleted: { retention: ids.files }, retentionDays: 30 });
    const audit = await get(admin, `/api/audit?type=FileDeleted&projectId=${ids.a}`);
    const entries = audit.body.data.filter((e: any) => keys.includes(e.entityId));
    expect(entries.map((e: any) => [e.entity, e.actor.userId, e.actor.via])).to.deep.equal(keys.map(() => ['file', null, 'system']));
    // The run and its results stay: only the files go. (A month on, the admin's session has ended: the token.)
    expect((await new HttpClient(app.url, admin.token).post('/api/model/testRunResult/count', { where: { testRunId: ids.run } })).body.data).to.equal(4);
  });

  it('a round of the sweep is bounded: at most its batch of files, then it says there is more', async () => {
    const metadata = systemMetadata('test');
    const uploads = [];
    for (let i = 0; i <= SWEEP_BATCH; i++) uploads.push(await staged(app, `left ${i}`));
    await app.storedFiles.store({ userId: admin.id, projectId: ids.a, importJobId: 888_888, metadata, uploads });
    app.clock.advance(2 * 60 * 60 * 1000);
    const first = await app.storedFiles.sweep();
    expect([first.deleted, first.more]).to.deep.equal([{ 'import-not-started': SWEEP_BATCH }, true]);
    const second = await app.storedFiles.sweep();
    expect([second.deleted, second.more]).to.deep.equal([{ 'import-not-started': 1 }, false]);
  });
});

/**
 * Files stored before each upload had a record of its own lie under their SHA-256 with a sidecar
 * and no record: the sweep has the attachments that name them adopt them, so they are read with
 * the attachment as before, and only by its readers.
 */
describe('files: attachments of files stored before files had records', function () {
  this.timeout(120_000);
  let app: TestApp;

  before(async () => {
    app = await startTestApp();
    await seedDefaults(app.deps, systemMetadata('test'));
  });
  after(() => app?.stop());

  it('an attachment adopts its legacy file (FileStored by the system, FileAttached): its readers read it, nobody else; a missing one is left alone', async () => {
    const alice = await registered(app, 'legacy-alice', 'ADMIN');
    const outsider = await registered(app, 'legacy-outsider', 'USER');
    const projectId = (await alice.client.post('/api/model/project/create', { data: { name: 'Legacy' } })).body.data.id as number;
    // The layout of the earlier store: content under its SHA-256, the first upload's name and type beside it.
    const content = 'a log kept since before\n';
    const key = createHash('sha256').update(content).digest('hex');
    fs.writeFileSync(path.join(app.uploadDir, key), content);
    fs.writeFileSync(path.join(app.uploadDir, `${key}.meta.json`), JSON.stringify({ name: 'old.log', mimeType: 'text/plain' }));
    const missing = 'f'.repeat(64);
    // Attachments as the earlier version wrote them (the events are the same; no file record then).
    const meta = systemMetadata('test');
    const attachmentId = await createEntity(app.deps, 'attachment', { data: { name: 'old.log', url: `/api/files/${key}`, size: content.length }, connect: { project: projectId }, links: {} }, meta);
    await createEntity(app.deps, 'attachment', { data: { name: 'gone.log', url: missing, size: 1 }, connect: { project: projectId }, links: {} }, meta);
    expect((await alice.client.get(`/api/files/${key}`)).status, 'no record: read by nobody').to.equal(404);

    await app.storedFiles.sweep();
    const read = await alice.client.get(`/api/files/${key}`);
    expect(read.status).to.equal(200);
    expect(read.body).to.equal(content);
    expect(read.headers.get('content-disposition')).to.include('old.log');
    expect((await outsider.client.get(`/api/files/${key}`)).status, 'not a reader of the attachment').to.equal(404);
    const events = await app.deps.store.readStream(`file-${key}`);
    expect(events.map((e) => e.type)).to.deep.equal(['FileStored', 'FileAttached']);
    expect(events[0].data).to.deep.include({ projectId, uploadedById: null, name: 'old.log', sha256: key, size: content.length });
    expect(events[1].data).to.deep.include({ attachmentId });
    expect(events[0].metadata.actor.via).to.equal('system');
    // Nothing to adopt for the attachment whose file is gone, and nothing more the next time.
    expect(await app.deps.store.readStream(`file-${missing}`)).to.deep.equal([]);
    const head = (await app.deps.store.headPosition()).toString();
    await app.storedFiles.sweep();
    expect((await app.deps.store.headPosition()).toString()).to.equal(head);
  });
});
