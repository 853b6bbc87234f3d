import { ENTITIES, type EntityDef, type FieldDef, type RelationDef } from '../../contracts/entities';
import { badRequest } from '../shared/errors';

/**
 * Strict parsing of model API request bodies (Prisma-style) into plain, already-validated
 * structures. Every refusal is a 400 `invalid-argument` whose `details.path` names the offending
 * spot (`where.name.contains`, `orderBy[0].createdAt`, ...), so a client can point at it.
 *
 * Semantics worth knowing:
 * - Filters are two-valued: a null column fails every comparison except `equals: null`, so `not`
 *   and `NOT` give the exact complement (`not: 'x'` keeps nulls, unlike SQL `<>`).
 * - `NOT: {...}` negates the whole object; `NOT: [a, b]` means neither a nor b.
 * - datetime values are ISO 8601 date-times with a zone (`Z` or `+01:00`), normalised to UTC ISO strings.
 * - `count` accepts `where` only (Prisma's `select: { _all: true }` is refused: the answer is a bare integer).
 */

export type FindOperation = 'findMany' | 'findFirst' | 'findUnique' | 'count';

/** A validated scalar value; datetimes are normalised ISO strings. */
export type ScalarValue = string | number | boolean;

export type SortDirection = 'asc' | 'desc';
export interface OrderBy {
  field: string;
  direction: SortDirection;
  /** Where nulls go; absent: PostgreSQL's default (last ascending, first descending), as Prisma. */
  nulls?: 'first' | 'last';
}

export type RelationQuantifier = 'some' | 'every' | 'none' | 'is' | 'isNot';

export type Where =
  | { kind: 'and'; items: Where[] }
  | { kind: 'or'; items: Where[] }
  | { kind: 'not'; item: Where }
  | { kind: 'compare'; field: string; op: 'equals' | 'lt' | 'lte' | 'gt' | 'gte'; value: ScalarValue; insensitive: boolean }
  | { kind: 'in'; field: string; negated: boolean; values: ScalarValue[]; insensitive: boolean }
  | { kind: 'like'; field: string; op: 'contains' | 'startsWith' | 'endsWith'; value: string; insensitive: boolean }
  | { kind: 'isNull'; field: string }
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
  take?: number;
  skip?: number;
}

/** An included relation; where/orderBy/take/skip only ever set for kind 'many'. */
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
  data: Record<string, ScalarValue | null>;
  /** Relation name → target id (`connect`), or null (`disconnect`, update only). */
  connect: Record<string, number | null>;
  /** The parsed include/select, for `findRowById`. */
  shape: Shape;
}

export interface UpdateArgs extends CreateArgs {
  where: { id: number };
}

export interface DeleteArgs {
  where: { id: number };
  shape: Shape;
}

type Json = Record<string, unknown>;

