import { ENTITIES, type EntityDef, type FieldDef, type RelationDef } from '../../contracts/entities';
import { badRequest } from '../shared/errors';
import { textProblem } from '../shared/text';
import { INT32_MAX, INT32_MIN, LIMITS, longerThan } from '../../contracts/limits';
import { parseId } from '../shared/validate';

/**
 * Strict parsing of model API request bodies (Prisma-style) into plain, already-validated
 * structures. Every refusal is a 400 `invalid-argument` whose `details.path` names the offending
 * spot (`where.name.contains`, `orderBy[0].folder.name`, `having.x._avg.gt`, ...), so a client can
 * point at it.
 *
 * Semantics worth knowing:
 * - Filters are two-valued: a null column fails every comparison except `equals: null`, so `not`
 *   and `NOT` give the exact complement (`not: 'x'` keeps nulls, unlike SQL `<>`).
 * - `NOT: {...}` negates the whole object; `NOT: [a, b]` means neither a nor b.
 * - datetime values are ISO 8601 date-times with a zone (`Z` or `+01:00`), normalised to UTC ISO strings.
 * - float fields take any finite number and filter like ints. An `enum` string field accepts only
 *   its values (written, compared, or listed in `in`), filtered with equals / not / in / notIn.
 * - json fields take any JSON value on write (null: no value) and are returned as stored; they
 *   filter on null only (`field: null`, `equals: null`, `not: null`): Prisma's JSON filters (path,
 *   string_contains, array_contains, equals on a value) are not offered. Not orderable, not
 *   distinct or groupBy keys.
 * - Scalar lists (`list: true`) are written as arrays (each item validated) and filtered as in
 *   Prisma: `has` (one item), `hasSome` (any of; [] matches nothing), `hasEvery` (all of; []
 *   matches every list), `isEmpty: true | false`, `equals` (same items in the same order). Not
 *   orderable, not distinct or groupBy keys.
 * - orderBy follows to-one relations to any depth (`{ folder: { parent: { name: 'asc' } } }`; a
 *   missing related row sorts as null, so `nulls` is accepted on such paths) and sorts by the
 *   number of related rows of a list relation (`{ repositoryCases: { _count: 'desc' } }`).
 * - A negative `take` takes from the end of the ordering (after `skip` rows from the end); the rows
 *   still come back in the requested order. `cursor: { id }` starts the page at that row
 *   (inclusive) in the requested order, or ends it there with a negative take; a cursor row that
 *   does not exist gives no rows. Both apply in list includes too.
 * - `count` accepts `where` only (Prisma's `select: { _all: true }` is refused: the answer is a bare integer).
 * - groupBy `having`: aggregate filters on any scalar field (`{ rating: { _avg: { gt: 3 } } }`)
 *   and plain filters on `by` fields, combined with AND / OR / NOT.
 */

export type FindOperation = 'findMany' | 'findFirst' | 'findUnique' | 'count';

/** A validated scalar value; datetimes are normalised ISO strings. */
export type ScalarValue = string | number | boolean;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A written field value: a scalar, a list of scalars (list fields), any JSON (json fields), or null. */
export type FieldValue = ScalarValue | ScalarValue[] | JsonValue;

export type SortDirection = 'asc' | 'desc';
export type NullsPosition = 'first' | 'last';

/**
 * A sort key: a scalar field, or the number of rows of a list relation (`count`), of the row
 * itself or of the row reached through the to-one relations in `via` (absent when empty).
 */
export type OrderBy =
  | {
      field: string;
      direction: SortDirection;
      /** Where nulls go; absent: PostgreSQL's default (last ascending, first descending), as Prisma. */
      nulls?: NullsPosition;
      via?: string[];
    }
  | { count: string; direction: SortDirection; via?: string[] };

export type RelationQuantifier = 'some' | 'every' | 'none' | 'is' | 'isNot';

export type Where =
  | { kind: 'and'; items: Where[] }
  | { kind: 'or'; items: Where[] }
  | { kind: 'not'; item: Where }
  | { kind: 'compare'; field: string; op: 'equals' | 'lt' | 'lte' | 'gt' | 'gte'; value: ScalarValue; insensitive: boolean }
  | { kind: 'in'; field: string; negated: boolean; values: ScalarValue[]; insensitive: boolean }
  | { kind: 'like'; field: string; op: 'contains' | 'startsWith' | 'endsWith'; value: string; insensitive: boolean }
  | { kind: 'isNull'; field: string }
  /** Scalar lists: `has` carries one value. */
  | { kind: 'list'; field: string; op: 'has' | 'hasSome' | 'hasEvery' | 'equals'; values: ScalarValue[] }
  | { kind: 'listEmpty'; field: string; empty: boolean }
  /** `where: null` only with `is`/`isNot`: the relation is (not) set. */
  | { kind: 'relation'; relation: string; quantifier: RelationQuantifier; where: Where | null };

/** What to return for each row: scalar fields, loaded relations and relation counts. */
export interface Shape {
  fields: string[];
  relations: Record<string, RelationLoad>;
  /** Relation name → filter on the counted rows (null: count them all). */
  counts: Record<string, Where | null>;
}

export interface ListQuery {
  where?: Where;
  orderBy: OrderBy[];
  /** Negative: the last rows of the ordering, returned in the requested order. */
  take?: number;
  skip?: number;
  /** The id of the row the page starts at (ends at, with a negative take). */
  cursor?: number;
}

/** An included relation; where/orderBy/take/skip/cursor only ever set for kind 'many'. */
export interface RelationLoad extends ListQuery {
  shape: Shape;
}

export interface FindArgs extends ListQuery {
  shape: Shape;
  /** Scalar fields: of rows equal on all of them, only the first in the requested order is kept. */
  distinct?: string[];
}

export interface CreateArgs {
  /** Writable scalar fields, keyed by field name. */
  data: Record<string, FieldValue>;
  /** Relation name → target id (`connect`), or null (`disconnect`, update only). */
  connect: Record<string, number | null>;
  /** The parsed include/select, for `findRowById`. */
  shape: Shape;
}

/**
 * A unique where, as Prisma's (5+) WhereUniqueInput: at least one unique key of the entity (`id`,
 * a unique field, a compound unique `a_b: { a, b }`), given as values, and any other filters beside
 * them. A unique value other than an id names the row not deleted that holds it (deleted rows
 * give their values up), except a value unique for good (a user's e-mail).
 */
export interface UniqueWhere {
  /** Set when the where is `{ id }` alone: the row is known without a lookup. */
  id?: number;
  /** The whole where, keys and other filters. */
  where: Where;
}

export interface UpdateArgs extends CreateArgs {
  where: UniqueWhere;
}

export interface DeleteArgs {
  where: UniqueWhere;
  shape: Shape;
}

type Json = Record<string, unknown>;

const FIND_KEYS: Record<FindOperation, readonly string[]> = {
  findMany: ['where', 'include', 'select', 'orderBy', 'cursor', 'take', 'skip', 'distinct'],
  findFirst: ['where', 'include', 'select', 'orderBy', 'cursor', 'take', 'skip', 'distinct'],
  findUnique: ['where', 'include', 'select'],
  count: ['where'],
};

