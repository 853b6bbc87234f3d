import type { Knex } from 'knex';
import { ISO_TIMESTAMP_TYPES } from '../../infra/postgres/isoTimestamps';
import { preparedStatementsOf } from '../../infra/postgres/preparedStatements';
import { ENTITIES, type EntityDef, historyTableOf, type RelationDef } from '../../contracts/entities';
import { assertNever, badRequest, type HttpError, notFound } from '../shared/errors';
import {
  defaultShape, type FindArgs, type FindOperation, type ListQuery, type OrderBy, type RelationLoad, type Shape, type SortDirection, type UniqueWhere, type Where,
} from './args';
import { catalogueColumns, toApiObject, type ApiObject, type Row } from './shape';

/**
 * Executes parsed model API reads against the read model. Every value reaches SQL as a bound
 * parameter; identifiers come from the catalogue only. Relations are loaded one query per
 * relation per level (`fk = any(ids)`), never one query per row; on a small page (JOINED_PAGE),
 * to-one includes (LEFT JOIN LATERAL, to any depth) and `_count`s are read in the statement that
 * reads their rows instead.
 *
 * A `scope` (row-level security) restricts the rows of each entity a caller may see, wherever
 * they are read: top-level rows, includes at every level, relation filters, `_count`, count,
 * sort keys through relations, the cursor row, distinct, aggregate and groupBy. A row outside the
 * scope does not exist for the query: a to-one include of it is null, `is: null` matches it, it is
 * not counted, a sort key read through it is null, a cursor on it gives no rows. Scalar foreign
 * keys (`folderId`) are fields of the visible row and still carry the id.
 */

/** The rows of an entity a caller may see, as a filter (undefined: all of them). */
export type Scope = (entity: EntityDef) => Where | undefined;

export interface ReadOptions {
  scope?: Scope;
  /**
   * The most rows one answer may hold, the rows of every include counted (unset: no bound). A read
   * that would hold more is refused (400 too-many-rows) after reading at most one row more per
   * query, so a reader's memory stays bounded whatever the table sizes.
   */
  maxRows?: number;
  /**
   * Read as of this event position (docs/history.md): every row, include, relation filter, count
   * and sort key as the read model held them right after it, from the history tables. The scope
   * (who may see what) is still decided on the tables as they are now.
   */
  asOf?: string;
}

/** Every query gets fresh table aliases so correlated subqueries on the same table (folder → children) stay apart. */
export interface SqlContext {
  knex: Knex;
  nextAlias(): string;
  scope?: Scope;
  /** Entities whose scope is being applied around this point (a scope never applies inside itself). */
  scoping?: ReadonlySet<string>;
  /** The rows this answer may still hold (ReadOptions.maxRows), shared by every query of the read. */
  rows?: { max: number; used: number };
  /** ReadOptions.asOf. */
  asOf?: string;
}

const RANK = '__rank';
/** A row's place in its page, for the query that joins the page's includes (withShape). */
const POSITION = '__position';
/** `_count` of a relation, selected with the rows as `<prefix>__count__<relation>`. */
const COUNT = '__count__';
/** The id of the parent row a loaded child belongs to (the foreign key, or the join table's source key). */
const PARENT = '__parent';