const FIND_KEYS: Record<FindOperation, readonly string[]> = {
  findMany: ['where', 'include', 'select', 'orderBy', 'take', 'skip', 'distinct'],
  findFirst: ['where', 'include', 'select', 'orderBy', 'take', 'skip', 'distinct'],
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
const ALL_OPERATORS = new Set(Object.values(OPERATORS_BY_TYPE).flat());

const INT_MIN = -2147483648;
const INT_MAX = 2147483647;

// ---------------------------------------------------------------------------------------------
// Entry points

export function parseFindArgs(entity: EntityDef, op: FindOperation, body: unknown): FindArgs {
  const input = expectObject(body, '');
  allowOnlyKeys(input, FIND_KEYS[op], '', `${op} accepts`);
  const where = op === 'findUnique' ? parseUniqueWhere(entity, input.where, 'where') : optionalWhere(entity, input.where, 'where');
  return {
    where,
    orderBy: parseOrderBy(entity, input.orderBy, 'orderBy'),
    take: parsePageSize(input.take, 'take'),
    skip: parsePageSize(input.skip, 'skip'),
    shape: parseShape(entity, input, ''),
    ...(input.distinct !== undefined && { distinct: parseDistinct(entity, input.distinct, 'distinct') }),
  };
}

/** `distinct: 'field'` or `distinct: ['a', 'b']`: scalar fields, each once. */
function parseDistinct(entity: EntityDef, value: unknown, path: string): string[] {
  const fields = Array.isArray(value) ? value : [value];
  if (fields.length === 0) fail(path, 'needs at least one field');
  return fields.map((field, i) => {
    const fieldPath = Array.isArray(value) ? `${path}[${i}]` : path;
    if (typeof field !== 'string' || !fieldOf(entity, field)) fail(fieldPath, `must be a scalar field of ${entity.name}`);
    if (fields.indexOf(field) !== i) fail(fieldPath, 'is given twice');
    return field;
  });
}

export function parseCreateArgs(entity: EntityDef, body: unknown): CreateArgs {
  const input = expectObject(body, '');
  allowOnlyKeys(input, ['data', 'include', 'select'], '', 'create accepts');
  const { data, connect } = parseWriteData(entity, required(input, 'data', ''), 'data', 'create');
  for (const [name, field] of Object.entries(entity.fields)) {
    if (field.requiredOnCreate && !(name in data)) fail(at('data', name), 'is required');
  }
  for (const [name, relation] of Object.entries(entity.relations)) {
    if (relation.requiredOnCreate && !(name in connect)) fail(at('data', name), 'is required: { connect: { id } }');
  }
  return { data, connect, shape: parseShape(entity, input, '') };
}

export function parseUpdateArgs(entity: EntityDef, body: unknown): UpdateArgs {
  const input = expectObject(body, '');
  allowOnlyKeys(input, ['where', 'data', 'include', 'select'], '', 'update accepts');
  const where = uniqueId(entity, input.where, 'where');
  const { data, connect } = parseWriteData(entity, required(input, 'data', ''), 'data', 'update');
  if (Object.keys(data).length + Object.keys(connect).length === 0) fail('data', 'must change at least one field');
  return { where, data, connect, shape: parseShape(entity, input, '') };
}

export function parseDeleteArgs(entity: EntityDef, body: unknown): DeleteArgs {
  const input = expectObject(body, '');
  allowOnlyKeys(input, ['where', 'include', 'select'], '', 'delete accepts');
  return { where: uniqueId(entity, input.where, 'where'), shape: parseShape(entity, input, '') };
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

function parseUniqueWhere(entity: EntityDef, value: unknown, path: string): Where {
  const { id } = uniqueId(entity, value, path);
  return { kind: 'compare', field: 'id', op: 'equals', value: id, insensitive: false };
}

/** `{ id: N }` and nothing else: the only unique key the catalogue has. */
function uniqueId(entity: EntityDef, value: unknown, path: string): { id: number } {
  if (value === undefined) fail(path, 'is required');
  const input = expectObject(value, path);
  allowOnlyKeys(input, ['id'], path, 'a unique where accepts only');
  if (input.id === undefined) fail(at(path, 'id'), 'is required');
  return { id: parseScalar(entity.fields.id, input.id, at(path, 'id')) as number };
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
  if (isPlainObject(value)) return parseFilterObject(name, field, value, path);
  return { kind: 'compare', field: name, op: 'equals', value: parseScalar(field, value, path), insensitive: false };
}

function parseFilterObject(name: string, field: FieldDef, input: Json, path: string): Where {
  const insensitive = parseMode(input.mode, at(path, 'mode'));
  const items: Where[] = [];
  for (const [op, value] of definedEntries(input)) {
    const opPath = at(path, op);
    if (!ALL_OPERATORS.has(op)) fail(opPath, 'unknown filter operator');
    if (!OPERATORS_BY_TYPE[field.type].includes(op)) fail(opPath, `does not apply to a ${field.type} field`);
    if (op !== 'mode') items.push(parseOperator(name, field, op, value, opPath, insensitive));
  }
  return items.length === 1 ? items[0] : { kind: 'and', items };
}

function parseOperator(name: string, field: FieldDef, op: string, value: unknown, path: string, insensitive: boolean): Where {
  switch (op) {
    case 'equals':
      if (value === null) return isNull(name, field, path);
      return { kind: 'compare', field: name, op, value: parseScalar(field, value, path), insensitive };
    case 'not':
      if (value === null) return negate(isNull(name, field, path));
      if (isPlainObject(value)) return negate(parseFilterObject(name, field, value, path));
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
  if (Array.isArray(value)) return value.map((item, i) => parseOrderByItem(entity, item, `${path}[${i}]`));
  return [parseOrderByItem(entity, value, path)];
}

function parseOrderByItem(entity: EntityDef, value: unknown, path: string): OrderBy {
  const entries = definedEntries(expectObject(value, path));
  // One key per object, as in Prisma: the order of several keys would depend on JSON key order.
  if (entries.length !== 1) fail(path, 'needs exactly one field; use an array to order by several');
  const [field, direction] = entries[0];
  const fieldPath = at(path, field);
  if (relationOf(entity, field)) fail(fieldPath, 'ordering by a relation is not supported');
  if (!fieldOf(entity, field)) fail(fieldPath, `unknown field of ${entity.name}`);
  if (direction === 'asc' || direction === 'desc') return { field, direction };
  // The long form: { sort: 'asc' | 'desc', nulls?: 'first' | 'last' }.
  if (typeof direction !== 'object' || direction === null || Array.isArray(direction)) fail(fieldPath, "must be 'asc', 'desc' or { sort, nulls }");
  const long = direction as Json;
  allowOnlyKeys(long, ['sort', 'nulls'], fieldPath, 'an ordering accepts');
  if (long.sort !== 'asc' && long.sort !== 'desc') fail(at(fieldPath, 'sort'), "must be 'asc' or 'desc'");
  if (long.nulls === undefined) return { field, direction: long.sort };
  if (long.nulls !== 'first' && long.nulls !== 'last') fail(at(fieldPath, 'nulls'), "must be 'first' or 'last'");
  if (!fieldOf(entity, field)!.nullable) fail(at(fieldPath, 'nulls'), 'applies to optional fields only');
  return { field, direction: long.sort, nulls: long.nulls };
}

function parsePageSize(value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) fail(path, 'must be a non-negative integer');
  return value;
}

// ---------------------------------------------------------------------------------------------
// include / select

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
  const listKeys = ['where', 'orderBy', 'take', 'skip', 'include', 'select'];
  allowOnlyKeys(value, relation.kind === 'many' ? listKeys : ['include', 'select'], path, `a ${relation.kind === 'many' ? 'list' : 'single'} relation accepts`);
  return {
    where: optionalWhere(target, value.where, at(path, 'where')),
    orderBy: parseOrderBy(target, value.orderBy, at(path, 'orderBy')),
    take: parsePageSize(value.take, at(path, 'take')),
    skip: parsePageSize(value.skip, at(path, 'skip')),
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
      if (!field.writable) fail(keyPath, 'is not writable');
      if (v === null && !field.nullable) fail(keyPath, 'cannot be null: the field is not nullable');
      data[key] = v === null ? null : parseScalar(field, v, keyPath);
    } else if (relation) {
      connect[key] = parseRelationWrite(entity, relation, v, keyPath, op);
    } else {
      fail(keyPath, `unknown field or relation of ${entity.name}`);
    }
  }
  return { data, connect };
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
      if (typeof value !== 'string') fail(path, 'must be a string');
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') fail(path, 'must be a boolean');
      return value;
    case 'datetime':
      return parseDateTime(value, path);
    case 'json':
      return fail(path, 'JSON fields can only be filtered on null (equals: null, not: null); JSON value and path filters are not supported');
  }
}

