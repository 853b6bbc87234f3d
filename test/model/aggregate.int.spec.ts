import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES } from '../../contracts/entities';
import { runAggregate, runGroupBy } from '../../services/model/aggregate';
import { parseAggregateArgs, parseGroupByArgs } from '../../services/model/args';
import { useSeededWorld } from './queryFixtures';

const { repositoryCase: testCase } = ENTITIES;

const day = (date: string) => `${date}T00:00:00.000Z`;

const PROJECTS = [
  { id: 1, name: 'Alpha', is_deleted: false, created_at: day('2024-01-01') },
  { id: 2, name: 'Beta', is_deleted: false, created_at: day('2024-02-01') },
  { id: 3, name: 'Gamma', is_deleted: false, created_at: day('2024-03-01') },
];
const FOLDERS = [
  { id: 10, project_id: 1, parent_id: null, name: 'Auth', is_deleted: false, created_at: day('2024-01-02') },
  { id: 11, project_id: 1, parent_id: null, name: 'Billing', is_deleted: false, created_at: day('2024-01-03') },
  { id: 20, project_id: 2, parent_id: null, name: 'Root', is_deleted: false, created_at: day('2024-02-02') },
];
// Inserted out of id order; ids 100..106 sum to 721, folder ids 10+10+11+20 = 51.
const CASES = [
  { id: 104, project_id: 2, folder_id: 20, title: 'Root', description: 'c', created_at: day('2024-02-03') },
  { id: 100, project_id: 1, folder_id: 10, title: 'Login', description: 'a', created_at: day('2024-01-10') },
  { id: 106, project_id: 3, folder_id: null, title: 'Zulu', description: null, created_at: day('2024-03-09') },
  { id: 101, project_id: 1, folder_id: 10, title: 'Logout', description: null, created_at: day('2024-01-11') },
  { id: 103, project_id: 1, folder_id: null, title: 'Unfiled', description: null, created_at: day('2024-01-15') },
  { id: 102, project_id: 1, folder_id: 11, title: 'Invoice', description: 'b', created_at: day('2024-01-12') },
  { id: 105, project_id: 2, folder_id: null, title: 'Another', description: 'd', created_at: day('2024-02-05') },
];

