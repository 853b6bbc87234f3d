import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES, type EntityDef } from '../../contracts/entities';
import { runAggregate, runGroupBy } from '../../services/model/aggregate';
import { parseAggregateArgs, parseFindArgs, parseGroupByArgs, type FindOperation } from '../../services/model/args';
import { runFind } from '../../services/model/query';
import { HttpError } from '../../services/shared/errors';
import { useSeededWorld } from './queryFixtures';

const { project, repositoryFolder: folder, repositoryCase: testCase, tag, status, caseField, caseFieldValue, testRunResult, step } = ENTITIES;

type Obj = Record<string, unknown>;

describe('model API reads: float, json, enum, lists, many-to-many, relation ordering, paging, having', () => {
  let knex: Knex;
  useSeededWorld('model_features', (k) => (knex = k));

  const find = (entity: EntityDef, op: FindOperation, body: unknown) => runFind(knex, entity, op, parseFindArgs(entity, op, body));
  const many = async (entity: EntityDef, body: unknown) => (await find(entity, 'findMany', body)) as Obj[];
  const ids = async (entity: EntityDef, body: unknown) => (await many(entity, body)).map((row) => row.id);
  const whereIds = (entity: EntityDef, where: unknown) => ids(entity, { where });

  describe('float fields', () => {
    it('filter like numbers and come back as numbers', async () => {
      expect(await whereIds(caseField, { minValue: { gt: 0 } })).to.deep.equal([1]);
      expect(await whereIds(caseField, { minValue: { lt: 0 } })).to.deep.equal([2]);
      expect(await whereIds(caseField, { minValue: { in: [0.5, -1.5] } })).to.deep.equal([1, 2]);
      expect(await whereIds(caseField, { minValue: null })).to.deep.equal([3]);
      expect(await whereIds(caseField, { minValue: { not: 0.5 } })).to.deep.equal([2, 3]);
      expect(await many(caseField, { select: { minValue: true, maxValue: true } })).to.deep.equal([
        { minValue: 0.5, maxValue: 10.25 },
        { minValue: -1.5, maxValue: null },
        { minValue: null, maxValue: 3 },
      ]);
    });
    it('order, nulls where asked', async () =>
      expect(await ids(caseField, { orderBy: { maxValue: { sort: 'desc', nulls: 'last' } } })).to.deep.equal([1, 3, 2]));
    it('_sum, _avg, _min, _max', async () =>
      expect(await runAggregate(knex, caseField, parseAggregateArgs(caseField, { _sum: { minValue: true }, _avg: { minValue: true, maxValue: true }, _min: { minValue: true }, _max: { minValue: true } }))).to.deep.equal({
        _sum: { minValue: -1 },
        _avg: { minValue: -0.5, maxValue: 6.625 },
        _min: { minValue: -1.5 },
        _max: { minValue: 0.5 },
      }));
  });

  describe('json fields', () => {
    it('come back as stored: objects, arrays, strings, numbers, booleans, null', async () =>
      expect((await many(caseFieldValue, { select: { value: true } })).map((row) => row.value)).to.deep.equal([{ a: [1, { b: null }] }, [1, 'two'], 'text', 42, null, true]));
    it('filter on null only', async () => {
      expect(await whereIds(caseFieldValue, { value: null })).to.deep.equal([5]);
      expect(await whereIds(caseFieldValue, { value: { equals: null } })).to.deep.equal([5]);
      expect(await whereIds(caseFieldValue, { value: { not: null } })).to.deep.equal([1, 2, 3, 4, 6]);
    });
  });

  describe('enum fields', () => {
    it('filter with equals, in and not', async () => {
      expect(await whereIds(testCase, { source: { in: ['API', 'JUNIT'] } })).to.deep.equal([101, 102, 104]);
      expect(await whereIds(testCase, { source: { not: 'MANUAL' } })).to.deep.equal([101, 102, 104]);
      expect(await whereIds(testCase, { source: 'JUNIT' })).to.deep.equal([102]);
    });
  });

  describe('scalar lists', () => {
    const statusIds = (where: unknown) => whereIds(status, where);
    it('has, hasSome, hasEvery (empty lists as in Prisma)', async () => {
      expect(await statusIds({ aliases: { has: 'ok' } })).to.deep.equal([1, 4]);
      expect(await statusIds({ aliases: { hasSome: ['red', 'green'] } })).to.deep.equal([1, 2]);
      expect(await statusIds({ aliases: { hasSome: [] } })).to.deep.equal([]);
      expect(await statusIds({ aliases: { hasEvery: ['green', 'ok'] } })).to.deep.equal([1]);
      expect(await statusIds({ aliases: { hasEvery: [] } })).to.deep.equal([1, 2, 3, 4]);
    });
    it('isEmpty and equals (same items in the same order)', async () => {
      expect(await statusIds({ aliases: { isEmpty: true } })).to.deep.equal([3]);
      expect(await statusIds({ aliases: { isEmpty: false } })).to.deep.equal([1, 2, 4]);
      expect(await statusIds({ aliases: { equals: ['red'] } })).to.deep.equal([2]);
      expect(await statusIds({ aliases: { equals: ['ok', 'green'] } })).to.deep.equal([1]);
      expect(await statusIds({ aliases: { equals: ['green', 'ok'] } })).to.deep.equal([]);
      expect(await statusIds({ aliases: { equals: [] } })).to.deep.equal([3]);
    });
    it('enum lists, and NOT is the complement', async () => {
      expect(await statusIds({ scopes: { has: 'RUNS' } })).to.deep.equal([1, 2]);
      expect(await statusIds({ scopes: { isEmpty: true } })).to.deep.equal([4]);
      expect(await statusIds({ NOT: { aliases: { has: 'ok' } } })).to.deep.equal([2, 3]);
    });
    it('come back as arrays', async () =>
      expect(await many(status, { select: { aliases: true, scopes: true }, where: { id: { in: [1, 3] } } })).to.deep.equal([
        { aliases: ['ok', 'green'], scopes: ['RUNS', 'SESSIONS'] },
        { aliases: [], scopes: ['AUTOMATION'] },
      ]));
  });

  describe('many-to-many and owned relations', () => {
    const tagNames = (row: Obj) => (row.tags as Obj[]).map((t) => t.name);
    it('include with where, orderBy, take, skip and negative take, per parent', async () => {
      const [login] = await many(testCase, { where: { id: 100 }, include: { tags: true } });
      expect(tagNames(login)).to.deep.equal(['smoke', 'regression']);
      const byName = async (extra: object) => tagNames((await many(testCase, { where: { id: 100 }, include: { tags: { orderBy: { name: 'asc' }, ...extra } } }))[0]);
      expect(await byName({})).to.deep.equal(['regression', 'smoke']);
      expect(await byName({ take: 1 })).to.deep.equal(['regression']);
      expect(await byName({ take: -1 })).to.deep.equal(['smoke']);
      expect(await byName({ skip: 1 })).to.deep.equal(['smoke']);
      expect(await byName({ where: { name: { not: 'regression' } } })).to.deep.equal(['smoke']);
      const rows = await many(testCase, { where: { projectId: 1 }, select: { id: true, tags: { select: { name: true }, orderBy: { name: 'desc' }, take: 1 } } });
      expect(rows).to.deep.equal([
        { id: 100, tags: [{ name: 'smoke' }] },
        { id: 101, tags: [{ name: 'regression' }] },
        { id: 102, tags: [] },
        { id: 103, tags: [{ name: 'smoke' }] },
      ]);
    });
    it('a row linked to several parents appears under each, with its own nested includes', async () => {
      const tags = await many(tag, {
        where: { id: { in: [1, 2] } },
        select: { name: true, repositoryCases: { select: { id: true, tags: { select: { id: true } }, steps: { select: { id: true }, orderBy: { order: 'asc' } } } } },
      });
      expect(tags).to.deep.equal([
        {
          name: 'smoke',
          repositoryCases: [
            { id: 100, tags: [{ id: 1 }, { id: 2 }], steps: [{ id: 1001 }, { id: 1000 }] },
            { id: 103, tags: [{ id: 1 }, { id: 3 }], steps: [{ id: 1030 }] },
            { id: 104, tags: [{ id: 1 }], steps: [] },
          ],
        },
        {
          name: 'regression',
          repositoryCases: [
            { id: 100, tags: [{ id: 1 }, { id: 2 }], steps: [{ id: 1001 }, { id: 1000 }] },
            { id: 101, tags: [{ id: 2 }], steps: [] },
          ],
        },
      ]);
    });
    it('include of the other side, ordered and cut per tag', async () => {
      const rows = await many(tag, { select: { id: true, repositoryCases: { select: { id: true }, orderBy: { title: 'asc' }, take: 2 } } });
      expect(rows).to.deep.equal([
        { id: 1, repositoryCases: [{ id: 103 }, { id: 100 }] },
        { id: 2, repositoryCases: [{ id: 101 }, { id: 100 }] },
        { id: 3, repositoryCases: [{ id: 103 }, { id: 105 }] },
        { id: 4, repositoryCases: [] },
      ]);
    });
    it('_count in select and include, with and without a where', async () => {
      expect(await many(testCase, { select: { id: true, _count: { select: { tags: true, steps: true } } } })).to.deep.equal([
        { id: 100, _count: { tags: 2, steps: 2 } },
        { id: 101, _count: { tags: 1, steps: 0 } },
        { id: 102, _count: { tags: 0, steps: 1 } },
        { id: 103, _count: { tags: 2, steps: 1 } },
        { id: 104, _count: { tags: 1, steps: 0 } },
        { id: 105, _count: { tags: 1, steps: 1 } },
      ]);
      const counted = await many(tag, { include: { _count: { select: { repositoryCases: { where: { projectId: 1 } } } } } });
      expect(counted.map((row) => row._count)).to.deep.equal([{ repositoryCases: 2 }, { repositoryCases: 2 }, { repositoryCases: 1 }, { repositoryCases: 0 }]);
    });
    it('relation filters some / every / none, to any depth', async () => {
      expect(await whereIds(testCase, { tags: { some: { name: 'secret' } } })).to.deep.equal([103, 105]);
      expect(await whereIds(testCase, { tags: { none: {} } })).to.deep.equal([102]);
      expect(await whereIds(testCase, { tags: { every: { name: { in: ['smoke', 'regression'] } } } })).to.deep.equal([100, 101, 102, 104]);
      expect(await whereIds(tag, { repositoryCases: { some: { project: { name: 'Beta' } } } })).to.deep.equal([1]);
      expect(await whereIds(tag, { repositoryCases: { every: { projectId: 1 } } })).to.deep.equal([2, 4]);
      expect(await whereIds(project, { repositoryCases: { some: { tags: { some: { name: 'secret' } } } } })).to.deep.equal([1, 3]);
      expect(await whereIds(project, { repositoryCases: { some: { tags: { some: { repositoryCases: { some: { projectId: 2 } } } } } } })).to.deep.equal([1, 2]);
      expect(await whereIds(testCase, { steps: { some: { step: { contains: 'open' } } } })).to.deep.equal([100]);
      expect(await whereIds(testCase, { NOT: { tags: { some: { id: 1 } } } })).to.deep.equal([101, 102, 105]);
    });
  });

  describe('orderBy through relations', () => {
    const order = (entity: EntityDef, orderBy: unknown, where?: unknown) => ids(entity, { orderBy, ...(where !== undefined && { where }) });
    it('a field of a to-one relation; a missing related row sorts as null', async () => {
      expect(await order(testCase, { folder: { name: 'asc' } })).to.deep.equal([103, 100, 105, 104, 101, 102]);
      expect(await order(testCase, { folder: { name: 'desc' } })).to.deep.equal([102, 101, 104, 105, 100, 103]);
      expect(await order(testCase, { folder: { name: { sort: 'asc', nulls: 'first' } } })).to.deep.equal([102, 103, 100, 105, 104, 101]);
      expect(await order(testCase, [{ folder: { projectId: 'desc' } }, { title: 'desc' }])).to.deep.equal([102, 105, 104, 100, 101, 103]);
    });
    it('two and three relations deep', async () => {
      expect(await order(testCase, { folder: { parent: { name: { sort: 'desc', nulls: 'last' } } } })).to.deep.equal([101, 100, 102, 103, 104, 105]);
      expect(await order(testRunResult, [{ testRun: { project: { name: 'desc' } } }, { id: 'desc' }])).to.deep.equal([702, 701, 703, 700]);
      expect(await order(step, { repositoryCase: { folder: { parent: { name: 'asc' } } } })).to.deep.equal([1000, 1001, 1020, 1030, 1050]);
    });
    it('the number of rows of a list relation, through to-one relations too', async () => {
      expect(await order(testCase, { tags: { _count: 'desc' } }, { projectId: 1 })).to.deep.equal([100, 103, 101, 102]);
      expect(await order(project, { repositoryCases: { _count: 'asc' } })).to.deep.equal([2, 3, 1]);
      expect(await order(folder, { children: { _count: 'asc' } }, { projectId: 1 })).to.deep.equal([12, 10, 11]);
      // Without a folder the count is 0, as Prisma has it: last, descending.
      expect(await order(testCase, [{ folder: { repositoryCases: { _count: 'desc' } } }, { id: 'desc' }])).to.deep.equal([105, 104, 103, 101, 100, 102]);
    });
    it('inside list includes', async () => {
      const [alpha] = await many(project, {
        where: { id: 1 },
        select: { repositoryCases: { select: { id: true }, orderBy: { folder: { name: 'desc' } } }, folders: { select: { id: true }, orderBy: [{ children: { _count: 'desc' } }, { id: 'desc' }] } },
      });
      expect(alpha).to.deep.equal({ repositoryCases: [{ id: 102 }, { id: 101 }, { id: 100 }, { id: 103 }], folders: [{ id: 11 }, { id: 10 }, { id: 12 }] });
    });
  });

  describe('negative take and cursor', () => {
    const orderings: unknown[] = [
      undefined,
      { estimate: 'desc' },
      { estimate: { sort: 'asc', nulls: 'first' } },
      { folder: { name: 'asc' } },
      [{ source: 'asc' }, { title: 'desc' }],
      { tags: { _count: 'desc' } },
      [{ folder: { parent: { name: { sort: 'desc', nulls: 'first' } } } }, { id: 'desc' }],
    ];
    /** What Prisma answers, computed from the whole ordered list. */
    function expected(all: unknown[], cursor: number | undefined, take: number | undefined, skip: number): unknown[] {
      const at = cursor === undefined ? undefined : all.indexOf(cursor);
      if (at === -1) return [];
      if (take === undefined || take >= 0) {
        const start = (at ?? 0) + skip;
        return all.slice(start, take === undefined ? undefined : start + take);
      }
      const end = (at === undefined ? all.length : at + 1) - skip;
      return end <= 0 ? [] : all.slice(Math.max(0, end + take), end);
    }
    it('every cursor, take (positive, negative, none) and skip gives what Prisma gives, for every ordering', async () => {
      for (const orderBy of orderings) {
        const all = await ids(testCase, { orderBy });
        for (const cursor of [undefined, ...all, 999] as (number | undefined)[]) {
          for (const take of [undefined, 2, -2, -10]) {
            for (const skip of [0, 1]) {
              const body = { orderBy, take, skip, ...(cursor !== undefined && { cursor: { id: cursor } }) };
              expect(await ids(testCase, body), JSON.stringify(body)).to.deep.equal(expected(all, cursor, take, skip));
            }
          }
        }
      }
    });
    it('a cursor row that does not match the where still marks the position', async () =>
      expect(await ids(testCase, { where: { projectId: 1 }, orderBy: { title: 'asc' }, cursor: { id: 105 } })).to.deep.equal([101, 100, 102]));
    it('in list includes, per parent', async () => {
      const cases = async (body: object) => ((await many(project, { where: { id: { in: [1, 2] } }, select: { repositoryCases: { select: { id: true }, ...body } } })) as { repositoryCases: Obj[] }[]).map((p) => p.repositoryCases.map((c) => c.id));
      expect(await cases({ orderBy: { title: 'asc' }, take: -2 })).to.deep.equal([[100, 102], [104]]);
      // As Prisma: the cursor row must be one of the parent's rows; a parent without it gets none.
      expect(await cases({ orderBy: { title: 'asc' }, cursor: { id: 101 } })).to.deep.equal([[101, 100, 102], []]);
      expect(await cases({ orderBy: { title: 'asc' }, cursor: { id: 100 }, take: -2, skip: 1 })).to.deep.equal([[103, 101], []]);
      // ... and one the include's where keeps (Prisma pages an include's rows after its where): else none either.
      expect(await cases({ where: { id: { not: 101 } }, orderBy: { title: 'asc' }, cursor: { id: 101 } })).to.deep.equal([[], []]);
      expect(await cases({ where: { id: { not: 103 } }, orderBy: { title: 'asc' }, cursor: { id: 101 } })).to.deep.equal([[101, 100, 102], []]);
    });
    it('findFirst with a negative take is the last row', async () => {
      expect(((await find(testCase, 'findFirst', { orderBy: { title: 'asc' }, take: -1 })) as Obj).id).to.equal(104);
      expect(((await find(testCase, 'findFirst', { orderBy: { title: 'asc' }, take: -3 })) as Obj).id).to.equal(104);
    });
    it('distinct, then the last rows', async () => {
      expect(await ids(testCase, { distinct: ['projectId'], take: -2 })).to.deep.equal([104, 105]);
      expect(await ids(testCase, { distinct: 'projectId', orderBy: { title: 'desc' }, cursor: { id: 104 } })).to.deep.equal([104, 102, 105]);
    });
    it('to-one includes (joined into the rows\' statement) on every kind of page: plain, backwards, distinct, within a list include', async () => {
      // What each include must be: the related row read on its own (null where the key is not set).
      const alone = async (entity: EntityDef, id: unknown) => (id === null ? null : ((await find(entity, 'findUnique', { where: { id } })) as Obj));
      const expectIncluded = async (rows: Obj[]) => {
        expect(rows).to.not.have.length(0);
        for (const row of rows) {
          const folderRow = await alone(folder, row.folderId);
          expect(row.folder).to.deep.equal(folderRow && { ...folderRow, project: await alone(project, folderRow.projectId), parent: await alone(folder, folderRow.parentId) });
          expect(row.project).to.deep.equal(await alone(project, row.projectId));
        }
      };
      const include = { folder: { include: { project: true, parent: true } }, project: true };
      await expectIncluded(await many(testCase, { orderBy: { title: 'asc' }, include }));
      await expectIncluded(await many(testCase, { orderBy: { title: 'asc' }, take: -3, include }));
      await expectIncluded(await many(testCase, { distinct: ['projectId'], take: -2, include }));
      const nested = (await many(project, { orderBy: { id: 'asc' }, include: { repositoryCases: { orderBy: { title: 'asc' }, take: -2, include } } })).flatMap((p) => p.repositoryCases as Obj[]);
      await expectIncluded(nested);
    });
    it('to-one includes past the columns one statement joins are read by a statement of their own, with the same answer', async () => {
      // The widest include the request bounds allow (64 relations): to-one relations breadth first from a result, every field of each.
      const include: Obj = {};
      let relations = 0;
      const queue: [EntityDef, Obj][] = [[testRunResult, include]];
      while (queue.length > 0 && relations < 64) {
        const [entity, into] = queue.shift()!;
        for (const [name, relation] of Object.entries(entity.relations)) {
          if (relation.kind !== 'one' || relations >= 64) continue;
          const nested: Obj = {};
          into[name] = { include: nested };
          relations++;
          queue.push([ENTITIES[relation.target], nested]);
        }
      }
      const columns = (entity: EntityDef, shape: Obj): number => Object.keys(entity.fields).length +
        Object.entries(shape).reduce((sum, [name, load]) => sum + columns(ENTITIES[entity.relations[name].target], (load as { include: Obj }).include), 0);
      expect(columns(testRunResult, include), 'wider than one statement joins').to.be.greaterThan(400);
      let statements = 0;
      const count = () => statements++;
      knex.on('query', count);
      const rows = await many(testRunResult, { include, take: 10 }).finally(() => knex.removeListener('query', count));
      expect(rows).to.not.have.length(0);
      expect(statements).to.be.greaterThan(1);
      // Each include as a read of the related row alone with the same includes (narrower: joined into its own statement).
      for (const row of rows) {
        for (const [name, load] of Object.entries(include)) {
          const relation = testRunResult.relations[name];
          const id = row[testRunResult.fields[relation.scalar ?? ''] ? relation.scalar! : `${name}Id`];
          const alone = id === null || id === undefined ? null : await find(ENTITIES[relation.target], 'findUnique', { where: { id }, ...(load as Obj) });
          expect(row[name], name).to.deep.equal(alone);
        }
      }
    });
    it('aggregate over a page cut by cursor and negative take', async () => {
      const args = parseAggregateArgs(testCase, { orderBy: { title: 'asc' }, cursor: { id: 101 }, take: -2, _count: true, _sum: { estimate: true } });
      // title order: 103 Auth root, 105 Gamma case, 101 Invoice, 100 Login, 102 Loose, 104 Root case.
      expect(await runAggregate(knex, testCase, args)).to.deep.equal({ _count: 2, _sum: { estimate: 1 } });
      expect(await runAggregate(knex, testCase, parseAggregateArgs(testCase, { cursor: { id: 999 }, _count: true }))).to.deep.equal({ _count: 0 });
    });
  });

  describe('large inputs', () => {
    it('in / notIn with more values than a statement takes parameters', async () => {
      const values = Array.from({ length: 70_000 }, (_, i) => i);
      expect(await whereIds(testCase, { id: { in: values } })).to.deep.equal([100, 101, 102, 103, 104, 105]);
      expect(await whereIds(testCase, { id: { notIn: values } })).to.deep.equal([]);
      expect(await whereIds(testCase, { title: { in: ['LOGIN', 'invoice', ...values.map(String)], mode: 'insensitive' } })).to.deep.equal([100, 101]);
      expect(await whereIds(testCase, { title: { notIn: ['LOGIN', 'invoice'], mode: 'insensitive' }, projectId: 1 })).to.deep.equal([102, 103]);
    });
    it('a query that needs more parameters than PostgreSQL takes is a 400, not a driver error', async () => {
      const or = Array.from({ length: 70_000 }, (_, i) => ({ title: `t${i}` }));
      const error = await find(testCase, 'findMany', { where: { OR: or } }).then(() => null, (err: unknown) => err as HttpError);
      expect(error).to.be.instanceOf(HttpError);
      expect(error).to.include({ status: 400, code: 'invalid-argument' });
      expect(error!.details.path).to.equal('');
    });
  });

  describe('groupBy having', () => {
    const groups = (body: object) => runGroupBy(knex, testCase, parseGroupByArgs(testCase, { by: ['projectId'], ...body }));
    const projects = async (having: unknown) => (await groups({ having })).map((group) => group.projectId);
    it('aggregate filters', async () => {
      expect(await projects({ estimate: { _avg: { gt: 3 } } })).to.deep.equal([1]);
      expect(await projects({ estimate: { _sum: { lte: 2 } } })).to.deep.equal([2, 3]);
      expect(await projects({ estimate: { _sum: { lt: 1.5 } } })).to.deep.equal([3]);
      expect(await projects({ id: { _count: { gte: 2 } } })).to.deep.equal([1]);
      expect(await projects({ title: { _min: { startsWith: 'a', mode: 'insensitive' } } })).to.deep.equal([1]);
      expect(await projects({ estimate: { _max: { in: [1, 2] } } })).to.deep.equal([2, 3]);
    });
    it('plain filters on by fields, AND / OR / NOT', async () => {
      expect(await projects({ projectId: { in: [2, 3] } })).to.deep.equal([2, 3]);
      expect(await projects({ OR: [{ estimate: { _count: { gte: 3 } } }, { estimate: { _max: { lt: 2 } } }] })).to.deep.equal([1, 3]);
      expect(await projects({ NOT: { title: { _min: { startsWith: 'A' } } }, projectId: { not: 3 } })).to.deep.equal([2]);
    });
    it('with aggregates, orderBy and paging of the remaining groups', async () =>
      expect(await groups({ having: { estimate: { _sum: { gt: 1 } } }, _sum: { estimate: true }, orderBy: { _sum: { estimate: 'asc' } }, take: 1, skip: 1 })).to.deep.equal([
        { projectId: 1, _sum: { estimate: 16 } },
      ]));
    it('null aggregates: a group with no values', async () => {
      const byFolder = await runGroupBy(knex, testCase, parseGroupByArgs(testCase, { by: ['folderId'], having: { estimate: { _avg: { equals: null } } } }));
      expect(byFolder).to.deep.equal([{ folderId: 12 }]);
    });
  });
});
