import fc from 'fast-check';
import type { EntityDef, FieldDef, RelationDef } from '../../../contracts/entities';
import type { Catalogue } from './schema';
import { POOLS } from './seed';

/**
 * fast-check generators of model API request bodies, derived from the catalogue: every scalar
 * filter operator for each field type (values from the seed's pools, so filters hit), AND / OR /
 * NOT, relation filters nested, orderBy (with `{ sort, nulls }` on optional fields), take/skip,
 * include/select with nested where/orderBy/take/skip and `_count`.
 *
 * `Features` switches on what the engine under test may not support yet (probed by the spec), so
 * that the generators grow with the engine instead of being edited alongside it.
 */

type Json = Record<string, unknown>;
type Arb<T = unknown> = fc.Arbitrary<T>;

export interface Features {
  /** has / hasSome / hasEvery / isEmpty / equals on scalar lists. */
  listFilters: boolean;
  /** Relation filters, include and _count through `through` (many-to-many) relations. */
  manyToMany: boolean;
  /** `distinct`. */
  distinct: boolean;
  /** Negative `take` (the last rows in the requested order). */
  negativeTake: boolean;
  /** `cursor: { id }`. */
  cursor: boolean;
  /** orderBy on a to-one relation's field (`{ folder: { name: 'asc' } }`). */
  orderByRelation: boolean;
}

export interface QueryArbitraries {
  findMany(entity: EntityDef): Arb<Json>;
  findFirst(entity: EntityDef): Arb<Json>;
  count(entity: EntityDef): Arb<Json>;
  aggregate(entity: EntityDef): Arb<Json>;
  groupBy(entity: EntityDef): Arb<Json>;
  where(entity: EntityDef, depth: number): Arb<Json>;
}

const SORTABLE: readonly FieldDef['type'][] = ['int', 'float', 'string', 'boolean', 'datetime'];

export interface GeneratorOptions {
  /** Rows per table in the seed: ids and foreign keys are drawn from 0..rows + 1. */
  rowsPerEntity: number;
  /** Whether `_count: true` (every list relation) may be asked of the entity. */
  countAll(entity: EntityDef): boolean;
  /** Inputs on which the engine is known to answer wrongly (see README.md): not generated until fixed. */
  avoid: KnownDivergences;
}

export interface KnownDivergences {
  /**
   * An `OR` with a branch true by its form (`{}`, `OR: [{}]`) emits no SQL in our engine; inside
   * another OR, NOT or every, that empty group is dropped: `{ OR: [{ OR: [{}] }, { id: 0 }] }`
   * matches nothing, `{ NOT: { OR: [{}] } }` everything.
   */
  orWithTrueBranch: boolean;
  /**
   * orderBy a list relation's `_count` through an optional to-one relation that is unset:
   * Prisma counts 0 (COALESCE), our engine sorts it as null.
   */
  countThroughToOne: boolean;
  /**
   * `cursor` inside a list include: Prisma gives no rows to a parent whose related rows do not
   * hold the cursor row; our engine pages every parent's rows from the cursor row's place.
   */
  nestedCursor: boolean;
}

