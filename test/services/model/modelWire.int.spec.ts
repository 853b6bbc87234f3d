import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const q = (args: unknown) => `q=${encodeURIComponent(JSON.stringify(args))}`;

describe('model API wire: POST, the ZenStack RPC convention, and the OrThrow reads', function () {
  this.timeout(60_000);
  let app: TestApp;
  let c: HttpClient;
  let projectId: number;

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'wire@example.com', name: 'Wire', password: 'wire-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email: 'wire@example.com', password: 'wire-password-1' })).status).to.equal(200);
    projectId = (await c.post('/api/model/project/create', { data: { name: 'Wire' } })).body.data.id;
  });
  after(() => app.stop());

  it('reads through GET with ?q=', async () => {
    const many = await c.get(`/api/model/project/findMany?${q({ where: { name: 'Wire' }, select: { id: true, name: true } })}`);
    expect(many.status).to.equal(200);
    expect(many.body.data).to.deep.equal([{ id: projectId, name: 'Wire' }]);
    const count = await c.get(`/api/model/project/count?${q({ where: { id: projectId } })}`);
    expect(count.body.data).to.equal(1);
    const all = await c.get('/api/model/project/count');
    expect(all.body.data).to.equal(1);
  });

  it('refuses a malformed q, and an operation the method does not carry (405 with Allow)', async () => {
    const bad = await c.get('/api/model/project/findMany?q=%7Bnot-json');
    expect(bad.status).to.equal(400);
    expect(bad.body).to.deep.include({ code: 'malformed-json' });
    expect(bad.body.details.path).to.equal('q');
    const twice = await c.get('/api/model/project/findMany?q=1&q=2');
    expect(twice.status).to.equal(400);
    const create = await c.get(`/api/model/project/create?${q({ data: { name: 'x' } })}`);
    expect(create.status).to.equal(405);
    expect(create.body.code).to.equal('method-not-allowed');
    expect(create.headers.get('allow')).to.equal('POST');
  });

  it('updates through PUT and PATCH, deletes through DELETE with ?q=', async () => {
    const put = await c.request('PUT', '/api/model/project/update', { where: { id: projectId }, data: { name: 'Wire 2' } });
    expect(put.status).to.equal(200);
    expect(put.body.data.name).to.equal('Wire 2');
    const patch = await c.request('PATCH', '/api/model/project/update', { where: { id: projectId }, data: { name: 'Wire 3' } });
    expect(patch.body.data.name).to.equal('Wire 3');
    const other = (await c.post('/api/model/project/create', { data: { name: 'Doomed' } })).body.data.id;
    const del = await c.request('DELETE', `/api/model/project/delete?${q({ where: { id: other } })}`);
    expect(del.status).to.equal(200);
    expect(del.body.data).to.include({ id: other, isDeleted: true });
  });

  it('findUniqueOrThrow and findFirstOrThrow answer the row, or 404', async () => {
    const found = await c.post('/api/model/project/findUniqueOrThrow', { where: { id: projectId } });
    expect(found.status).to.equal(200);
    expect(found.body.data.id).to.equal(projectId);
    const first = await c.get(`/api/model/project/findFirstOrThrow?${q({ where: { name: { startsWith: 'Wire' } } })}`);
    expect(first.body.data.id).to.equal(projectId);
    const missing = await c.post('/api/model/project/findUniqueOrThrow', { where: { id: 999_999 } });
    expect(missing.status).to.equal(404);
    expect(missing.body).to.deep.equal({ error: 'No project matches the query', code: 'not-found', details: { entity: 'project' } });
    const invalid = await c.post('/api/model/project/findFirstOrThrow', { where: { nope: 1 } });
    expect(invalid.status).to.equal(400);
    expect(invalid.body.details.path).to.equal('where.nope');
  });
});