const OPERATORS_BY_TYPE: Record<FieldDef['type'], readonly string[]> = {
  int: ['equals', 'not', 'in', 'notIn', 'lt', 'lte', 'gt', 'gte'],
  float: ['equals', 'not', 'in', 'notIn', 'lt', 'lte', 'gt', 'gte'],
  datetime: ['equals', 'not', 'in', 'notIn', 'lt', 'lte', 'gt', 'gte'],
  string: ['equals', 'not', 'in', 'notIn', 'lt', 'lte', 'gt', 'gte', 'contains', 'startsWith', 'endsWith', 'mode'],
  boolean: ['equals', 'not'],
  // Only null checks (`equals: null`, `not: null`): Prisma's JSON path filters are not offered.
  json: ['equals', 'not'],
};
/** Enum fields: equality only, as Prisma's enum filters. */
const ENUM_OPERATORS = ['equals', 'not', 'in', 'notIn'] as const;
/** Scalar lists, as Prisma's scalar list filters. */
const LIST_OPERATORS = ['equals', 'has', 'hasSome', 'hasEvery', 'isEmpty'] as const;
const ALL_OPERATORS = new Set([...Object.values(OPERATORS_BY_TYPE).flat(), ...LIST_OPERATORS]);

const JSON_FILTERS_UNSUPPORTED =
  'a JSON field can only be filtered on null (null, equals: null, not: null); JSON value and path filters (path, string_contains, array_contains, equals on a value) are not supported';

const INT_MIN = INT32_MIN;
const INT_MAX = INT32_MAX;

// ---------------------------------------------------------------------------------------------
// Entry points

export function parseFindArgs(entity: EntityDef, op: FindOperation, body: unknown): FindArgs {
  const input = expectBody(body);
  allowOnlyKeys(input, FIND_KEYS[op], '', `${op} accepts`);
  const where = op === 'findUnique' ? parseUniqueWhere(entity, input.where, 'where').where : optionalWhere(entity, input.where, 'where');
  return {
    where,
    orderBy: parseOrderBy(entity, input.orderBy, 'orderBy'),
    take: parseTake(input.take, 'take'),
    skip: parsePageSize(input.skip, 'skip'),
    ...(input.cursor !== undefined && { cursor: uniqueId(entity, input.cursor, 'cursor').id }),
    shape: parseRequestShape(entity, input, where),
    ...(input.distinct !== undefined && { distinct: parseDistinct(entity, input.distinct, 'distinct') }),
  };
}

/** `distinct: 'field'` or `distinct: ['a', 'b']`: scalar fields, each once. */
function parseDistinct(entity: EntityDef, value: unknown, path: string): string[] {
  const fields = Array.isArray(value) ? value : [value];
  if (fields.length === 0) fail(path, 'needs at least one field');
  if (fields.length > MAX_DISTINCT_FIELDS) tooLarge(path, `takes at most ${MAX_DISTINCT_FIELDS} fields`, MAX_DISTINCT_FIELDS);
  return fields.map((name, i) => {
    const fieldPath = Array.isArray(value) ? `${path}[${i}]` : path;
    const field = typeof name === 'string' ? fieldOf(entity, name) : undefined;
    if (!field) return fail(fieldPath, `must be a scalar field of ${entity.name}`);
    if (!isComparable(field)) fail(fieldPath, `a ${describeType(field)} field cannot be a distinct key`);
    if (fields.indexOf(name) !== i) fail(fieldPath, 'is given twice');
    return name as string;
  });
}

export function parseCreateArgs(entity: EntityDef, body: unknown): CreateArgs {
  const input = expectBody(body);
  allowOnlyKeys(input, ['data', 'include', 'select'], '', 'create accepts');
  const { data, connect } = parseWriteData(entity, required(input, 'data', ''), 'data', 'create');
  for (const [name, field] of Object.entries(entity.fields)) {
    if (field.requiredOnCreate && !(name in data)) fail(at('data', name), 'is required');
  }
  for (const [name, relation] of Object.entries(entity.relations)) {
    if (relation.requiredOnCreate && !(name in connect)) fail(at('data', name), 'is required: { connect: { id } }');
  }
  return { data, connect, shape: parseRequestShape(entity, input) };
}

export function parseUpdateArgs(entity: EntityDef, body: unknown): UpdateArgs {
  const input = expectBody(body);
  allowOnlyKeys(input, ['where', 'data', 'include', 'select'], '', 'update accepts');
  const where = parseUniqueWhere(entity, input.where, 'where');
  const { data, connect } = parseWriteData(entity, required(input, 'data', ''), 'data', 'update');
  if (Object.keys(data).length + Object.keys(connect).length === 0) fail('data', 'must change at least one field');
  return { where, data, connect, shape: parseRequestShape(entity, input) };
}

export function parseDeleteArgs(entity: EntityDef, body: unknown): DeleteArgs {
  const input = expectBody(body);
  allowOnlyKeys(input, ['where', 'include', 'select'], '', 'delete accepts');
  const where = parseUniqueWhere(entity, input.where, 'where');
  return { where, shape: parseRequestShape(entity, input, where.where) };
}

/** All scalar fields, no relations: what an operation returns without include/select. */
export function defaultShape(entity: EntityDef): Shape {
  return { fields: Object.keys(entity.fields), relations: {}, counts: {} };
}

// ---------------------------------------------------------------------------------------------
// where

function optionalWhere(entity: EntityDef, value: unknown, path: string): Where | undefined {
  return value === undefined ? undefined : parseWhere(entity, value, path);
}

/** A request's top-level `where` where no include or select comes with it (aggregate, groupBy). */
function boundedWhere(entity: EntityDef, value: unknown): Where | undefined {
  const where = optionalWhere(entity, value, 'where');
  checkRelationFilters(where);
  return where;
}

/** The unique keys of an entity, as a unique where names them: `id`, its unique fields, its compound unique. */
export function uniqueKeysOf(entity: EntityDef): { name: string; fields: string[] }[] {
  return [
    { name: 'id', fields: ['id'] },
    ...Object.entries(entity.fields).filter(([, field]) => field.unique).map(([name]) => ({ name, fields: [name] })),
    ...(entity.uniqueTogether ? [{ name: entity.uniqueTogether.join('_'), fields: [...entity.uniqueTogether] }] : []),
  ];
}

export function parseUniqueWhere(entity: EntityDef, value: unknown, path: string): UniqueWhere {
  if (value === undefined) fail(path, 'is required');
  const input = expectObject(value, path);
  const keys = uniqueKeysOf(entity);
  const items: Where[] = [];
  let keyed = false;
  for (const [name, v] of definedEntries(input)) {
    const keyPath = at(path, name);
    const key = keys.find((k) => k.name === name);
    if (!key) {
      items.push(parseWhereEntry(entity, name, v, keyPath));
      continue;
    }
    keyed = true;
    const values = key.fields.length === 1 ? { [name]: v } : expectObject(v, keyPath);
    if (key.fields.length > 1) {
      allowOnlyKeys(values, key.fields, keyPath, 'a compound unique takes');
      for (const field of key.fields) if (values[field] === undefined) fail(at(keyPath, field), 'is required');
    }
    for (const field of key.fields) {
      const fieldPath = key.fields.length === 1 ? keyPath : at(keyPath, field);
      if (values[field] === null || isPlainObject(values[field]) || Array.isArray(values[field])) fail(fieldPath, 'a unique key takes a value, not a filter');
      items.push({ kind: 'compare', field, op: 'equals', value: parseScalar(entity.fields[field], values[field], fieldPath), insensitive: false });
    }
    // Deleted rows give up their unique values (a user's e-mail excepted): the value names the row not deleted.
    const forever = key.fields.length === 1 && entity.fields[name].unique === 'forever';
    if (name !== 'id' && entity.softDeleteField && !forever) items.push({ kind: 'compare', field: entity.softDeleteField, op: 'equals', value: false, insensitive: false });
  }
  if (!keyed) fail(path, `needs a unique key: ${keys.map((k) => (k.fields.length > 1 ? `${k.name}: { ${k.fields.join(', ')} }` : k.name)).join(', or ')}`);
  const where: Where = items.length === 1 ? items[0] : { kind: 'and', items };
  const onlyId = definedEntries(input).length === 1 && input.id !== undefined;
  return { where, ...(onlyId && { id: input.id as number }) };
}

