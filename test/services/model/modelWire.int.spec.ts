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

describe('model API bulk writes and upsert', function () {
  this.timeout(60_000);
  let app: TestApp;
  let c: HttpClient;
  const head = async () => (await app.deps.store.headPosition());

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'bulk@example.com', name: 'Bulk', password: 'bulk-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    await c.post('/api/auth/login', { email: 'bulk@example.com', password: 'bulk-password-1' });
  });
  after(() => app.stop());

  it('createMany writes every element as its own events and answers the count', async () => {
    const projectId = (await c.post('/api/model/project/create', { data: { name: 'Bulk' } })).body.data.id;
    const res = await c.post('/api/model/repositoryCase/createMany', {
      data: [1, 2, 3].map((n) => ({ title: `case ${n}`, project: { connect: { id: projectId } } })),
    });
    expect(res.status).to.equal(201);
    expect(res.body.data).to.deep.equal({ count: 3 });
    const titles = (await c.post('/api/model/repositoryCase/findMany', { where: { projectId }, orderBy: { id: 'asc' } })).body.data.map((r: { title: string }) => r.title);
    expect(titles).to.deep.equal(['case 1', 'case 2', 'case 3']);
    const created = (await app.deps.store.readAll({ maxCount: 1000 })).filter((e) => e.type === 'RepositoryCaseCreated');
    expect(created).to.have.length(3);
  });

  it('a bad element (shape or target) refuses the whole createMany and writes nothing', async () => {
    const projectId = (await c.post('/api/model/project/create', { data: { name: 'Strict' } })).body.data.id;
    const before = await head();
    const badShape = await c.post('/api/model/repositoryCase/createMany', {
      data: [{ title: 'ok', project: { connect: { id: projectId } } }, { title: 7, project: { connect: { id: projectId } } }],
    });
    expect(badShape.status).to.equal(400);
    expect(badShape.body.details.path).to.equal('data[1].title');
    const badTarget = await c.post('/api/model/repositoryCase/createMany', {
      data: [{ title: 'ok', project: { connect: { id: projectId } } }, { title: 'lost', project: { connect: { id: 424242 } } }],
    });
    expect(badTarget.status).to.equal(404);
    expect(badTarget.body.details).to.deep.equal({ path: 'data.project', missing: [424242] });
    expect(await head()).to.equal(before);
  });

  it('updateMany and deleteMany act on every row the where matches', async () => {
    const projectId = (await c.post('/api/model/project/create', { data: { name: 'Many' } })).body.data.id;
    await c.post('/api/model/repositoryCase/createMany', { data: ['a', 'b', 'c'].map((t) => ({ title: t, project: { connect: { id: projectId } } })) });
    const upd = await c.request('PATCH', '/api/model/repositoryCase/updateMany', { where: { projectId, title: { in: ['a', 'b'] } }, data: { description: 'touched' } });
    expect(upd.body.data).to.deep.equal({ count: 2 });
    const described = (await c.post('/api/model/repositoryCase/findMany', { where: { projectId, description: 'touched' }, orderBy: { title: 'asc' } })).body.data.map((r: { title: string }) => r.title);
    expect(described).to.deep.equal(['a', 'b']);
    const refused = await c.post('/api/model/repositoryCase/updateMany', { where: { projectId }, data: { folder: { connect: { id: 1 } } } });
    expect(refused.status).to.equal(400);
    const del = await c.request('DELETE', `/api/model/repositoryCase/deleteMany?q=${encodeURIComponent(JSON.stringify({ where: { projectId, title: 'c' } }))}`);
    expect(del.body.data).to.deep.equal({ count: 1 });
    const left = (await c.post('/api/model/repositoryCase/count', { where: { projectId, isDeleted: false } })).body.data;
    expect(left).to.equal(2);
  });

  it('upsert updates a row that exists and creates one that does not', async () => {
    const id = (await c.post('/api/model/project/create', { data: { name: 'Up' } })).body.data.id;
    const updated = await c.post('/api/model/project/upsert', { where: { id }, create: { name: 'never' }, update: { name: 'Up 2' } });
    expect(updated.status).to.equal(200);
    expect(updated.body.data).to.include({ id, name: 'Up 2' });
    const created = await c.post('/api/model/project/upsert', { where: { id: 987654 }, create: { name: 'Fresh' }, update: { name: 'never' } });
    expect(created.status).to.equal(201);
    expect(created.body.data.name).to.equal('Fresh');
    expect(created.body.data.id).to.not.equal(987654);
    const bad = await c.post('/api/model/project/upsert', { where: { id }, create: { name: 'x' }, update: { colour: 'red' } });
    expect(bad.status).to.equal(400);
    expect(bad.body.details.path).to.equal('update.colour');
  });
});