function parseScalarList(field: FieldDef, value: unknown, path: string): ScalarValue[] {
  if (!Array.isArray(value)) fail(path, 'must be an array');
  return value.map((item, i) => parseScalar(field, item, `${path}[${i}]`));
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
  return new Date(parsed).toISOString();
}

// ---------------------------------------------------------------------------------------------
// helpers

function fail(path: string, message: string): never {
  throw badRequest('invalid-argument', path ? `${path}: ${message}` : message, { path });
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

export interface GroupByArgs {
  by: string[];
  where?: Where;
  orderBy: GroupOrderBy[];
  take?: number;
  skip?: number;
  aggregates: Aggregates;
}

const AGGREGATE_KEYS = ['_count', '_sum', '_avg', '_min', '_max'] as const;

/** Which field types each aggregate applies to (`_count` applies to every scalar field). */
const AGGREGATE_TYPES: Record<AggregateFunction, readonly FieldDef['type'][]> = {
  _sum: ['int', 'float'],
  _avg: ['int', 'float'],
  _min: ['int', 'float', 'datetime', 'string'],
  _max: ['int', 'float', 'datetime', 'string'],
};

export function parseAggregateArgs(entity: EntityDef, body: unknown): AggregateArgs {
  const input = expectObject(body, '');
  allowOnlyKeys(input, ['where', 'orderBy', 'take', 'skip', ...AGGREGATE_KEYS], '', 'aggregate accepts');
  const aggregates = parseAggregates(entity, input);
  if (Object.keys(aggregates).length === 0) fail('', `aggregate needs at least one of ${AGGREGATE_KEYS.join(', ')}`);
  return {
    where: optionalWhere(entity, input.where, 'where'),
    orderBy: parseOrderBy(entity, input.orderBy, 'orderBy'),
    take: parsePageSize(input.take, 'take'),
    skip: parsePageSize(input.skip, 'skip'),
    aggregates,
  };
}

export function parseGroupByArgs(entity: EntityDef, body: unknown): GroupByArgs {
  const input = expectObject(body, '');
  allowOnlyKeys(input, ['by', 'where', 'having', 'orderBy', 'take', 'skip', ...AGGREGATE_KEYS], '', 'groupBy accepts');
  const by = parseBy(entity, required(input, 'by', ''), 'by');
  if (input.having !== undefined) fail('having', 'is not supported yet; filter the rows with where instead');
  return {
    by,
    where: optionalWhere(entity, input.where, 'where'),
    orderBy: parseGroupOrderBy(entity, by, input.orderBy, 'orderBy'),
    take: parsePageSize(input.take, 'take'),
    skip: parsePageSize(input.skip, 'skip'),
    aggregates: parseAggregates(entity, input),
  };
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
  if (fn && !AGGREGATE_TYPES[fn].includes(field.type)) fail(path, `${fn} does not apply to a ${field.type} field (only ${AGGREGATE_TYPES[fn].join(', ')})`);
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
  if (!fieldOf(entity, value)) fail(path, `unknown field of ${entity.name}`);
  return value;
}

function parseGroupOrderBy(entity: EntityDef, by: string[], value: unknown, path: string): GroupOrderBy[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) return value.map((item, i) => parseGroupOrderByItem(entity, by, item, `${path}[${i}]`));
  return [parseGroupOrderByItem(entity, by, value, path)];
}

