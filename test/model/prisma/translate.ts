import type { EntityDef, FieldDef, RelationDef } from '../../../contracts/entities';
import { linkRelationName, type Catalogue } from './schema';

/**
 * A model API request body → the Prisma Client 7 arguments meaning the same thing, and Prisma's
 * answer → the model API's answer. Only what is legitimately different is translated:
 *
 * - Prisma never promises an order it was not asked for: every list gets our implicit `id asc`
 *   tiebreak spelled out (groupBy: the `by` fields ascending, as our engine does);
 * - results are always asked for with `select` (an `include` would also return the generated
 *   schema's hidden back-relation scalars), and `_count: true` names the catalogue's list relations;
 * - a many-to-many relation goes through its join model (`tags: { some: { tag: W } }`), and the
 *   join rows are flattened back into the related rows;
 * - JSON null checks use `DbNull` (Prisma refuses a bare null on a Json filter);
 * - Date objects become ISO strings.
 */

type Json = Record<string, unknown>;

/** Conditions Prisma keeps (it drops empty objects): `notIn: []` is true and `in: []` false on every row. */
const TRUE: Json = { id: { notIn: [] } };
const FALSE: Json = { id: { in: [] } };
const LIKE_OPERATORS = ['contains', 'startsWith', 'endsWith'];

export interface Translator {
  where(entity: EntityDef, where: unknown): Json;
  findArgs(entity: EntityDef, op: 'findMany' | 'findFirst', args: Json): Json;
  aggregateArgs(entity: EntityDef, args: Json): Json;
  groupByArgs(entity: EntityDef, args: Json): Json;
  /** Prisma's rows → our objects for the given request (flattens join rows, Dates → ISO strings). */
  result(entity: EntityDef, args: Json, value: unknown): unknown;
}

