import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type FieldDef } from '../../contracts/entities';
import { runAggregate, runGroupBy } from '../../services/model/aggregate';
import { parseAggregateArgs, parseFindArgs, parseGroupByArgs, parseWhere, type FindOperation } from '../../services/model/args';
import { runFind, type Scope } from '../../services/model/query';
import { HttpError } from '../../services/shared/errors';
import { useSeededWorld } from './queryFixtures';

/**
 * Random read bodies, built from the catalogue and mostly well-formed, with bad values, keys and
 * shapes mixed in: every one either answers or is a 400 `invalid-argument` naming a path, never
 * another error. Seeded, so a failure repeats.
 */

const ITERATIONS = 1500;

function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  const chance = (p: number) => next() < p;
  return { int, pick, chance };
}

type Random = ReturnType<typeof random>;

const ODD_VALUES: unknown[] = [null, true, false, 0, -1, 1.5, 2 ** 31, -(2 ** 40), '', 'a', 'A%_\\', 'x\u0000y', '2024-01-10T00:00:00Z', '2024-02-30T00:00:00Z', '0000-01-01T00:00:00Z', [], [1, 'a'], {}, { id: 1 }];
const OPERATORS = ['equals', 'not', 'in', 'notIn', 'lt', 'lte', 'gt', 'gte', 'contains', 'startsWith', 'endsWith', 'mode', 'has', 'hasSome', 'hasEvery', 'isEmpty', 'path', 'some'];

function valueFor(r: Random, field: FieldDef): unknown {
  if (r.chance(0.05)) return r.pick(ODD_VALUES);
  const scalar = (): unknown => {
    if (field.enum) return r.pick(field.enum);
    switch (field.type) {
      case 'int': return r.pick([0, 1, 3, 100, 101, 1000, -5]);
      case 'float': return r.pick([0, 0.5, -1.5, 10.25]);
      case 'string': return r.pick(['a', 'Login', 'smoke', 'Zeta', 'ok', '']);
      case 'boolean': return r.chance(0.5);
      case 'datetime': return r.pick(['2024-01-10T00:00:00Z', '2024-01-12T00:00:00+02:00']);
      case 'json': return field.nullable ? null : r.pick(ODD_VALUES);
    }
  };
  return field.list ? [scalar(), scalar()].slice(0, r.int(3)) : scalar();
}

/** The operators that apply to the field, mostly; any operator now and then. */
function operatorFor(r: Random, field: FieldDef): string {
  if (r.chance(0.1)) return r.pick(OPERATORS);
  if (field.list) return r.pick(['equals', 'has', 'hasSome', 'hasEvery', 'isEmpty']);
  if (field.type === 'boolean' || field.type === 'json') return r.pick(['equals', 'not']);
  if (field.enum) return r.pick(['equals', 'not', 'in', 'notIn']);
  if (field.type === 'string') return r.pick(OPERATORS.slice(0, 12));
  return r.pick(OPERATORS.slice(0, 8));
}

function fieldFilter(r: Random, field: FieldDef): unknown {
  if (r.chance(0.3)) return valueFor(r, field);
  const filter: Record<string, unknown> = {};
  for (let i = 0; i < 1 + r.int(2); i++) {
    const op = operatorFor(r, field);
    filter[op] = op === 'in' || op === 'notIn' || op === 'hasSome' || op === 'hasEvery' ? [valueFor(r, field), valueFor(r, field)] : op === 'mode' ? r.pick(['insensitive', 'default', 'x']) : op === 'isEmpty' ? r.chance(0.5) : valueFor(r, field);
  }
  return filter;
}

