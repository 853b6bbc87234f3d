import { expect } from 'chai';
import { ENTITIES } from '../../contracts/entities';
import { parseAggregateArgs, parseGroupByArgs } from '../../services/model/args';
import { refusedAt } from './refusal';

const { project, repositoryCase: testCase } = ENTITIES;

/** Runs `parse` and returns the `details.path` of the 400 it must throw. */

const aggregate = (body: unknown) => parseAggregateArgs(testCase, body);
const groupBy = (body: unknown) => parseGroupByArgs(testCase, body);

describe('model API aggregate / groupBy arguments', () => {
  describe('aggregate: refused arguments name the offending path', () => {
    const cases: [string, unknown, string][] = [
      ['a body that is not an object', 'x', ''],
      ['no aggregate at all', { where: { id: 1 } }, ''],
      ['an unknown top-level key', { _count: true, select: { id: true } }, 'select'],
      ['_count false', { _count: false }, '_count'],
      ['_count as a string', { _count: 'id' }, '_count'],
      ['_count selecting nothing', { _count: { id: false } }, '_count'],
      ['_count of an unknown field', { _count: { nope: true } }, '_count.nope'],
      ['_count of a relation', { _count: { project: true } }, '_count.project'],
      ['_count field not a boolean', { _count: { id: 1 } }, '_count.id'],
      ['_count._all not a boolean', { _count: { _all: 'yes' } }, '_count._all'],
      ['_sum of a string field', { _sum: { title: true } }, '_sum.title'],
      ['_sum of a datetime field', { _sum: { createdAt: true } }, '_sum.createdAt'],
      ['_avg of a boolean field', { _avg: { isDeleted: true } }, '_avg.isDeleted'],
      ['_avg of an unknown field', { _avg: { score: true } }, '_avg.score'],
      ['_min of a boolean field', { _min: { isDeleted: true } }, '_min.isDeleted'],
      ['_max of a relation', { _max: { folder: true } }, '_max.folder'],
      ['_max not an object', { _max: true }, '_max'],
      ['_min selecting nothing', { _min: {} }, '_min'],
      ['_sum field not a boolean', { _sum: { id: 'yes' } }, '_sum.id'],
      ['a bad where', { _count: true, where: { title: { contains: 1 } } }, 'where.title.contains'],
      ['a bad orderBy', { _count: true, orderBy: [{ id: 'asc' }, { title: 'up' }] }, 'orderBy[1].title'],
      ['a fractional take', { _count: true, take: -1.5 }, 'take'],
      ['a fractional skip', { _count: true, skip: 1.5 }, 'skip'],
    ];
    for (const [name, body, path] of cases) it(name, () => expect(refusedAt(() => aggregate(body))).to.equal(path));
  });

  describe('groupBy: refused arguments name the offending path', () => {
    const cases: [string, unknown, string][] = [
      ['a body that is not an object', [], ''],
      ['no by', { _count: true }, 'by'],
      ['an empty by', { by: [] }, 'by'],
      ['by not a list', { by: { projectId: true } }, 'by'],
      ['by naming an unknown field', { by: ['projectId', 'nope'] }, 'by[1]'],
      ['by naming a relation', { by: ['project'] }, 'by[0]'],
      ['by entry not a string', { by: [1] }, 'by[0]'],
      ['by naming a field twice', { by: ['projectId', 'projectId'] }, 'by[1]'],
      ['a negative take', { by: ['projectId'], take: -1 }, 'take'],
      ['an unknown top-level key', { by: ['projectId'], distinct: ['id'] }, 'distinct'],
      ['orderBy on a field not in by', { by: ['projectId'], orderBy: { title: 'asc' } }, 'orderBy.title'],
      ['orderBy on an unknown field', { by: ['projectId'], orderBy: [{ projectId: 'asc' }, { nope: 'asc' }] }, 'orderBy[1].nope'],
      ['orderBy with a bad direction', { by: ['projectId'], orderBy: { projectId: 'up' } }, 'orderBy.projectId'],
      ['orderBy with two keys', { by: ['projectId', 'folderId'], orderBy: { projectId: 'asc', folderId: 'asc' } }, 'orderBy'],
      ['orderBy on a relation', { by: ['projectId'], orderBy: { project: 'asc' } }, 'orderBy.project'],
      ['orderBy an aggregate of an unknown field', { by: ['projectId'], orderBy: { _count: { nope: 'desc' } } }, 'orderBy._count.nope'],
      ['orderBy an aggregate with a bad direction', { by: ['projectId'], orderBy: { _count: { id: 'down' } } }, 'orderBy._count.id'],
      ['orderBy _sum of a string field', { by: ['projectId'], orderBy: { _sum: { title: 'asc' } } }, 'orderBy._sum.title'],
      ['orderBy an aggregate of two fields', { by: ['projectId'], orderBy: { _max: { id: 'asc', createdAt: 'asc' } } }, 'orderBy._max'],
      ['a bad _max', { by: ['projectId'], _max: { isDeleted: true } }, '_max.isDeleted'],
      ['a bad where', { by: ['projectId'], where: { nope: 1 } }, 'where.nope'],
      ['a bad take', { by: ['projectId'], take: 'all' }, 'take'],
    ];
    for (const [name, body, path] of cases) it(name, () => expect(refusedAt(() => groupBy(body))).to.equal(path));
  });

  describe('accepted arguments', () => {
    it('aggregate: every aggregate, with where/orderBy/take/skip', () => {
      expect(
        aggregate({
          where: { projectId: 1 },
          orderBy: { createdAt: 'desc' },
          take: 3,
          skip: 1,
          _count: { _all: true, description: true, id: false },
          _sum: { id: true },
          _avg: { folderId: true },
          _min: { createdAt: true, title: true },
          _max: { id: true },
        }),
      ).to.deep.equal({
        where: { kind: 'compare', field: 'projectId', op: 'equals', value: 1, insensitive: false },
        orderBy: [{ field: 'createdAt', direction: 'desc' }],
        take: 3,
        skip: 1,
        aggregates: {
          _count: { bare: false, all: true, fields: ['description'] },
          _sum: ['id'],
          _avg: ['folderId'],
          _min: ['createdAt', 'title'],
          _max: ['id'],
        },
      });
    });
    it('aggregate: _count: true is the bare count', () => {
      expect(parseAggregateArgs(project, { _count: true }).aggregates).to.deep.equal({ _count: { bare: true, all: true, fields: [] } });
    });
    it('groupBy: by, field and aggregate orderBy, take/skip; no aggregates is fine', () => {
      expect(groupBy({ by: ['projectId', 'folderId'], orderBy: [{ _count: { id: 'desc' } }, { folderId: 'asc' }], take: 2, skip: 1 })).to.deep.equal({
        by: ['projectId', 'folderId'],
        where: undefined,
        orderBy: [
          { kind: 'aggregate', fn: '_count', field: 'id', direction: 'desc' },
          { kind: 'field', field: 'folderId', direction: 'asc' },
        ],
        havingAggregates: [],
        take: 2,
        skip: 1,
        aggregates: {},
      });
    });
    it('groupBy: a single field name as by', () => expect(groupBy({ by: 'projectId' }).by).to.deep.equal(['projectId']));
  });
});

