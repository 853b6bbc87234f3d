import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES, type EntityDef } from '../../contracts/entities';
import { parseFindArgs, type FindOperation } from '../../services/model/args';
import { findRowById, runFind } from '../../services/model/query';
import { useSeededWorld } from './queryFixtures';

const { project, repositoryFolder: folder, repositoryCase: testCase } = ENTITIES;

const day = (date: string) => `${date}T00:00:00.000Z`;

// Rows are inserted out of id order so that "ordered by id" is something the query does.
const PROJECTS = [
  { id: 4, name: 'Gamma 1000', is_deleted: false, created_at: day('2024-04-01') },
  { id: 1, name: 'Alpha', is_deleted: false, created_at: day('2024-01-01') },
  { id: 6, name: 'DeltaX1', is_deleted: false, created_at: day('2024-06-01') },
  { id: 3, name: 'Gamma 100%', is_deleted: true, created_at: day('2024-03-01') },
  { id: 2, name: 'beta', is_deleted: false, created_at: day('2024-02-01') },
  { id: 5, name: 'Delta_1', is_deleted: false, created_at: day('2024-05-01') },
];
const FOLDERS = [
  { id: 13, project_id: 1, parent_id: null, name: 'Billing', is_deleted: false, created_at: day('2024-01-05') },
  { id: 10, project_id: 1, parent_id: null, name: 'Auth', is_deleted: false, created_at: day('2024-01-02') },
  { id: 12, project_id: 1, parent_id: 10, name: 'Logout', is_deleted: false, created_at: day('2024-01-04') },
  { id: 11, project_id: 1, parent_id: 10, name: 'Login', is_deleted: false, created_at: day('2024-01-03') },
  { id: 14, project_id: 1, parent_id: null, name: 'Zeta', is_deleted: true, created_at: day('2024-01-06') },
  { id: 20, project_id: 2, parent_id: null, name: 'Root', is_deleted: false, created_at: day('2024-02-02') },
];
const CASES = [
  { id: 105, project_id: 2, folder_id: 20, title: 'Root case', description: 'x', created_at: day('2024-02-03') },
  { id: 102, project_id: 1, folder_id: 12, title: 'Logout works', description: 'HAPPY end', created_at: day('2024-01-12') },
  { id: 100, project_id: 1, folder_id: 11, title: 'Login works', description: 'happy path', created_at: day('2024-01-10') },
  { id: 104, project_id: 1, folder_id: null, title: 'Unfiled', description: 'loose', created_at: day('2024-01-14') },
  { id: 101, project_id: 1, folder_id: 11, title: 'Login fails', description: null, created_at: day('2024-01-11') },
  { id: 103, project_id: 1, folder_id: 13, title: 'Invoice', description: null, created_at: day('2024-01-13') },
];