function parseGroupOrderByItem(entity: EntityDef, by: string[], value: unknown, path: string): GroupOrderBy {
  const entries = definedEntries(expectObject(value, path));
  if (entries.length !== 1) fail(path, 'needs exactly one key; use an array to order by several');
  const [key, v] = entries[0];
  const keyPath = at(path, key);
  if (key === '_count' || key === '_sum' || key === '_avg' || key === '_min' || key === '_max') {
    const inner = definedEntries(expectObject(v, keyPath));
    if (inner.length !== 1) fail(keyPath, 'needs exactly one field');
    const [field, direction] = inner[0];
    const fieldPath = at(keyPath, field);
    aggregateField(entity, field, fieldPath, key === '_count' ? undefined : key);
    return { kind: 'aggregate', fn: key, field, direction: parseDirection(direction, fieldPath) };
  }
  if (relationOf(entity, key)) fail(keyPath, 'ordering by a relation is not supported');
  if (!fieldOf(entity, key)) fail(keyPath, `unknown field of ${entity.name}`);
  if (!by.includes(key)) fail(keyPath, `must be one of the by fields (${by.join(', ')}) or an aggregate`);
  return { kind: 'field', field: key, direction: parseDirection(v, keyPath) };
}

function parseDirection(value: unknown, path: string): SortDirection {
  if (value !== 'asc' && value !== 'desc') fail(path, "must be 'asc' or 'desc'");
  return value;
}
