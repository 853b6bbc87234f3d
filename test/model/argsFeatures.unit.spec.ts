import { expect } from 'chai';
import { CASE_SOURCES, ENTITIES } from '../../contracts/entities';
import { MAX_DEPTH, parseCreateArgs, parseFindArgs, parseGroupByArgs, parseUpdateArgs, type FindOperation } from '../../services/model/args';
import { refusal, refusedAt } from './refusal';

const { project, repositoryCase: testCase, repositoryFolder: folder, caseField, caseFieldValue, integration, status, tag, testRunResult, repositoryCaseVersion } = ENTITIES;

/** Runs `parse` and returns the 400 it must throw. */

const find = (entity: (typeof ENTITIES)[keyof typeof ENTITIES], body: unknown, op: FindOperation = 'findMany') => parseFindArgs(entity, op, body);

describe('model API arguments: types, lists, relations in orderBy, paging', () => {
  describe('refused arguments name the offending path', () => {
    const cases: [string, () => unknown, string][] = [
      // float
      ['a string for a float', () => find(caseField, { where: { minValue: 'x' } }), 'where.minValue'],
      ['contains on a float', () => find(caseField, { where: { minValue: { contains: '1' } } }), 'where.minValue.contains'],
      ['a float in notIn that is not a number', () => find(caseField, { where: { minValue: { notIn: [1.5, true] } } }), 'where.minValue.notIn[1]'],
      // json
      ['a JSON value as filter', () => find(caseFieldValue, { where: { value: 5 } }), 'where.value'],
      ['a JSON object as filter', () => find(caseFieldValue, { where: { value: { a: 1 } } }), 'where.value.a'],
      ['JSON equals on a value', () => find(caseFieldValue, { where: { value: { equals: { a: 1 } } } }), 'where.value.equals'],
      ['JSON not on a value', () => find(caseFieldValue, { where: { value: { not: 'x' } } }), 'where.value.not'],
      ['a JSON path filter', () => find(caseFieldValue, { where: { value: { path: ['a'], equals: 1 } } }), 'where.value.path'],
      ['JSON string_contains', () => find(caseFieldValue, { where: { value: { string_contains: 'x' } } }), 'where.value.string_contains'],
      ['equals null on a required JSON field', () => find(repositoryCaseVersion, { where: { snapshot: { equals: null } } }), 'where.snapshot.equals'],
      ['orderBy a JSON field', () => find(caseFieldValue, { orderBy: { value: 'asc' } }), 'orderBy.value'],
      ['distinct on a JSON field', () => find(caseFieldValue, { distinct: ['fieldId', 'value'] }), 'distinct[1]'],
      // enum
      ['a value outside the enum', () => find(testCase, { where: { source: 'FAX' } }), 'where.source'],
      ['an enum list member outside the enum', () => find(testCase, { where: { source: { in: ['API', 'FAX'] } } }), 'where.source.in[1]'],
      ['contains on an enum', () => find(testCase, { where: { source: { contains: 'A' } } }), 'where.source.contains'],
      ['gt on an enum', () => find(testCase, { where: { source: { gt: 'API' } } }), 'where.source.gt'],
      ['mode on an enum', () => find(testCase, { where: { source: { equals: 'API', mode: 'insensitive' } } }), 'where.source.mode'],
      ['not with a value outside the enum', () => find(testCase, { where: { source: { not: 'api' } } }), 'where.source.not'],
      // scalar lists
      ['a list value as shorthand', () => find(status, { where: { aliases: ['a'] } }), 'where.aliases'],
      ['has with a number', () => find(status, { where: { aliases: { has: 5 } } }), 'where.aliases.has'],
      ['has with null', () => find(status, { where: { aliases: { has: null } } }), 'where.aliases.has'],
      ['hasSome without a list', () => find(status, { where: { aliases: { hasSome: 'a' } } }), 'where.aliases.hasSome'],
      ['a bad hasEvery member', () => find(status, { where: { aliases: { hasEvery: ['a', 1] } } }), 'where.aliases.hasEvery[1]'],
      ['isEmpty not a boolean', () => find(status, { where: { aliases: { isEmpty: 'yes' } } }), 'where.aliases.isEmpty'],
      ['contains on a list', () => find(status, { where: { aliases: { contains: 'a' } } }), 'where.aliases.contains'],
      ['not on a list', () => find(status, { where: { aliases: { not: { has: 'a' } } } }), 'where.aliases.not'],
      ['an unknown list operator', () => find(status, { where: { aliases: { hasAny: ['a'] } } }), 'where.aliases.hasAny'],
      ['equals null on a required list', () => find(status, { where: { aliases: { equals: null } } }), 'where.aliases.equals'],
      ['an enum list item outside the enum', () => find(status, { where: { scopes: { hasSome: ['RUNS', 'CASES'] } } }), 'where.scopes.hasSome[1]'],
      ['orderBy a list', () => find(status, { orderBy: [{ name: 'asc' }, { aliases: 'asc' }] }), 'orderBy[1].aliases'],
      ['distinct on a list', () => find(status, { distinct: 'scopes' }), 'distinct'],
      // orderBy through relations
      ['a to-one relation with a direction', () => find(testCase, { orderBy: { folder: 'asc' } }), 'orderBy.folder'],
      ['an unknown field of the related row', () => find(testCase, { orderBy: { folder: { nme: 'asc' } } }), 'orderBy.folder.nme'],
      ['a bad direction on a related field', () => find(testCase, { orderBy: [{ id: 'asc' }, { folder: { name: 'up' } }] }), 'orderBy[1].folder.name'],
      ['two related fields in one object', () => find(testCase, { orderBy: { folder: { name: 'asc', id: 'asc' } } }), 'orderBy.folder'],
      ['an empty related ordering', () => find(testCase, { orderBy: { folder: {} } }), 'orderBy.folder'],
      ['a bad field two relations down', () => find(testRunResult, { orderBy: { testRun: { project: { nme: 'desc' } } } }), 'orderBy.testRun.project.nme'],
      ['nulls on a required field of a required relation', () => find(testCase, { orderBy: { project: { name: { sort: 'asc', nulls: 'first' } } } }), 'orderBy.project.name.nulls'],
      ['a list relation with a direction', () => find(project, { orderBy: { repositoryCases: 'desc' } }), 'orderBy.repositoryCases'],
      ['a list relation ordered by a field', () => find(project, { orderBy: { repositoryCases: { title: 'asc' } } }), 'orderBy.repositoryCases.title'],
      ['a list relation without _count', () => find(project, { orderBy: { repositoryCases: {} } }), 'orderBy.repositoryCases._count'],
      ['a bad _count direction', () => find(project, { orderBy: { repositoryCases: { _count: 'most' } } }), 'orderBy.repositoryCases._count'],
      ['a bad related ordering inside an include', () => find(project, { include: { repositoryCases: { orderBy: { folder: { parent: { nme: 'asc' } } } } } }), 'include.repositoryCases.orderBy.folder.parent.nme'],
      ['a bad _count ordering inside an include', () => find(project, { include: { folders: { orderBy: { children: { _count: 1 } } } } }), 'include.folders.orderBy.children._count'],
      // take / cursor
      ['a fractional negative take', () => find(project, { take: -1.5 }), 'take'],
      ['a cursor that is not an object', () => find(project, { cursor: 5 }), 'cursor'],
      ['a cursor id that is not an integer', () => find(project, { cursor: { id: 'x' } }), 'cursor.id'],
      ['a cursor by another key', () => find(project, { cursor: { name: 'x' } }), 'cursor.name'],
      ['a cursor without id', () => find(project, { cursor: {} }), 'cursor.id'],
      ['a cursor on findUnique', () => find(project, { where: { id: 1 }, cursor: { id: 1 } }, 'findUnique'), 'cursor'],
      ['a cursor on count', () => find(project, { cursor: { id: 1 } }, 'count'), 'cursor'],
      ['a cursor on a single relation', () => find(testCase, { include: { folder: { cursor: { id: 1 } } } }), 'include.folder.cursor'],
      ['a bad cursor in a list include', () => find(project, { include: { folders: { cursor: { id: 1.5 } } } }), 'include.folders.cursor.id'],
      // many-to-many and owned relations
      ['an unknown quantifier on a many-to-many relation', () => find(testCase, { where: { tags: { any: {} } } }), 'where.tags.any'],
      ['a bad field inside a many-to-many filter', () => find(tag, { where: { repositoryCases: { every: { tags: { some: { nme: 'x' } } } } } }), 'where.repositoryCases.every.tags.some.nme'],
      ['a bad where inside a many-to-many include', () => find(testCase, { include: { tags: { where: { title: 'x' } } } }), 'include.tags.where.title'],
      ['a bad _count where on an owned relation', () => find(testCase, { select: { _count: { select: { steps: { where: { nope: 1 } } } } } }), 'select._count.select.steps.where.nope'],
    ];
    for (const [name, parse, path] of cases) it(`${name} → ${path}`, () => expect(refusedAt(parse)).to.equal(path));

    it('an enum refusal lists the allowed values', () => {
      const error = refusal(() => find(testCase, { where: { source: 'FAX' } }));
      expect(error.message).to.contain(CASE_SOURCES.join(', '));
      expect(error.details.allowed).to.deep.equal(CASE_SOURCES);
    });
    it('a JSON filter refusal says JSON filters are not supported', () =>
      expect(refusal(() => find(caseFieldValue, { where: { value: { equals: 1 } } })).message).to.match(/JSON .*filters.* not supported/));
  });

  describe('accepted arguments', () => {
    it('float values filter like numbers', () =>
      expect(find(caseField, { where: { minValue: { gte: 0.5, in: [1, 2.25] } } }).where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'compare', field: 'minValue', op: 'gte', value: 0.5, insensitive: false },
          { kind: 'in', field: 'minValue', negated: false, values: [1, 2.25], insensitive: false },
        ],
      }));
    it('JSON null checks', () => {
      expect(find(caseFieldValue, { where: { value: null } }).where).to.deep.equal({ kind: 'isNull', field: 'value' });
      expect(find(caseFieldValue, { where: { value: { equals: null } } }).where).to.deep.equal({ kind: 'isNull', field: 'value' });
      expect(find(caseFieldValue, { where: { value: { not: null } } }).where).to.deep.equal({ kind: 'not', item: { kind: 'isNull', field: 'value' } });
    });
    it('enum equality and lists', () =>
      expect(find(testCase, { where: { source: { in: ['API', 'JUNIT'], not: 'MANUAL' } } }).where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'in', field: 'source', negated: false, values: ['API', 'JUNIT'], insensitive: false },
          { kind: 'not', item: { kind: 'compare', field: 'source', op: 'equals', value: 'MANUAL', insensitive: false } },
        ],
      }));
    it('scalar list filters', () =>
      expect(find(status, { where: { aliases: { has: 'ok', hasSome: [], hasEvery: ['a', 'b'], isEmpty: false, equals: ['x'] } } }).where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'list', field: 'aliases', op: 'has', values: ['ok'] },
          { kind: 'list', field: 'aliases', op: 'hasSome', values: [] },
          { kind: 'list', field: 'aliases', op: 'hasEvery', values: ['a', 'b'] },
          { kind: 'listEmpty', field: 'aliases', empty: false },
          { kind: 'list', field: 'aliases', op: 'equals', values: ['x'] },
        ],
      }));
    it('orderBy through to-one relations and by relation counts', () =>
      expect(find(testRunResult, {
        orderBy: [{ testRun: { project: { name: 'desc' } } }, { testRunCase: { notes: { sort: 'asc', nulls: 'last' } } }, { stepResults: { _count: 'asc' } }],
      }).orderBy).to.deep.equal([
        { field: 'name', direction: 'desc', via: ['testRun', 'project'] },
        { field: 'notes', direction: 'asc', nulls: 'last', via: ['testRunCase'] },
        { count: 'stepResults', direction: 'asc' },
      ]));
    it('nulls on a required field reached through an optional relation (the row may be missing)', () =>
      expect(find(testCase, { orderBy: { folder: { name: { sort: 'desc', nulls: 'last' } } } }).orderBy).to.deep.equal([
        { field: 'name', direction: 'desc', nulls: 'last', via: ['folder'] },
      ]));
    it('a relation count through a to-one relation', () =>
      expect(find(testCase, { orderBy: { folder: { children: { _count: 'desc' } } } }).orderBy).to.deep.equal([{ count: 'children', direction: 'desc', via: ['folder'] }]));
    it('negative take and cursor, at the top and in list includes', () => {
      const args = find(folder, { cursor: { id: 12 }, take: -2, skip: 1, include: { children: { cursor: { id: 3 }, take: -1, orderBy: { repositoryCases: { _count: 'desc' } } } } });
      expect(args).to.include({ cursor: 12, take: -2, skip: 1 });
      expect(args.shape.relations.children).to.deep.include({ cursor: 3, take: -1, orderBy: [{ count: 'repositoryCases', direction: 'desc' }] });
    });
    it('many-to-many and owned relations: include, filters and _count like list relations', () => {
      const args = find(testCase, {
        where: { tags: { some: { name: 'smoke' } }, steps: { none: { expectedResult: null } } },
        include: { tags: { where: { isDeleted: false }, orderBy: { name: 'asc' }, take: 2 }, steps: true, _count: { select: { tags: true, steps: true } } },
      });
      expect(args.where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'relation', relation: 'tags', quantifier: 'some', where: { kind: 'compare', field: 'name', op: 'equals', value: 'smoke', insensitive: false } },
          { kind: 'relation', relation: 'steps', quantifier: 'none', where: { kind: 'isNull', field: 'expectedResult' } },
        ],
      });
      expect(args.shape.relations.tags).to.deep.include({ take: 2, orderBy: [{ field: 'name', direction: 'asc' }] });
      expect(args.shape.counts).to.deep.equal({ tags: null, steps: null });
      expect(Object.keys(find(testCase, { include: { _count: true } }).shape.counts)).to.include.members(['tags', 'steps', 'fieldValues']);
    });
  });

  describe('inputs PostgreSQL would choke on are refused up front', () => {
    const deep = (levels: number, leaf: unknown) => Array.from({ length: levels }).reduce<unknown>((inner) => ({ NOT: inner }), leaf);
    const cases: [string, () => unknown, string][] = [
      ['a NUL character in a string filter', () => find(project, { where: { name: { contains: 'a\u0000b' } } }), 'where.name.contains'],
      ['a NUL character in a written string', () => parseUpdateArgs(project, { where: { id: 1 }, data: { name: '\u0000' } }), 'data.name'],
      ['a NUL character inside JSON', () => parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: { a: ['ok', 'x\u0000'] } } }), 'data.settings.a[1]'],
      ['a NUL character in a JSON key', () => parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: { 'k\u0000': 1 } } }), 'data.settings.k\u0000'],
      ['the year 0000', () => find(project, { where: { createdAt: '0000-06-01T00:00:00Z' } }), 'where.createdAt'],
      ['a time before the year 0001 in UTC', () => find(project, { where: { createdAt: { gt: '0001-01-01T00:30:00+01:00' } } }), 'where.createdAt.gt'],
      ['a time after the year 9999 in UTC', () => find(project, { where: { createdAt: { lt: '9999-12-31T23:00:00-05:00' } } }), 'where.createdAt.lt'],
      ['a where nested too deeply', () => find(project, { where: deep(80, { id: 1 }) }), ['where', ...Array<string>(63).fill('NOT')].join('.')],
      ['a JSON value nested too deeply', () => parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: deep(70, 1) } }), ['data', 'settings', ...Array<string>(62).fill('NOT')].join('.')],
      ['a groupBy having nested too deeply', () => parseGroupByArgs(testCase, { by: ['projectId'], having: deep(70, { projectId: 1 }) }), ['having', ...Array<string>(63).fill('NOT')].join('.')],
    ];
    const title = (path: string) => (path.length > 40 ? `${path.slice(0, 40)}…` : path).replace('\u0000', '\\u0000');
    for (const [name, parse, path] of cases) it(`${name} → ${title(path)}`, () => expect(refusedAt(parse)).to.equal(path));
    it('the years 0001 and 9999 themselves are fine', () =>
      expect(find(project, { where: { createdAt: { gte: '0001-01-01T00:00:00Z', lte: '9999-12-31T23:59:59.999Z' } } }).where).to.deep.equal({
        kind: 'and',
        items: [
          { kind: 'compare', field: 'createdAt', op: 'gte', value: '0001-01-01T00:00:00.000Z', insensitive: false },
          { kind: 'compare', field: 'createdAt', op: 'lte', value: '9999-12-31T23:59:59.999Z', insensitive: false },
        ],
      }));
    it(`a where nested ${MAX_DEPTH - 2} levels deep is fine`, () => expect(find(project, { where: deep(MAX_DEPTH - 3, { id: 1 }) }).where).to.have.property('kind', 'not'));
  });

  describe('written values', () => {
    it('json fields take any JSON value, lists are validated item by item', () => {
      const settings = { a: [1, { b: null }], c: 'x', d: false };
      expect(parseCreateArgs(integration, { data: { name: 'Jira', provider: 'JIRA', settings } }).data).to.deep.equal({ name: 'Jira', provider: 'JIRA', settings });
      expect(parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: [1, 'two'] } }).data).to.deep.equal({ settings: [1, 'two'] });
      expect(parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: null } }).data).to.deep.equal({ settings: null });
      expect(parseCreateArgs(status, { data: { name: 'Passed', systemName: 'passed', aliases: ['ok', 'green'], scopes: ['RUNS'] } }).data).to.deep.include({
        aliases: ['ok', 'green'],
        scopes: ['RUNS'],
      });
    });
    const refusals: [string, () => unknown, string][] = [
      ['an enum value outside the enum', () => parseCreateArgs(integration, { data: { name: 'x', provider: 'SVN' } }), 'data.provider'],
      ['a list item outside the enum', () => parseCreateArgs(status, { data: { name: 'x', systemName: 'x', scopes: ['RUNS', 'X'] } }), 'data.scopes[1]'],
      ['a list that is not an array', () => parseUpdateArgs(status, { where: { id: 1 }, data: { aliases: 'ok' } }), 'data.aliases'],
      ['a null list item', () => parseUpdateArgs(status, { where: { id: 1 }, data: { aliases: ['ok', null] } }), 'data.aliases[1]'],
      ['null for a required list', () => parseUpdateArgs(status, { where: { id: 1 }, data: { aliases: null } }), 'data.aliases'],
      ['a float that is not a number', () => parseUpdateArgs(caseField, { where: { id: 1 }, data: { minValue: '1.5' } }), 'data.minValue'],
      ['a non-finite number inside JSON', () => parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: { limits: [1, Infinity] } } }), 'data.settings.limits[1]'],
      ['a value that is not JSON', () => parseUpdateArgs(integration, { where: { id: 1 }, data: { settings: { at: new Date(0) } } }), 'data.settings.at'],
      ['a field set from the acting user', () => parseCreateArgs(testCase, { data: { title: 'x', project: { connect: { id: 1 } }, createdById: 3 } }), 'data.createdById'],
      ['a many-to-many relation', () => parseCreateArgs(testCase, { data: { title: 'x', project: { connect: { id: 1 } }, tags: { connect: [{ id: 1 }] } } }), 'data.tags'],
    ];
    for (const [name, parse, path] of refusals) it(`refuses ${name} → ${path}`, () => expect(refusedAt(parse)).to.equal(path));
  });
});