function where(r: Random, entity: EntityDef, depth: number): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  const fields = Object.keys(entity.fields);
  const relations = Object.keys(entity.relations);
  for (let i = 0; i < 1 + r.int(3); i++) {
    const roll = r.int(10);
    if (roll < 5 || depth > 2) {
      const name = r.pick(fields);
      result[name] = fieldFilter(r, entity.fields[name]);
    } else if (roll < 8) {
      const name = r.pick(relations);
      const relation = entity.relations[name];
      const target = ENTITIES[relation.target];
      const nested = where(r, target, depth + 1);
      result[name] = relation.kind === 'many' ? { [r.chance(0.05) ? 'any' : r.pick(['some', 'every', 'none'])]: nested } : r.pick([nested, { is: nested }, { isNot: r.chance(0.3) ? null : nested }, null]);
    } else {
      result[r.pick(['AND', 'OR', 'NOT'])] = r.chance(0.5) ? where(r, entity, depth + 1) : [where(r, entity, depth + 1), where(r, entity, depth + 1)];
    }
  }
  if (r.chance(0.02)) result.nope = 1;
  return result;
}

function orderBy(r: Random, entity: EntityDef, depth = 0): Record<string, unknown> {
  const relations = Object.keys(entity.relations);
  if (r.chance(0.3) && relations.length > 0 && depth < 3) {
    const name = r.pick(relations);
    const relation = entity.relations[name];
    return { [name]: relation.kind === 'many' ? { _count: r.pick(['asc', 'desc', 'up']) } : orderBy(r, ENTITIES[relation.target], depth + 1) };
  }
  const name = r.pick(Object.keys(entity.fields));
  const nullable = entity.fields[name].nullable;
  const direction = r.chance(0.05) ? 'sideways' : r.pick<unknown>(['asc', 'desc', { sort: 'desc' }, ...(nullable ? [{ sort: 'asc', nulls: 'first' }, { sort: 'desc', nulls: 'last' }] : [])]);
  return { [name]: direction };
}

function paging(r: Random, body: Record<string, unknown>) {
  if (r.chance(0.4)) body.take = r.chance(0.1) ? r.pick<unknown>([1.5, '2']) : r.pick([0, 1, 2, -1, -3, 10]);
  if (r.chance(0.3)) body.skip = r.chance(0.1) ? -1 : r.pick([0, 1, 3]);
  if (r.chance(0.3)) body.cursor = r.chance(0.1) ? r.pick<unknown>([{ id: 'x' }, 5]) : { id: r.pick([100, 103, 12, 1, 999, 700, 1000]) };
  if (r.chance(0.5)) body.orderBy = r.chance(0.5) ? orderBy(r, body.__entity as EntityDef) : [orderBy(r, body.__entity as EntityDef), orderBy(r, body.__entity as EntityDef)];
}

function shape(r: Random, entity: EntityDef, depth: number): Record<string, unknown> {
  const include: Record<string, unknown> = {};
  for (const name of Object.keys(entity.relations)) {
    if (!r.chance(depth === 0 ? 0.3 : 0.15)) continue;
    const relation = entity.relations[name];
    const target = ENTITIES[relation.target];
    if (depth >= 2 || r.chance(0.3)) {
      include[name] = true;
      continue;
    }
    const nested: Record<string, unknown> = { __entity: target };
    if (relation.kind === 'many') {
      if (r.chance(0.5)) nested.where = where(r, target, 1);
      paging(r, nested);
    }
    Object.assign(nested, shape(r, target, depth + 1));
    delete nested.__entity;
    include[name] = nested;
  }
  if (r.chance(0.2)) include._count = r.chance(0.5) ? true : { select: Object.fromEntries(Object.keys(entity.relations).filter((name) => entity.relations[name].kind === 'many').slice(0, 2).map((name) => [name, r.chance(0.5) ? true : { where: where(r, ENTITIES[entity.relations[name].target], 2) }])) };
  if (Object.keys(include).length === 0) return {};
  if (r.chance(0.3)) return { select: { id: true, ...include } };
  return { include };
}

