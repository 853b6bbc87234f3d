import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES, type EntityDef } from '../../contracts/entities';
import { runAggregate, runGroupBy } from '../../services/model/aggregate';
import { parseAggregateArgs, parseFindArgs, parseGroupByArgs, parseWhere, type FindOperation } from '../../services/model/args';
import { findRowById, runFind, type Scope } from '../../services/model/query';
import { useSeededWorld } from './queryFixtures';

const { project, repositoryFolder: folder, repositoryCase: testCase, tag, step, testRunResult } = ENTITIES;

type Obj = Record<string, unknown>;

const VISIBLE_PROJECTS = [1, 2];

/**
 * A policy as the lead's policy module would write one: rows of projects 1 and 2 only (through
 * each entity's projectPath), plus a few rows hidden by name so that out-of-scope rows sit inside
 * visible projects too: folder Zeta (12), case Loose (102, with its step 1020), tag secret (3),
 * step "type the password" (1001). Visible: projects 1, 2; folders 10, 11, 20; cases 100, 101,
 * 103, 104; tags 1, 2, 4; steps 1000, 1030; results 700, 701, 703.
 */
const scope: Scope = (entity) => {
  const parts: unknown[] = [];
  if (entity.projectPath) parts.push(entity.projectPath.reduceRight<unknown>((inner, relation) => ({ [relation]: { is: inner } }), { id: { in: VISIBLE_PROJECTS } }));
  if (entity.name === 'repositoryFolder') parts.push({ name: { not: 'Zeta' } });
  if (entity.name === 'repositoryCase') parts.push({ title: { not: 'Loose' } });
  if (entity.name === 'tag') parts.push({ name: { not: 'secret' } });
  if (entity.name === 'step') parts.push({ step: { not: 'type the password' } });
  return parts.length === 0 ? undefined : parseWhere(entity, { AND: parts }, 'scope');
};

