import { expect } from 'chai';
import { ENTITIES } from '../../contracts/entities';
import {
  parseCreateArgs,
  parseDeleteArgs,
  parseFindArgs,
  parseUpdateArgs,
} from '../../services/model/args';
import { refusedAt } from './refusal';

const { project, repositoryFolder: folder, repositoryCase: testCase } = ENTITIES;


const findMany = (body: unknown) => parseFindArgs(project, 'findMany', body);
const findCases = (body: unknown) => parseFindArgs(testCase, 'findMany', body);
const findFolders = (body: unknown) => parseFindArgs(folder, 'findMany', body);

describe('model API arguments', () => {
  describe('refused find arguments name the offending path', () => {
    const cases: [string, () => unknown, string][] = [
      ['a body that is not an object', () => findMany('where'), ''],
      ['an array body', () => findMany([]), ''],
      ['a null body', () => findMany(null), ''],
      ['an unknown top-level key', () => findMany({ after: { id: 1 } }), 'after'],
      ['orderBy on findUnique', () => parseFindArgs(project, 'findUnique', { where: { id: 1 }, orderBy: { id: 'asc' } }), 'orderBy'],
      ['select on count', () => parseFindArgs(project, 'count', { select: { _all: true } }), 'select'],
      ['take on count', () => parseFindArgs(project, 'count', { take: 1 }), 'take'],
      ['a where that is not an object', () => findMany({ where: [1] }), 'where'],
      ['an unknown field', () => findMany({ where: { nme: 'x' } }), 'where.nme'],
      ['a prototype member as field', () => findMany({ where: { constructor: 'x' } }), 'where.constructor'],
      ['the internal revision column', () => findMany({ where: { revision: 1 } }), 'where.revision'],
      ['an unknown operator', () => findMany({ where: { name: { like: 'x' } } }), 'where.name.like'],
      ['contains on an int', () => findMany({ where: { id: { contains: '1' } } }), 'where.id.contains'],
      ['lt on a boolean', () => findMany({ where: { isDeleted: { lt: true } } }), 'where.isDeleted.lt'],
      ['mode on an int', () => findMany({ where: { id: { mode: 'insensitive', equals: 1 } } }), 'where.id.mode'],
      ['an unknown mode', () => findMany({ where: { name: { mode: 'loud', equals: 'x' } } }), 'where.name.mode'],
      ['a string for an int', () => findMany({ where: { id: '1' } }), 'where.id'],
      ['a fraction for an int', () => findMany({ where: { id: { gt: 1.5 } } }), 'where.id.gt'],
      ['an int beyond the column', () => findMany({ where: { id: 2 ** 31 } }), 'where.id'],
      ['a bad list member', () => findMany({ where: { id: { in: [1, 'x'] } } }), 'where.id.in[1]'],
      ['in without a list', () => findMany({ where: { id: { in: 1 } } }), 'where.id.in'],
      ['null inside in', () => findCases({ where: { description: { in: [null] } } }), 'where.description.in[0]'],
      ['a non-boolean', () => findMany({ where: { isDeleted: 'yes' } }), 'where.isDeleted'],
      ['a number for a string', () => findMany({ where: { name: { contains: 5 } } }), 'where.name.contains'],
      ['a date that is not ISO', () => findMany({ where: { createdAt: { gt: 'yesterday' } } }), 'where.createdAt.gt'],
      ['a date that does not exist', () => findMany({ where: { createdAt: '2024-02-30T00:00:00Z' } }), 'where.createdAt'],
      ['a date-time without zone', () => findMany({ where: { createdAt: { lt: '2024-01-01T00:00:00' } } }), 'where.createdAt.lt'],
      ['a date without time', () => findMany({ where: { createdAt: '2024-01-01' } }), 'where.createdAt'],
      ['a number for a date', () => findMany({ where: { createdAt: 1704067200000 } }), 'where.createdAt'],
      ['null for a required field', () => findMany({ where: { name: null } }), 'where.name'],
      ['equals null on a required field', () => findMany({ where: { name: { equals: null } } }), 'where.name.equals'],
      ['null in lt', () => findCases({ where: { description: { lt: null } } }), 'where.description.lt'],
      ['an unknown operator inside not', () => findMany({ where: { name: { not: { has: 'x' } } } }), 'where.name.not.has'],
      ['a bad member of an AND list', () => findMany({ where: { AND: [{ id: 1 }, { nme: 'x' }] } }), 'where.AND[1].nme'],
      ['a bad OR object', () => findMany({ where: { OR: { id: 'x' } } }), 'where.OR.id'],
      ['a scalar NOT', () => findMany({ where: { NOT: true } }), 'where.NOT'],
      ['an unknown list-relation filter', () => findMany({ where: { folders: { any: {} } } }), 'where.folders.any'],
      ['a list-relation filter that is not an object', () => findMany({ where: { folders: true } }), 'where.folders'],
      ['an unknown field deep in relation filters', () => findMany({ where: { folders: { some: { repositoryCases: { every: { title: { contains: 5 } } } } } } }), 'where.folders.some.repositoryCases.every.title.contains'],
      ['is: null on a required relation', () => findCases({ where: { project: { is: null } } }), 'where.project.is'],
      ['a required relation set to null', () => findCases({ where: { project: null } }), 'where.project'],
      ['is mixed with a field', () => findCases({ where: { folder: { is: { id: 1 }, name: 'x' } } }), 'where.folder.name'],
      ['an unknown field of the related entity', () => findCases({ where: { folder: { title: 'x' } } }), 'where.folder.title'],
      ['a string take', () => findMany({ take: '1' }), 'take'],
      ['a fractional take', () => findMany({ take: 1.5 }), 'take'],
      ['a string skip', () => findMany({ skip: '10' }), 'skip'],
      ['a negative skip', () => findMany({ skip: -2 }), 'skip'],
      ['an unknown orderBy direction', () => findMany({ orderBy: { createdAt: 'up' } }), 'orderBy.createdAt'],
      ['a bad direction in an orderBy list', () => findMany({ orderBy: [{ id: 'asc' }, { createdAt: 'DESC' }] }), 'orderBy[1].createdAt'],
      ['orderBy on an unknown field', () => findMany({ orderBy: [{ nme: 'asc' }] }), 'orderBy[0].nme'],
      ['orderBy on a relation', () => findMany({ orderBy: { folders: 'asc' } }), 'orderBy.folders'],
      ['orderBy with two keys in one object', () => findMany({ orderBy: [{ id: 'asc', name: 'asc' }] }), 'orderBy[0]'],
      ['an empty orderBy object', () => findMany({ orderBy: {} }), 'orderBy'],
      ['include on a field', () => findMany({ include: { name: true } }), 'include.name'],
      ['include of an unknown relation', () => findMany({ include: { nope: true } }), 'include.nope'],
      ['include with a non-boolean', () => findMany({ include: { folders: 1 } }), 'include.folders'],
      ['select and include together', () => findMany({ select: { id: true }, include: { folders: true } }), 'select'],
      ['select and include together one level down', () => findMany({ include: { folders: { select: { id: true }, include: { children: true } } } }), 'include.folders.select'],
      ['an empty select', () => findMany({ select: { id: false } }), 'select'],
      ['select with a non-boolean field', () => findMany({ select: { name: 'yes' } }), 'select.name'],
      ['select of an unknown field', () => findMany({ select: { revision: true } }), 'select.revision'],
      ['where on a single relation', () => findCases({ include: { project: { where: { id: 1 } } } }), 'include.project.where'],
      ['a bad nested where in include', () => findMany({ include: { folders: { where: { title: 'x' } } } }), 'include.folders.where.title'],
      ['a bad nested take in include', () => findMany({ include: { folders: { take: 0.5 } } }), 'include.folders.take'],
      ['a bad orderBy two levels down', () => findMany({ include: { folders: { include: { children: { orderBy: { name: 'sideways' } } } } } }), 'include.folders.include.children.orderBy.name'],
      ['_count of a single relation', () => findCases({ include: { _count: { select: { project: true } } } }), 'include._count.select.project'],
      ['_count of an unknown relation', () => findMany({ include: { _count: { select: { tags: true } } } }), 'include._count.select.tags'],
      ['_count without select', () => findMany({ include: { _count: { folders: true } } }), 'include._count.folders'],
    ];
    for (const [name, parse, path] of cases) {
      it(`${name} → ${path || '(body)'}`, () => expect(refusedAt(parse)).to.equal(path));
    }
  });

  describe('findUnique', () => {
    const findUnique = (body: unknown) => parseFindArgs(project, 'findUnique', body);
    it('requires a where', () => expect(refusedAt(() => findUnique({}))).to.equal('where'));
    it('requires a unique key in the where', () => expect(refusedAt(() => findUnique({ where: {} }))).to.equal('where'));
    it('takes other filters beside the id (Prisma 5+)', () => expect(findUnique({ where: { id: 1, name: 'x' } }).where).to.deep.equal({
      kind: 'and',
      items: [{ kind: 'compare', field: 'id', op: 'equals', value: 1, insensitive: false }, { kind: 'compare', field: 'name', op: 'equals', value: 'x', insensitive: false }],
    }));
    it('refuses a filter object as id', () => expect(refusedAt(() => findUnique({ where: { id: { equals: 1 } } }))).to.equal('where.id'));
    it('parses to an id equality', () =>
      expect(findUnique({ where: { id: 7 } }).where).to.deep.equal({ kind: 'compare', field: 'id', op: 'equals', value: 7, insensitive: false }));
  });

  describe('accepted find arguments', () => {
    it('parse into a where tree', () => {
      const args = findCases({
        where: {
          title: { contains: 'login', mode: 'insensitive' },
          description: null,
          OR: [{ id: { in: [1, 2] } }, { NOT: { projectId: { not: 3 } } }],
          folder: { is: { parent: null } },
        },
      });
      expect(args.where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'like', field: 'title', op: 'contains', value: 'login', insensitive: true },
          { kind: 'isNull', field: 'description' },
          {
            kind: 'or',
            items: [
              { kind: 'in', field: 'id', negated: false, values: [1, 2], insensitive: false },
              { kind: 'not', item: { kind: 'not', item: { kind: 'compare', field: 'projectId', op: 'equals', value: 3, insensitive: false } } },
            ],
          },
          {
            kind: 'relation',
            relation: 'folder',
            quantifier: 'is',
            where: { kind: 'relation', relation: 'parent', quantifier: 'is', where: null },
          },
        ],
      });
    });

    it('NOT with a list negates each member', () =>
      expect(findMany({ where: { NOT: [{ id: 1 }, { id: 2 }] } }).where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'not', item: { kind: 'compare', field: 'id', op: 'equals', value: 1, insensitive: false } },
          { kind: 'not', item: { kind: 'compare', field: 'id', op: 'equals', value: 2, insensitive: false } },
        ],
      }));

    it('list-relation quantifiers nest to any depth', () =>
      expect(findMany({ where: { folders: { every: { repositoryCases: { none: { title: 'x' } } } } } }).where).to.deep.equal({
        kind: 'relation',
        relation: 'folders',
        quantifier: 'every',
        where: {
          kind: 'relation',
          relation: 'repositoryCases',
          quantifier: 'none',
          where: { kind: 'compare', field: 'title', op: 'equals', value: 'x', insensitive: false },
        },
      }));

    it('normalise datetimes to UTC ISO strings', () =>
      expect(findMany({ where: { createdAt: { gte: '2024-05-01T14:00:00+02:00' } } }).where).to.deep.equal({
        kind: 'compare',
        field: 'createdAt',
        op: 'gte',
        value: '2024-05-01T12:00:00.000Z',
        insensitive: false,
      }));

    it('read orderBy as an object or a list, and take/skip', () => {
      expect(findMany({ orderBy: { createdAt: 'desc' }, take: 0, skip: 5 })).to.include({ take: 0, skip: 5 });
      expect(findMany({ orderBy: { createdAt: 'desc' } }).orderBy).to.deep.equal([{ field: 'createdAt', direction: 'desc' }]);
      expect(findMany({ orderBy: [{ name: 'asc' }, { id: 'desc' }] }).orderBy).to.deep.equal([
        { field: 'name', direction: 'asc' },
        { field: 'id', direction: 'desc' },
      ]);
    });

    it('without include/select return every scalar field and no relation', () =>
      expect(findMany({}).shape).to.deep.equal({ fields: Object.keys(project.fields), relations: {}, counts: {} }));

    it('parse include with nested list arguments and _count', () => {
      const { shape } = findMany({
        include: {
          folders: { where: { parentId: null }, orderBy: { name: 'desc' }, take: 2, skip: 1, include: { children: true } },
          repositoryCases: false,
          _count: { select: { folders: { where: { isDeleted: false } }, repositoryCases: true } },
        },
      });
      expect(Object.keys(shape.relations)).to.deep.equal(['folders']);
      const folders = shape.relations.folders;
      expect(folders.where).to.deep.equal({ kind: 'isNull', field: 'parentId' });
      expect(folders.orderBy).to.deep.equal([{ field: 'name', direction: 'desc' }]);
      expect(folders).to.include({ take: 2, skip: 1 });
      expect(Object.keys(folders.shape.relations)).to.deep.equal(['children']);
      expect(shape.counts).to.deep.equal({ folders: { kind: 'compare', field: 'isDeleted', op: 'equals', value: false, insensitive: false }, repositoryCases: null });
    });

    it('_count: true counts every list relation', () =>
      expect(findFolders({ include: { _count: true } }).shape.counts).to.deep.equal({ children: null, repositoryCases: null }));

    it('select keeps only the chosen fields, in catalogue order', () => {
      const { shape } = findCases({ select: { title: true, id: true, description: false, folder: { select: { name: true } } } });
      expect(shape.fields).to.deep.equal(['id', 'title']);
      expect(shape.relations.folder.shape.fields).to.deep.equal(['name']);
    });
  });

  describe('count', () => {
    it('accepts a where only', () =>
      expect(parseFindArgs(project, 'count', { where: { isDeleted: false } }).where).to.deep.equal({
        kind: 'compare',
        field: 'isDeleted',
        op: 'equals',
        value: false,
        insensitive: false,
      }));
  });

  describe('create', () => {
    const create = (body: unknown) => parseCreateArgs(testCase, body);
    const valid = { title: 'Login works', project: { connect: { id: 1 } } };

    it('parses scalar data and connected relations', () =>
      expect(create({ data: { ...valid, description: null, folder: { connect: { id: 3 } } }, include: { folder: true } })).to.deep.include({
        data: { title: 'Login works', description: null },
        connect: { project: 1, folder: 3 },
      }));
    it('carries the include as a shape', () =>
      expect(Object.keys(create({ data: valid, include: { folder: true } }).shape.relations)).to.deep.equal(['folder']));

    const refusals: [string, unknown, string][] = [
      ['a body without data', {}, 'data'],
      ['data that is not an object', { data: 'x' }, 'data'],
      ['an unknown top-level key', { data: valid, where: { id: 1 } }, 'where'],
      ['a missing required field', { data: { project: { connect: { id: 1 } } } }, 'data.title'],
      ['a missing required relation', { data: { title: 'x' } }, 'data.project'],
      ['the id', { data: { ...valid, id: 5 } }, 'data.id'],
      ['createdAt', { data: { ...valid, createdAt: '2024-01-01T00:00:00Z' } }, 'data.createdAt'],
      ['a foreign key written directly', { data: { ...valid, projectId: 1 } }, 'data.projectId'],
      ['an unknown field', { data: { ...valid, priority: 1 } }, 'data.priority'],
      ['a wrong value type', { data: { ...valid, title: 5 } }, 'data.title'],
      ['null for a required field', { data: { ...valid, title: null } }, 'data.title'],
      ['a relation without connect', { data: { ...valid, folder: 3 } }, 'data.folder'],
      ['a bad connect id', { data: { ...valid, folder: { connect: { id: 'x' } } } }, 'data.folder.connect.id'],
      ['connect by another key', { data: { ...valid, folder: { connect: { name: 'x' } } } }, 'data.folder.connect.name'],
      ['disconnect on create', { data: { ...valid, folder: { disconnect: true } } }, 'data.folder.disconnect'],
      ['select and include together', { data: valid, select: { id: true }, include: { folder: true } }, 'select'],
    ];
    for (const [name, body, path] of refusals) {
      it(`refuses ${name} → ${path}`, () => expect(refusedAt(() => create(body))).to.equal(path));
    }
    it('refuses writing a list relation', () =>
      expect(refusedAt(() => parseCreateArgs(project, { data: { name: 'x', folders: { connect: { id: 1 } } } }))).to.equal('data.folders'));
  });

  describe('update', () => {
    const update = (body: unknown) => parseUpdateArgs(testCase, body);
    it('parses a change and a disconnect of an optional relation', () =>
      expect(update({ where: { id: 4 }, data: { title: 'New', folder: { disconnect: true } } })).to.deep.include({
        where: { id: 4, where: { kind: 'compare', field: 'id', op: 'equals', value: 4, insensitive: false } },
        data: { title: 'New' },
        connect: { folder: null },
      }));
    it('refuses an update without changes', () => expect(refusedAt(() => update({ where: { id: 4 }, data: {} }))).to.equal('data'));
    it('refuses an update without where', () => expect(refusedAt(() => update({ data: { title: 'x' } }))).to.equal('where'));
    it('refuses a where without a unique key', () => expect(refusedAt(() => update({ where: { title: 'x' }, data: { title: 'y' } }))).to.equal('where'));
    it('refuses disconnecting a required relation', () =>
      expect(refusedAt(() => update({ where: { id: 4 }, data: { project: { disconnect: true } } }))).to.equal('data.project.disconnect'));
    it('refuses disconnect: false', () =>
      expect(refusedAt(() => update({ where: { id: 4 }, data: { folder: { disconnect: false } } }))).to.equal('data.folder.disconnect'));
    it('refuses connect and disconnect together', () =>
      expect(refusedAt(() => update({ where: { id: 4 }, data: { folder: { connect: { id: 1 }, disconnect: true } } }))).to.equal('data.folder'));
    it('refuses a non-writable field', () => expect(refusedAt(() => update({ where: { id: 4 }, data: { updatedAt: '2024-01-01T00:00:00Z' } }))).to.equal('data.updatedAt'));
  });

  describe('delete', () => {
    it('parses the id', () => expect(parseDeleteArgs(folder, { where: { id: 9 } }).where).to.deep.include({ id: 9 }));
    it('refuses a fractional id', () => expect(refusedAt(() => parseDeleteArgs(folder, { where: { id: 1.5 } }))).to.equal('where.id'));
    it('refuses data', () => expect(refusedAt(() => parseDeleteArgs(folder, { where: { id: 1 }, data: {} }))).to.equal('data'));
  });
});