const COMPARISON_SQL = { equals: '=', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

export async function runFind(knex: Knex, entity: EntityDef, op: FindOperation, args: FindArgs, options: ReadOptions = {}): Promise<unknown> {
  const sql = sqlContext(knex, options);
  if (op === 'count') return countRows(sql, entity, args.where);
  // findFirst/findUnique: at most one row (the last one for a negative take), still honouring skip and a take of 0.
  const take = op === 'findMany' ? args.take : Math.sign(args.take ?? 1);
  const { rows, joined } = await selectRows(sql, entity, { ...args, take }, args.shape);
  const objects = await toObjects(sql, entity, rows, args.shape, joined);
  checkAnswerRows(sql, objects, args.shape);
  return op === 'findMany' ? objects : (objects[0] ?? null);
}

/** The row as the read model has it now, with the requested include/select; null if absent (or out of scope). */
export async function findRowById(knex: Knex, entity: EntityDef, id: number, shape: Shape = defaultShape(entity), options: ReadOptions = {}): Promise<ApiObject | null> {
  const where: Where = { kind: 'compare', field: 'id', op: 'equals', value: id, insensitive: false };
  return (await runFind(knex, entity, 'findUnique', { where, orderBy: [], shape }, options)) as ApiObject | null;
}

/** Whether the row exists and is in the caller's scope (a read's 404 when not). */
export async function isRowVisible(knex: Knex, entity: EntityDef, id: number, options: ReadOptions = {}): Promise<boolean> {
  return (await findRowById(knex, entity, id, { fields: ['id'], relations: {}, counts: {} }, options)) !== null;
}

/**
 * The id of the row a unique where names, among the rows the caller sees: `{ id }` alone is taken
 * as it is (a missing row is the command's or checkVisible's to answer), any other is looked up; no
 * row is a 404 not-found. The lookup and the write are two steps: the filters beside the key are
 * checked when the row is looked up, not held until it is written.
 */
export async function uniqueRowId(knex: Knex, entity: EntityDef, unique: UniqueWhere, options: ReadOptions = {}): Promise<number> {
  if (unique.id !== undefined) return unique.id;
  const id = await findUniqueRowId(knex, entity, unique, options);
  if (id === null) throw notFound(`No ${entity.name} matches the unique where`, { path: 'where', entity: entity.name });
  return id;
}

/** The id of the row a unique where names (null: none the caller sees). */
export async function findUniqueRowId(knex: Knex, entity: EntityDef, unique: UniqueWhere, options: ReadOptions = {}): Promise<number | null> {
  const row = (await runFind(knex, entity, 'findUnique', { where: unique.where, orderBy: [], shape: { fields: ['id'], relations: {}, counts: {} } }, options)) as { id: number } | null;
  return row?.id ?? null;
}

export function sqlContext(knex: Knex, options: ReadOptions = {}): SqlContext {
  let next = 0;
  return {
    knex, nextAlias: () => `t${next++}`, ...(options.scope && { scope: options.scope }),
    ...(options.maxRows !== undefined && { rows: { max: options.maxRows, used: 0 } }),
    ...(options.asOf !== undefined && { asOf: options.asOf }),
  };
}

/**
 * The rows of `table` under `alias`, for a from or a join: the table, or with `asOf` the rows as
 * they were right after that position (the rows written at or before it and not replaced since,
 * and the replaced versions that were current then; projections/migrations/023_history.ts). A
 * scope is applied on the tables as they are now: access is decided by the caller's rights now.
 */
export function tableAs(sql: SqlContext, table: string, columns: readonly string[], alias: string): Record<string, string> | Knex.Raw {
  // Accounts are the identity projection's, kept without history: read as they are now.
  if (sql.asOf === undefined || (sql.scoping && sql.scoping.size > 0) || table === 'users') return { [alias]: table };
  const list = columns.map((c) => `"${c}"`).join(', ');
  return sql.knex.raw(`(SELECT ${list} FROM "${table}" WHERE coalesce(valid_from, 0) <= ?
    UNION ALL SELECT ${list} FROM "${historyTableOf(table)}" WHERE coalesce(valid_from, 0) <= ? AND valid_to > ?) AS ??`, [sql.asOf, sql.asOf, sql.asOf, alias]);
}

/** A query over the rows of `entity` under `alias` (see tableAs). */
export function rowsOf(sql: SqlContext, entity: EntityDef, alias: string): Knex.QueryBuilder {
  return sql.knex.from(tableAs(sql, entity.table, catalogueColumns(entity), alias));
}

function linkRowsAs(sql: SqlContext, relation: RelationDef, alias: string): Record<string, string> | Knex.Raw {
  const { table, sourceKey, targetKey } = relation.through!;
  return tableAs(sql, table, [sourceKey, targetKey], alias);
}

/** The default of MODEL_MAX_ROWS: an answer of this many rows is a few megabytes of JSON, and some 20 MB while it is built. */
export const DEFAULT_MAX_ROWS = 10_000;

/**
 * Limits `qb` to the rows the answer may still hold, plus one that tells it would hold more
 * (`take`: what the query takes anyway, when it is less). Without a bound, nothing.
 */
export function limitToRowBudget(sql: SqlContext, qb: Knex.QueryBuilder, take?: number): void {
  if (!sql.rows) return;
  const room = sql.rows.max - sql.rows.used;
  if (take === undefined || Math.abs(take) > room) qb.limit(room + 1);
}

/** Counts rows read for the answer; past the bound, the read is refused. */
export function spendRowBudget(sql: SqlContext, rows: number): void {
  if (!sql.rows) return;
  sql.rows.used += rows;
  if (sql.rows.used > sql.rows.max) throw tooManyRows(sql.rows.max);
}

function tooManyRows(max: number): HttpError {
  return badRequest('too-many-rows',
    `The answer would hold more than ${max} rows (the rows of every include counted). Read it in pages: take (at most ${max} rows with what they include) ` +
    'and, for the next page, cursor: { id } of the last row read with skip: 1; or include less (take inside an include bounds it too)', { path: 'take', limit: max });
}

/**
 * The rows the answer holds as it is written: a row a to-one include shares between parents (one
 * status of many results) is written once per parent, with everything it includes. Past the
 * bound, the read is refused before anything is written.
 */
function checkAnswerRows(sql: SqlContext, objects: ApiObject[], shape: Shape): void {
  if (sql.rows && answerRows(objects, shape, sql.rows.max) > sql.rows.max) throw tooManyRows(sql.rows.max);
}

/** The rows `objects` (read with `shape`) hold as they are written, counted up to a little past `max`. */
export function answerRows(objects: ApiObject[], shape: Shape, max = Infinity): number {
  const weights = new Map<ApiObject, number>();
  const weight = (object: ApiObject, of: Shape): number => {
    let known = weights.get(object);
    if (known !== undefined) return known;
    known = 1;
    for (const [name, load] of Object.entries(of.relations)) {
      const related = object[name] as ApiObject | ApiObject[] | null;
      if (Array.isArray(related)) for (const child of related) known += weight(child, load.shape);
      else if (related) known += weight(related, load.shape);
      if (known > max) break;
    }
    weights.set(object, known);
    return known;
  };
  let total = 0;
  for (const object of objects) {
    total += weight(object, shape);
    if (total > max) break;
  }
  return total;
}

/** The refusal of an answer over `max` rows, for a check made elsewhere (the answer of a write, before it). */
export function refuseOverRows(rows: number, max: number): void {
  if (rows > max) throw tooManyRows(max);
}

/**
 * Restricts `qb`'s rows of `entity` (under `alias`) to the caller's scope. The scope's own relation
 * filters see only rows in scope too (a step whose case is out of scope is out of scope when the
 * step's scope is "its case's project is visible"), except rows of an entity whose scope is being
 * applied around them: that would never end.
 */
export function applyScope(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string): void {
  const where = scopeOf(sql, entity);
  if (where) applyWhere({ ...sql, scoping: new Set([...(sql.scoping ?? []), entity.name]) }, qb, entity, alias, where);
}

/** PostgreSQL's limit on the parameters of one statement. */
const MAX_BINDINGS = 65535;

/**
 * Runs a query. One that needs more bound values than PostgreSQL takes in a statement (an OR of
 * tens of thousands of conditions) is the request's fault: a 400, not a driver error.
 */
export async function fetchRows(qb: Knex.QueryBuilder): Promise<Row[]> {
  const { sql: text, bindings } = qb.toSQL();
  if (bindings.length > MAX_BINDINGS) {
    throw badRequest('invalid-argument', `the query needs ${bindings.length} values, more than the ${MAX_BINDINGS} one statement takes; split it`, { path: '' });
  }
  const name = preparedStatementsOf(qb as unknown as Knex).nameFor(text);
  // Timestamps as ISO text: the rows go out as JSON (shape.ts), a Date per value would be built only to be formatted again.
  return (await qb.options({ types: ISO_TIMESTAMP_TYPES, ...(name !== undefined && { name }) })) as Row[];
}

function scopeOf(sql: SqlContext, entity: EntityDef): Where | undefined {
  return sql.scoping?.has(entity.name) ? undefined : sql.scope?.(entity);
}

// ---------------------------------------------------------------------------------------------
// top-level rows

/** The rows a read holds, with the to-one includes of `shape` joined into the same statement. */
interface ReadRows {
  rows: Row[];
  joined: JoinedOne[];
}

async function selectRows(sql: SqlContext, entity: EntityDef, query: ListQuery & { distinct?: string[] }, shape: Shape): Promise<ReadRows> {
  if (query.take === 0) return { rows: [], joined: [] };
  const alias = sql.nextAlias();
  // distinct pages its rows in an outer query, which orders them by their columns: all of them.
  const select = rowsOf(sql, entity, alias).select(query.distinct ? columnsOf(entity, alias) : shapeColumnsAs(entity, shape, alias));
  applyWhere(sql, select, entity, alias, query.where);
  applyScope(sql, select, entity, alias);
  if (query.distinct) return selectDistinct(sql, entity, select, alias, query as ListQuery & { distinct: string[] }, shape);
  const { backwards, order } = applyPage(sql, select, entity, alias, query);
  limitToRowBudget(sql, select, query.take);
  const { qb, joined } = withShape(sql, select, order, entity, shape, query.take);
  const rows = await fetchRows(qb);
  spendRowBudget(sql, rows.length);
  return { rows: backwards ? rows.reverse() : rows, joined };
}

/**
 * The most rows a page may be bounded to (its `take`, times its parents for an include's) for its
 * includes and counts to be read in its statement. A statement saved is worth most on a small page;
 * on a large one, a lookup per row costs more than a statement per include (the memory benchmark's
 * pages of 2,500 results with three includes: 11.5–13.7 s apart, 17.2–18.4 s joined), and a read
 * refused for too many rows must be refused before anything is included (its unpaged read: 0.28 s
 * and 5 MB, against 0.77 s and 29 MB joined).
 */
const JOINED_PAGE = 100;

function joinsInto(rows: number | undefined): boolean {
  return rows !== undefined && Math.abs(rows) <= JOINED_PAGE;
}

/**
 * The statement reading a page of rows with what `shape` adds to each: its to-one includes joined
 * (joinOnes) and its `_count`s (selectCounts). They are added in an outer query over the page, so
 * they are read for the page's rows only, not for every row the where matches before the page is
 * cut; the outer query keeps the page's order by numbering its rows in it (`order`).
 *
 * Only for a page the request bounds to JOINED_PAGE rows (joinsInto).
 */
function withShape(sql: SqlContext, page: Knex.QueryBuilder, order: OrderSql, entity: EntityDef, shape: Shape, take: number | undefined): { qb: Knex.QueryBuilder; joined: JoinedOne[] } {
  const joinsOne = Object.keys(shape.relations).some((name) => entity.relations[name].kind === 'one');
  if (!joinsInto(take) || (!joinsOne && Object.keys(shape.counts).length === 0)) return { qb: page, joined: [] };
  page.select(sql.knex.raw(`row_number() over (order by ${order.sql}) as ??`, [...order.bindings, POSITION]));
  const outer = sql.nextAlias();
  const qb = sql.knex.from(page.as(outer)).select(shapeColumnsAs(entity, shape, outer)).orderBy(`${outer}.${POSITION}`);
  const joined = joinOnes(sql, qb, entity, outer, shape, roomBeside(entity, shape));
  selectCounts(sql, qb, entity, outer, shape.counts, '');
  return { qb, joined };
}

/**
 * Orders `qb` and cuts the page: cursor, skip, take. A negative take reads the reversed order
 * (the caller reverses the rows back): returns whether it did.
 */
export function applyPage(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, query: ListQuery): { backwards: boolean; order: OrderSql } {
  const backwards = (query.take ?? 0) < 0;
  const keys = pageKeys(sql, entity, query.orderBy, backwards);
  if (query.cursor !== undefined) applyCursor(sql, qb, entity, alias, query.cursor, keys);
  const order = orderSql(keys, alias);
  qb.orderByRaw(order.sql, order.bindings);
  if (query.take !== undefined) qb.limit(Math.abs(query.take));
  if (query.skip) qb.offset(query.skip);
  return { backwards, order };
}

/**
 * `distinct`: DISTINCT ON the fields keeps the first row of each group in the requested order
 * (PostgreSQL needs the distinct columns first in its ORDER BY); the outer query restores the
 * requested order and pages the survivors. The cursor, like a where, picks rows before that.
 */
async function selectDistinct(sql: SqlContext, entity: EntityDef, select: Knex.QueryBuilder, alias: string, query: ListQuery & { distinct: string[] }, shape: Shape): Promise<ReadRows> {
  const backwards = (query.take ?? 0) < 0;
  if (query.cursor !== undefined) applyCursor(sql, select, entity, alias, query.cursor, pageKeys(sql, entity, query.orderBy, backwards));
  const distinctColumns = query.distinct.map((field) => columnOf(entity, alias, field));
  const firstInGroup = orderSql(sortKeys(sql, entity, query.orderBy), alias);
  select.distinctOn(distinctColumns).orderByRaw([...distinctColumns.map(() => '??'), firstInGroup.sql].join(', '), [...distinctColumns, ...firstInGroup.bindings]);
  const outer = sql.nextAlias();
  const page = sql.knex.from(select.as(outer)).select(shapeColumnsAs(entity, shape, outer));
  const { order } = applyPage(sql, page, entity, outer, { ...query, cursor: undefined });
  limitToRowBudget(sql, page, query.take);
  const { qb, joined } = withShape(sql, page, order, entity, shape, query.take);
  const rows = await fetchRows(qb);
  spendRowBudget(sql, rows.length);
  return { rows: backwards ? rows.reverse() : rows, joined };
}

async function countRows(sql: SqlContext, entity: EntityDef, where: Where | undefined): Promise<number> {
  const alias = sql.nextAlias();
  const count = rowsOf(sql, entity, alias).count({ n: '*' });
  applyWhere(sql, count, entity, alias, where);
  applyScope(sql, count, entity, alias);
  const [row] = await fetchRows(count);
  return Number(row.n);
}

/**
 * The columns a read of `entity` with `shape` needs: the id (lists and counts are loaded by it),
 * the fields asked for, and the foreign keys of the to-one relations it includes.
 */
function shapeColumns(entity: EntityDef, shape: Shape): string[] {
  const columns = new Set(['id']);
  for (const field of shape.fields) columns.add(entity.fields[field].column);
  for (const name of Object.keys(shape.relations)) {
    const relation = entity.relations[name];
    if (relation.kind === 'one') columns.add(relation.foreignKey);
  }
  return [...columns];
}

/** shapeColumns under `alias`. */
function shapeColumnsAs(entity: EntityDef, shape: Shape, alias: string): string[] {
  return shapeColumns(entity, shape).map((column) => `${alias}.${column}`);
}

export function columnsOf(entity: EntityDef, alias: string): string[] {
  return catalogueColumns(entity).map((column) => `${alias}.${column}`);
}

export function columnOf(entity: EntityDef, alias: string, field: string): string {
  return `${alias}.${entity.fields[field].column}`;
}

// ---------------------------------------------------------------------------------------------
// ordering and cursors

/** A sort key as an SQL expression over the row under `alias`; nulls always placed explicitly. */
interface SortKey {
  value(alias: string): Knex.Raw;
  direction: SortDirection;
  nullsFirst: boolean;
}

/** The requested order, then id ascending so that equal keys (and pages) come out the same every time. */
function sortKeys(sql: SqlContext, entity: EntityDef, orderBy: OrderBy[]): SortKey[] {
  const keys: SortKey[] = orderBy.map((key) => ({
    value: (alias) => sortValue(sql, entity, alias, key, key.via ?? []),
    direction: key.direction,
    // PostgreSQL's (and Prisma's) default: nulls last ascending, first descending.
    nullsFirst: 'nulls' in key && key.nulls ? key.nulls === 'first' : key.direction === 'desc',
  }));
  const byId = orderBy.some((key) => 'field' in key && key.field === 'id' && !key.via);
  if (!byId) keys.push({ value: (alias) => sql.knex.raw('??', [`${alias}.id`]), direction: 'asc', nullsFirst: false });
  return keys;
}

/** The keys a page is read in: the requested order, or its exact reverse for a negative take. */
function pageKeys(sql: SqlContext, entity: EntityDef, orderBy: OrderBy[], backwards: boolean): SortKey[] {
  const keys = sortKeys(sql, entity, orderBy);
  if (!backwards) return keys;
  return keys.map((key) => ({ ...key, direction: key.direction === 'asc' ? 'desc' : 'asc', nullsFirst: !key.nullsFirst }));
}

interface OrderSql {
  sql: string;
  bindings: Knex.Raw[];
}

function orderSql(keys: SortKey[], alias: string): OrderSql {
  return {
    // Directions come from the parser ('asc' | 'desc'), never from the client's text.
    sql: keys.map((key) => `? ${key.direction} nulls ${key.nullsFirst ? 'first' : 'last'}`).join(', '),
    bindings: keys.map((key) => key.value(alias)),
  };
}

/**
 * A field of the row, or of the row reached through the to-one relations `via` (a scalar
 * subquery per hop: null when the related row is missing or out of scope), or a relation count.
 */
function sortValue(sql: SqlContext, entity: EntityDef, alias: string, key: OrderBy, via: string[]): Knex.Raw {
  if (via.length === 0) {
    if ('field' in key) return sql.knex.raw('??', [columnOf(entity, alias, key.field)]);
    return sql.knex.raw('?', [relatedRows(sql, entity.relations[key.count], alias).qb.count('*')]);
  }
  const relation = entity.relations[via[0]];
  const { qb, alias: relatedAlias } = relatedRows(sql, relation, alias);
  const value = sql.knex.raw('?', [qb.select(sortValue(sql, ENTITIES[relation.target], relatedAlias, key, via.slice(1)))]);
  // As Prisma: a count through a relation that is not set (or out of scope) counts 0, not null.
  return 'field' in key ? value : sql.knex.raw('coalesce(?, 0)', [value]);
}

/**
 * `cursor`: keeps the rows at or after the cursor row in the order of `keys` (compared key by key,
 * nulls where the order puts them). No cursor row (or one out of scope): no rows at all.
 */
function applyCursor(
  sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, cursor: number, keys: SortKey[],
  sameParent?: (cursorRow: Knex.QueryBuilder, cursorAlias: string) => void,
): void {
  const cursorAlias = sql.nextAlias();
  const cursorRow = rowsOf(sql, entity, cursorAlias).select(sql.knex.raw('1')).where(`${cursorAlias}.id`, cursor);
  sameParent?.(cursorRow, cursorAlias);
  applyScope(sql, cursorRow, entity, cursorAlias);
  cursorRow.where(atOrAfter(sql, keys, alias, cursorAlias));
  qb.whereExists(cursorRow);
}

function atOrAfter(sql: SqlContext, keys: SortKey[], row: string, cursor: string): Knex.Raw {
  if (keys.length === 0) return sql.knex.raw('true');
  const [key, ...rest] = keys;
  const [r, c] = [() => key.value(row), () => key.value(cursor)];
  const comparison = key.direction === 'asc' ? '>' : '<';
  const nullAfter = key.nullsFirst ? '(? is not null and ? is null)' : '(? is null and ? is not null)';
  return sql.knex.raw(`((? ${comparison} ?) or ${nullAfter} or (? is not distinct from ? and ?))`, [
    r(), c(), r(), c(), r(), c(), atOrAfter(sql, rest, row, cursor),
  ]);
}

// ---------------------------------------------------------------------------------------------
// where → SQL

export function applyWhere(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, where: Where | undefined): void {
  if (!where) return;
  switch (where.kind) {
    case 'and':
      for (const item of where.items) applyWhere(sql, qb, entity, alias, item);
      return;
    case 'or':
      if (where.items.length === 0) qb.whereRaw('false');
      // An always-true branch makes the whole OR true; knex would otherwise drop its empty group.
      else if (!where.items.some(isAlwaysTrue)) {
        qb.where((group) => {
          for (const item of where.items) group.orWhere((branch) => applyWhere(sql, branch, entity, alias, item));
        });
      }
      return;
    case 'not':
      if (isAlwaysTrue(where.item)) qb.whereRaw('false');
      else qb.whereNot((inner) => applyWhere(sql, inner, entity, alias, where.item));
      return;
    case 'isNull':
      qb.whereNull(columnOf(entity, alias, where.field));
      return;
    case 'compare':
    case 'in':
    case 'like':
    case 'list':
    case 'listEmpty':
      applyComparison(qb, entity, alias, where);
      return;
    case 'relation':
      applyRelationFilter(sql, qb, entity, alias, where);
      return;
    default:
      assertNever(where);
  }
}

/** `{}`, an AND of always-true parts, or an OR with an always-true branch: no SQL to write, and none to lose under NOT. */
function isAlwaysTrue(where: Where): boolean {
  if (where.kind === 'and') return where.items.every(isAlwaysTrue);
  if (where.kind === 'or') return where.items.some(isAlwaysTrue);
  return false;
}

type Comparison = Extract<Where, { kind: 'compare' | 'in' | 'like' | 'list' | 'listEmpty' }>;

/** On a nullable column the comparison also demands a value, so that NOT of it is its exact complement. */
function applyComparison(qb: Knex.QueryBuilder, entity: EntityDef, alias: string, where: Comparison): void {
  // As Prisma: `in: []` holds for no row, `notIn: []` for every row, nulls included. An explicit
  // clause, so that knex never drops it as an empty group under OR / NOT.
  if (where.kind === 'in' && where.values.length === 0) return void qb.whereRaw(where.negated ? 'true' : 'false');
  const column = columnOf(entity, alias, where.field);
  if (!entity.fields[where.field].nullable) return compare(qb, column, where);
  qb.where((guarded) => {
    guarded.whereNotNull(column);
    compare(guarded, column, where);
  });
}

/** Array operators: the bound list takes the column's array type. */
const LIST_SQL = { has: '@>', hasEvery: '@>', hasSome: '&&', equals: '=' } as const;

function compare(qb: Knex.QueryBuilder, column: string, where: Comparison): void {
  switch (where.kind) {
    case 'compare':
      if (where.insensitive) qb.whereRaw(`lower(??) ${COMPARISON_SQL[where.op]} lower(?)`, [column, where.value]);
      else qb.where(column, COMPARISON_SQL[where.op], where.value);
      return;
    case 'in':
      return compareWithList(qb, column, where);
    case 'like':
      qb.where(column, where.insensitive ? 'ilike' : 'like', likePattern(where.op, where.value));
      return;
    case 'list':
      qb.whereRaw(`?? ${LIST_SQL[where.op]} ?`, [column, where.values as Knex.Value]);
      return;
    case 'listEmpty':
      qb.whereRaw(`cardinality(??) ${where.empty ? '=' : '>'} 0`, [column]);
      return;
    default:
      assertNever(where);
  }
}

/** One bound array whatever the number of values: a long list never runs into the parameter limit. */
function compareWithList(qb: Knex.QueryBuilder, column: string, where: Extract<Where, { kind: 'in' }>): void {
  const { values, negated, insensitive } = where;
  // The values are never null (the parser refuses null members), so NOT of = any is the exact complement.
  const test = insensitive ? 'lower(??) = any(select lower(value) from unnest(?::text[]) as value)' : '?? = any(?)';
  qb.whereRaw(negated ? `not (${test})` : test, [column, values as Knex.Value]);
}

/** LIKE pattern for contains/startsWith/endsWith: the search text's own %, _ and \ match literally. */
export function likePattern(op: 'contains' | 'startsWith' | 'endsWith', text: string): string {
  const literal = text.replace(/[\\%_]/g, (c) => `\\${c}`);
  if (op === 'startsWith') return `${literal}%`;
  if (op === 'endsWith') return `%${literal}`;
  return `%${literal}%`;
}

/**
 * some / is → EXISTS (related row matching), none / isNot → NOT EXISTS (related row matching),
 * every → NOT EXISTS (related row not matching). Related rows out of scope do not exist.
 */
function applyRelationFilter(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, where: Extract<Where, { kind: 'relation' }>): void {
  const relation = entity.relations[where.relation];
  const target = ENTITIES[relation.target];
  if (where.where === null && !scopeOf(sql, target)) {
    // is: null / isNot: null only exist for kind 'one': the foreign key is (not) set.
    const foreignKey = `${alias}.${relation.foreignKey}`;
    if (where.quantifier === 'is') qb.whereNull(foreignKey);
    else qb.whereNotNull(foreignKey);
    return;
  }
  const { qb: subquery, alias: subAlias } = relatedRows(sql, relation, alias);
  subquery.select(sql.knex.raw('1'));
  if (where.where !== null) applyWhere(sql, subquery, target, subAlias, where.quantifier === 'every' ? { kind: 'not', item: where.where } : where.where);
  // With a scope, `is: null` means "no related row the caller may see".
  const exists = where.where === null ? where.quantifier === 'isNot' : where.quantifier === 'some' || where.quantifier === 'is';
  if (exists) qb.whereExists(subquery);
  else qb.whereNotExists(subquery);
}

/** `from <target> where <target row belongs to the outer row>`, within the caller's scope; the caller selects. */
function relatedRows(sql: SqlContext, relation: RelationDef, outerAlias: string): { qb: Knex.QueryBuilder; alias: string } {
  const target = ENTITIES[relation.target];
  const alias = sql.nextAlias();
  const qb = rowsOf(sql, target, alias);
  if (relation.kind === 'one') qb.where(`${alias}.id`, sql.knex.ref(`${outerAlias}.${relation.foreignKey}`));
  else qb.where(linkTo(sql, qb, relation, alias), sql.knex.ref(`${outerAlias}.id`));
  applyScope(sql, qb, target, alias);
  return { qb, alias };
}

/**
 * The column that holds the parent's id for the target rows of a list relation (under `alias`):
 * the foreign key, or for many-to-many the source key of the join table, joined here.
 */
function linkTo(sql: SqlContext, qb: Knex.QueryBuilder, relation: RelationDef, alias: string): string {
  if (!relation.through) return `${alias}.${relation.foreignKey}`;
  const link = sql.nextAlias();
  qb.join(linkRowsAs(sql, relation, link), `${link}.${relation.through.targetKey}`, `${alias}.id`);
  return `${link}.${relation.through.sourceKey}`;
}

// ---------------------------------------------------------------------------------------------
// include / select / _count

/**
 * `joined`: the to-one includes of `shape` read with `rows` (joinOnes); the rows carry their
 * `_count`s (selectCounts); list relations are loaded here.
 */
async function toObjects(sql: SqlContext, entity: EntityDef, rows: Row[], shape: Shape, joined: JoinedOne[]): Promise<ApiObject[]> {
  const objects = rows.map((row) => toApiObject(entity, row, shape.fields));
  for (const [name, load] of Object.entries(shape.relations)) {
    const join = joined.find((j) => j.name === name);
    const relation = entity.relations[name];
    const related = join ? await splitJoined(sql, rows, join, load) : relation.kind === 'many' ? await loadMany(sql, relation, rows, load) : await loadOne(sql, relation, rows, load);
    objects.forEach((object, i) => (object[name] = related[i]));
  }
  const counted = Object.keys(shape.counts);
  if (counted.length > 0 && rows.length > 0) {
    // Rows of a page too large to carry them (withShape) get them by a statement of their own.
    const carried = COUNT + counted[0] in rows[0];
    const counts = carried ? rows : await loadCounts(sql, entity, rows, shape.counts);
    objects.forEach((object, i) => (object._count = Object.fromEntries(counted.map((name) => [name, Number(counts[i][COUNT + name])]))));
  }
  return objects;
}

const distinctIds = (ids: unknown[]) => [...new Set(ids.filter((id) => id !== null && id !== undefined))] as number[];

/** The children of every parent row, as one list per parent (same order as `parents`). */
async function loadMany(sql: SqlContext, relation: RelationDef, parents: Row[], load: RelationLoad): Promise<ApiObject[][]> {
  const target = ENTITIES[relation.target];
  const parentIds = distinctIds(parents.map((row) => row.id));
  const { rows: children, joined } = parentIds.length === 0 || load.take === 0 ? { rows: [], joined: [] } : await selectChildren(sql, relation, parentIds, load);
  const objects = await toObjects(sql, target, children, load.shape, joined);
  const byParent = new Map<unknown, ApiObject[]>();
  children.forEach((child, i) => {
    const siblings = byParent.get(child[PARENT]) ?? [];
    siblings.push(objects[i]);
    byParent.set(child[PARENT], siblings);
  });
  return parents.map((parent) => byParent.get(parent.id) ?? []);
}

/**
 * One query for all parents; take/skip/cursor apply per parent, so rows are numbered within each
 * parent (row_number over the requested order, reversed for a negative take) and the page is cut
 * on that number. A many-to-many target row comes once per parent it is linked to.
 */
async function selectChildren(sql: SqlContext, relation: RelationDef, parentIds: number[], query: RelationLoad): Promise<ReadRows> {
  const target = ENTITIES[relation.target];
  const alias = sql.nextAlias();
  const columns = shapeColumns(target, query.shape);
  const numbered = rowsOf(sql, target, alias).select(columns.map((column) => `${alias}.${column}`));
  const parent = linkTo(sql, numbered, relation, alias);
  numbered.select({ [PARENT]: parent }).whereRaw('?? = any(?)', [parent, parentIds]);
  applyWhere(sql, numbered, target, alias, query.where);
  applyScope(sql, numbered, target, alias);
  const backwards = (query.take ?? 0) < 0;
  const keys = pageKeys(sql, target, query.orderBy, backwards);
  // As Prisma (which pages an include's rows in memory, after its where): within an include, the
  // cursor row must be one of this parent's rows that the include's where keeps, else the parent gets none.
  if (query.cursor !== undefined) applyCursor(sql, numbered, target, alias, query.cursor, keys, (cursorRow, cursorAlias) => {
    applyWhere(sql, cursorRow, target, cursorAlias, query.where);
    if (!relation.through) cursorRow.whereRaw('?? = ??', [`${cursorAlias}.${relation.foreignKey}`, parent]);
    else {
      const link = sql.nextAlias();
      cursorRow.whereExists(sql.knex.from(linkRowsAs(sql, relation, link)).select(sql.knex.raw('1'))
        .whereRaw('?? = ??', [`${link}.${relation.through.targetKey}`, `${cursorAlias}.id`])
        .whereRaw('?? = ??', [`${link}.${relation.through.sourceKey}`, parent]));
    }
  });
  const order = orderSql(keys, alias);
  numbered.select(sql.knex.raw(`row_number() over (partition by ?? order by ${order.sql}) as ??`, [parent, ...order.bindings, RANK]));

  const first = query.skip ?? 0;
  const page = sql.knex
    .from(numbered.as('numbered'))
    .select([...columns, PARENT].map((column) => `numbered.${column}`))
    .where(RANK, '>', first)
    .orderBy([`numbered.${PARENT}`, { column: RANK, order: backwards ? 'desc' : 'asc' }]);
  if (query.take !== undefined) page.where(RANK, '<=', first + Math.abs(query.take));
  limitToRowBudget(sql, page);
  // Includes and counts in this statement for a small page (withShape): its rows only, the rank is cut in the subquery, below these.
  const small = joinsInto(query.take === undefined ? undefined : parentIds.length * query.take);
  const joined = small ? joinOnes(sql, page, target, 'numbered', query.shape, roomBeside(target, query.shape)) : [];
  if (small) selectCounts(sql, page, target, 'numbered', query.shape.counts, '');
  const rows = await fetchRows(page);
  spendRowBudget(sql, rows.length);
  return { rows, joined };
}

/** A to-one include read in its parent rows' statement: its columns come as `<alias>__<column>`. */
interface JoinedOne {
  name: string;
  target: EntityDef;
  alias: string;
  /** The target's columns the include needs (shapeColumns), named `<alias>__<column>` in the parent rows. */
  columns: string[];
  /** The keys of the target's `_count`s (selectCounts), named `<alias>__<key>` in the parent rows. */
  counts: string[];
  /** The target's own to-one includes, joined into the same statement. */
  nested: JoinedOne[];
}

/**
 * Joins the to-one includes of `shape` (and theirs, to any depth) into `qb`, which reads rows of
 * `entity` under `alias`: each as a LEFT JOIN LATERAL of the related row within the caller's scope
 * and as of the read's position (relatedRows), so a foreign key that is not set, or names a row
 * out of scope, joins nothing and the include is null. At most one row joins per parent row (ids
 * are unique), so the parent rows, their order and their page are as without the joins.
 */
function joinOnes(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, shape: Shape, room: { columns: number }): JoinedOne[] {
  const joined: JoinedOne[] = [];
  for (const [name, load] of Object.entries(shape.relations)) {
    const relation = entity.relations[name];
    if (relation.kind !== 'one') continue;
    const target = ENTITIES[relation.target];
    const columns = shapeColumns(target, load.shape);
    const needs = columns.length + Object.keys(load.shape.counts).length;
    if (needs > room.columns) continue; // read by a statement of its own (loadOne)
    room.columns -= needs;
    const { qb: related, alias: as } = relatedRows(sql, relation, alias);
    // limit 1 (ids are unique) keeps the subquery from being merged into the join: a lookup by id per row of the page,
    // where a merged join may hash the whole target table for a page of 2,500 rows (the memory benchmark: 45 % slower).
    related.select(columns.map((column) => `${as}.${column}`)).limit(1);
    qb.joinRaw('left join lateral :related as :alias: on true', { related, alias: as });
    qb.select(Object.fromEntries(columns.map((column) => [`${as}__${column}`, `${as}.${column}`])));
    const counts = selectCounts(sql, qb, target, as, load.shape.counts, `${as}__`);
    joined.push({ name, target, alias: as, columns, counts, nested: joinOnes(sql, qb, target, as, load.shape, room) });
  }
  return joined;
}

/**
 * The most columns one statement selects for the to-one includes it joins; an include past them is
 * read by a statement of its own (loadOne). PostgreSQL takes 1,664 in a select list, and the
 * widest shape the request bounds allow (64 relations) can pass 400 today: saving a round trip is
 * worth little beside a row that wide.
 */
const MAX_JOINED_COLUMNS = 400;

/** What a statement reading `shape`'s rows of `entity` has left for joined includes. */
function roomBeside(entity: EntityDef, shape: Shape): { columns: number } {
  return { columns: MAX_JOINED_COLUMNS - shapeColumns(entity, shape).length - Object.keys(shape.counts).length };
}

/** The related row of every row for a to-one include not joined into the rows' statement (joinOnes), one statement for all rows. */
async function loadOne(sql: SqlContext, relation: RelationDef, rows: Row[], load: RelationLoad): Promise<(ApiObject | null)[]> {
  const target = ENTITIES[relation.target];
  const ids = distinctIds(rows.map((row) => row[relation.foreignKey]));
  const alias = sql.nextAlias();
  const select = rowsOf(sql, target, alias).select(shapeColumnsAs(target, load.shape, alias)).whereRaw('?? = any(?)', [`${alias}.id`, ids]);
  applyScope(sql, select, target, alias);
  limitToRowBudget(sql, select);
  // Its own includes and counts in this statement for a few rows only, as for a page (withShape).
  const few = joinsInto(ids.length);
  const joined = few ? joinOnes(sql, select, target, alias, load.shape, roomBeside(target, load.shape)) : [];
  if (few) selectCounts(sql, select, target, alias, load.shape.counts, '');
  const related = ids.length === 0 ? [] : await fetchRows(select);
  spendRowBudget(sql, related.length);
  const objects = await toObjects(sql, target, related, load.shape, joined);
  const byId = new Map(related.map((row, i) => [row.id, objects[i]]));
  return rows.map((row) => byId.get(row[relation.foreignKey]) ?? null);
}

/** The columns of `join`'s nested joins, as they are named in the parent's rows. */
function nestedColumns(join: JoinedOne): string[] {
  return join.nested.flatMap((nested) => [...[...nested.columns, ...nested.counts].map((key) => `${nested.alias}__${key}`), ...nestedColumns(nested)]);
}

/**
 * The related object of every row for a joined to-one include (null where nothing joined). A row
 * many parents share (one status of many run cases) is read once into the answer's rows budget,
 * as a query of its own would have read it.
 */
async function splitJoined(sql: SqlContext, rows: Row[], join: JoinedOne, load: RelationLoad): Promise<(ApiObject | null)[]> {
  const columns = [...join.columns, ...join.counts].map((key) => [key, `${join.alias}__${key}`]);
  const carried = nestedColumns(join);
  const key = `${join.alias}__id`;
  const byId = new Map<unknown, Row>();
  for (const row of rows) {
    const id = row[key];
    if (id === null || id === undefined || byId.has(id)) continue;
    const related: Row = {};
    for (const [column, joinedAs] of columns) related[column] = row[joinedAs];
    for (const column of carried) related[column] = row[column];
    byId.set(id, related);
  }
  const distinct = [...byId.values()];
  spendRowBudget(sql, distinct.length);
  const objects = await toObjects(sql, join.target, distinct, load.shape, join.nested);
  const objectOf = new Map(distinct.map((row, i) => [row.id, objects[i]]));
  return rows.map((row) => objectOf.get(row[key]) ?? null);
}

/** The `_count`s of rows read without them (selectCounts), one statement for all: a row per row of `rows`, in order. */
async function loadCounts(sql: SqlContext, entity: EntityDef, rows: Row[], counts: Shape['counts']): Promise<Row[]> {
  const alias = sql.nextAlias();
  const select = rowsOf(sql, entity, alias).select(`${alias}.id`).whereRaw('?? = any(?)', [`${alias}.id`, distinctIds(rows.map((row) => row.id))]);
  selectCounts(sql, select, entity, alias, counts, '');
  const byId = new Map((await fetchRows(select)).map((row) => [row.id, row]));
  return rows.map((row) => byId.get(row.id)!);
}

/**
 * `_count`: the number of related rows of each relation (within the where given and the caller's
 * scope), a subquery per relation in the statement that reads the rows (`qb`, its rows of
 * `entity` under `alias`), selected as `<prefix>__count__<relation>`. Returns the keys without the prefix.
 */
function selectCounts(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, counts: Shape['counts'], prefix: string): string[] {
  return Object.entries(counts).map(([name, where]) => {
    const relation = entity.relations[name];
    const { qb: related, alias: as } = relatedRows(sql, relation, alias);
    applyWhere(sql, related, ENTITIES[relation.target], as, where ?? undefined);
    qb.select(sql.knex.raw(':related as :name:', { related: related.count({ n: '*' }), name: `${prefix}${COUNT}${name}` }));
    return `${COUNT}${name}`;
  });
}