const scope: Scope = (entity) => {
  if (entity.projectPath) return parseWhere(entity, entity.projectPath.reduceRight<unknown>((inner, relation) => ({ [relation]: { is: inner } }), { id: { in: [1, 2] } }), 'scope');
  if (entity.name === 'tag') return parseWhere(entity, { name: { not: 'secret' } }, 'scope');
  return undefined;
};

describe('model API reads: random bodies answer or are refused with a 400, never another error', () => {
  let knex: Knex;
  useSeededWorld('model_fuzz', (k) => (knex = k));

  const entities = [ENTITIES.project, ENTITIES.repositoryFolder, ENTITIES.repositoryCase, ENTITIES.tag, ENTITIES.step, ENTITIES.testRunResult, ENTITIES.status, ENTITIES.caseField, ENTITIES.caseFieldValue];

  async function outcome(run: () => Promise<unknown>): Promise<'answered' | 'refused'> {
    try {
      await run();
      return 'answered';
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      expect(err.status).to.equal(400);
      expect(err.code).to.equal('invalid-argument');
      expect(err.details.path).to.be.a('string');
      return 'refused';
    }
  }

  it(`${ITERATIONS} findMany / findFirst / count / aggregate / groupBy bodies`, async () => {
    const r = random(20240601);
    const seen = { answered: 0, refused: 0 };
    for (let i = 0; i < ITERATIONS; i++) {
      const entity = r.pick(entities);
      const options = r.chance(0.5) ? { scope } : {};
      const body: Record<string, unknown> = { __entity: entity };
      if (r.chance(0.7)) body.where = where(r, entity, 0);
      const kind = r.int(10);
      let run: () => Promise<unknown>;
      if (kind < 6) {
        paging(r, body);
        Object.assign(body, shape(r, entity, 0));
        if (r.chance(0.15)) body.distinct = r.chance(0.5) ? r.pick(Object.keys(entity.fields)) : [r.pick(Object.keys(entity.fields))];
        delete body.__entity;
        const op: FindOperation = r.pick(['findMany', 'findMany', 'findFirst', 'count']);
        if (op === 'count') for (const key of Object.keys(body)) if (key !== 'where' && r.chance(0.9)) delete body[key];
        run = () => runFind(knex, entity, op, parseFindArgs(entity, op, body), options);
      } else if (kind < 8) {
        paging(r, body);
        delete body.__entity;
        const field = r.pick(Object.keys(entity.fields));
        body[r.pick(['_count', '_sum', '_avg', '_min', '_max'])] = r.chance(0.2) ? true : { [field]: true };
        run = () => runAggregate(knex, entity, parseAggregateArgs(entity, body), options);
      } else {
        delete body.__entity;
        const fields = Object.keys(entity.fields);
        const by = r.chance(0.5) ? [r.pick(fields)] : [r.pick(fields), r.pick(fields)];
        body.by = by;
        if (r.chance(0.6)) body.having = { [r.pick([...by, r.pick(fields)])]: r.chance(0.5) ? { [r.pick(['_count', '_sum', '_avg', '_min', '_max'])]: fieldFilter(r, entity.fields[by[0]]) } : fieldFilter(r, entity.fields[by[0]]) };
        if (r.chance(0.5)) body.orderBy = r.chance(0.5) ? { [by[0]]: r.pick(['asc', 'desc']) } : { _count: { [r.pick(fields)]: 'desc' } };
        if (r.chance(0.3)) body._avg = { [r.pick(fields)]: true };
        if (r.chance(0.3)) body.take = r.pick([1, 2, -1]);
        run = () => runGroupBy(knex, entity, parseGroupByArgs(entity, body), options);
      }
      try {
        seen[await outcome(run)]++;
      } catch (err) {
        throw new Error(`body ${i} on ${entity.name} (${JSON.stringify(body)}) failed with ${String(err)}`, { cause: err });
      }
    }
    // The generator must exercise both sides.
    expect(seen.answered).to.be.greaterThan(ITERATIONS / 10);
    expect(seen.refused).to.be.greaterThan(ITERATIONS / 10);
  });
});
