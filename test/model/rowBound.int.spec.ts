import { expect } from 'chai';
import { ENTITIES } from '../../contracts/entities';
import { loadConfig } from '../../services/process/config';
import { registerUser } from '../../services/identity/identity.handlers';
import { DEFAULT_MAX_ROWS } from '../../services/model/query';
import { systemMetadata } from '../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { insertRows, linkRows } from './queryFixtures';

const MAX_ROWS = 50;
const RESULTS = 60;
const day = '2024-01-01T00:00:00.000Z';

/** MODEL_MAX_ROWS over HTTP: an answer holds at most that many rows, included rows counted; more is a 400 that says how to page. */
describe('model API: the rows of one answer are bounded (MODEL_MAX_ROWS)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let c: HttpClient;
  const post = (path: string, body: unknown) => c.post(`/api/model/${path}`, body);
  const withCaseAndStatus = { testRunCase: { include: { repositoryCase: true } }, status: true };

  before(async () => {
    app = await startTestApp({ modelMaxRows: MAX_ROWS });
    await registerUser(app.deps, { email: 'rows@example.com', name: 'Rows', password: 'rows-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email: 'rows@example.com', password: 'rows-password-1' })).status).to.equal(200);
    const { knex } = app.deps;
    const ids = Array.from({ length: RESULTS }, (_, i) => i + 1);
    await insertRows(knex, ENTITIES.project, [{ id: 1, name: 'Rows', createdAt: day, updatedAt: day }]);
    await insertRows(knex, ENTITIES.status, [1, 2].map((id) => ({ id, name: `s${id}`, systemName: `s${id}`, createdAt: day, updatedAt: day })));
    await insertRows(knex, ENTITIES.testRun, [{ id: 1, name: 'Run', projectId: 1, createdAt: day, updatedAt: day }]);
    await insertRows(knex, ENTITIES.repositoryCase, ids.map((id) => ({ id, title: `case ${id}`, projectId: 1, createdAt: day, updatedAt: day })));
    await insertRows(knex, ENTITIES.testRunCase, ids.map((id) => ({ id, testRunId: 1, repositoryCaseId: id, createdAt: day, updatedAt: day })));
    await insertRows(knex, ENTITIES.testRunResult, ids.map((id) => ({ id, testRunId: 1, testRunCaseId: id, statusId: 1 + (id % 2), createdAt: day, updatedAt: day })));
    await insertRows(knex, ENTITIES.tag, [{ id: 1, name: 'everywhere', createdAt: day, updatedAt: day }]);
    await linkRows(knex, ENTITIES.tag, 'repositoryCases', { 1: ids });
  });
  after(() => app?.stop());

  it('MODEL_MAX_ROWS is read from the environment (default DEFAULT_MAX_ROWS)', () => {
    expect(loadConfig({}).modelMaxRows).to.equal(DEFAULT_MAX_ROWS);
    expect(loadConfig({ MODEL_MAX_ROWS: '250' }).modelMaxRows).to.equal(250);
    expect(() => loadConfig({ MODEL_MAX_ROWS: '0' })).to.throw(/MODEL_MAX_ROWS/);
  });

  it('a findMany without take over more rows than the bound is a 400 that says how to page', async () => {
    const refused = await expectRefused(app, () => post('testRunResult/findMany', { where: { testRunId: 1 } }), 400);
    expect(refused.code).to.equal('too-many-rows');
    expect(refused.details).to.deep.equal({ path: 'take', limit: MAX_ROWS });
    expect(refused.error).to.contain('take').and.to.contain('cursor');
    expect((await post('testRunResult/findMany', { where: { testRunId: 1 }, take: MAX_ROWS })).body.data).to.have.length(MAX_ROWS);
    expect((await post('testRunResult/findMany', { where: { testRunId: 1 }, take: -MAX_ROWS })).body.data).to.have.length(MAX_ROWS);
    expect((await expectRefused(app, () => post('testRunResult/findMany', { take: MAX_ROWS + 1 }), 400)).code).to.equal('too-many-rows');
    expect((await post('testRunResult/findMany', { where: { id: { lte: MAX_ROWS } } })).status).to.equal(200);
  });

  it('included rows count: results with their run case, case and status (4 rows each)', async () => {
    const refused = await expectRefused(app, () => post('testRunResult/findMany', { include: withCaseAndStatus, take: 13 }), 400);
    expect(refused.code).to.equal('too-many-rows');
    const page = await post('testRunResult/findMany', { include: withCaseAndStatus, take: 12 });
    expect(page.status).to.equal(200);
    expect(page.body.data[11].testRunCase.repositoryCase.title).to.equal('case 12');
    // A run with all its results, through a to-one and a list include; findFirst and findUnique too.
    for (const [op, body] of [
      ['project/findFirst', { include: { testRuns: { include: { results: true } } } }],
      ['testRun/findUnique', { where: { id: 1 }, include: { results: true } }],
      ['testRunCase/findMany', { take: 2, include: { testRun: { include: { results: true } } } }],
    ] as const) {
      expect((await expectRefused(app, () => post(op, body), 400)).code, op).to.equal('too-many-rows');
    }
    const bounded = await post('testRun/findUnique', { where: { id: 1 }, include: { results: { take: MAX_ROWS - 1 } } });
    expect(bounded.body.data.results).to.have.length(MAX_ROWS - 1);
  });

  it('a row a to-one include shares between parents counts once per parent, with what it includes (as it is written)', async () => {
    // Two statuses with 10 of their results each: 28 rows read, but 6 × (1 + 1 + 10) = 72 rows written.
    const sharedStatus = (take: number) => ({ take, include: { status: { include: { testRunResults: { take: 10 } } } } });
    const four = await post('testRunResult/findMany', sharedStatus(4));
    expect(four.status, JSON.stringify(four.body)).to.equal(200);
    expect(four.body.data.map((r: { status: { testRunResults: unknown[] } }) => r.status.testRunResults.length)).to.deep.equal([10, 10, 10, 10]);
    expect((await expectRefused(app, () => post('testRunResult/findMany', sharedStatus(6)), 400)).code).to.equal('too-many-rows');
  });

  it('paging with take and cursor reads every row, each page within the bound', async () => {
    const seen: number[] = [];
    let cursor: number | undefined;
    for (;;) {
      const res = await post('testRunResult/findMany', { include: withCaseAndStatus, take: 12, orderBy: { id: 'desc' }, ...(cursor && { cursor: { id: cursor }, skip: 1 }) });
      expect(res.status).to.equal(200);
      const rows = res.body.data as { id: number }[];
      if (rows.length === 0) break;
      seen.push(...rows.map((row) => row.id));
      cursor = rows[rows.length - 1].id;
    }
    expect(seen).to.deep.equal(Array.from({ length: RESULTS }, (_, i) => RESULTS - i));
  });

  it("a write whose answer would hold more rows is refused before anything is written", async () => {
    const refusals: [string, unknown][] = [
      ['testRun/update', { where: { id: 1 }, data: { name: 'Renamed' }, include: { results: true } }],
      ['testRun/delete', { where: { id: 1 }, include: { project: { include: { repositoryCases: true } } } }],
      ['testRun/upsert', { where: { id: 1 }, create: { name: 'New', project: { connect: { id: 1 } } }, update: { name: 'Renamed' }, include: { results: true } }],
      ['repositoryCase/create', { data: { title: 'New', project: { connect: { id: 1 } } }, include: { project: { include: { repositoryCases: true } } } }],
      ['testRunCase/create', { data: { testRun: { connect: { id: 1 } }, repositoryCase: { connect: { id: 1 } } }, select: { testRun: { include: { results: true } } } }],
      // A tag it links, with every case that tag labels.
      ['repositoryCase/create', { data: { title: 'New', project: { connect: { id: 1 } }, tags: { connect: [{ id: 1 }] } }, include: { tags: { include: { repositoryCases: true } } } }],
    ];
    for (const [op, body] of refusals) {
      const refused = await expectRefused(app, () => post(op, body), 400);
      expect(refused, op).to.deep.include({ code: 'too-many-rows', details: { path: 'take', limit: MAX_ROWS } });
    }
    const project = await post('project/create', { data: { name: 'Small' }, include: { testRuns: true, _count: true } });
    expect(project.status).to.equal(201);
    const run = await post('testRun/create', { data: { name: 'Small run', project: { connect: { id: project.body.data.id } } }, include: { project: { include: { testRuns: true } } } });
    expect(run.status).to.equal(201);
    expect(run.body.data.project.testRuns).to.have.length(1);
  });

  it('groupBy and distinct are bounded too; count and aggregate answer one row', async () => {
    expect((await expectRefused(app, () => post('testRunResult/groupBy', { by: ['id'] }), 400)).code).to.equal('too-many-rows');
    expect((await post('testRunResult/groupBy', { by: ['id'], take: MAX_ROWS })).body.data).to.have.length(MAX_ROWS);
    expect((await expectRefused(app, () => post('testRunResult/findMany', { distinct: ['id'] }), 400)).code).to.equal('too-many-rows');
    expect((await post('testRunResult/findMany', { distinct: ['statusId'] })).body.data).to.have.length(2);
    expect((await post('testRunResult/count', {})).body.data).to.equal(RESULTS);
    expect((await post('testRunResult/aggregate', { _count: true })).body.data).to.deep.equal({ _count: RESULTS });
  });
});