describe('model API aggregate and groupBy over HTTP', function () {
  this.timeout(60_000);
  let app: TestApp;
  let c: HttpClient;
  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'agg@example.com', name: 'Agg', password: 'agg-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    await c.post('/api/auth/login', { email: 'agg@example.com', password: 'agg-password-1' });
  });
  after(() => app.stop());

  it('answers aggregate (POST and GET) and groupBy, and names the path of a bad argument', async () => {
    const a = (await c.post('/api/model/project/create', { data: { name: 'A' } })).body.data.id;
    const b = (await c.post('/api/model/project/create', { data: { name: 'B' } })).body.data.id;
    await c.post('/api/model/repositoryCase/createMany', { data: [a, a, b].map((id, i) => ({ title: `t${i}`, project: { connect: { id } } })) });
    const agg = await c.post('/api/model/repositoryCase/aggregate', { where: { projectId: a }, _count: { _all: true }, _min: { title: true } });
    expect(agg.status).to.equal(200);
    expect(agg.body.data).to.deep.equal({ _count: { _all: 2 }, _min: { title: 't0' } });
    const viaGet = await c.get(`/api/model/repositoryCase/aggregate?q=${encodeURIComponent(JSON.stringify({ _count: true }))}`);
    expect(viaGet.body.data).to.deep.equal({ _count: 3 });
    const groups = await c.post('/api/model/repositoryCase/groupBy', { by: ['projectId'], _count: { _all: true }, orderBy: { projectId: 'asc' } });
    expect(groups.body.data).to.deep.equal([{ projectId: a, _count: { _all: 2 } }, { projectId: b, _count: { _all: 1 } }]);
    const bad = await c.post('/api/model/repositoryCase/aggregate', { _sum: { title: true } });
    expect(bad.status).to.equal(400);
    expect(bad.body.details.path).to.equal('_sum.title');
  });
});

describe('model API orderBy with nulls first / last', function () {
  this.timeout(60_000);
  let app: TestApp;
  let c: HttpClient;
  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'nulls@example.com', name: 'Nulls', password: 'nulls-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    await c.post('/api/auth/login', { email: 'nulls@example.com', password: 'nulls-password-1' });
  });
  after(() => app.stop());

  it('places nulls where asked, at the top level and inside an include; refuses nulls on a required field', async () => {
    const projectId = (await c.post('/api/model/project/create', { data: { name: 'N' } })).body.data.id;
    await c.post('/api/model/repositoryCase/createMany', {
      data: [{ title: 'b', description: 'beta' }, { title: 'n', description: null }, { title: 'a', description: 'alpha' }]
        .map((d) => ({ ...d, project: { connect: { id: projectId } } })),
    });
    const titles = async (orderBy: unknown) =>
      (await c.post('/api/model/repositoryCase/findMany', { where: { projectId }, orderBy })).body.data.map((r: { title: string }) => r.title);
    expect(await titles({ description: 'asc' })).to.deep.equal(['a', 'b', 'n']);
    expect(await titles({ description: { sort: 'asc', nulls: 'first' } })).to.deep.equal(['n', 'a', 'b']);
    expect(await titles({ description: { sort: 'desc', nulls: 'last' } })).to.deep.equal(['b', 'a', 'n']);
    const nested = await c.post('/api/model/project/findUnique', {
      where: { id: projectId }, include: { repositoryCases: { orderBy: { description: { sort: 'asc', nulls: 'first' } }, take: 2 } },
    });
    expect(nested.body.data.repositoryCases.map((r: { title: string }) => r.title)).to.deep.equal(['n', 'a']);
    const refused = await c.post('/api/model/repositoryCase/findMany', { orderBy: { title: { sort: 'asc', nulls: 'first' } } });
    expect(refused.status).to.equal(400);
    expect(refused.body.details.path).to.equal('orderBy.title.nulls');
    const badSort = await c.post('/api/model/repositoryCase/findMany', { orderBy: { description: { sort: 'up' } } });
    expect(badSort.body.details.path).to.equal('orderBy.description.sort');
  });

  it('distinct keeps the first row of each group in the requested order, then pages', async () => {
    const projectId = (await c.post('/api/model/project/create', { data: { name: 'D' } })).body.data.id;
    await c.post('/api/model/repositoryCase/createMany', {
      data: [['x', 'one'], ['y', 'one'], ['z', 'two'], ['w', 'two'], ['v', null]].map(([title, description]) => ({ title, description, project: { connect: { id: projectId } } })),
    });
    const pick = async (args: object) =>
      (await c.post('/api/model/repositoryCase/findMany', { where: { projectId }, ...args })).body.data.map((r: { title: string }) => r.title);
    expect(await pick({ distinct: ['description'], orderBy: { title: 'asc' } })).to.deep.equal(['v', 'w', 'x']);
    expect(await pick({ distinct: 'description', orderBy: { title: 'desc' } })).to.deep.equal(['z', 'y', 'v']);
    expect(await pick({ distinct: ['description'], orderBy: { title: 'asc' }, skip: 1, take: 1 })).to.deep.equal(['w']);
    const bad = await c.post('/api/model/repositoryCase/findMany', { distinct: ['description', 'nope'] });
    expect(bad.status).to.equal(400);
    expect(bad.body.details.path).to.equal('distinct[1]');
  });
});