describe('model API groupBy having and the new field types', () => {
  const groupCases = (body: object) => parseGroupByArgs(testCase, { by: ['projectId'], ...body });

  describe('refused arguments name the offending path', () => {
    const cases: [string, unknown, string][] = [
      ['having that is not an object', { having: 5 }, 'having'],
      ['a bad value in an aggregate filter', { having: { estimate: { _avg: { gt: 'x' } } } }, 'having.estimate._avg.gt'],
      ['an aggregate that does not apply to the field', { having: { title: { _avg: { gt: 1 } } } }, 'having.title._avg'],
      ['a plain filter on a field that is not a by field', { having: { title: { contains: 'x' } } }, 'having.title'],
      ['a shorthand on a field that is not a by field', { having: { estimate: 3 } }, 'having.estimate'],
      ['an unknown field', { having: { nope: { _count: { gt: 1 } } } }, 'having.nope'],
      ['a relation', { having: { project: { _count: { gt: 1 } } } }, 'having.project'],
      ['a string operator on an average', { having: { estimate: { _avg: { contains: '1' } } } }, 'having.estimate._avg.contains'],
      ['null for a count', { having: { estimate: { _count: { equals: null } } } }, 'having.estimate._count.equals'],
      ['an unknown operator on a by field', { having: { projectId: { _median: 3 } } }, 'having.projectId._median'],
      ['a bad member of an AND list', { having: { AND: [{ projectId: 1 }, { x: 1 }] } }, 'having.AND[1].x'],
      ['a bad NOT', { having: { NOT: { estimate: { _sum: { lt: true } } } } }, 'having.NOT.estimate._sum.lt'],
      ['a _min outside the enum', { having: { source: { _min: { equals: 'FAX' } } } }, 'having.source._min.equals'],
    ];
    for (const [name, body, path] of cases) it(name, () => expect(refusedAt(() => groupCases(body as object))).to.equal(path));
    it('by on a list field', () => expect(refusedAt(() => parseGroupByArgs(ENTITIES.status, { by: ['aliases'] }))).to.equal('by[0]'));
    it('by on a JSON field', () => expect(refusedAt(() => parseGroupByArgs(ENTITIES.caseFieldValue, { by: ['fieldId', 'value'] }))).to.equal('by[1]'));
    it('_avg of a list field', () => expect(refusedAt(() => parseAggregateArgs(ENTITIES.status, { _avg: { aliases: true } }))).to.equal('_avg.aliases'));
    it('_max of a JSON field', () => expect(refusedAt(() => parseAggregateArgs(ENTITIES.caseFieldValue, { _max: { value: true } }))).to.equal('_max.value'));
    it('a bad aggregate cursor', () => expect(refusedAt(() => aggregate({ _count: true, cursor: { id: -0.5 } }))).to.equal('cursor.id'));
  });

  describe('accepted arguments', () => {
    it('having: aggregate filters, plain filters on by fields, AND / NOT', () => {
      const args = groupCases({
        having: { estimate: { _avg: { gt: 3 }, _count: { gte: 2 } }, projectId: { not: 4 }, NOT: [{ title: { _max: { startsWith: 'Z', mode: 'insensitive' } } }] },
      });
      expect(args.having).to.deep.equal({
        kind: 'and',
        items: [
          {
            kind: 'and',
            items: [
              { kind: 'compare', field: '_avg.estimate', op: 'gt', value: 3, insensitive: false },
              { kind: 'compare', field: '_count.estimate', op: 'gte', value: 2, insensitive: false },
            ],
          },
          { kind: 'not', item: { kind: 'compare', field: 'projectId', op: 'equals', value: 4, insensitive: false } },
          { kind: 'and', items: [{ kind: 'not', item: { kind: 'like', field: '_max.title', op: 'startsWith', value: 'Z', insensitive: true } }] },
        ],
      });
      expect(args.havingAggregates).to.deep.equal([
        { name: '_avg.estimate', fn: '_avg', field: 'estimate' },
        { name: '_count.estimate', fn: '_count', field: 'estimate' },
        { name: '_max.title', fn: '_max', field: 'title' },
      ]);
    });
    it('float fields aggregate like ints', () =>
      expect(parseAggregateArgs(ENTITIES.caseField, { _sum: { minValue: true }, _avg: { maxValue: true }, _min: { minValue: true } }).aggregates).to.deep.equal({
        _sum: ['minValue'],
        _avg: ['maxValue'],
        _min: ['minValue'],
      }));
    it('aggregate: negative take and cursor', () => expect(aggregate({ _count: true, take: -2, cursor: { id: 5 } })).to.include({ take: -2, cursor: 5 }));
  });
});