describe('model API reads against the read model', () => {
  let knex: Knex;
  useSeededWorld('model', (k) => (knex = k), async (k) => {
    const internal = <Row extends { created_at: string }>(row: Row) => ({ ...row, updated_at: row.created_at, revision: 0 });
    await k('projects').insert(PROJECTS.map(internal));
    await k('repository_folders').insert(FOLDERS.map(internal));
    await k('repository_cases').insert(CASES.map((row) => ({ ...internal(row), is_deleted: false })));
  });

  /** Parses the body like the route does, then runs it. */
  const find = (entity: EntityDef, op: FindOperation, body: unknown) => runFind(knex, entity, op, parseFindArgs(entity, op, body));
  const many = async (entity: EntityDef, body: unknown) => (await find(entity, 'findMany', body)) as Record<string, unknown>[];
  const ids = async (entity: EntityDef, body: unknown) => (await many(entity, body)).map((row) => row.id);
  const projectIds = (where: unknown) => ids(project, { where });
  const caseIds = (where: unknown) => ids(testCase, { where });
  const folderIds = (where: unknown) => ids(folder, { where });

  describe('scalar filters', () => {
    it('without where: every row, ordered by id', async () => expect(await projectIds(undefined)).to.deep.equal([1, 2, 3, 4, 5, 6]));
    it('equals, as shorthand and as operator', async () => {
      expect(await projectIds({ name: 'beta' })).to.deep.equal([2]);
      expect(await projectIds({ name: { equals: 'Alpha' } })).to.deep.equal([1]);
    });
    it('contains matches % in the search text literally', async () => expect(await projectIds({ name: { contains: '100%' } })).to.deep.equal([3]));
    it('contains matches _ in the search text literally', async () => expect(await projectIds({ name: { contains: 'a_1' } })).to.deep.equal([5]));
    it('startsWith and endsWith', async () => {
      expect(await projectIds({ name: { startsWith: 'Gamma' } })).to.deep.equal([3, 4]);
      expect(await projectIds({ name: { endsWith: '1' } })).to.deep.equal([5, 6]);
    });
    it('is case-sensitive by default and insensitive on request', async () => {
      expect(await projectIds({ name: { contains: 'GAMMA' } })).to.deep.equal([]);
      expect(await projectIds({ name: { contains: 'GAMMA', mode: 'insensitive' } })).to.deep.equal([3, 4]);
      expect(await projectIds({ name: { equals: 'BETA', mode: 'insensitive' } })).to.deep.equal([2]);
      expect(await projectIds({ name: { in: ['ALPHA', 'BETA'], mode: 'insensitive' } })).to.deep.equal([1, 2]);
      // As Prisma: the mode applies inside a nested not too.
      expect(await projectIds({ name: { not: { startsWith: 'gamma' }, mode: 'insensitive' } })).to.deep.equal([1, 2, 5, 6]);
      expect(await projectIds({ name: { not: { startsWith: 'gamma' } } })).to.deep.equal([1, 2, 3, 4, 5, 6]);
    });
    it('a quote in the search text is only text', async () => {
      expect(await projectIds({ name: { contains: "'; drop table projects; --" } })).to.deep.equal([]);
      expect(await projectIds({})).to.have.length(6);
    });
    it('in and notIn', async () => {
      expect(await projectIds({ id: { in: [2, 4, 99] } })).to.deep.equal([2, 4]);
      expect(await projectIds({ id: { in: [] } })).to.deep.equal([]);
      // As Prisma: notIn [] holds for every row, nulls included, also under OR and NOT.
      expect(await caseIds({ description: { notIn: [] } })).to.deep.equal([100, 101, 102, 103, 104, 105]);
      expect(await caseIds({ OR: [{ description: { notIn: [] } }, { id: -1 }] })).to.deep.equal([100, 101, 102, 103, 104, 105]);
      expect(await caseIds({ NOT: { description: { notIn: [] } } })).to.deep.equal([]);
      expect(await caseIds({ NOT: { description: { in: [] } } })).to.deep.equal([100, 101, 102, 103, 104, 105]);
      expect(await caseIds({ description: { not: { notIn: [] } } })).to.deep.equal([]);
      expect(await projectIds({ name: { notIn: ['Alpha', 'beta'] } })).to.deep.equal([3, 4, 5, 6]);
    });
    it('lt / lte / gt / gte on ints', async () => {
      expect(await projectIds({ id: { gt: 2, lte: 4 } })).to.deep.equal([3, 4]);
      expect(await projectIds({ id: { lt: 2 } })).to.deep.equal([1]);
      expect(await projectIds({ id: { gte: 6 } })).to.deep.equal([6]);
    });
    it('lt / gt on dates, in any zone', async () => {
      expect(await projectIds({ createdAt: { gte: '2024-03-01T00:00:00Z', lt: '2024-05-01T00:00:00Z' } })).to.deep.equal([3, 4]);
      // 2024-02-01T01:00:00+02:00 is 2024-01-31T23:00Z: project 2 (created 2024-02-01T00:00Z) is after it.
      expect(await projectIds({ createdAt: { lt: '2024-02-01T01:00:00+02:00' } })).to.deep.equal([1]);
      expect(await projectIds({ createdAt: '2024-06-01T00:00:00Z' })).to.deep.equal([6]);
    });
    it('booleans', async () => {
      expect(await projectIds({ isDeleted: true })).to.deep.equal([3]);
      expect(await projectIds({ isDeleted: { not: true } })).to.deep.equal([1, 2, 4, 5, 6]);
    });
    it('null checks', async () => {
      expect(await caseIds({ description: null })).to.deep.equal([101, 103]);
      expect(await caseIds({ description: { equals: null } })).to.deep.equal([101, 103]);
      expect(await caseIds({ description: { not: null } })).to.deep.equal([100, 102, 104, 105]);
      expect(await caseIds({ folderId: null })).to.deep.equal([104]);
    });
    it('a null column fails every comparison, so not / NOT keep it', async () => {
      expect(await caseIds({ description: { notIn: ['loose'] } })).to.deep.equal([100, 102, 105]);
      expect(await caseIds({ description: { not: { in: ['loose'] } } })).to.deep.equal([100, 101, 102, 103, 105]);
      expect(await caseIds({ description: { not: 'loose' } })).to.deep.equal([100, 101, 102, 103, 105]);
      expect(await caseIds({ NOT: { description: { contains: 'happy' } } })).to.deep.equal([101, 102, 103, 104, 105]);
    });
  });

  describe('logical operators', () => {
    it('OR', async () => {
      expect(await projectIds({ OR: [{ name: 'Alpha' }, { id: 5 }] })).to.deep.equal([1, 5]);
      expect(await projectIds({ OR: [] })).to.deep.equal([]);
      expect(await projectIds({ OR: [{ id: 1 }, {}] })).to.deep.equal([1, 2, 3, 4, 5, 6]);
    });
    it('AND, as a list and as an object', async () => {
      expect(await projectIds({ AND: [{ createdAt: { gt: '2024-01-15T00:00:00Z' } }, { isDeleted: false }] })).to.deep.equal([2, 4, 5, 6]);
      expect(await projectIds({ AND: { name: { startsWith: 'Gamma' }, isDeleted: false } })).to.deep.equal([4]);
    });
    it('NOT of an object negates it as a whole', async () =>
      expect(await projectIds({ NOT: { name: { startsWith: 'Gamma' }, isDeleted: true } })).to.deep.equal([1, 2, 4, 5, 6]));
    it('NOT of a list excludes each member', async () => expect(await projectIds({ NOT: [{ id: 1 }, { id: 2 }] })).to.deep.equal([3, 4, 5, 6]));
    it('nested OR inside NOT inside AND', async () =>
      expect(await projectIds({ AND: [{ isDeleted: false }, { NOT: { OR: [{ id: 1 }, { name: { startsWith: 'Delta' } }] } }] })).to.deep.equal([2, 4]));
  });

  describe('relation filters', () => {
    it('some', async () => expect(await projectIds({ folders: { some: { name: 'Login' } } })).to.deep.equal([1]));
    it('none', async () => {
      expect(await projectIds({ folders: { none: {} } })).to.deep.equal([3, 4, 5, 6]);
      expect(await projectIds({ folders: { none: { name: 'Login' } } })).to.deep.equal([2, 3, 4, 5, 6]);
    });
    it('every holds for no children and fails on any non-matching child', async () =>
      expect(await projectIds({ folders: { every: { isDeleted: false } } })).to.deep.equal([2, 3, 4, 5, 6]));
    it('every counts a child with a null column as not matching', async () =>
      expect(await folderIds({ repositoryCases: { every: { description: { contains: 'happy', mode: 'insensitive' } } } })).to.deep.equal([10, 12, 14]));
    it('is / isNot / null on a single relation', async () => {
      expect(await folderIds({ parent: { is: { name: 'Auth' } } })).to.deep.equal([11, 12]);
      expect(await folderIds({ parent: { name: 'Auth' } })).to.deep.equal([11, 12]);
      expect(await folderIds({ parent: null })).to.deep.equal([10, 13, 14, 20]);
      expect(await folderIds({ parent: { isNot: null } })).to.deep.equal([11, 12]);
      expect(await folderIds({ parent: { isNot: { name: 'Auth' } } })).to.deep.equal([10, 13, 14, 20]);
    });
    it('nests to any depth, correlating each level with its own alias', async () => {
      expect(await caseIds({ folder: { parent: { is: { name: 'Auth' } } } })).to.deep.equal([100, 101, 102]);
      expect(await projectIds({ folders: { some: { repositoryCases: { some: { description: { contains: 'HAPPY' } } } } } })).to.deep.equal([1]);
      expect(await folderIds({ children: { some: { children: { none: {} } } } })).to.deep.equal([10]);
      expect(await folderIds({ children: { some: { repositoryCases: { some: { folder: { is: { name: 'Logout' } } } } } } })).to.deep.equal([10]);
    });
  });

  describe('ordering and paging', () => {
    it('orderBy desc', async () => expect(await ids(project, { orderBy: { createdAt: 'desc' } })).to.deep.equal([6, 5, 4, 3, 2, 1]));
    it('orderBy several keys', async () =>
      expect(await ids(folder, { orderBy: [{ projectId: 'desc' }, { name: 'asc' }] })).to.deep.equal([20, 10, 13, 11, 12, 14]));
    it('equal keys fall back to id ascending', async () =>
      expect(await ids(testCase, { orderBy: { projectId: 'asc' } })).to.deep.equal([100, 101, 102, 103, 104, 105]));
    it('take and skip', async () => {
      expect(await ids(project, { take: 2, skip: 1 })).to.deep.equal([2, 3]);
      expect(await ids(project, { orderBy: { id: 'desc' }, skip: 4 })).to.deep.equal([2, 1]);
      expect(await ids(project, { take: 0 })).to.deep.equal([]);
    });
  });

  describe('findFirst, findUnique, count', () => {
    it('findFirst answers the first row or null', async () => {
      expect(await find(project, 'findFirst', { orderBy: { createdAt: 'desc' } })).to.have.property('id', 6);
      expect(await find(project, 'findFirst', { where: { isDeleted: false }, skip: 1 })).to.have.property('id', 2);
      expect(await find(project, 'findFirst', { where: { name: 'nobody' } })).to.equal(null);
    });
    it('findUnique answers the whole object, without internal columns', async () => {
      const row = (await find(project, 'findUnique', { where: { id: 2 } })) as Record<string, unknown>;
      expect(Object.keys(row)).to.deep.equal(Object.keys(project.fields));
      expect(row).to.deep.include({ id: 2, name: 'beta', isDeleted: false, createdAt: '2024-02-01T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' });
    });
    it('findUnique answers null for an unknown id', async () => expect(await find(project, 'findUnique', { where: { id: 99 } })).to.equal(null));
    it('count', async () => {
      expect(await find(project, 'count', {})).to.equal(6);
      expect(await find(project, 'count', { where: { isDeleted: false } })).to.equal(5);
      expect(await find(testCase, 'count', { where: { folder: { parent: { isNot: null } } } })).to.equal(3);
    });
  });

  describe('include', () => {
    it('a list relation with nested where, orderBy, take and skip', async () => {
      const [alpha] = await many(project, {
        where: { id: 1 },
        include: { folders: { where: { parentId: null }, orderBy: { name: 'desc' }, take: 2, skip: 1 } },
      });
      expect((alpha.folders as { id: number }[]).map((f) => f.id)).to.deep.equal([13, 10]);
    });
    it('take applies per parent, not to the whole level', async () => {
      const projects = await many(project, { where: { id: { in: [1, 2, 4] } }, include: { folders: { orderBy: { createdAt: 'desc' }, take: 1 } } });
      expect(projects.map((p) => [p.id, (p.folders as { id: number }[]).map((f) => f.id)])).to.deep.equal([
        [1, [14]],
        [2, [20]],
        [4, []],
      ]);
    });
    it('nested includes two levels deep', async () => {
      const [alpha] = await many(project, {
        where: { id: 1 },
        include: { folders: { where: { parentId: null }, include: { children: { orderBy: { name: 'desc' } }, repositoryCases: true } } },
      });
      const folders = alpha.folders as { id: number; children: { id: number }[]; repositoryCases: { id: number }[] }[];
      expect(folders.map((f) => [f.id, f.children.map((c) => c.id), f.repositoryCases.map((c) => c.id)])).to.deep.equal([
        [10, [12, 11], []],
        [13, [], [103]],
        [14, [], []],
      ]);
    });
    it('single relations, with an include of their own, and null when unset', async () => {
      const cases = await many(testCase, { where: { id: { in: [100, 104] } }, include: { folder: { include: { parent: true } } } });
      const folderOf100 = cases[0].folder as Record<string, unknown>;
      expect(folderOf100).to.include({ id: 11, name: 'Login' });
      expect(folderOf100.parent).to.include({ id: 10, name: 'Auth' });
      expect(cases[1].folder).to.equal(null);
    });
    it('_count per relation, with and without a filter', async () => {
      const projects = await many(project, {
        where: { id: { in: [1, 2, 4] } },
        include: { _count: { select: { folders: { where: { isDeleted: false } }, repositoryCases: true } } },
      });
      expect(projects.map((p) => [p.id, p._count])).to.deep.equal([
        [1, { folders: 4, repositoryCases: 5 }],
        [2, { folders: 1, repositoryCases: 1 }],
        [4, { folders: 0, repositoryCases: 0 }],
      ]);
    });
    it('_count: true counts every list relation', async () =>
      expect((await find(folder, 'findUnique', { where: { id: 10 }, include: { _count: true } })) as object).to.deep.include({
        _count: { children: 2, repositoryCases: 0 },
      }));
  });

  describe('select', () => {
    it('returns exactly the selected fields and relations', async () =>
      expect(await many(project, { where: { id: 2 }, select: { name: true, folders: { select: { name: true } }, _count: { select: { repositoryCases: true } } } })).to.deep.equal([
        { name: 'beta', folders: [{ name: 'Root' }], _count: { repositoryCases: 1 } },
      ]));
    it('a single relation can be selected without its foreign key', async () =>
      expect(await find(testCase, 'findUnique', { where: { id: 100 }, select: { title: true, folder: { select: { name: true } } } })).to.deep.equal({
        title: 'Login works',
        folder: { name: 'Login' },
      }));
  });

  describe('findRowById', () => {
    it('answers the row with every catalogue field, timestamps as ISO strings', async () => {
      const row = (await findRowById(knex, testCase, 101)) as Record<string, unknown>;
      expect(Object.keys(row)).to.deep.equal(Object.keys(testCase.fields));
      expect(row).to.deep.include({
        id: 101,
        title: 'Login fails',
        description: null,
        projectId: 1,
        folderId: 11,
        isDeleted: false,
        createdAt: '2024-01-11T00:00:00.000Z',
        updatedAt: '2024-01-11T00:00:00.000Z',
      });
    });
    it('applies a requested shape', async () => {
      const { shape } = parseFindArgs(testCase, 'findUnique', { where: { id: 101 }, select: { id: true, project: { select: { name: true } } } });
      expect(await findRowById(knex, testCase, 101, shape)).to.deep.equal({ id: 101, project: { name: 'Alpha' } });
    });
    it('answers null for an unknown id', async () => expect(await findRowById(knex, testCase, 999)).to.equal(null));
  });
});