describe('model API aggregate and groupBy against the read model', () => {
  let knex: Knex;
  useSeededWorld('model_aggregate', (k) => (knex = k), async (k) => {
    const internal = <Row extends { created_at: string }>(row: Row) => ({ ...row, updated_at: row.created_at, revision: 0 });
    await k('projects').insert(PROJECTS.map(internal));
    await k('repository_folders').insert(FOLDERS.map(internal));
    await k('repository_cases').insert(CASES.map((row) => ({ ...internal(row), is_deleted: false })));
  });

  /** Parses the body like the route would, then runs it. */
  const aggregate = (body: unknown) => runAggregate(knex, testCase, parseAggregateArgs(testCase, body));
  const groupBy = (body: unknown) => runGroupBy(knex, testCase, parseGroupByArgs(testCase, body));

  describe('aggregate', () => {
    it('count, sum, avg, min and max over every row, as numbers and ISO strings', async () => {
      expect(
        await aggregate({
          _count: { _all: true, description: true, folderId: true },
          _sum: { id: true, folderId: true },
          _avg: { id: true, folderId: true },
          _min: { createdAt: true, title: true, id: true },
          _max: { createdAt: true, title: true, id: true },
        }),
      ).to.deep.equal({
        // count of a nullable field counts the non-null values only
        _count: { _all: 7, description: 4, folderId: 4 },
        _sum: { id: 721, folderId: 51 },
        _avg: { id: 103, folderId: 12.75 },
        _min: { createdAt: day('2024-01-10'), title: 'Another', id: 100 },
        _max: { createdAt: day('2024-03-09'), title: 'Zulu', id: 106 },
      });
    });

    it('only the requested keys; _count: true is a bare number', async () => {
      expect(await aggregate({ _count: true })).to.deep.equal({ _count: 7 });
      expect(await aggregate({ _max: { id: true } })).to.deep.equal({ _max: { id: 106 } });
    });

    it('where restricts the rows aggregated', async () => {
      const result = await aggregate({
        where: { projectId: 1 },
        _count: { _all: true, description: true },
        _sum: { id: true },
        _avg: { id: true, folderId: true },
        _min: { createdAt: true },
        _max: { createdAt: true },
      });
      expect(result).to.deep.include({
        _count: { _all: 4, description: 2 },
        _sum: { id: 406 },
        _min: { createdAt: day('2024-01-10') },
        _max: { createdAt: day('2024-01-15') },
      });
      const avg = result._avg as Record<string, number>;
      expect(avg.id).to.equal(101.5);
      expect(avg.folderId).to.be.closeTo(31 / 3, 1e-9);
    });

    it('where with a relation filter', async () => {
      expect(await aggregate({ where: { project: { name: 'Beta' } }, _count: true, _sum: { id: true } })).to.deep.equal({ _count: 2, _sum: { id: 209 } });
    });

    it('no matching rows: counts are 0, the other aggregates null', async () => {
      expect(
        await aggregate({ where: { projectId: 99 }, _count: { _all: true, id: true }, _sum: { id: true }, _avg: { id: true }, _min: { createdAt: true }, _max: { title: true } }),
      ).to.deep.equal({ _count: { _all: 0, id: 0 }, _sum: { id: null }, _avg: { id: null }, _min: { createdAt: null }, _max: { title: null } });
    });

    it('orderBy, take and skip choose the rows before aggregation', async () => {
      // by createdAt desc: 106, 105, 104, 103, ... → skip 1, take 2 → 105 and 104
      expect(await aggregate({ orderBy: { createdAt: 'desc' }, skip: 1, take: 2, _count: true, _sum: { id: true }, _min: { createdAt: true } })).to.deep.equal({
        _count: 2,
        _sum: { id: 209 },
        _min: { createdAt: day('2024-02-03') },
      });
      // without orderBy the page is taken in id order: 100, 101, 102
      expect(await aggregate({ take: 3, _sum: { id: true } })).to.deep.equal({ _sum: { id: 303 } });
      expect(await aggregate({ take: 0, _count: true, _sum: { id: true } })).to.deep.equal({ _count: 0, _sum: { id: null } });
    });
  });

  describe('groupBy', () => {
    const byProject = { by: ['projectId'], _count: { _all: true, description: true }, _max: { createdAt: true } };
    const p1 = { projectId: 1, _count: { _all: 4, description: 2 }, _max: { createdAt: day('2024-01-15') } };
    const p2 = { projectId: 2, _count: { _all: 2, description: 2 }, _max: { createdAt: day('2024-02-05') } };
    const p3 = { projectId: 3, _count: { _all: 1, description: 0 }, _max: { createdAt: day('2024-03-09') } };

    it('groups by projectId, ordered by the by fields by default', async () => {
      expect(await groupBy(byProject)).to.deep.equal([p1, p2, p3]);
    });

    it('orders by a by field or by an aggregate', async () => {
      expect(await groupBy({ ...byProject, orderBy: { projectId: 'desc' } })).to.deep.equal([p3, p2, p1]);
      expect(await groupBy({ ...byProject, orderBy: { _count: { id: 'asc' } } })).to.deep.equal([p3, p2, p1]);
      expect(await groupBy({ ...byProject, orderBy: { _count: { description: 'desc' } } })).to.deep.equal([p1, p2, p3]);
      expect(await groupBy({ ...byProject, orderBy: [{ _max: { createdAt: 'desc' } }] })).to.deep.equal([p3, p2, p1]);
    });

    it('take and skip apply to the groups', async () => {
      expect(await groupBy({ ...byProject, orderBy: { _max: { createdAt: 'desc' } }, skip: 1, take: 1 })).to.deep.equal([p2]);
      expect(await groupBy({ ...byProject, skip: 2 })).to.deep.equal([p3]);
      expect(await groupBy({ ...byProject, take: 0 })).to.deep.equal([]);
    });

    it('where filters the rows before grouping; a null key is a group of its own (last)', async () => {
      expect(await groupBy({ by: ['folderId'], where: { projectId: 1 }, _count: true, _min: { title: true } })).to.deep.equal([
        { folderId: 10, _count: 2, _min: { title: 'Login' } },
        { folderId: 11, _count: 1, _min: { title: 'Invoice' } },
        { folderId: null, _count: 1, _min: { title: 'Unfiled' } },
      ]);
    });

    it('several by fields, sum and avg per group', async () => {
      expect(await groupBy({ by: ['projectId', 'folderId'], orderBy: [{ projectId: 'desc' }], _sum: { id: true }, _avg: { id: true } })).to.deep.equal([
        { projectId: 3, folderId: null, _sum: { id: 106 }, _avg: { id: 106 } },
        { projectId: 2, folderId: 20, _sum: { id: 104 }, _avg: { id: 104 } },
        { projectId: 2, folderId: null, _sum: { id: 105 }, _avg: { id: 105 } },
        { projectId: 1, folderId: 10, _sum: { id: 201 }, _avg: { id: 100.5 } },
        { projectId: 1, folderId: 11, _sum: { id: 102 }, _avg: { id: 102 } },
        { projectId: 1, folderId: null, _sum: { id: 103 }, _avg: { id: 103 } },
      ]);
    });

    it('groups by a datetime field, returned as ISO strings', async () => {
      expect(await groupBy({ by: ['createdAt'], where: { projectId: 2 } })).to.deep.equal([{ createdAt: day('2024-02-03') }, { createdAt: day('2024-02-05') }]);
    });
  });
});