/** `{ id: N }` and nothing else: a cursor, a connect target. */
function uniqueId(entity: EntityDef, value: unknown, path: string): { id: number } {
  if (value === undefined) fail(path, 'is required');
  const input = expectObject(value, path);
  allowOnlyKeys(input, ['id'], path, 'a unique where accepts only');
  if (input.id === undefined) fail(at(path, 'id'), 'is required');
  return { id: parseId(at(path, 'id'), input.id, 'json') };
}

export function parseWhere(entity: EntityDef, value: unknown, path: string): Where {
  const input = expectObject(value, path);
  const items = definedEntries(input).map(([key, v]) => parseWhereEntry(entity, key, v, at(path, key)));
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function parseWhereEntry(entity: EntityDef, key: string, value: unknown, path: string): Where {
  switch (key) {
    case 'AND':
      return { kind: 'and', items: whereList(entity, value, path) };
    case 'OR':
      return { kind: 'or', items: whereList(entity, value, path) };
    case 'NOT':
      // An object is negated as a whole; a list means "none of these".
      return Array.isArray(value)
        ? { kind: 'and', items: whereList(entity, value, path).map((item) => negate(item)) }
        : negate(parseWhere(entity, value, path));
  }
  const field = fieldOf(entity, key);
  if (field) return parseFieldFilter(key, field, value, path);
  const relation = relationOf(entity, key);
  if (relation) return parseRelationFilter(entity, key, relation, value, path);
  return fail(path, `unknown field or relation of ${entity.name}`);
}

function whereList(entity: EntityDef, value: unknown, path: string): Where[] {
  if (!Array.isArray(value)) return [parseWhere(entity, value, path)];
  return value.map((item, i) => parseWhere(entity, item, `${path}[${i}]`));
}

function parseFieldFilter(name: string, field: FieldDef, value: unknown, path: string): Where {
  if (value === null) return isNull(name, field, path);
  if (field.list) return parseListFilter(name, field, value, path);
  if (field.type === 'json') return parseJsonFilter(name, field, value, path);
  if (isPlainObject(value)) return parseFilterObject(name, field, value, path);
  return { kind: 'compare', field: name, op: 'equals', value: parseScalar(field, value, path), insensitive: false };
}

/** `inherited`: an insensitive mode beside `not: {...}` applies inside it too, as in Prisma. */
function parseFilterObject(name: string, field: FieldDef, input: Json, path: string, inherited = false): Where {
  const allowed = operatorsOf(field);
  // Checked before `mode` is read, so that a bad mode on a field without modes names the field's problem.
  for (const op of Object.keys(input)) checkOperator(field, allowed, op, at(path, op));
  const insensitive = parseMode(input.mode, at(path, 'mode')) || inherited;
  const items: Where[] = [];
  for (const [op, value] of definedEntries(input)) {
    if (op !== 'mode') items.push(parseOperator(name, field, op, value, at(path, op), insensitive));
  }
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function operatorsOf(field: FieldDef): readonly string[] {
  if (field.list) return LIST_OPERATORS;
  if (field.enum) return ENUM_OPERATORS;
  return OPERATORS_BY_TYPE[field.type];
}

function checkOperator(field: FieldDef, allowed: readonly string[], op: string, path: string): void {
  if (!ALL_OPERATORS.has(op)) fail(path, 'unknown filter operator');
  if (!allowed.includes(op)) fail(path, `does not apply to ${article(describeType(field))} field (only ${allowed.join(', ')})`);
}

function parseOperator(name: string, field: FieldDef, op: string, value: unknown, path: string, insensitive: boolean): Where {
  switch (op) {
    case 'equals':
      if (value === null) return isNull(name, field, path);
      return { kind: 'compare', field: name, op, value: parseScalar(field, value, path), insensitive };
    case 'not':
      if (value === null) return negate(isNull(name, field, path));
      if (isPlainObject(value)) return negate(parseFilterObject(name, field, value, path, insensitive));
      return negate({ kind: 'compare', field: name, op: 'equals', value: parseScalar(field, value, path), insensitive });
    case 'in':
    case 'notIn':
      return { kind: 'in', field: name, negated: op === 'notIn', values: parseScalarList(field, value, path), insensitive };
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte':
      return { kind: 'compare', field: name, op, value: parseScalar(field, value, path), insensitive };
    case 'contains':
    case 'startsWith':
    case 'endsWith':
      return { kind: 'like', field: name, op, value: parseScalar(field, value, path) as string, insensitive };
    default:
      return fail(path, 'unknown filter operator');
  }
}

/** Prisma's scalar list filters; there is no shorthand (`tags: ['a']`) and no `not`. */
function parseListFilter(name: string, field: FieldDef, value: unknown, path: string): Where {
  if (!isPlainObject(value)) return fail(path, `a list field is filtered with an object of ${LIST_OPERATORS.join(', ')}`);
  const items = definedEntries(value).map(([op, v]): Where => {
    const opPath = at(path, op);
    checkOperator(field, LIST_OPERATORS, op, opPath);
    switch (op) {
      case 'equals':
        if (v === null) return isNull(name, field, opPath);
        return { kind: 'list', field: name, op, values: parseScalarList(field, v, opPath) };
      case 'has':
        return { kind: 'list', field: name, op, values: [parseScalar(field, v, opPath)] };
      case 'hasSome':
      case 'hasEvery':
        return { kind: 'list', field: name, op, values: parseScalarList(field, v, opPath) };
      default:
        if (typeof v !== 'boolean') fail(opPath, 'must be a boolean');
        return { kind: 'listEmpty', field: name, empty: v };
    }
  });
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function parseJsonFilter(name: string, field: FieldDef, value: unknown, path: string): Where {
  if (!isPlainObject(value)) return fail(path, JSON_FILTERS_UNSUPPORTED);
  const items = definedEntries(value).map(([op, v]): Where => {
    const opPath = at(path, op);
    if ((op !== 'equals' && op !== 'not') || v !== null) fail(opPath, JSON_FILTERS_UNSUPPORTED);
    return op === 'equals' ? isNull(name, field, opPath) : negate(isNull(name, field, opPath));
  });
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function parseMode(value: unknown, path: string): boolean {
  if (value === undefined || value === 'default') return false;
  if (value === 'insensitive') return true;
  return fail(path, "must be 'insensitive' or 'default'");
}

function isNull(name: string, field: FieldDef, path: string): Where {
  if (!field.nullable) fail(path, 'cannot be null: the field is not nullable');
  return { kind: 'isNull', field: name };
}

function negate(item: Where): Where {
  return { kind: 'not', item };
}

function parseRelationFilter(entity: EntityDef, name: string, relation: RelationDef, value: unknown, path: string): Where {
  const target = ENTITIES[relation.target];
  if (relation.kind === 'many') {
    const input = expectObject(value, path);
    const items = definedEntries(input).map(([quantifier, nested]): Where => {
      if (quantifier !== 'some' && quantifier !== 'every' && quantifier !== 'none') {
        return fail(at(path, quantifier), 'unknown relation filter: use some, every or none');
      }
      return { kind: 'relation', relation: name, quantifier, where: parseWhere(target, nested, at(path, quantifier)) };
    });
    return items.length === 1 ? items[0] : { kind: 'and', items };
  }
  if (value === null) return relationIsSet(entity, name, relation, 'is', path);
  const input = expectObject(value, path);
  const usesQuantifiers = 'is' in input || 'isNot' in input;
  // Without is/isNot the object is a where on the related row (shorthand for `is`).
  if (!usesQuantifiers) return { kind: 'relation', relation: name, quantifier: 'is', where: parseWhere(target, input, path) };
  const items = definedEntries(input).map(([quantifier, nested]): Where => {
    const quantifierPath = at(path, quantifier);
    if (quantifier !== 'is' && quantifier !== 'isNot') return fail(quantifierPath, 'cannot be mixed with is/isNot');
    if (nested === null) return relationIsSet(entity, name, relation, quantifier, quantifierPath);
    return { kind: 'relation', relation: name, quantifier, where: parseWhere(target, nested, quantifierPath) };
  });
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

/** `is: null` / `isNot: null`: only meaningful on an optional relation. */
function relationIsSet(entity: EntityDef, name: string, relation: RelationDef, quantifier: 'is' | 'isNot', path: string): Where {
  if (!isOptionalRelation(entity, relation)) fail(path, 'cannot be null: the relation is required');
  return { kind: 'relation', relation: name, quantifier, where: null };
}

function isOptionalRelation(entity: EntityDef, relation: RelationDef): boolean {
  const scalar = relation.scalar ? fieldOf(entity, relation.scalar) : undefined;
  return scalar?.nullable ?? true;
}

// ---------------------------------------------------------------------------------------------
// orderBy, take, skip

function parseOrderBy(entity: EntityDef, value: unknown, path: string): OrderBy[] {
  if (value === undefined) return [];
  checkOrderByLength(value, path);
  const keys = Array.isArray(value) ? value.map((item, i) => parseOrderByItem(entity, item, `${path}[${i}]`, [], false)) : [parseOrderByItem(entity, value, path, [], false)];
  // Each relation a key goes through is a subquery per row, and a cursor compares each key several times.
  const hops = keys.reduce((sum, key) => sum + (key.via?.length ?? 0) + ('count' in key ? 1 : 0), 0);
  if (hops > MAX_ORDER_BY_RELATIONS) tooLarge(path, `goes through more than ${MAX_ORDER_BY_RELATIONS} relations in its sort keys together`, MAX_ORDER_BY_RELATIONS);
  return keys;
}

/**
 * One key per object, as in Prisma (the order of several keys would depend on JSON key order): a
 * field, a to-one relation holding the next level, or a list relation holding `{ _count }`.
 * `optional`: a relation on the way may be unset, so the sorted value may be null.
 */
function parseOrderByItem(entity: EntityDef, value: unknown, path: string, via: string[], optional: boolean): OrderBy {
  const entries = definedEntries(expectObject(value, path));
  if (entries.length !== 1) fail(path, 'needs exactly one field; use an array to order by several');
  const [key, direction] = entries[0];
  const keyPath = at(path, key);
  const relation = relationOf(entity, key);
  if (relation?.kind === 'one') {
    if (!isPlainObject(direction)) fail(keyPath, 'a single relation orders by one of its fields: { field: "asc" | "desc" }');
    return parseOrderByItem(ENTITIES[relation.target], direction, keyPath, [...via, key], optional || isOptionalRelation(entity, relation));
  }
  const withVia = via.length > 0 ? { via } : {};
  if (relation) {
    const input = isPlainObject(direction) ? direction : fail(keyPath, 'a list relation orders by its number of rows: { _count: "asc" | "desc" }');
    allowOnlyKeys(input, ['_count'], keyPath, 'a list relation orders by');
    return { count: key, direction: parseDirection(required(input, '_count', keyPath), at(keyPath, '_count')), ...withVia };
  }
  const field = fieldOf(entity, key);
  if (!field) return fail(keyPath, `unknown field or relation of ${entity.name}`);
  if (!isComparable(field)) fail(keyPath, `a ${describeType(field)} field is not orderable`);
  if (direction === 'asc' || direction === 'desc') return { field: key, direction, ...withVia };
  // The long form: { sort: 'asc' | 'desc', nulls?: 'first' | 'last' }.
  if (!isPlainObject(direction)) return fail(keyPath, "must be 'asc', 'desc' or { sort, nulls }");
  allowOnlyKeys(direction, ['sort', 'nulls'], keyPath, 'an ordering accepts');
  const sort = parseDirection(direction.sort, at(keyPath, 'sort'));
  if (direction.nulls === undefined) return { field: key, direction: sort, ...withVia };
  if (direction.nulls !== 'first' && direction.nulls !== 'last') fail(at(keyPath, 'nulls'), "must be 'first' or 'last'");
  if (!field.nullable && !optional) fail(at(keyPath, 'nulls'), 'applies to optional fields (or fields of optional relations) only');
  return { field: key, direction: sort, nulls: direction.nulls, ...withVia };
}

function parsePageSize(value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(path, 'must be a non-negative integer');
  return value;
}

/** A negative take counts from the end of the ordering. */
function parseTake(value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) fail(path, 'must be an integer (negative: from the end)');
  return value;
}

// ---------------------------------------------------------------------------------------------
// include / select

/**
 * The include/select of a request: at most MAX_RELATION_LOADS relations loaded or counted, at
 * every level together; and with the request's own `where`, at most MAX_RELATION_FILTERS relation filters.
 */
function parseRequestShape(entity: EntityDef, input: Json, where?: Where): Shape {
  const shape = parseShape(entity, input, '');
  if (relationLoads(shape) > MAX_RELATION_LOADS) {
    tooLarge(input.select !== undefined ? 'select' : 'include', `loads more than ${MAX_RELATION_LOADS} relations (each included or counted relation at every level counts once)`, MAX_RELATION_LOADS);
  }
  checkRelationFilters(where, shape);
  return shape;
}

/** Each relation filter is a subquery: a request's filters (its where, and those in include and _count) follow at most MAX_RELATION_FILTERS relations together. */
function checkRelationFilters(where: Where | undefined, shape?: Shape): void {
  const own = relationFilters(where);
  if (own + (shape ? shapeRelationFilters(shape) : 0) <= MAX_RELATION_FILTERS) return;
  tooLarge(own > MAX_RELATION_FILTERS ? 'where' : '', `filters through more than ${MAX_RELATION_FILTERS} relations (each relation filter in where, and in the where of includes and _count, counts once)`, MAX_RELATION_FILTERS);
}

function relationFilters(where: Where | null | undefined): number {
  if (!where) return 0;
  switch (where.kind) {
    case 'and':
    case 'or':
      return where.items.reduce((sum, item) => sum + relationFilters(item), 0);
    case 'not':
      return relationFilters(where.item);
    case 'relation':
      return 1 + relationFilters(where.where);
    default:
      return 0;
  }
}

function shapeRelationFilters(shape: Shape): number {
  let filters = Object.values(shape.counts).reduce((sum, where) => sum + relationFilters(where), 0);
  for (const load of Object.values(shape.relations)) filters += relationFilters(load.where) + shapeRelationFilters(load.shape);
  return filters;
}

/** How many queries loading `shape` takes besides its own rows: one per included relation and per counted relation, at every level. */
function relationLoads(shape: Shape): number {
  let loads = Object.keys(shape.counts).length;
  for (const load of Object.values(shape.relations)) loads += 1 + relationLoads(load.shape);
  return loads;
}

function parseShape(entity: EntityDef, holder: Json, path: string): Shape {
  const { select, include } = holder;
  if (select !== undefined && include !== undefined) fail(at(path, 'select'), 'select and include cannot both be given');
  if (select !== undefined) return parseSelect(entity, select, at(path, 'select'));
  if (include !== undefined) return parseInclude(entity, include, at(path, 'include'));
  return defaultShape(entity);
}

function parseInclude(entity: EntityDef, value: unknown, path: string): Shape {
  const shape = defaultShape(entity);
  for (const [key, v] of definedEntries(expectObject(value, path))) {
    const keyPath = at(path, key);
    if (key === '_count') shape.counts = parseCountSelection(entity, v, keyPath);
    else if (relationOf(entity, key)) addRelation(entity, shape, key, v, keyPath);
    else if (fieldOf(entity, key)) fail(keyPath, 'is a field, not a relation: include takes relations only');
    else fail(keyPath, `unknown relation of ${entity.name}`);
  }
  return shape;
}

function parseSelect(entity: EntityDef, value: unknown, path: string): Shape {
  const shape: Shape = { fields: [], relations: {}, counts: {} };
  const chosen = new Set<string>();
  for (const [key, v] of definedEntries(expectObject(value, path))) {
    const keyPath = at(path, key);
    if (key === '_count') shape.counts = parseCountSelection(entity, v, keyPath);
    else if (relationOf(entity, key)) addRelation(entity, shape, key, v, keyPath);
    else if (fieldOf(entity, key)) {
      if (typeof v !== 'boolean') fail(keyPath, 'must be a boolean');
      if (v) chosen.add(key);
    } else fail(keyPath, `unknown field or relation of ${entity.name}`);
  }
  shape.fields = Object.keys(entity.fields).filter((name) => chosen.has(name));
  const isEmpty = shape.fields.length === 0 && Object.keys(shape.relations).length === 0 && Object.keys(shape.counts).length === 0;
  if (isEmpty) fail(path, 'must select at least one field or relation');
  return shape;
}

function addRelation(entity: EntityDef, shape: Shape, name: string, value: unknown, path: string): void {
  if (value === false) return;
  shape.relations[name] = parseRelationLoad(entity.relations[name], value, path);
}

function parseRelationLoad(relation: RelationDef, value: unknown, path: string): RelationLoad {
  const target = ENTITIES[relation.target];
  if (value === true) return { orderBy: [], shape: defaultShape(target) };
  if (!isPlainObject(value)) return fail(path, 'must be true, false or an object');
  const listKeys = ['where', 'orderBy', 'cursor', 'take', 'skip', 'include', 'select'];
  allowOnlyKeys(value, relation.kind === 'many' ? listKeys : ['include', 'select'], path, `a ${relation.kind === 'many' ? 'list' : 'single'} relation accepts`);
  return {
    where: optionalWhere(target, value.where, at(path, 'where')),
    orderBy: parseOrderBy(target, value.orderBy, at(path, 'orderBy')),
    take: parseTake(value.take, at(path, 'take')),
    skip: parsePageSize(value.skip, at(path, 'skip')),
    ...(value.cursor !== undefined && { cursor: uniqueId(target, value.cursor, at(path, 'cursor')).id }),
    shape: parseShape(target, value, path),
  };
}

/** `_count: true` counts every list relation; `_count: { select: { rel: true | { where } } }` picks. */
function parseCountSelection(entity: EntityDef, value: unknown, path: string): Record<string, Where | null> {
  const listRelations = Object.keys(entity.relations).filter((name) => entity.relations[name].kind === 'many');
  if (value === false) return {};
  if (value === true) return Object.fromEntries(listRelations.map((name) => [name, null]));
  const input = expectObject(value, path);
  allowOnlyKeys(input, ['select'], path, '_count accepts');
  const selectPath = at(path, 'select');
  const counts: Record<string, Where | null> = {};
  for (const [name, v] of definedEntries(expectObject(required(input, 'select', path), selectPath))) {
    const namePath = at(selectPath, name);
    const relation = relationOf(entity, name);
    if (!relation) fail(namePath, `unknown relation of ${entity.name}`);
    if (relation.kind !== 'many') fail(namePath, 'only list relations can be counted');
    if (v === false) continue;
    if (v === true) counts[name] = null;
    else {
      const countInput = expectObject(v, namePath);
      allowOnlyKeys(countInput, ['where'], namePath, 'a counted relation accepts');
      counts[name] = parseWhere(ENTITIES[relation.target], required(countInput, 'where', namePath), at(namePath, 'where'));
    }
  }
  return counts;
}

// ---------------------------------------------------------------------------------------------
// create / update data

function parseWriteData(entity: EntityDef, value: unknown, path: string, op: 'create' | 'update'): Pick<CreateArgs, 'data' | 'connect'> {
  const data: CreateArgs['data'] = {};
  const connect: CreateArgs['connect'] = {};
  for (const [key, v] of definedEntries(expectObject(value, path))) {
    const keyPath = at(path, key);
    const field = fieldOf(entity, key);
    const relation = relationOf(entity, key);
    if (field) {
      if (field.fromActor) fail(keyPath, 'is set by the server from the acting user');
      if (!field.writable) fail(keyPath, 'is not writable');
      data[key] = parseFieldValue(field, v, keyPath);
    } else if (relation) {
      connect[key] = parseRelationWrite(entity, relation, v, keyPath, op);
    } else {
      fail(keyPath, `unknown field or relation of ${entity.name}`);
    }
  }
  return { data, connect };
}

/** A written value: null (nullable fields), a list of items (list fields), any JSON (json fields) or a scalar. */
function parseFieldValue(field: FieldDef, value: unknown, path: string): FieldValue {
  if (value === null) {
    if (!field.nullable) fail(path, 'cannot be null: the field is not nullable');
    return null;
  }
  if (field.list) return parseScalarList(field, value, path, true);
  if (field.type === 'json') return parseJsonValue(value, path);
  if (field.ciContext && typeof value === 'string' && field.maxLength !== undefined && longerThan(value, field.maxLength)) {
    throw badRequest('invalid-ci-context', `${path}: is too long: at most ${field.maxLength} characters`, { path, maxLength: field.maxLength });
  }
  return parseScalar(field, value, path);
}

/** `{ connect: { id } }`, or `{ disconnect: true }` on update of an optional relation (→ null). */
function parseRelationWrite(entity: EntityDef, relation: RelationDef, value: unknown, path: string, op: 'create' | 'update'): number | null {
  if (relation.kind !== 'one') fail(path, 'list relations cannot be written here; write the other side');
  const canDisconnect = op === 'update' && isOptionalRelation(entity, relation);
  const input = expectObject(value, path);
  allowOnlyKeys(input, canDisconnect ? ['connect', 'disconnect'] : ['connect'], path, 'a relation write accepts');
  const entries = definedEntries(input);
  if (entries.length !== 1) fail(path, canDisconnect ? 'needs exactly one of connect or disconnect' : 'needs connect: { id }');
  if (input.disconnect !== undefined) {
    if (input.disconnect !== true) fail(at(path, 'disconnect'), 'must be true');
    return null;
  }
  return uniqueId(ENTITIES[relation.target], input.connect, at(path, 'connect')).id;
}

// ---------------------------------------------------------------------------------------------
// scalar values

function parseScalar(field: FieldDef, value: unknown, path: string): ScalarValue {
  switch (field.type) {
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value) || value < INT_MIN || value > INT_MAX) fail(path, 'must be an integer');
      return value;
    case 'float':
      if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, 'must be a number');
      return value;
    case 'string':
      if (field.enum && (typeof value !== 'string' || !field.enum.includes(value))) {
        fail(path, `must be one of ${field.enum.join(', ')}`, { allowed: field.enum });
      }
      if (typeof value !== 'string') fail(path, 'must be a string');
      return checkLength(checkText(value, path), field.maxLength ?? LIMITS.text, path);
    case 'boolean':
      if (typeof value !== 'boolean') fail(path, 'must be a boolean');
      return value;
    case 'datetime':
      return parseDateTime(value, path);
    case 'json':
      return fail(path, JSON_FILTERS_UNSUPPORTED);
  }
}

/** A list of scalars; a written list (`stored`) holds at most LIMITS.items, as its event does; a filter's any number. */
function parseScalarList(field: FieldDef, value: unknown, path: string, stored = false): ScalarValue[] {
  if (!Array.isArray(value)) fail(path, 'must be an array');
  if (stored) checkItems(value, path);
  return value.map((item, i) => parseScalar(field, item, `${path}[${i}]`));
}

/**
 * Any JSON value within the contracts' limits (contracts/limits.ts: depth, strings, lists, keys);
 * a copy, without keys whose value is undefined (they do not exist in JSON).
 */
function parseJsonValue(value: unknown, path: string, depth = 1): JsonValue {
  if (typeof value === 'string') return checkLength(checkText(value, path), LIMITS.text, path);
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail(path, 'must be a finite number');
    return value;
  }
  const nested = Array.isArray(value) || isPlainObject(value);
  if (nested && depth >= LIMITS.jsonDepth) fail(path, `nests deeper than ${LIMITS.jsonDepth} levels (a JSON value's limit)`, { maxDepth: LIMITS.jsonDepth });
  if (Array.isArray(value)) return checkItems(value, path).map((item, i) => parseJsonValue(item, `${path}[${i}]`, depth + 1));
  const prototype = isPlainObject(value) ? Object.getPrototypeOf(value) : undefined;
  if (prototype === Object.prototype || prototype === null) {
    const entries = definedEntries(value as Json);
    if (entries.length > LIMITS.items) fail(path, `has more than ${LIMITS.items} keys`, { maxProperties: LIMITS.items });
    return Object.fromEntries(entries.map(([key, v]) =>
      [checkLength(checkText(key, at(path, key)), LIMITS.name, at(path, key)), parseJsonValue(v, at(path, key), depth + 1)]));
  }
  return fail(path, 'must be a JSON value');
}

