import { expect } from 'chai';
import { ENTITIES } from '../../contracts/entities';
import { parseDeleteArgs, parseFindArgs, parseUniqueWhere, parseUpdateArgs, uniqueKeysOf, type Where } from '../../services/model/args';
import { refusal, refusedAt } from './refusal';

const { tag, user, status, projectAssignment, testRunCase, project } = ENTITIES;

const equals = (field: string, value: string | number | boolean): Where => ({ kind: 'compare', field, op: 'equals', value, insensitive: false });
const notDeleted = equals('isDeleted', false);

describe('model API arguments: unique wheres (every unique the catalogue declares, as Prisma 5+)', () => {
  it('the unique keys of an entity: id, its unique fields, its compound unique named as Prisma names it', () => {
    expect(uniqueKeysOf(project)).to.deep.equal([{ name: 'id', fields: ['id'] }]);
    expect(uniqueKeysOf(tag).map((key) => key.name)).to.deep.equal(['id', 'name']);
    expect(uniqueKeysOf(user).map((key) => key.name)).to.deep.equal(['id', 'email']);
    expect(uniqueKeysOf(projectAssignment)).to.deep.include({ name: 'userId_projectId', fields: ['userId', 'projectId'] });
    expect(uniqueKeysOf(testRunCase)).to.deep.include({ name: 'testRunId_repositoryCaseId', fields: ['testRunId', 'repositoryCaseId'] });
  });

  it('{ id } alone is known without a lookup; any other where is a filter', () => {
    expect(parseUniqueWhere(tag, { id: 3 }, 'where')).to.deep.equal({ id: 3, where: equals('id', 3) });
    expect(parseUniqueWhere(tag, { id: 3, name: 'smoke' }, 'where')).to.deep.equal({ where: { kind: 'and', items: [equals('id', 3), equals('name', 'smoke'), notDeleted] } });
  });

  it('a unique value names the row not deleted that holds it; a user\'s e-mail (unique for good) any row', () => {
    expect(parseUniqueWhere(tag, { name: 'smoke' }, 'where')).to.deep.equal({ where: { kind: 'and', items: [equals('name', 'smoke'), notDeleted] } });
    expect(parseUniqueWhere(user, { email: 'a@example.com' }, 'where')).to.deep.equal({ where: equals('email', 'a@example.com') });
  });

  it('a compound unique takes its fields as values; on a soft-deleting entity, of the row not deleted', () => {
    expect(parseUniqueWhere(projectAssignment, { userId_projectId: { userId: 1, projectId: 2 } }, 'where').where)
      .to.deep.equal({ kind: 'and', items: [equals('userId', 1), equals('projectId', 2)] });
    expect(parseUniqueWhere(testRunCase, { testRunId_repositoryCaseId: { testRunId: 5, repositoryCaseId: 6 } }, 'where').where)
      .to.deep.equal({ kind: 'and', items: [equals('testRunId', 5), equals('repositoryCaseId', 6), notDeleted] });
  });

  it('other filters stand beside the key: fields, relations, AND / OR / NOT', () => {
    const { where } = parseUniqueWhere(status, { systemName: 'passed', isEnabled: true, NOT: { name: 'x' } }, 'where');
    expect(where).to.deep.equal({
      kind: 'and',
      items: [equals('systemName', 'passed'), notDeleted, equals('isEnabled', true), { kind: 'not', item: equals('name', 'x') }],
    });
    expect(parseUniqueWhere(tag, { name: 'smoke', repositoryCases: { some: { title: 'a' } } }, 'where').where).to.have.property('kind', 'and');
  });

  it('findUnique, update, delete (and through them upsert) all take it', () => {
    expect(parseFindArgs(tag, 'findUnique', { where: { name: 'smoke' } }).where).to.deep.equal({ kind: 'and', items: [equals('name', 'smoke'), notDeleted] });
    expect(parseUpdateArgs(tag, { where: { name: 'smoke' }, data: { name: 'Smoke' } }).where).to.deep.equal({ where: { kind: 'and', items: [equals('name', 'smoke'), notDeleted] } });
    expect(parseDeleteArgs(projectAssignment, { where: { userId_projectId: { userId: 1, projectId: 2 } } }).where.id).to.equal(undefined);
    expect(parseDeleteArgs(project, { where: { id: 7 } }).where.id).to.equal(7);
  });

  describe('refused, naming the path', () => {
    const cases: [string, () => unknown, string][] = [
      ['no unique key at all', () => parseUniqueWhere(tag, {}, 'where'), 'where'],
      ['only filters that are not a key', () => parseUniqueWhere(status, { isEnabled: true }, 'where'), 'where'],
      ['a field that is not unique', () => parseUniqueWhere(user, { name: 'Ann' }, 'where'), 'where'],
      ['a key in an AND only', () => parseUniqueWhere(tag, { AND: [{ name: 'smoke' }] }, 'where'), 'where'],
      ['a filter on a unique field', () => parseUniqueWhere(tag, { name: { contains: 'sm' } }, 'where'), 'where.name'],
      ['null for a unique field', () => parseUniqueWhere(tag, { name: null }, 'where'), 'where.name'],
      ['a filter on id', () => parseUniqueWhere(tag, { id: { in: [1, 2] } }, 'where'), 'where.id'],
      ['a string for id', () => parseUniqueWhere(tag, { id: '1' }, 'where'), 'where.id'],
      ['a compound unique missing a field', () => parseUniqueWhere(projectAssignment, { userId_projectId: { userId: 1 } }, 'where'), 'where.userId_projectId.projectId'],
      ['a compound unique with another field', () => parseUniqueWhere(projectAssignment, { userId_projectId: { userId: 1, projectId: 2, id: 3 } }, 'where'), 'where.userId_projectId.id'],
      ['a compound unique that is not an object', () => parseUniqueWhere(projectAssignment, { userId_projectId: 12 }, 'where'), 'where.userId_projectId'],
      ['an unknown filter beside the key', () => parseUniqueWhere(tag, { name: 'smoke', colour: 'red' }, 'where'), 'where.colour'],
      ['a where that is missing (update)', () => parseUpdateArgs(tag, { data: { name: 'x' } }), 'where'],
    ];
    for (const [name, parse, path] of cases) it(`${name} → ${path}`, () => expect(refusedAt(parse)).to.equal(path));
    it('the message lists the keys the entity has', () => {
      expect(refusal(() => parseUniqueWhere(projectAssignment, { projectId: 1 }, 'where')).message).to.contain('id, or userId_projectId: { userId, projectId }');
      expect(refusal(() => parseUniqueWhere(tag, {}, 'where')).message).to.contain('id, or name');
    });
  });
});