export function translator(catalogue: Catalogue, dbNull: unknown): Translator {
  const targetOf = (relation: RelationDef): EntityDef => catalogue[relation.target];
  const linkField = (relation: RelationDef): string => linkRelationName(relation.through!.targetKey);

  /**
   * A where, rewritten into one `AND` list of conditions Prisma evaluates as we do:
   * - a comparison on a nullable field also demands a value (our filters are two-valued: `not: 'x'`
   *   and `NOT` keep the rows where the field is null, Prisma's SQL three-valued logic drops them;
   *   `notIn: []` alone holds for nulls too, in both);
   * - `not: { ... }` becomes `NOT: { ... }` (Prisma reads `not: { not: v }` as `not: v`);
   * - `equals` with `mode: 'insensitive'` becomes `in: [v]` (Prisma compares with an unescaped
   *   ILIKE, so `_` and `%` in the value act as wildcards), and the text of contains / startsWith /
   *   endsWith gets `\`, `%` and `_` escaped (Prisma puts it into LIKE as it is: `contains: '%'`
   *   matches every row; ours matches them literally);
   * - an empty where, AND or NOT list becomes an explicit true condition and an empty OR list an
   *   explicit false one (Prisma drops an empty object inside OR / NOT: `OR: [{}]` matches nothing).
   */
  function where(entity: EntityDef, value: unknown): Json {
    const conditions: Json[] = [];
    for (const [key, v] of Object.entries((value ?? {}) as Json)) {
      if (v === undefined) continue;
      if (key === 'AND' || key === 'OR' || key === 'NOT') conditions.push(logical(entity, key, v));
      else if (Object.hasOwn(entity.fields, key)) conditions.push(...fieldConditions(key, entity.fields[key], v));
      else conditions.push({ [key]: relationFilter(entity.relations[key], v) });
    }
    return conditions.length === 0 ? TRUE : { AND: conditions };
  }

  function logical(entity: EntityDef, key: 'AND' | 'OR' | 'NOT', value: unknown): Json {
    if (!Array.isArray(value)) return key === 'NOT' ? { NOT: where(entity, value) } : where(entity, value);
    const items = value.map((item) => where(entity, item));
    if (items.length > 0) return { [key]: items };
    return key === 'OR' ? FALSE : TRUE;
  }

  /**
   * Our filter on one field → Prisma conditions to AND. `wrap` places a filter object: on the field
   * (`{ name: F }`) or, for having, on one of its aggregates (`{ rating: { _avg: F } }`).
   */
  function fieldConditions(name: string, field: FieldDef, value: unknown, wrap = (filter: unknown): Json => ({ [name]: filter }), nullChecks?: { isSet: Json; isNull: Json }): Json[] {
    const nothing = field.type === 'json' ? dbNull : null;
    const isSet = nullChecks?.isSet ?? wrap({ not: nothing });
    const isNull = nullChecks?.isNull ?? wrap({ equals: nothing });
    const guarded = (condition: Json): Json => (field.nullable && !field.list ? { AND: [isSet, condition] } : condition);
    if (value === null) return [isNull];
    if (typeof value !== 'object' || Array.isArray(value)) return [guarded(wrap({ equals: value }))];
    const { mode, ...operators } = value as Json;
    const insensitive = mode === 'insensitive';
    const compare = (op: string, v: unknown): Json => {
      if (insensitive && op === 'equals') return wrap({ in: [v], mode });
      const literal = LIKE_OPERATORS.includes(op) ? (v as string).replace(/[\\%_]/g, (c) => `\\${c}`) : v;
      return wrap({ [op]: literal, ...(insensitive && { mode }) });
    };
    const conditions: Json[] = [];
    for (const [op, v] of Object.entries(operators)) {
      if (v === undefined) continue;
      if (op === 'equals' && v === null) conditions.push(isNull);
      else if (op === 'not' && v === null) conditions.push(isSet);
      // mode applies inside a nested not, as in Prisma.
      else if (op === 'not' && typeof v === 'object' && !Array.isArray(v)) {
        conditions.push({ NOT: { AND: fieldConditions(name, field, { ...(insensitive && { mode }), ...(v as Json) }, wrap, nullChecks) } });
      } else if (op === 'not') conditions.push({ NOT: guarded(compare('equals', v)) });
      // `notIn: []` holds for every row, nulls too (as in Prisma).
      else if (field.list || (op === 'notIn' && Array.isArray(v) && v.length === 0)) conditions.push(wrap({ [op]: v }));
      else conditions.push(guarded(compare(op, v)));
    }
    return conditions.length === 0 ? [TRUE] : conditions;
  }

  /** groupBy `having`: plain filters on by fields and aggregate filters (`{ f: { _avg: F } }`), two-valued like ours. */
  function having(entity: EntityDef, value: unknown): Json {
    const conditions: Json[] = [];
    for (const [key, v] of Object.entries((value ?? {}) as Json)) {
      if (v === undefined) continue;
      if (key === 'AND' || key === 'OR' || key === 'NOT') {
        const items = Array.isArray(v) ? v.map((item) => having(entity, item)) : [having(entity, v)];
        if (key === 'NOT') conditions.push(Array.isArray(v) ? { AND: items.map((item) => ({ NOT: item })) } : { NOT: items[0] });
        else if (items.length === 0) conditions.push(key === 'OR' ? FALSE : TRUE);
        else conditions.push(key === 'OR' || Array.isArray(v) ? { [key]: items } : items[0]);
        continue;
      }
      const field = entity.fields[key];
      const isFilterObject = v !== null && typeof v === 'object' && !Array.isArray(v);
      const aggregates = isFilterObject ? Object.entries(v as Json).filter(([op]) => op.startsWith('_')) : [];
      const plain = isFilterObject ? Object.fromEntries(Object.entries(v as Json).filter(([op]) => !op.startsWith('_'))) : v;
      if (!isFilterObject || Object.keys(plain as Json).length > 0) conditions.push(...fieldConditions(key, field, plain));
      for (const [fn, filter] of aggregates) {
        // An aggregate over a group with no values is null (only a count never is); Prisma takes no
        // null check on an aggregate, the count of values says the same.
        const aggregateField: FieldDef = fn === '_count'
          ? { ...field, type: 'int', nullable: false, enum: undefined }
          : { ...field, type: fn === '_avg' ? 'float' : field.type, nullable: true };
        const nullChecks = { isSet: { [key]: { _count: { gt: 0 } } }, isNull: { [key]: { _count: { equals: 0 } } } };
        conditions.push(...fieldConditions(key, aggregateField, filter, (f) => ({ [key]: { [fn]: f } }), nullChecks));
      }
    }
    return conditions.length === 0 ? TRUE : { AND: conditions };
  }

  function relationFilter(relation: RelationDef, value: unknown): unknown {
    const target = targetOf(relation);
    if (relation.kind === 'one') {
      if (value === null) return null;
      const input = value as Json;
      if (!('is' in input) && !('isNot' in input)) return { is: where(target, input) };
      return Object.fromEntries(Object.entries(input).map(([quantifier, nested]) => [quantifier, nested === null ? null : where(target, nested)]));
    }
    return Object.fromEntries(Object.entries(value as Json).map(([quantifier, nested]) => {
      const translated = where(target, nested);
      return [quantifier, relation.through ? { [linkField(relation)]: translated } : translated];
    }));
  }

  /** Our orderBy (object or list) as a list ending in the id tiebreak; `wrap` moves each key under a join model's relation. */
  function orderBy(value: unknown, wrap: (key: Json) => Json = (key) => key): Json[] {
    const keys = (value === undefined ? [] : Array.isArray(value) ? value : [value]) as Json[];
    const hasId = keys.some((key) => 'id' in key);
    return [...keys, ...(hasId ? [] : [{ id: 'asc' }])].map(wrap);
  }

  /** include / select → a Prisma `select` of exactly the fields our answer has. */
  function selection(entity: EntityDef, holder: Json): Json {
    const select: Json = {};
    const given = (holder.select ?? holder.include) as Json | undefined;
    if (holder.select === undefined) for (const name of Object.keys(entity.fields)) select[name] = true;
    for (const [key, v] of Object.entries(given ?? {})) {
      if (v === undefined || v === false) continue;
      if (key === '_count') select._count = countSelection(entity, v);
      else if (Object.hasOwn(entity.fields, key)) select[key] = v;
      else select[key] = relationLoad(entity.relations[key], v);
    }
    return select;
  }

  function relationLoad(relation: RelationDef, value: unknown): Json {
    const target = targetOf(relation);
    const load = value === true ? {} : (value as Json);
    const inner = { select: selection(target, load) };
    if (relation.kind === 'one') return inner;
    if (!relation.through) {
      return {
        ...inner,
        orderBy: orderBy(load.orderBy),
        ...(load.where !== undefined && { where: where(target, load.where) }),
        ...(load.take !== undefined && { take: load.take }),
        ...(load.skip !== undefined && { skip: load.skip }),
        ...(load.cursor !== undefined && { cursor: load.cursor }),
      };
    }
    const link = linkField(relation);
    return {
      select: { [link]: inner },
      orderBy: orderBy(load.orderBy, (key) => ({ [link]: key })),
      ...(load.where !== undefined && { where: { [link]: where(target, load.where) } }),
      ...(load.take !== undefined && { take: load.take }),
      ...(load.skip !== undefined && { skip: load.skip }),
    };
  }

  function countSelection(entity: EntityDef, value: unknown): Json {
    const lists = Object.keys(entity.relations).filter((name) => entity.relations[name].kind === 'many');
    const chosen = value === true ? Object.fromEntries(lists.map((name) => [name, true])) : ((value as Json).select as Json);
    const select: Json = {};
    for (const [name, v] of Object.entries(chosen)) {
      if (v === false || v === undefined) continue;
      const relation = entity.relations[name];
      if (v === true) select[name] = true;
      else {
        const translated = where(targetOf(relation), (v as Json).where);
        select[name] = { where: relation.through ? { [linkField(relation)]: translated } : translated };
      }
    }
    return { select };
  }

  function findArgs(entity: EntityDef, _op: 'findMany' | 'findFirst', args: Json): Json {
    return {
      select: selection(entity, args),
      orderBy: orderBy(args.orderBy),
      ...(args.where !== undefined && { where: where(entity, args.where) }),
      ...(args.take !== undefined && { take: args.take }),
      ...(args.skip !== undefined && { skip: args.skip }),
      ...(args.distinct !== undefined && { distinct: args.distinct }),
      ...(args.cursor !== undefined && { cursor: args.cursor }),
    };
  }

  function aggregateArgs(entity: EntityDef, args: Json): Json {
    const { where: w, orderBy: o, ...rest } = args;
    return { ...rest, ...(w !== undefined && { where: where(entity, w) }), orderBy: orderBy(o) };
  }

  function groupByArgs(entity: EntityDef, args: Json): Json {
    const { where: w, orderBy: o, having: h, ...rest } = args;
    const by = (typeof args.by === 'string' ? [args.by] : args.by) as string[];
    const keys = (o === undefined ? [] : Array.isArray(o) ? o : [o]) as Json[];
    const ordered = new Set(keys.flatMap((key) => Object.keys(key)));
    return { ...rest, ...(w !== undefined && { where: where(entity, w) }), ...(h !== undefined && { having: having(entity, h) }), orderBy: [...keys, ...by.filter((field) => !ordered.has(field)).map((field) => ({ [field]: 'asc' }))] };
  }

  function result(entity: EntityDef, args: Json, value: unknown): unknown {
    if (Array.isArray(value)) return value.map((row) => object(entity, args, row as Json));
    if (value === null || typeof value !== 'object' || value instanceof Date) return plain(value);
    return object(entity, args, value as Json);
  }

  function object(entity: EntityDef, holder: Json, row: Json): Json {
    const given = (holder.select ?? holder.include ?? {}) as Json;
    const out: Json = {};
    for (const [key, v] of Object.entries(row)) {
      const relation = Object.hasOwn(entity.relations, key) ? entity.relations[key] : undefined;
      if (!relation || v === null) out[key] = plain(v);
      else {
        const load = given[key] === true ? {} : (given[key] as Json);
        const target = targetOf(relation);
        if (relation.kind === 'one') out[key] = object(target, load, v as Json);
        else if (relation.through) out[key] = (v as Json[]).map((link) => object(target, load, link[linkField(relation)] as Json));
        else out[key] = (v as Json[]).map((child) => object(target, load, child));
      }
    }
    return out;
  }

  return { where, findArgs, aggregateArgs, groupByArgs, result };
}

/** Dates → ISO strings, recursively (aggregates, scalar values). */
export function plain(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}