describe('model API reads within a scope (row-level security): nothing out of scope leaks', () => {
  let knex: Knex;
  useSeededWorld('model_scope', (k) => (knex = k));

  const read = (scoped: boolean) => (entity: EntityDef, op: FindOperation, body: unknown) =>
    runFind(knex, entity, op, parseFindArgs(entity, op, body), scoped ? { scope } : {});
  const find = read(true);
  const findAll = read(false);
  const many = async (entity: EntityDef, body: unknown) => (await find(entity, 'findMany', body)) as Obj[];
  const ids = async (entity: EntityDef, body: unknown) => (await many(entity, body)).map((row) => row.id);
  const allIds = async (entity: EntityDef, body: unknown) => ((await findAll(entity, 'findMany', body)) as Obj[]).map((row) => row.id);
  const idsOf = (rows: unknown) => (rows as Obj[]).map((row) => row.id);

  /** The scoped answer, and proof that the fixture would have leaked without the scope. */
  async function scopedIds(entity: EntityDef, body: unknown, visible: unknown[], withoutScope: unknown[]) {
    expect(await ids(entity, body), 'scoped').to.deep.equal(visible);
    expect(await allIds(entity, body), 'without scope').to.deep.equal(withoutScope);
  }

  it('top-level rows', async () => {
    await scopedIds(testCase, {}, [100, 101, 103, 104], [100, 101, 102, 103, 104, 105]);
    await scopedIds(project, {}, [1, 2], [1, 2, 3]);
    await scopedIds(folder, {}, [10, 11, 20], [10, 11, 12, 20, 30]);
    await scopedIds(tag, {}, [1, 2, 4], [1, 2, 3, 4]);
    await scopedIds(testRunResult, {}, [700, 701, 703], [700, 701, 702, 703]);
    // A step is out of scope with its case: the scope's relation filter sees only cases in scope.
    await scopedIds(step, {}, [1000, 1030], [1000, 1001, 1020, 1030, 1050]);
  });

  it('findUnique, findFirst and findRowById of an out-of-scope row answer null', async () => {
    expect(await find(testCase, 'findUnique', { where: { id: 105 } })).to.equal(null);
    expect(await find(testCase, 'findFirst', { where: { title: 'Loose' } })).to.equal(null);
    expect(await findRowById(knex, testCase, 102, undefined, { scope })).to.equal(null);
    expect(await findRowById(knex, testCase, 102)).to.not.equal(null);
    expect(((await findRowById(knex, testCase, 101, undefined, { scope })) as Obj).id).to.equal(101);
  });

  it('count', async () => {
    expect(await find(testCase, 'count', {})).to.equal(4);
    expect(await find(testCase, 'count', { where: { folder: null } })).to.equal(1);
    expect(await findAll(testCase, 'count', {})).to.equal(6);
  });

  it('to-one includes of out-of-scope rows are null, at every level', async () => {
    const [invoice] = await many(testCase, { where: { id: 101 }, include: { folder: true, project: true } });
    expect(invoice.folder).to.equal(null);
    expect((invoice.project as Obj).id).to.equal(1);
    const [login] = await many(testCase, { where: { id: 100 }, select: { folder: { select: { id: true, parent: { select: { id: true } }, children: { select: { id: true } } } } } });
    expect(login).to.deep.equal({ folder: { id: 11, parent: { id: 10 }, children: [] } });
    const [result] = await many(step, { where: { id: 1000 }, select: { repositoryCase: { select: { folder: { select: { name: true } } } } } });
    expect(result).to.deep.equal({ repositoryCase: { folder: { name: 'Billing' } } });
    const [hiddenParent] = (await find(testCase, 'findMany', { where: { id: 101 }, select: { folder: true } })) as Obj[];
    expect(hiddenParent).to.deep.equal({ folder: null });
  });

  it('to-many, many-to-many and owned includes, nested', async () => {
    const [alpha] = await many(project, {
      where: { id: 1 },
      select: { folders: { select: { id: true } }, repositoryCases: { select: { id: true, tags: { select: { id: true } }, steps: { select: { id: true } } } }, testRuns: { select: { id: true } } },
    });
    expect(alpha).to.deep.equal({
      folders: [{ id: 10 }, { id: 11 }],
      repositoryCases: [
        { id: 100, tags: [{ id: 1 }, { id: 2 }], steps: [{ id: 1000 }] },
        { id: 101, tags: [{ id: 2 }], steps: [] },
        { id: 103, tags: [{ id: 1 }], steps: [{ id: 1030 }] },
      ],
      testRuns: [{ id: 500 }],
    });
    const tags = await many(tag, { select: { id: true, repositoryCases: { select: { id: true, folder: { select: { id: true } } } } } });
    expect(tags).to.deep.equal([
      { id: 1, repositoryCases: [{ id: 100, folder: { id: 11 } }, { id: 103, folder: { id: 10 } }, { id: 104, folder: { id: 20 } }] },
      { id: 2, repositoryCases: [{ id: 100, folder: { id: 11 } }, { id: 101, folder: null }] },
      { id: 4, repositoryCases: [] },
    ]);
  });

  it('relation filters: out-of-scope rows do not exist for some / every / none / is / isNot', async () => {
    await scopedIds(project, { where: { repositoryCases: { some: { title: 'Loose' } } } }, [], [1]);
    await scopedIds(testCase, { where: { tags: { some: { name: 'secret' } } } }, [], [103, 105]);
    await scopedIds(testCase, { where: { tags: { every: { name: 'smoke' } } } }, [103, 104], [102, 104]);
    await scopedIds(testCase, { where: { tags: { none: { name: 'regression' } } } }, [103, 104], [102, 103, 104, 105]);
    await scopedIds(testCase, { where: { folder: null } }, [101], [102]);
    await scopedIds(testCase, { where: { folder: { is: null } } }, [101], [102]);
    await scopedIds(testCase, { where: { folder: { isNot: null } } }, [100, 103, 104], [100, 101, 103, 104, 105]);
    await scopedIds(testCase, { where: { folder: { is: { name: 'Zeta' } } } }, [], [101]);
    await scopedIds(testCase, { where: { folder: { isNot: { name: 'Zeta' } } } }, [100, 101, 103, 104], [100, 102, 103, 104, 105]);
    await scopedIds(project, { where: { folders: { some: { children: { some: { name: 'Zeta' } } } } } }, [], [1]);
    await scopedIds(testCase, { where: { steps: { some: { step: { contains: 'password' } } } } }, [], [100]);
    await scopedIds(tag, { where: { repositoryCases: { some: { projectId: 3 } } } }, [], [3]);
    await scopedIds(project, { include: { repositoryCases: { where: { tags: { some: { name: 'secret' } } } } }, where: { repositoryCases: { some: { tags: { some: { id: 3 } } } } } }, [], [1, 3]);
    const [alpha] = await many(project, { where: { id: 1 }, select: { repositoryCases: { where: { tags: { some: { name: 'secret' } } }, select: { id: true } } } });
    expect(alpha.repositoryCases).to.deep.equal([]);
  });

  it('_count in select and include', async () => {
    const [alpha] = await many(project, { where: { id: 1 }, select: { _count: { select: { repositoryCases: true, folders: true, testRuns: true } } } });
    expect(alpha._count).to.deep.equal({ repositoryCases: 3, folders: 2, testRuns: 1 });
    const cases = await many(testCase, { select: { id: true, _count: { select: { tags: true, steps: { where: { step: { not: 'x' } } } } } } });
    expect(cases).to.deep.equal([
      { id: 100, _count: { tags: 2, steps: 1 } },
      { id: 101, _count: { tags: 1, steps: 0 } },
      { id: 103, _count: { tags: 1, steps: 1 } },
      { id: 104, _count: { tags: 1, steps: 0 } },
    ]);
    const [smoke] = await many(tag, { where: { id: 1 }, include: { _count: true } });
    expect(smoke._count).to.deep.equal({ repositoryCases: 3, testRuns: 0, sessions: 0 });
  });

  it('orderBy through relations and by relation counts reads only rows in scope', async () => {
    await scopedIds(testCase, { orderBy: { folder: { name: { sort: 'asc', nulls: 'first' } } } }, [101, 103, 100, 104], [102, 103, 100, 105, 104, 101]);
    await scopedIds(testCase, { orderBy: { tags: { _count: 'desc' } } }, [100, 101, 103, 104], [100, 103, 101, 104, 105, 102]);
    await scopedIds(project, { orderBy: [{ folders: { _count: 'desc' } }, { id: 'desc' }] }, [1, 2], [1, 3, 2]);
    const [alpha] = await many(project, { where: { id: 1 }, select: { repositoryCases: { select: { id: true }, orderBy: { folder: { name: { sort: 'asc', nulls: 'first' } } } } } });
    expect(idsOf(alpha.repositoryCases)).to.deep.equal([101, 103, 100]);
  });

  it('a cursor on an out-of-scope row gives no rows; negative take counts visible rows only', async () => {
    await scopedIds(testCase, { cursor: { id: 102 } }, [], [102, 103, 104, 105]);
    await scopedIds(testCase, { cursor: { id: 105 }, take: -2 }, [], [104, 105]);
    await scopedIds(testCase, { take: -1 }, [104], [105]);
    const [alpha] = await many(project, { where: { id: 1 }, select: { repositoryCases: { select: { id: true }, cursor: { id: 102 } } } });
    expect(alpha.repositoryCases).to.deep.equal([]);
  });

  it('distinct', async () => {
    await scopedIds(testCase, { distinct: ['projectId'], orderBy: { title: 'desc' } }, [104, 100], [104, 102, 105]);
  });

  it('aggregate and groupBy', async () => {
    const aggregate = (body: unknown, scoped = true) => runAggregate(knex, testCase, parseAggregateArgs(testCase, body), scoped ? { scope } : {});
    expect(await aggregate({ _count: true, _sum: { estimate: true }, _min: { title: true } })).to.deep.equal({ _count: 4, _sum: { estimate: 15 }, _min: { title: 'Auth root' } });
    expect(await aggregate({ _count: true, _sum: { estimate: true }, _min: { title: true } }, false)).to.deep.equal({ _count: 6, _sum: { estimate: 19 }, _min: { title: 'Auth root' } });
    expect(await aggregate({ _count: true, cursor: { id: 102 } })).to.deep.equal({ _count: 0 });
    expect(await aggregate({ _count: true, where: { tags: { some: { id: 3 } } } })).to.deep.equal({ _count: 0 });

    const groupBy = (body: object, scoped = true) => runGroupBy(knex, testCase, parseGroupByArgs(testCase, { by: ['projectId'], ...body }), scoped ? { scope } : {});
    expect(await groupBy({ _count: { _all: true } })).to.deep.equal([
      { projectId: 1, _count: { _all: 3 } },
      { projectId: 2, _count: { _all: 1 } },
    ]);
    expect(await groupBy({ having: { estimate: { _sum: { equals: 13 } } } })).to.deep.equal([{ projectId: 1 }]);
    expect(await groupBy({ having: { estimate: { _sum: { equals: 13 } } } }, false)).to.deep.equal([]);
    expect(await runGroupBy(knex, folder, parseGroupByArgs(folder, { by: ['name'], where: { projectId: 1 } }), { scope })).to.deep.equal([{ name: 'Auth' }, { name: 'Billing' }]);
  });
});