/** At most `max` characters (code points, as the event contracts count them). */
function checkLength(value: string, max: number, path: string): string {
  if (longerThan(value, max)) fail(path, `is too long: at most ${max} characters`, { maxLength: max });
  return value;
}

function checkItems<T>(items: T[], path: string): T[] {
  if (items.length > LIMITS.items) fail(path, `has more than ${LIMITS.items} items`, { maxItems: LIMITS.items });
  return items;
}

/** PostgreSQL text and jsonb hold neither the NUL character nor an unpaired UTF-16 surrogate. */
function checkText(value: string, path: string): string {
  const problem = textProblem(value);
  if (problem) fail(path, problem);
  return value;
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** A zone is required: a zoneless time would silently mean the server's zone. */
function parseDateTime(value: unknown, path: string): string {
  const match = typeof value === 'string' ? ISO_DATE_TIME.exec(value) : null;
  if (!match) return fail(path, 'must be an ISO 8601 date-time with a zone, e.g. 2024-05-01T12:00:00Z');
  const [year, month, day, hour, minute, second] = match.slice(1).map((part) => Number(part ?? 0));
  // Date.parse rolls 2024-02-30 over into March; a date must exist as written.
  const calendar = new Date(Date.UTC(year, month - 1, day));
  const dateExists = calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day;
  const parsed = Date.parse(value as string);
  if (!dateExists || hour > 23 || minute > 59 || second > 59 || Number.isNaN(parsed)) fail(path, 'is not a valid date-time');
  // In UTC the year must stay within 0001..9999, what PostgreSQL reads in ISO form.
  const utcYear = new Date(parsed).getUTCFullYear();
  if (utcYear < 1 || utcYear > 9999) fail(path, 'must fall within the years 0001 to 9999 (UTC)');
  return new Date(parsed).toISOString();
}

/** Lists and JSON have no order (and JSON no equality worth grouping on). */
function isComparable(field: FieldDef): boolean {
  return !field.list && field.type !== 'json';
}

function describeType(field: FieldDef): string {
  if (field.list) return `${field.type} list`;
  if (field.enum) return 'enum';
  return field.type === 'json' ? 'JSON' : field.type;
}

function article(word: string): string {
  return /^[aeiou]/i.test(word) ? `an ${word}` : `a ${word}`;
}

// ---------------------------------------------------------------------------------------------
// helpers

function fail(path: string, message: string, details: Record<string, unknown> = {}): never {
  throw badRequest('invalid-argument', path ? `${path}: ${message}` : message, { ...details, path });
}

function at(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function isPlainObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function expectObject(value: unknown, path: string): Json {
  if (!isPlainObject(value)) fail(path, path ? 'must be an object' : 'the body must be a JSON object');
  return value;
}

/** How deeply a body may nest: deeper filters would exhaust the parser's stack, or PostgreSQL's. */
export const MAX_DEPTH = 64;

/**
 * Bounds on a request's shape, each refused with a 400 `query-too-large` naming it (`details.limit`):
 * every sort key is a sort expression (PostgreSQL takes at most 1,664 per query, and a cursor
 * compares key by key), every included or counted relation one more query, every relation a
 * filter or a sort key goes through a subquery. Unbounded, one request of a few hundred kilobytes
 * kept PostgreSQL planning for minutes.
 */
export const MAX_ORDER_BY_KEYS = 32;
/** Relations the sort keys of one orderBy go through together (`{ folder: { parent: { name } } }`: 2, `{ steps: { _count } }`: 1). */
export const MAX_ORDER_BY_RELATIONS = 16;
export const MAX_DISTINCT_FIELDS = 32;
/** Included relations and `_count` relations of one request, at every level together. */
export const MAX_RELATION_LOADS = 64;
/** Relation filters (some / every / none / is / isNot, and the shorthand) of one request, in every where together. */
export const MAX_RELATION_FILTERS = 64;

function tooLarge(path: string, message: string, limit: number): never {
  throw badRequest('query-too-large', path ? `${path}: ${message}` : message, { path, limit });
}

function checkOrderByLength(value: unknown, path: string): void {
  if (Array.isArray(value) && value.length > MAX_ORDER_BY_KEYS) tooLarge(path, `takes at most ${MAX_ORDER_BY_KEYS} sort keys`, MAX_ORDER_BY_KEYS);
}

/** The body as an object, refused at the first value nested deeper than MAX_DEPTH. */
function expectBody(body: unknown): Json {
  const input = expectObject(body, '');
  const pending: [unknown, string, number][] = [[input, '', 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, path, depth] = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= MAX_DEPTH) fail(path, `nests deeper than ${MAX_DEPTH} levels`);
    if (Array.isArray(value)) value.forEach((item, i) => pending.push([item, `${path}[${i}]`, depth + 1]));
    else for (const [key, item] of Object.entries(value)) pending.push([item, at(path, key), depth + 1]);
  }
  return input;
}

function required(input: Json, key: string, path: string): unknown {
  if (input[key] === undefined) fail(at(path, key), 'is required');
  return input[key];
}

function allowOnlyKeys(input: Json, allowed: readonly string[], path: string, what: string): void {
  for (const key of Object.keys(input)) {
    if (!allowed.includes(key)) fail(at(path, key), `unknown argument; ${what} ${allowed.join(', ')}`);
  }
}

/** Keys whose value is undefined are absent (in-process callers); JSON never has them. */
function definedEntries(input: Json): [string, unknown][] {
  return Object.entries(input).filter(([, v]) => v !== undefined);
}

// Own properties only: a key like `constructor` must not find Object.prototype members.
function fieldOf(entity: EntityDef, name: string): FieldDef | undefined {
  return Object.hasOwn(entity.fields, name) ? entity.fields[name] : undefined;
}

function relationOf(entity: EntityDef, name: string): RelationDef | undefined {
  return Object.hasOwn(entity.relations, name) ? entity.relations[name] : undefined;
}

// ---------------------------------------------------------------------------------------------
// aggregate / groupBy

export type AggregateFunction = '_sum' | '_avg' | '_min' | '_max';

/** The requested aggregates; field lists are in request order. */
export interface Aggregates {
  /** `_count: true` → `bare` (the answer is a number, counting all rows); otherwise `_all` and/or fields. */
  _count?: { bare: boolean; all: boolean; fields: string[] };
  _sum?: string[];
  _avg?: string[];
  _min?: string[];
  _max?: string[];
}

export interface AggregateArgs extends ListQuery {
  aggregates: Aggregates;
}

/** A groupBy sort key: a `by` field, or an aggregate of a field (`{ _count: { id: 'desc' } }`). */
export type GroupOrderBy =
  | { kind: 'field'; field: string; direction: SortDirection }
  | { kind: 'aggregate'; fn: '_count' | AggregateFunction; field: string; direction: SortDirection };

/** An aggregate a `having` filter compares; the filter names it `<fn>.<field>` (`_avg.estimate`). */
export interface HavingAggregate {
  name: string;
  fn: '_count' | AggregateFunction;
  field: string;
}

export interface GroupByArgs {
  by: string[];
  where?: Where;
  /**
   * A filter on the groups: its fields are `by` fields (by name) and aggregates (by the name of
   * a `havingAggregates` entry, typed by `havingAggregateField`).
   */
  having?: Where;
  havingAggregates: HavingAggregate[];
  orderBy: GroupOrderBy[];
  take?: number;
  skip?: number;
  aggregates: Aggregates;
}

const AGGREGATE_KEYS = ['_count', '_sum', '_avg', '_min', '_max'] as const;
type AggregateKey = (typeof AGGREGATE_KEYS)[number];

/** Which field types each aggregate applies to (`_count` applies to every scalar field). */
const AGGREGATE_TYPES: Record<AggregateFunction, readonly FieldDef['type'][]> = {
  _sum: ['int', 'float'],
  _avg: ['int', 'float'],
  _min: ['int', 'float', 'datetime', 'string'],
  _max: ['int', 'float', 'datetime', 'string'],
};

export function parseAggregateArgs(entity: EntityDef, body: unknown): AggregateArgs {
  const input = expectBody(body);
  allowOnlyKeys(input, ['where', 'orderBy', 'cursor', 'take', 'skip', ...AGGREGATE_KEYS], '', 'aggregate accepts');
  const aggregates = parseAggregates(entity, input);
  if (Object.keys(aggregates).length === 0) fail('', `aggregate needs at least one of ${AGGREGATE_KEYS.join(', ')}`);
  return {
    where: boundedWhere(entity, input.where),
    orderBy: parseOrderBy(entity, input.orderBy, 'orderBy'),
    take: parseTake(input.take, 'take'),
    skip: parsePageSize(input.skip, 'skip'),
    ...(input.cursor !== undefined && { cursor: uniqueId(entity, input.cursor, 'cursor').id }),
    aggregates,
  };
}

export function parseGroupByArgs(entity: EntityDef, body: unknown): GroupByArgs {
  const input = expectBody(body);
  allowOnlyKeys(input, ['by', 'where', 'having', 'orderBy', 'take', 'skip', ...AGGREGATE_KEYS], '', 'groupBy accepts');
  const by = parseBy(entity, required(input, 'by', ''), 'by');
  const havingAggregates = new Map<string, HavingAggregate>();
  const having = input.having === undefined ? undefined : parseHaving(entity, by, input.having, 'having', havingAggregates);
  return {
    by,
    where: boundedWhere(entity, input.where),
    ...(having && { having }),
    havingAggregates: [...havingAggregates.values()],
    orderBy: parseGroupOrderBy(entity, by, input.orderBy, 'orderBy'),
    take: parsePageSize(input.take, 'take'),
    skip: parsePageSize(input.skip, 'skip'),
    aggregates: parseAggregates(entity, input),
  };
}

/** How a `having` filter sees an aggregate: its value type and whether it can be null (no values in the group). */
export function havingAggregateField(entity: EntityDef, aggregate: HavingAggregate): FieldDef {
  const field = entity.fields[aggregate.field];
  switch (aggregate.fn) {
    case '_count':
      return { column: '', type: 'int', nullable: false, writable: false };
    case '_sum':
    case '_avg':
      // A sum of ints can leave the int range, an average is fractional: compared as numbers.
      return { column: '', type: 'float', nullable: true, writable: false };
    case '_min':
    case '_max':
      return { ...field, column: '', nullable: true, writable: false };
  }
}

/**
 * `having: { field: { _avg: { gt: 3 }, ...plain filter on a by field }, AND, OR, NOT }`. The
 * aggregates it compares are collected in `used`.
 */
function parseHaving(entity: EntityDef, by: string[], value: unknown, path: string, used: Map<string, HavingAggregate>): Where {
  const list = (v: unknown, listPath: string): Where[] =>
    Array.isArray(v) ? v.map((item, i) => parseHaving(entity, by, item, `${listPath}[${i}]`, used)) : [parseHaving(entity, by, v, listPath, used)];
  const items = definedEntries(expectObject(value, path)).map(([key, v]): Where => {
    const keyPath = at(path, key);
    if (key === 'AND') return { kind: 'and', items: list(v, keyPath) };
    if (key === 'OR') return { kind: 'or', items: list(v, keyPath) };
    if (key === 'NOT') return Array.isArray(v) ? { kind: 'and', items: list(v, keyPath).map(negate) } : negate(parseHaving(entity, by, v, keyPath, used));
    if (relationOf(entity, key)) fail(keyPath, 'is a relation: having filters scalar fields and their aggregates');
    const field = fieldOf(entity, key);
    if (!field) return fail(keyPath, `unknown field of ${entity.name}`);
    return parseHavingField(entity, by, key, field, v, keyPath, used);
  });
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function parseHavingField(entity: EntityDef, by: string[], name: string, field: FieldDef, value: unknown, path: string, used: Map<string, HavingAggregate>): Where {
  const requireBy = () => {
    if (!by.includes(name)) fail(path, `a plain filter needs a by field (${by.join(', ')}); filter an aggregate instead (${AGGREGATE_KEYS.join(', ')})`);
  };
  if (!isPlainObject(value)) {
    requireBy();
    return parseFieldFilter(name, field, value, path);
  }
  const items: Where[] = [];
  const plain: Json = {};
  for (const [key, v] of definedEntries(value)) {
    if (!(AGGREGATE_KEYS as readonly string[]).includes(key)) {
      plain[key] = v;
      continue;
    }
    const fn = key as AggregateKey;
    const fnPath = at(path, fn);
    aggregateField(entity, name, fnPath, fn === '_count' ? undefined : fn);
    const aggregate: HavingAggregate = { name: `${fn}.${name}`, fn, field: name };
    used.set(aggregate.name, aggregate);
    items.push(parseFieldFilter(aggregate.name, havingAggregateField(entity, aggregate), v, fnPath));
  }
  if (Object.keys(plain).length > 0) {
    requireBy();
    items.push(parseFieldFilter(name, field, plain, path));
  }
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function parseAggregates(entity: EntityDef, input: Json): Aggregates {
  const aggregates: Aggregates = {};
  if (input._count !== undefined) aggregates._count = parseCountAggregate(entity, input._count, '_count');
  for (const fn of ['_sum', '_avg', '_min', '_max'] as const) {
    if (input[fn] !== undefined) aggregates[fn] = parseAggregateFields(entity, fn, input[fn], fn);
  }
  return aggregates;
}

function parseCountAggregate(entity: EntityDef, value: unknown, path: string): NonNullable<Aggregates['_count']> {
  if (value === true) return { bare: true, all: true, fields: [] };
  if (!isPlainObject(value)) return fail(path, 'must be true or an object of fields');
  const count = { bare: false, all: false, fields: [] as string[] };
  for (const [key, v] of definedEntries(value)) {
    const keyPath = at(path, key);
    if (key !== '_all') aggregateField(entity, key, keyPath);
    if (typeof v !== 'boolean') fail(keyPath, 'must be a boolean');
    if (!v) continue;
    if (key === '_all') count.all = true;
    else count.fields.push(key);
  }
  if (!count.all && count.fields.length === 0) fail(path, 'must select _all or at least one field');
  return count;
}

function parseAggregateFields(entity: EntityDef, fn: AggregateFunction, value: unknown, path: string): string[] {
  const fields: string[] = [];
  for (const [key, v] of definedEntries(expectObject(value, path))) {
    const keyPath = at(path, key);
    aggregateField(entity, key, keyPath, fn);
    if (typeof v !== 'boolean') fail(keyPath, 'must be a boolean');
    if (v) fields.push(key);
  }
  if (fields.length === 0) fail(path, 'must select at least one field');
  return fields;
}

/** A scalar field the aggregate applies to (any scalar field for `_count`). */
function aggregateField(entity: EntityDef, name: string, path: string, fn?: AggregateFunction): FieldDef {
  if (relationOf(entity, name)) fail(path, 'is a relation: only scalar fields can be aggregated');
  const field = fieldOf(entity, name);
  if (!field) return fail(path, `unknown field of ${entity.name}`);
  if (fn && (field.list || !AGGREGATE_TYPES[fn].includes(field.type))) {
    fail(path, `${fn} does not apply to ${article(describeType(field))} field (only ${AGGREGATE_TYPES[fn].join(', ')})`);
  }
  return field;
}

/** `by`: a non-empty list of distinct scalar fields (a single field name is accepted too, as in Prisma). */
function parseBy(entity: EntityDef, value: unknown, path: string): string[] {
  if (typeof value === 'string') return [parseByField(entity, value, path)];
  if (!Array.isArray(value)) return fail(path, 'must be an array of field names');
  if (value.length === 0) fail(path, 'must name at least one field');
  const by: string[] = [];
  value.forEach((item, i) => {
    const itemPath = `${path}[${i}]`;
    const name = parseByField(entity, item, itemPath);
    if (by.includes(name)) fail(itemPath, 'is listed twice');
    by.push(name);
  });
  return by;
}

function parseByField(entity: EntityDef, value: unknown, path: string): string {
  if (typeof value !== 'string') return fail(path, 'must be a field name');
  if (relationOf(entity, value)) fail(path, 'is a relation: group by scalar fields only');
  const field = fieldOf(entity, value);
  if (!field) return fail(path, `unknown field of ${entity.name}`);
  if (!isComparable(field)) fail(path, `a ${describeType(field)} field cannot be a groupBy key`);
  return value;
}

function parseGroupOrderBy(entity: EntityDef, by: string[], value: unknown, path: string): GroupOrderBy[] {
  if (value === undefined) return [];
  checkOrderByLength(value, path);
  if (Array.isArray(value)) return value.map((item, i) => parseGroupOrderByItem(entity, by, item, `${path}[${i}]`));
  return [parseGroupOrderByItem(entity, by, value, path)];
}

function parseGroupOrderByItem(entity: EntityDef, by: string[], value: unknown, path: string): GroupOrderBy {
  const entries = definedEntries(expectObject(value, path));
  if (entries.length !== 1) fail(path, 'needs exactly one key; use an array to order by several');
  const [key, v] = entries[0];
  const keyPath = at(path, key);
  if ((AGGREGATE_KEYS as readonly string[]).includes(key)) {
    const fn = key as AggregateKey;
    const inner = definedEntries(expectObject(v, keyPath));
    if (inner.length !== 1) fail(keyPath, 'needs exactly one field');
    const [field, direction] = inner[0];
    const fieldPath = at(keyPath, field);
    aggregateField(entity, field, fieldPath, fn === '_count' ? undefined : fn);
    return { kind: 'aggregate', fn, field, direction: parseDirection(direction, fieldPath) };
  }
  if (relationOf(entity, key)) fail(keyPath, 'ordering groups by a relation is not supported');
  if (!fieldOf(entity, key)) fail(keyPath, `unknown field of ${entity.name}`);
  if (!by.includes(key)) fail(keyPath, `must be one of the by fields (${by.join(', ')}) or an aggregate`);
  return { kind: 'field', field: key, direction: parseDirection(v, keyPath) };
}

function parseDirection(value: unknown, path: string): SortDirection {
  if (value !== 'asc' && value !== 'desc') fail(path, "must be 'asc' or 'desc'");
  return value;
}