export function queryArbitraries(catalogue: Catalogue, features: Features, { rowsPerEntity, countAll, avoid }: GeneratorOptions): QueryArbitraries {
  const targetOf = (relation: RelationDef) => catalogue[relation.target];
  const usable = (relation: RelationDef) => features.manyToMany || !relation.through;
  const relationsOf = (entity: EntityDef) => Object.entries(entity.relations).filter(([, relation]) => usable(relation));
  const scalarFields = (entity: EntityDef) => Object.entries(entity.fields).filter(([, field]) => features.listFilters || !field.list);

  /** Absent with probability absent / (absent + present); shrinks towards absent. */
  const optional = <T>(arb: Arb<T>, absent = 1, present = 1): Arb<T | undefined> =>
    fc.oneof({ arbitrary: fc.constant(undefined), weight: absent }, { arbitrary: arb, weight: present });
  /** An object from optional entries, without the undefined ones. */
  const record = (entries: Record<string, Arb<unknown>>): Arb<Json> =>
    fc.record(entries).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));

  function values(field: FieldDef, entity: EntityDef, name: string): Arb<unknown> {
    switch (field.type) {
      case 'int':
        // ids and foreign keys: values that exist (and one that does not).
        return name === 'id' || isForeignKey(entity, field) ? fc.integer({ min: 0, max: rowsPerEntity + 1 }) : fc.constantFrom(...POOLS.int);
      case 'float':
        return fc.constantFrom(...POOLS.float);
      case 'string':
        return field.enum ? fc.constantFrom(...field.enum) : fc.constantFrom(...POOLS.string, 'zeta');
      case 'boolean':
        return fc.boolean();
      case 'datetime':
        // The same instants also written with an offset: the parser normalises them.
        return fc.oneof(fc.constantFrom(...POOLS.datetime), fc.constantFrom('2024-01-01T01:00:00+01:00', '2024-06-01T10:00:00.250+02:00'));
      case 'json':
        return fc.constant(null);
    }
  }

  function fieldFilter(entity: EntityDef, name: string, field: FieldDef): Arb<unknown> {
    if (field.list) return listFilter(field);
    const nullChecks: Arb<unknown>[] = field.nullable ? [fc.constant(null), fc.constant({ equals: null }), fc.constant({ not: null })] : [];
    if (field.type === 'json') return fc.oneof(...nullChecks);
    const value = values(field, entity, name);
    const list = fc.array(value, { maxLength: 3 });
    const comparable = field.type !== 'boolean' && !field.enum;
    const operators: Arb<Json>[] = [
      value.map((v) => ({ equals: v })),
      value.map((v) => ({ not: v })),
      ...(field.type !== 'boolean' ? [list.map((v) => ({ in: v })), list.map((v) => ({ notIn: v }))] : []),
      ...(comparable ? [
        fc.tuple(fc.constantFrom('lt', 'lte', 'gt', 'gte'), value).map(([op, v]) => ({ [op]: v })),
        fc.tuple(value, value).map(([a, b]) => ({ gte: a, lt: b })),
      ] : []),
    ];
    if (field.type === 'string' && !field.enum) {
      const like = fc.tuple(fc.constantFrom('contains', 'startsWith', 'endsWith'), fc.constantFrom(...POOLS.fragment)).map(([op, v]) => ({ [op]: v }));
      operators.push(like, like);
    }
    const operatorObject = fc.oneof(...operators);
    // not: { ...nested filter } (no mode inside: Prisma's nested filters have none).
    const nestedNot = operatorObject.map((inner) => ({ not: inner }));
    let filter: Arb<unknown> = fc.oneof(value, operatorObject, operatorObject, nestedNot, ...nullChecks);
    if (field.type === 'string' && !field.enum) {
      filter = fc.tuple(filter, fc.boolean()).map(([f, insensitive]) =>
        insensitive && f !== null && typeof f === 'object' ? { ...(f as Json), mode: 'insensitive' } : f);
    }
    return filter;
  }

  function listFilter(field: FieldDef): Arb<unknown> {
    // The seed's pools (seed.ts): an int list (`lastStatusIds`) holds ints, never the strings.
    const pool: readonly unknown[] = field.enum ?? (field.type === 'int' ? POOLS.int : POOLS.list);
    const item = fc.constantFrom(...pool);
    const items = fc.subarray([...pool]);
    return fc.oneof(
      item.map((v) => ({ has: v })),
      items.map((v) => ({ hasSome: v })),
      items.map((v) => ({ hasEvery: v })),
      fc.boolean().map((v) => ({ isEmpty: v })),
      items.map((v) => ({ equals: v })),
    );
  }

  function relationFilter(entity: EntityDef, relation: RelationDef, depth: number): Arb<unknown> {
    const nested = where(targetOf(relation), depth - 1);
    if (relation.kind === 'many') {
      return fc.oneof(
        nested.map((w) => ({ some: w })),
        nested.map((w) => ({ every: w })),
        nested.map((w) => ({ none: w })),
      );
    }
    const optionalRelation = isOptional(entity, relation);
    return fc.oneof(
      nested,
      nested.map((w) => ({ is: w })),
      nested.map((w) => ({ isNot: w })),
      ...(optionalRelation ? [fc.constant(null), fc.constant({ is: null }), fc.constant({ isNot: null })] : []),
    );
  }

  const whereCache = new Map<string, Arb<Json>>();
  function where(entity: EntityDef, depth: number): Arb<Json> {
    const key = `${entity.name}:${depth}`;
    const cached = whereCache.get(key);
    if (cached) return cached;
    const entries: Arb<[string, unknown]>[] = scalarFields(entity)
      .filter(([, field]) => field.type !== 'json' || field.nullable)
      .map(([name, field]) => fieldFilter(entity, name, field).map((f): [string, unknown] => [name, f]));
    if (depth > 0) {
      const nested = fc.constant(null).chain(() => where(entity, depth - 1));
      entries.push(
        fc.array(nested, { maxLength: 2 }).map((items): [string, unknown] => ['AND', items]),
        fc.array(nested, { maxLength: 3 }).map((items): [string, unknown] => ['OR', items]),
        fc.oneof(nested, fc.array(nested, { maxLength: 2 })).map((items): [string, unknown] => ['NOT', items]),
      );
      for (const [name, relation] of relationsOf(entity)) {
        entries.push(fc.constant(null).chain(() => relationFilter(entity, relation, depth)).map((f): [string, unknown] => [name, f]));
      }
    }
    let arb = fc.uniqueArray(fc.oneof(...entries), { maxLength: depth > 0 ? 3 : 2, selector: ([k]) => k }).map((pairs) => Object.fromEntries(pairs));
    if (avoid.orWithTrueBranch) arb = arb.filter((w) => !hasOrWithTrueBranch(w));
    whereCache.set(key, arb);
    return arb;
  }

  /** One `{ field: direction }` key on a sortable scalar field. */
  function scalarKey(entity: EntityDef, nonNull = false): Arb<Json> {
    const sortable = Object.entries(entity.fields).filter(([, field]) => SORTABLE.includes(field.type) && !field.list && !(nonNull && field.nullable));
    return fc.constantFrom(...sortable).chain(([name, field]) => {
      const direction = fc.constantFrom('asc', 'desc');
      return (field.nullable
        ? fc.oneof(direction, fc.record({ sort: direction, nulls: fc.constantFrom('first', 'last') }))
        : direction).map((d) => ({ [name]: d }));
    });
  }

  /** A key through to-one relations (one or two hops) or a list relation's `_count`. */
  function relationKey(entity: EntityDef, hops: number, top = true): Arb<Json> | undefined {
    const toOne = relationsOf(entity).filter(([, relation]) => relation.kind === 'one');
    const lists = relationsOf(entity).filter(([, relation]) => relation.kind === 'many');
    const options: Arb<Json>[] = [];
    if (toOne.length > 0) {
      options.push(fc.constantFrom(...toOne).chain(([name, relation]) => {
        const target = targetOf(relation);
        const deeper = hops > 1 ? relationKey(target, hops - 1, false) : undefined;
        // `nulls` only on optional fields: Prisma takes it nowhere else.
        const inner = deeper ? fc.oneof(scalarKey(target), deeper) : scalarKey(target);
        return inner.map((key) => ({ [name]: key }));
      }));
    }
    if (lists.length > 0 && (top || !avoid.countThroughToOne)) options.push(fc.tuple(fc.constantFrom(...lists), fc.constantFrom('asc', 'desc')).map(([[name], d]) => ({ [name]: { _count: d } })));
    return options.length > 0 ? fc.oneof(...options) : undefined;
  }

  /**
   * `forCursor`: only non-null scalar keys. Prisma's cursor condition compares the cursor row's
   * sort values with `<` / `>`, so a null among them (a nullable field, an unset relation) loses
   * rows: a Prisma bug, not compared.
   */
  function orderBy(entity: EntityDef, forCursor = false): Arb<unknown> {
    const keys: Arb<Json[]> = fc.uniqueArray(scalarKey(entity, forCursor), { maxLength: 2, selector: (k) => Object.keys(k)[0] });
    const viaRelation = features.orderByRelation && !forCursor ? relationKey(entity, 2) : undefined;
    const related: Arb<Json[]> = viaRelation ? optional(viaRelation).map((k) => (k ? [k] : [])) : fc.constant([]);
    // Ending with id (either direction) fixes the order completely; without it our engine adds id asc.
    return fc.tuple(related, keys, fc.constantFrom('asc', 'desc', undefined), fc.boolean()).map(([rel, scalars, id, bare]) => {
      const all = [...rel, ...scalars, ...(id ? [{ id }] : [])];
      const unique = all.filter((k, i) => all.findIndex((other) => Object.keys(other)[0] === Object.keys(k)[0]) === i);
      return bare && unique.length === 1 ? unique[0] : unique;
    });
  }

  const pageSize = (max: number) => optional(fc.integer({ min: 0, max }));
  const cursorOf = () => fc.integer({ min: 1, max: rowsPerEntity + 1 }).map((id) => ({ id }));

  /** `{ orderBy? }`, or (`withCursor`, when supported) `{ orderBy?, cursor }` with a cursor-safe order. */
  function ordering(entity: EntityDef, withCursor: boolean): Arb<Json> {
    const plain = record({ orderBy: optional(orderBy(entity), 1, 2) });
    if (!features.cursor || !withCursor) return plain;
    return fc.oneof({ arbitrary: plain, weight: 2 }, { arbitrary: record({ orderBy: optional(orderBy(entity, true)), cursor: cursorOf() }), weight: 1 });
  }
  const take = (max: number) => features.negativeTake ? optional(fc.integer({ min: -max, max })) : pageSize(max);

  function countSelection(entity: EntityDef, depth: number): Arb<unknown> {
    const lists = relationsOf(entity).filter(([, relation]) => relation.kind === 'many');
    if (lists.length === 0) return fc.constant(undefined);
    const one = fc.constantFrom(...lists).chain(([name, relation]) =>
      fc.oneof(fc.constant(true), where(targetOf(relation), Math.max(0, depth - 1)).map((w) => ({ where: w }))).map((v) => [name, v] as [string, unknown]));
    const chosen = fc.uniqueArray(one, { minLength: 1, maxLength: 2, selector: ([k]) => k }).map((pairs) => ({ select: Object.fromEntries(pairs) }));
    return countAll(entity) ? fc.oneof(fc.constant(true), chosen) : chosen;
  }

  function relationLoad(relation: RelationDef, depth: number): Arb<unknown> {
    const target = targetOf(relation);
    const shape = fc.constant(null).chain(() => shapeOf(target, depth - 1));
    if (relation.kind === 'one') return fc.oneof(fc.constant(true), shape);
    return fc.oneof(
      fc.constant(true),
      fc.tuple(shape, record({
        where: optional(where(target, 1)),
        take: take(3),
        skip: pageSize(2),
        // Prisma's cursor on a join model is its composite key: no cursor through a link.
      }), ordering(target, !relation.through && !avoid.nestedCursor))
        .map(([s, list, order]) => ({ ...list, ...order, ...s })),
    );
  }

  /** `{ include }`, `{ select }` or `{}`, down to `depth` levels of relations. */
  function shapeOf(entity: EntityDef, depth: number): Arb<Json> {
    const relations = depth > 0 ? relationsOf(entity) : [];
    const loads: Arb<Json> = relations.length === 0 ? fc.constant({}) : fc.uniqueArray(
      fc.constantFrom(...relations).chain(([name, relation]) => relationLoad(relation, depth).map((load) => [name, load] as [string, unknown])),
      { maxLength: 2, selector: ([k]) => k },
    ).map((pairs) => Object.fromEntries(pairs));
    const count = depth > 0 ? optional(countSelection(entity, depth), 2, 1) : fc.constant(undefined);
    const fields = Object.keys(entity.fields);
    const include = fc.tuple(loads, count).map(([l, c]) => ({ ...l, ...(c !== undefined && { _count: c }) }));
    const select = fc.tuple(fc.subarray(fields, { minLength: 1 }), include).map(([chosen, inc]) => ({
      ...Object.fromEntries(chosen.map((name) => [name, true])), ...inc,
    }));
    return fc.oneof(
      fc.constant({}),
      include.map((inc) => (Object.keys(inc).length === 0 ? {} : { include: inc })),
      select.map((sel) => ({ select: sel })),
    );
  }

  function findMany(entity: EntityDef): Arb<Json> {
    return fc.tuple(
      record({
        where: optional(where(entity, 2), 1, 4),

        take: take(8),
        skip: pageSize(5),
        ...(features.distinct && { distinct: optional(distinctFields(entity), 3, 1) }),
      }),
      ordering(entity, true),
      shapeOf(entity, 2),
    ).map(([partial, order, shape]) => {
      const args = { ...partial, ...order };
      // distinct with a cursor or a negative take: Prisma's in-memory distinct keeps the last row of
      // each group (negative take) or nothing at all (a cursor with a where): not compared.
      if (args.distinct === undefined) return { ...args, ...shape };
      const { cursor: _cursor, take: t, ...rest } = args;
      return { ...rest, ...(t !== undefined && { take: Math.abs(t as number) }), ...shape };
    });
  }

  function distinctFields(entity: EntityDef): Arb<unknown> {
    const fields = Object.entries(entity.fields).filter(([, field]) => SORTABLE.includes(field.type) && !field.list).map(([name]) => name);
    return fc.subarray(fields, { minLength: 1, maxLength: 2 }).map((chosen) => (chosen.length === 1 ? chosen[0] : chosen));
  }

  function aggregatesOf(entity: EntityDef, allowBareCount: boolean): Arb<Json> {
    const fields = Object.entries(entity.fields).filter(([, field]) => !field.list);
    const numeric = fields.filter(([, field]) => field.type === 'int' || field.type === 'float').map(([name]) => name);
    const ordered = fields.filter(([, field]) => ['int', 'float', 'datetime', 'string'].includes(field.type)).map(([name]) => name);
    const pick = (names: string[]) => fc.subarray(names, { minLength: 1, maxLength: Math.min(2, names.length) }).map((chosen) => Object.fromEntries(chosen.map((n) => [n, true])));
    const countFields = fc.subarray(['_all', ...fields.map(([name]) => name)], { minLength: 1, maxLength: 3 }).map((chosen) => Object.fromEntries(chosen.map((n) => [n, true])));
    return record({
      _count: optional(allowBareCount ? fc.oneof(fc.constant(true), countFields) : countFields),
      _sum: numeric.length > 0 ? optional(pick(numeric)) : fc.constant(undefined),
      _avg: numeric.length > 0 ? optional(pick(numeric)) : fc.constant(undefined),
      _min: optional(pick(ordered)),
      _max: optional(pick(ordered)),
    }).filter((aggregates) => Object.keys(aggregates).length > 0);
  }

  /** `having`: aggregate comparisons on any field, plain filters on the by fields, AND / OR / NOT of them. */
  function having(entity: EntityDef, by: string[]): Arb<Json> {
    const fields = Object.entries(entity.fields).filter(([, field]) => !field.list && field.type !== 'json');
    const numeric = fields.filter(([, field]) => field.type === 'int' || field.type === 'float');
    const comparison = (value: Arb<unknown>) => fc.tuple(fc.constantFrom('equals', 'lt', 'lte', 'gt', 'gte'), value).map(([op, v]) => ({ [op]: v }));
    const aggregate: Arb<Json>[] = [
      fc.tuple(fc.constantFrom(...fields), comparison(fc.integer({ min: 0, max: 4 }))).map(([[name], c]) => ({ [name]: { _count: c } })),
    ];
    if (numeric.length > 0) {
      // _avg compares as a float; _sum, _min and _max take the field's own type (Prisma truncates
      // a fractional bound on an Int sum, where a fraction can never be equal).
      aggregate.push(
        fc.tuple(fc.constantFrom(...numeric), comparison(fc.constantFrom(...POOLS.int, 1.5, 10, 50))).map(([[name], c]) => ({ [name]: { _avg: c } })),
        fc.constantFrom(...numeric).chain(([name, field]) =>
          fc.tuple(fc.constantFrom('_sum', '_min', '_max'), comparison(field.type === 'int' ? fc.constantFrom(...POOLS.int, 10, 50) : fc.constantFrom(...POOLS.float, 1.5, 10, 50)))
            .map(([fn, c]) => ({ [name]: { [fn]: c } }))),
      );
    }
    const plain = fc.constantFrom(...by).chain((name) => fieldFilter(entity, name, entity.fields[name]).map((f) => ({ [name]: f })));
    const leaf = fc.oneof(...aggregate, ...aggregate, plain);
    return fc.oneof(
      leaf,
      fc.array(leaf, { minLength: 1, maxLength: 2 }).map((items) => ({ OR: items })),
      leaf.map((item) => ({ NOT: item })),
    );
  }

  return {
    where,
    findMany,
    findFirst: (entity) => findMany(entity).map(({ take: _t, ...args }) => args),
    count: (entity) => record({ where: optional(where(entity, 2), 1, 4) }),
    aggregate: (entity) =>
      fc.tuple(record({
        where: optional(where(entity, 1), 1, 3),
        take: take(8),
        skip: pageSize(5),
      }), ordering(entity, true), aggregatesOf(entity, true))
        .map(([args, order, aggregates]) => ({ ...args, ...order, ...aggregates })),
    groupBy: (entity) => {
      const groupable = Object.entries(entity.fields).filter(([, field]) => SORTABLE.includes(field.type) && !field.list && field.type !== 'float').map(([name]) => name);
      return fc.subarray(groupable, { minLength: 1, maxLength: 2 }).chain((by) =>
        fc.tuple(
          record({ where: optional(where(entity, 1), 1, 3), having: optional(having(entity, by)), take: pageSize(6), skip: pageSize(3) }),
          aggregatesOf(entity, false).map((a) => (a._count === undefined ? { ...a, _count: { _all: true } } : a)),
          fc.subarray(by).chain((orderFields) => fc.tuple(...orderFields.map((f) => fc.constantFrom('asc', 'desc').map((d) => ({ [f]: d }))))),
          optional(fc.tuple(fc.constantFrom(...groupable), fc.constantFrom('asc', 'desc')).map(([f, d]) => ({ _count: { [f]: d } }))),
        ).map(([args, aggregates, fieldOrder, countOrder]) => ({
          by,
          ...args,
          ...aggregates,
          ...(fieldOrder.length + (countOrder ? 1 : 0) > 0 && { orderBy: [...(countOrder ? [countOrder] : []), ...fieldOrder] }),
        })));
    },
  };
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Somewhere in the where (relation filters included): an OR list with a branch true by its form. */
function hasOrWithTrueBranch(where: Json): boolean {
  return Object.entries(where).some(([key, v]) => {
    if (key === 'OR' && Array.isArray(v) && v.some((item) => isObject(item) && isTrueByForm(item))) return true;
    const nested = Array.isArray(v) ? v : isObject(v) ? [v, ...Object.values(v)] : [];
    return nested.some((item) => isObject(item) && hasOrWithTrueBranch(item));
  });
}

/** `{}`, and AND / OR / NOT combinations of it that hold for every row. */
function isTrueByForm(where: Json): boolean {
  return Object.entries(where).every(([key, v]) => {
    const items = (Array.isArray(v) ? v : [v]).filter(isObject);
    if (key === 'AND') return items.every(isTrueByForm);
    if (key === 'OR') return items.some(isTrueByForm);
    if (key === 'NOT') return Array.isArray(v) && v.length === 0;
    return false;
  });
}

function isForeignKey(entity: EntityDef, field: FieldDef): boolean {
  return Object.values(entity.relations).some((relation) => relation.kind === 'one' && relation.foreignKey === field.column);
}

function isOptional(entity: EntityDef, relation: RelationDef): boolean {
  const scalar = relation.scalar ? entity.fields[relation.scalar] : undefined;
  return scalar?.nullable ?? true;
}
