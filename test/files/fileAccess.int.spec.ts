import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import type { AccessLevel } from '../../contracts/events';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient, newToken, signIn } from '../support/server';

const PASSWORD = 'file-access-password-1';
const sha256 = (content: string) => createHash('sha256').update(content).digest('hex');

interface Caller { id: number; token: string; client: HttpClient }

/**
 * Who may store, read and delete files (issue 15, part 4), over real HTTP. Two projects, A and B;
 * `tester` is a Tester in A and a Viewer in B, `colleague` a Tester in A only, `testerB` a Tester
 * in B only, `outsider` reaches no project, `none` has access level NONE, and the administrator
 * may do everything. A file belongs to its project (an upload), an attachment or an import job,
 * and is read with its owner's permission: 404 for anyone else, whatever they know of its content.
 */
describe('files: owners and permissions', function () {
  this.timeout(120_000);
  let app: TestApp;
  const users: Record<string, Caller> = {};
  const ids: Record<string, number> = {};
  const connect = (id: number) => ({ connect: { id } });

  const upload = async (who: string, projectId: number | null, files: { name: string; content: string; type?: string }[]) => {
    const form = new FormData();
    if (projectId !== null) form.append('projectId', String(projectId));
    for (const f of files) form.append('file', new Blob([f.content], { type: f.type ?? 'text/plain' }), f.name);
    const res = await fetch(`${app.url}/api/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${users[who].token}` }, body: form });
    return { status: res.status, body: (await res.json()) as any };
  };
  const uploaded = async (who: string, projectId: number, name: string, content: string) => {
    const res = await upload(who, projectId, [{ name, content }]);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data[0] as { key: string; url: string; size: number };
  };
  const call = async (who: string, method: string, urlPath: string) => {
    const res = await fetch(app.url + urlPath, { method, headers: { authorization: `Bearer ${users[who].token}` } });
    const text = await res.text();
    let body: any = text;
    try { body = JSON.parse(text); } catch { /* the file itself */ }
    return { status: res.status, body, headers: res.headers };
  };
  const model = async (who: string, entity: string, op: string, body: unknown, status = op === 'create' ? 201 : 200) => {
    const res = await users[who].client.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(status);
    return res.body.data;
  };
  const onDisk = (key: string) => fs.existsSync(path.join(app.uploadDir, key));
  const streamOf = async (key: string) => app.deps.store.readStream(`file-${key}`);

  async function registered(name: string, access: AccessLevel): Promise<Caller> {
    const email = `${name}@example.com`;
    const id = await registerUser(app.deps, { email, name, password: PASSWORD, access }, systemMetadata('test'));
    const client = await signIn(app.url, email, PASSWORD);
    const { token } = await newToken(client, 'files');
    return { id, token, client };
  }

  before(async () => {
    app = await startTestApp();
    await seedDefaults(app.deps, systemMetadata('test')); // roles Project Admin, Tester (add/edit, no delete), Viewer
    for (const [name, access] of [['admin', 'ADMIN'], ['tester', 'USER'], ['colleague', 'USER'], ['testerB', 'USER'], ['outsider', 'USER'], ['none', 'NONE']] as const)
      users[name] = await registered(name, access);
    ids.a = (await model('admin', 'project', 'create', { data: { name: 'A' } })).id;
    ids.b = (await model('admin', 'project', 'create', { data: { name: 'B' } })).id;
    const viewer = (await model('admin', 'role', 'findFirst', { where: { name: 'Viewer' } })).id;
    await model('admin', 'projectAssignment', 'create', { data: { user: connect(users.tester.id), project: connect(ids.a) } });
    await model('admin', 'userProjectPermission', 'create', { data: { user: connect(users.tester.id), project: connect(ids.b), accessType: 'SPECIFIC_ROLE', role: connect(viewer) } });
    await model('admin', 'projectAssignment', 'create', { data: { user: connect(users.colleague.id), project: connect(ids.a) } });
    await model('admin', 'projectAssignment', 'create', { data: { user: connect(users.testerB.id), project: connect(ids.b) } });
  });
  after(() => app?.stop());

  it('a caller of access level NONE may not upload, read, list or delete files (403), and nothing is stored', async () => {
    const file = await uploaded('tester', ids.a, 'a.txt', 'for project A');
    const before = fs.readdirSync(app.uploadDir).sort();
    for (const projectId of [ids.a, null]) {
      const refusal = await expectRefused(app, () => upload('none', projectId, [{ name: 'n.txt', content: 'from NONE' }]), 403);
      expect(refusal.code).to.equal('forbidden');
    }
    for (const [method, urlPath] of [['GET', `/api/files/${file.key}`], ['DELETE', `/api/files/${file.key}`], ['GET', '/api/files/usage'], ['GET', '/api/test-runs/1/import-files']]) {
      const refusal = await expectRefused(app, () => call('none', method, urlPath), 403);
      expect(refusal.code, urlPath).to.equal('forbidden');
    }
    expect(fs.readdirSync(app.uploadDir).sort()).to.deep.equal(before);
    expect((await call('tester', 'GET', file.url)).status).to.equal(200);
  });

  it('an upload needs a project the caller reaches (else 404) where they may add documentation (else 403); nothing is stored when refused', async () => {
    const before = fs.readdirSync(app.uploadDir).sort();
    const viewerOfB = await expectRefused(app, () => upload('tester', ids.b, [{ name: 'v.txt', content: 'a viewer of B' }]), 403);
    expect(viewerOfB).to.deep.include({ code: 'forbidden' });
    expect(viewerOfB.details).to.deep.equal({ projectId: ids.b, area: 'Documentation' });
    const outsider = await expectRefused(app, () => upload('outsider', ids.a, [{ name: 'o.txt', content: 'an outsider' }]), 404);
    expect(outsider).to.deep.include({ code: 'not-found', details: { path: 'projectId', id: ids.a } });
    const missing = await expectRefused(app, () => upload('tester', null, [{ name: 'm.txt', content: 'no project' }]), 400);
    expect(missing).to.deep.include({ code: 'invalid-argument', details: { path: 'projectId' } });
    const unknown = await expectRefused(app, () => upload('admin', 999_999, [{ name: 'u.txt', content: 'no such project' }]), 404);
    expect(unknown.details).to.deep.equal({ path: 'projectId', id: 999_999 });
    expect(fs.readdirSync(app.uploadDir).sort()).to.deep.equal(before);
  });

  it('a file is read by those who reach its project and 404 for anyone else; knowing its content opens nothing', async () => {
    const content = `the same report ${Date.now()}`;
    const inA = await uploaded('tester', ids.a, 'a-report.txt', content);
    const inB = await uploaded('testerB', ids.b, 'b-report.txt', content);
    expect(inA.key).to.not.equal(inB.key);
    const status = async (who: string, key: string) => (await call(who, 'GET', `/api/files/${key}`)).status;
    expect([await status('tester', inA.key), await status('colleague', inA.key), await status('admin', inA.key)]).to.deep.equal([200, 200, 200]);
    expect([await status('testerB', inA.key), await status('outsider', inA.key)]).to.deep.equal([404, 404]);
    // A Viewer of B reads B's files; a Tester of A alone does not.
    expect([await status('tester', inB.key), await status('colleague', inB.key)]).to.deep.equal([200, 404]);
    const refused = await call('outsider', 'GET', `/api/files/${inA.key}`);
    expect(refused.body).to.deep.equal({ error: 'No file you may read is stored under this key', code: 'file-not-found', details: { key: inA.key } });
    // The content's SHA-256 is not a key (as it was: anyone who knew the content could fetch it).
    expect(await status('testerB', sha256(content))).to.equal(404);
    expect(await status('tester', sha256(content))).to.equal(404);
    // Each keeps its own name.
    expect((await call('tester', 'GET', `/api/files/${inB.key}`)).headers.get('content-disposition')).to.equal('attachment; filename="b-report.txt"');
  });

  it('records each upload as FileStored on its own stream: the file, its project, who stored it, when and through what', async () => {
    const file = await uploaded('tester', ids.a, 'evidence.log', 'log line\n');
    const events = await streamOf(file.key);
    expect(events.map((e) => e.type)).to.deep.equal(['FileStored']);
    expect(events[0].data).to.deep.equal({
      key: file.key, projectId: ids.a, importJobId: null, name: 'evidence.log', mimeType: 'text/plain', size: 9, sha256: sha256('log line\n'),
      uploadedById: users.tester.id, storedAt: app.clock.now.toISOString(),
    });
    expect(events[0].metadata.actor).to.deep.include({ userId: users.tester.id, via: 'api' });
    expect(events[0].metadata.actor.tokenId).to.be.a('number');
    const row = await app.deps.knex('stored_files').where({ key: file.key }).first();
    expect(row).to.include({ project_id: ids.a, owner: 'project', uploaded_by_id: users.tester.id, via: 'api', token_id: events[0].metadata.actor.tokenId });
  });

  describe('attachments take their file over', () => {
    let file: { key: string; url: string; size: number };
    let attachmentId: number;

    it('an attachment created with the file\'s url holds it (FileAttached); it is read with the attachment', async () => {
      file = await uploaded('tester', ids.a, 'screenshot.png', 'png bytes');
      attachmentId = (await model('tester', 'attachment', 'create', { data: { name: 'Screenshot', url: file.url, size: file.size, project: connect(ids.a) } })).id;
      const events = await streamOf(file.key);
      expect(events.map((e) => [e.type, e.metadata.actor.userId])).to.deep.equal([['FileStored', users.tester.id], ['FileAttached', users.tester.id]]);
      expect(events[1].data).to.deep.include({ key: file.key, projectId: ids.a, attachmentId });
      expect((await call('colleague', 'GET', file.url)).status).to.equal(200);
      expect((await call('testerB', 'GET', file.url)).status).to.equal(404);
      // The bare key names the file too.
      const other = await uploaded('tester', ids.a, 'log.txt', 'bare key');
      await model('tester', 'attachment', 'create', { data: { name: 'Log', url: other.key, size: other.size, project: connect(ids.a) } });
      expect(await app.deps.knex('stored_files').where({ key: other.key }).first('owner')).to.deep.equal({ owner: 'attachment' });
    });

    it('a file held by an attachment, one of another project, or none at all cannot be attached; nothing is written', async () => {
      const attachments = await model('admin', 'attachment', 'count', {});
      const again = await expectRefused(app, () => users.tester.client.post('/api/model/attachment/create', { data: { name: 'Again', url: file.url, size: 1, project: connect(ids.a) } }), 400);
      expect(again).to.deep.include({ code: 'file-in-use' });
      expect(again.details).to.deep.equal({ key: file.key, path: 'data.url' });
      const elsewhere = await expectRefused(app, () => users.admin.client.post('/api/model/attachment/create', { data: { name: 'In B', url: file.url, size: 1, project: connect(ids.b) } }), 404);
      expect(elsewhere.code).to.equal('file-not-found');
      const nothing = await expectRefused(app, () => users.tester.client.post('/api/model/attachment/create', { data: { name: 'Nothing', url: `/api/files/${'0'.repeat(64)}`, size: 1, project: connect(ids.a) } }), 404);
      expect(nothing.code).to.equal('file-not-found');
      expect(await model('admin', 'attachment', 'count', {})).to.equal(attachments);
    });

    it('a link stays a link; an attachment\'s file is set when it is created (400 attachment-file-fixed)', async () => {
      const link = (await model('tester', 'attachment', 'create', { data: { name: 'Docs', url: 'https://example.com/manual.pdf', size: 0, project: connect(ids.a) } })).id;
      await model('tester', 'attachment', 'update', { where: { id: link }, data: { url: 'https://example.com/manual-v2.pdf' } });
      const spare = await uploaded('tester', ids.a, 'spare.txt', 'spare');
      for (const [id, url] of [[attachmentId, 'https://example.com/x'], [link, spare.url]] as const) {
        const refusal = await expectRefused(app, () => users.tester.client.post('/api/model/attachment/update', { where: { id }, data: { url } }), 400);
        expect(refusal).to.deep.include({ code: 'attachment-file-fixed', details: { path: 'data.url' } });
      }
      await model('tester', 'attachment', 'update', { where: { id: attachmentId }, data: { name: 'Screenshot (renamed)' } });
    });

    it('a url is an http(s) address or a stored file, nothing else (400 invalid-value, on create and on update); nothing is written', async () => {
      const attachments = await model('admin', 'attachment', 'count', {});
      const link = (await model('tester', 'attachment', 'create', { data: { name: 'Spec', url: 'HTTP://example.com/spec.html', size: 0, project: connect(ids.a) } })).id;
      for (const url of [
        'javascript:alert(document.cookie)', ' javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'java\tscript:alert(1)', 'data:text/html,<script>alert(1)</script>',
        'vbscript:msgbox(1)', 'file:///etc/passwd', '../../api/admin/tokens', '../secret.txt', '/api/files/../admin', '//evil.example/x', '/\t/evil.example',
        'manual.pdf', 'https://', 'https://example.com/a b', 'https://example.com/\n', `/api/files/${'A'.repeat(64)}`, '',
      ]) {
        const created = await expectRefused(app, () => users.tester.client.post('/api/model/attachment/create', { data: { name: 'Bad', url, size: 1, project: connect(ids.a) } }), 400);
        expect(created, JSON.stringify(url)).to.deep.include({ code: 'invalid-value' });
        expect(created.details, JSON.stringify(url)).to.deep.include({ path: 'data.url' });
        const updated = await expectRefused(app, () => users.tester.client.post('/api/model/attachment/update', { where: { id: link }, data: { url } }), 400);
        expect(updated.code, JSON.stringify(url)).to.equal('invalid-value');
      }
      expect(await model('admin', 'attachment', 'count', {})).to.equal(attachments + 1);
      expect((await model('admin', 'attachment', 'findUnique', { where: { id: link } })).url).to.equal('HTTP://example.com/spec.html');
    });

    it('an attachment deleted: its file is 404 at once, and the sweep removes its content (FileDeleted attachment-deleted, by the system)', async () => {
      await model('admin', 'attachment', 'delete', { where: { id: attachmentId } });
      expect((await call('tester', 'GET', file.url)).status).to.equal(404);
      expect(onDisk(file.key)).to.equal(true);
      const { deleted } = await app.storedFiles.sweep();
      expect(deleted).to.deep.equal({ 'attachment-deleted': 1 });
      expect(onDisk(file.key)).to.equal(false);
      const last = (await streamOf(file.key)).at(-1)!;
      expect([last.type, last.data, last.metadata.actor]).to.deep.equal(['FileDeleted', { key: file.key, projectId: ids.a, reason: 'attachment-deleted', deletedAt: app.clock.now.toISOString() }, { userId: null, via: 'system' }]);
      expect((await app.storedFiles.sweep()).deleted).to.deep.equal({});
    });
  });

  it('DELETE /api/files/:key: an upload no attachment holds, by its uploader or who may delete documentation there', async () => {
    const mine = await uploaded('tester', ids.a, 'draft.txt', 'a draft');
    expect((await expectRefused(app, () => call('colleague', 'DELETE', mine.url), 403)).details).to.deep.equal({ projectId: ids.a, area: 'Documentation' });
    expect((await expectRefused(app, () => call('testerB', 'DELETE', mine.url), 404)).code).to.equal('file-not-found');
    expect((await call('tester', 'DELETE', mine.url)).status).to.equal(204);
    expect(onDisk(mine.key)).to.equal(false);
    expect((await call('tester', 'GET', mine.url)).status).to.equal(404);
    expect((await call('tester', 'DELETE', mine.url)).status).to.equal(404);
    const last = (await streamOf(mine.key)).at(-1)!;
    expect([last.type, (last.data as any).reason, last.metadata.actor.userId]).to.deep.equal(['FileDeleted', 'requested', users.tester.id]);

    const theirs = await uploaded('colleague', ids.a, 'notes.txt', 'notes');
    expect((await call('admin', 'DELETE', theirs.url)).status).to.equal(204);
    const held = await uploaded('tester', ids.a, 'held.txt', 'held');
    await model('tester', 'attachment', 'create', { data: { name: 'Held', url: held.url, size: held.size, project: connect(ids.a) } });
    expect((await expectRefused(app, () => call('tester', 'DELETE', held.url), 400)).code).to.equal('file-in-use');
    expect(onDisk(held.key)).to.equal(true);
  });
});
