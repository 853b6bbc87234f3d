import { expect } from 'chai';
import knexFactory, { type Knex } from 'knex';
import { ENTITIES } from '../../contracts/entities';
import { migrateReadModel } from '../../projections/migrations';
import { parseFindArgs, parseWhere } from '../../services/model/args';
import { runFind, type ReadOptions } from '../../services/model/query';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { insertRows, linkRows } from './queryFixtures';

const { project, repositoryFolder: folder, repositoryCase: testCase, tag, step } = ENTITIES;

const CASES = 200;

describe("model API: a query's number of SQL round trips does not grow with the number of rows returned", () => {
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createMigratedDatabase('model_round_trips');
    knex = knexFactory({ client: 'pg', connection: db.url });
    await migrateReadModel(knex);
    await insertRows(knex, project, [{ id: 1, name: 'Alpha' }]);
    await insertRows(knex, folder, [1, 2, 3, 4, 5].map((id) => ({ id, projectId: 1, parentId: id === 1 ? null : 1, name: `Folder ${id}` })));
    await insertRows(knex, tag, [1, 2, 3, 4, 5].map((id) => ({ id, name: `tag ${id}` })));
    const caseIds = Array.from({ length: CASES }, (_, i) => 1000 + i);
    await insertRows(knex, testCase, caseIds.map((id, i) => ({ id, projectId: 1, folderId: (i % 5) + 1, title: `Case ${i}` })));
    await linkRows(knex, testCase, 'tags', Object.fromEntries(caseIds.map((id, i) => [id, [(i % 5) + 1, ((i + 1) % 5) + 1]])));
    await insertRows(knex, step, caseIds.flatMap((id, i) => [{ id: 2 * i + 1, repositoryCaseId: id, step: 'a', order: 2 }, { id: 2 * i + 2, repositoryCaseId: id, step: 'b', order: 1 }]));
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  /** Runs the query and counts the SQL statements it sent. */
  async function roundTrips(body: object, options: ReadOptions = {}): Promise<{ queries: number; rows: Record<string, unknown>[] }> {
    let queries = 0;
    const count = () => queries++;
    knex.on('query', count);
    try {
      const rows = (await runFind(knex, testCase, 'findMany', parseFindArgs(testCase, 'findMany', body), options)) as Record<string, unknown>[];
      return { queries, rows };
    } finally {
      knex.removeListener('query', count);
    }
  }

  const nested = (take: number, where: object = {}) => ({
    take,
    where,
    orderBy: [{ folder: { name: 'desc' } }, { tags: { _count: 'desc' } }],
    include: {
      folder: { include: { project: true, parent: true, children: { take: 2, orderBy: { repositoryCases: { _count: 'desc' } } } } },
      tags: { orderBy: { name: 'asc' }, include: { repositoryCases: { take: -3, select: { id: true, _count: { select: { tags: true } } } } } },
      steps: { orderBy: { order: 'asc' } },
      project: { select: { _count: { select: { repositoryCases: true, folders: true } } } },
      _count: { select: { tags: true, steps: true } },
    },
  });
  const tenRows = { id: { lt: 1010 } };

  it('a nested include (to-one, list, many-to-many, owned, _count) over 10 and over 100 rows of a page of 100', async () => {
    const few = await roundTrips(nested(100, tenRows));
    const all = await roundTrips(nested(100));
    expect(few.rows).to.have.length(10);
    expect(all.rows).to.have.length(100);
    expect(all.rows.every((row) => (row.tags as unknown[]).length === 2 && (row.steps as unknown[]).length === 2)).to.equal(true);
    expect(all.queries).to.equal(few.queries);
    // One per list relation and level; on a page of at most 100 rows, to-one includes and _count are read in their rows'
    // statement: cases with their folder (its project and parent), their project (its _count) and their _count; the folder's
    // children; tags; the tags' cases (their _count); steps (no take: a statement of its own with its _count, had it any).
    expect(few.queries).to.equal(5);
  });

  it('the same over 10 and over 200 rows of a page of 200: includes and counts read apart, still not per row', async () => {
    const few = await roundTrips(nested(CASES, tenRows));
    const all = await roundTrips(nested(CASES));
    expect(few.rows).to.have.length(10);
    expect(all.rows).to.have.length(CASES);
    expect(all.rows.every((row) => (row.tags as unknown[]).length === 2 && (row.steps as unknown[]).length === 2)).to.equal(true);
    expect(all.queries).to.equal(few.queries);
    // Cases; their folder (its project and parent joined); the folder's children; tags; the tags' cases; steps; their project; their _count.
    expect(few.queries).to.equal(8);
    // The same answer either way.
    const joined = await roundTrips(nested(100));
    expect(all.rows.slice(0, 100)).to.deep.equal(joined.rows);
  });

  it('a to-one include of more than 100 rows reads its own includes and counts apart, with the answer a small page joins', async () => {
    const shape = { orderBy: { id: 'asc' }, include: { repositoryCase: { include: { folder: { include: { parent: true } }, _count: { select: { tags: true, steps: true } } } } } };
    const read = async (body: object) => (await runFind(knex, step, 'findMany', parseFindArgs(step, 'findMany', body))) as Record<string, Record<string, unknown>>[];
    const all = await read(shape); // 400 steps of 200 cases: the cases' folders and counts read apart
    const page = await read({ ...shape, take: 50 }); // 25 cases: joined into the steps' statement
    expect(all).to.have.length(2 * CASES);
    expect(all.slice(0, 50)).to.deep.equal(page);
    expect(all.every((row) => (row.repositoryCase._count as Record<string, number>).steps === 2 && (row.repositoryCase._count as Record<string, number>).tags === 2)).to.equal(true);
    expect(all.every((row) => (row.repositoryCase.folder as Record<string, unknown>).id === row.repositoryCase.folderId)).to.equal(true);
  });

  it('the same within a scope', async () => {
    const scope: ReadOptions['scope'] = (entity) =>
      entity.projectPath && parseWhere(entity, entity.projectPath.reduceRight<unknown>((inner, relation) => ({ [relation]: { is: inner } }), { id: 1 }), 'scope');
    for (const take of [100, CASES]) {
      const few = await roundTrips(nested(take, tenRows), { scope });
      const all = await roundTrips(nested(take), { scope });
      expect(all.rows).to.have.length(take);
      expect(all.queries).to.equal(few.queries);
    }
  });
});
