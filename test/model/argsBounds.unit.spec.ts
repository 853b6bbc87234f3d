import { expect } from 'chai';
import { ENTITIES } from '../../contracts/entities';
import {
  MAX_DISTINCT_FIELDS, MAX_ORDER_BY_KEYS, MAX_ORDER_BY_RELATIONS, MAX_RELATION_FILTERS, MAX_RELATION_LOADS, parseAggregateArgs, parseFindArgs, parseGroupByArgs, parseUpdateArgs,
} from '../../services/model/args';
import { HttpError } from '../../services/shared/errors';

const { project, repositoryCase: testCase, repositoryFolder: folder, testRunResult } = ENTITIES;

/** The 400 `query-too-large` that `parse` throws. */
function tooLarge(parse: () => unknown): HttpError {
  try {
    parse();
  } catch (err) {
    expect(err).to.be.instanceOf(HttpError);
    const error = err as HttpError;
    expect([error.status, error.code]).to.deep.equal([400, 'query-too-large']);
    return error;
  }
  throw new Error('expected the arguments to be refused');
}

const keys = (n: number) => Array.from({ length: n }, () => ({ id: 'asc' }));

describe('model API arguments: bounded query shapes', () => {
  it(`orderBy takes ${MAX_ORDER_BY_KEYS} sort keys, not one more (top level, in an include, in aggregate and groupBy)`, () => {
    expect(parseFindArgs(project, 'findMany', { orderBy: keys(MAX_ORDER_BY_KEYS) }).orderBy).to.have.length(MAX_ORDER_BY_KEYS);
    const refusals: [() => unknown, string][] = [
      [() => parseFindArgs(project, 'findMany', { orderBy: keys(5000), cursor: { id: 1 } }), 'orderBy'],
      [() => parseFindArgs(project, 'findMany', { orderBy: keys(MAX_ORDER_BY_KEYS + 1) }), 'orderBy'],
      [() => parseFindArgs(project, 'findMany', { include: { testRuns: { orderBy: keys(MAX_ORDER_BY_KEYS + 1) } } }), 'include.testRuns.orderBy'],
      [() => parseAggregateArgs(project, { _count: true, orderBy: keys(MAX_ORDER_BY_KEYS + 1) }), 'orderBy'],
      [() => parseGroupByArgs(project, { by: ['id'], orderBy: keys(MAX_ORDER_BY_KEYS + 1) }), 'orderBy'],
    ];
    for (const [parse, path] of refusals) {
      const error = tooLarge(parse);
      expect(error.details).to.deep.equal({ path, limit: MAX_ORDER_BY_KEYS });
      expect(error.message).to.contain(`at most ${MAX_ORDER_BY_KEYS} sort keys`);
    }
  });

  it(`distinct takes at most ${MAX_DISTINCT_FIELDS} fields`, () => {
    const error = tooLarge(() => parseFindArgs(project, 'findMany', { distinct: Array.from({ length: 5000 }, () => 'name') }));
    expect(error.details).to.deep.equal({ path: 'distinct', limit: MAX_DISTINCT_FIELDS });
  });

  it(`include and select load at most ${MAX_RELATION_LOADS} relations, counted at every level and with _count`, () => {
    // Every level includes its run case and the run case's own relations back: a tree that doubles per level.
    const tree = (depth: number): Record<string, unknown> => (depth === 0
      ? { testRunCase: true, testRun: true }
      : { testRunCase: { include: { results: { include: tree(depth - 1) } } }, testRun: { include: { results: { include: tree(depth - 1) } } } });
    expect(() => parseFindArgs(testRunResult, 'findMany', { include: tree(3) })).to.not.throw(); // 44 loads
    const error = tooLarge(() => parseFindArgs(testRunResult, 'findMany', { include: tree(4) })); // 92 loads
    expect(error.details).to.deep.equal({ path: 'include', limit: MAX_RELATION_LOADS });
    const selected = tooLarge(() => parseFindArgs(testRunResult, 'findUnique', { where: { id: 1 }, select: tree(4) }));
    expect(selected.details.path).to.equal('select');
    const counts = { _count: true, project: { include: { _count: true, repositoryCases: { include: { _count: true } } } } };
    expect(() => parseFindArgs(testCase, 'findMany', { include: counts })).to.not.throw();
    tooLarge(() => parseUpdateArgs(testRunResult, { where: { id: 1 }, data: { notes: 'x' }, include: tree(4) }));
  });

  it(`the sort keys of one orderBy go through at most ${MAX_ORDER_BY_RELATIONS} relations together`, () => {
    const through = (hops: number): Record<string, unknown> => (hops === 0 ? { name: 'asc' } : { parent: through(hops - 1) });
    expect(parseFindArgs(folder, 'findMany', { orderBy: [through(MAX_ORDER_BY_RELATIONS - 1), { children: { _count: 'asc' } }], cursor: { id: 1 } }).orderBy).to.have.length(2);
    expect(tooLarge(() => parseFindArgs(folder, 'findMany', { orderBy: [through(MAX_ORDER_BY_RELATIONS), { children: { _count: 'asc' } }] })).details)
      .to.deep.equal({ path: 'orderBy', limit: MAX_ORDER_BY_RELATIONS });
    expect(tooLarge(() => parseFindArgs(folder, 'findMany', { orderBy: through(30) })).details.path).to.equal('orderBy');
    expect(tooLarge(() => parseFindArgs(project, 'findMany', { include: { folders: { orderBy: Array.from({ length: 20 }, () => ({ parent: { id: 'asc' } })) } } })).details.path)
      .to.equal('include.folders.orderBy');
  });

  it(`the filters of one request go through at most ${MAX_RELATION_FILTERS} relations together`, () => {
    const within = (hops: number): Record<string, unknown> => (hops === 0 ? { name: 'x' } : { parent: within(hops - 1) });
    const anyOf = (n: number) => ({ OR: Array.from({ length: n }, () => within(1)) });
    expect(() => parseFindArgs(folder, 'findMany', { where: anyOf(MAX_RELATION_FILTERS) })).to.not.throw();
    expect(tooLarge(() => parseFindArgs(folder, 'findMany', { where: anyOf(3000) })).details).to.deep.equal({ path: 'where', limit: MAX_RELATION_FILTERS });
    expect(tooLarge(() => parseFindArgs(folder, 'count', { where: { AND: [within(30), within(30), within(10)] } })).details.path).to.equal('where');
    // The where of includes and _count counts with the request's own.
    const half = { OR: Array.from({ length: MAX_RELATION_FILTERS / 2 }, () => within(1)) };
    expect(tooLarge(() => parseFindArgs(folder, 'findMany', { where: half, include: { children: { where: half }, _count: { select: { children: { where: within(1) } } } } })).details.path).to.equal('');
    expect(tooLarge(() => parseAggregateArgs(folder, { _count: true, where: anyOf(MAX_RELATION_FILTERS + 1) })).details.path).to.equal('where');
    expect(tooLarge(() => parseGroupByArgs(folder, { by: ['name'], where: anyOf(MAX_RELATION_FILTERS + 1) })).details.path).to.equal('where');
  });
});
