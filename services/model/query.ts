import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type RelationDef } from '../../contracts/entities';
import { assertNever } from '../shared/errors';
import { defaultShape, type FindArgs, type FindOperation, type ListQuery, type OrderBy, type RelationLoad, type Shape, type Where } from './args';
import { catalogueColumns, toApiObject, type ApiObject, type Row } from './shape';

/**
 * Executes parsed model API reads against the read model. Every value reaches SQL as a bound
 * parameter; identifiers come from the catalogue only. Relations are loaded one query per
 * relation per level (`fk = any(ids)`), never one query per row.
 */

/** Every query gets fresh table aliases so correlated subqueries on the same table (folder → children) stay apart. */
export interface SqlContext {
  knex: Knex;
  nextAlias(): string;
}

const RANK = '__rank';

const COMPARISON_SQL = { equals: '=', lt: '<', lte: '<=', gt: '>', gte: '>=' } as const;

export async function runFind(knex: Knex, entity: EntityDef, op: FindOperation, args: FindArgs): Promise<unknown> {
  const sql = sqlContext(knex);
  if (op === 'count') return countRows(sql, entity, args.where);
  // findFirst/findUnique: at most one row, still honouring skip and a take of 0.
  const take = op === 'findMany' ? args.take : Math.min(args.take ?? 1, 1);
  const rows = await selectRows(sql, entity, { ...args, take });
  const objects = await toObjects(sql, entity, rows, args.shape);
  return op === 'findMany' ? objects : (objects[0] ?? null);
}

/** The row as the read model has it now, with the requested include/select; null if absent. */
export async function findRowById(knex: Knex, entity: EntityDef, id: number, shape: Shape = defaultShape(entity)): Promise<ApiObject | null> {
  const where: Where = { kind: 'compare', field: 'id', op: 'equals', value: id, insensitive: false };
  return (await runFind(knex, entity, 'findUnique', { where, orderBy: [], shape })) as ApiObject | null;
}

export function sqlContext(knex: Knex): SqlContext {
  let next = 0;
  return { knex, nextAlias: () => `t${next++}` };
}

// ---------------------------------------------------------------------------------------------
// top-level rows

async function selectRows(sql: SqlContext, entity: EntityDef, query: ListQuery & { distinct?: string[] }): Promise<Row[]> {
  if (query.take === 0) return [];
  const alias = sql.nextAlias();
  const select = sql.knex({ [alias]: entity.table }).select(columnsOf(entity, alias));
  applyWhere(sql, select, entity, alias, query.where);
  if (query.distinct) return selectDistinct(sql, entity, select, alias, query as ListQuery & { distinct: string[] });
  select.orderBy(ordering(entity, alias, query.orderBy));
  if (query.take !== undefined) select.limit(query.take);
  if (query.skip) select.offset(query.skip);
  return select;
}

/**
 * `distinct`: DISTINCT ON the fields keeps the first row of each group in the requested order
 * (PostgreSQL needs the distinct columns first in its ORDER BY); the outer query restores the
 * requested order and pages the survivors.
 */
async function selectDistinct(sql: SqlContext, entity: EntityDef, select: Knex.QueryBuilder, alias: string, query: ListQuery & { distinct: string[] }): Promise<Row[]> {
  const distinctColumns = query.distinct.map((field) => columnOf(entity, alias, field));
  select.distinctOn(distinctColumns).orderBy([...distinctColumns.map((column) => ({ column })), ...ordering(entity, alias, query.orderBy)]);
  const outer = sql.nextAlias();
  const page = sql.knex.from(select.as(outer)).select(catalogueColumns(entity).map((column) => `${outer}.${column}`))
    .orderBy(ordering(entity, outer, query.orderBy));
  if (query.take !== undefined) page.limit(query.take);
  if (query.skip) page.offset(query.skip);
  return page;
}

async function countRows(sql: SqlContext, entity: EntityDef, where: Where | undefined): Promise<number> {
  const alias = sql.nextAlias();
  const count = sql.knex({ [alias]: entity.table }).count({ n: '*' });
  applyWhere(sql, count, entity, alias, where);
  const [row] = await count;
  return Number(row.n);
}

export function columnsOf(entity: EntityDef, alias: string): string[] {
  return catalogueColumns(entity).map((column) => `${alias}.${column}`);
}

/** The requested order, then id ascending so that equal keys (and pages) come out the same every time. */
export function ordering(entity: EntityDef, alias: string, orderBy: OrderBy[]): { column: string; order: 'asc' | 'desc'; nulls?: 'first' | 'last' }[] {
  const keys: { column: string; order: 'asc' | 'desc'; nulls?: 'first' | 'last' }[] = orderBy.map(({ field, direction, nulls }) => ({
    column: `${alias}.${entity.fields[field].column}`, order: direction, ...(nulls && { nulls }),
  }));
  if (!orderBy.some(({ field }) => field === 'id')) keys.push({ column: `${alias}.id`, order: 'asc' });
  return keys;
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
      applyComparison(qb, entity, alias, where);
      return;
    case 'relation':
      applyRelationFilter(sql, qb, entity, alias, where);
      return;
    default:
      assertNever(where);
  }
}

function isAlwaysTrue(where: Where): boolean {
  return where.kind === 'and' && where.items.every(isAlwaysTrue);
}

type Comparison = Extract<Where, { kind: 'compare' | 'in' | 'like' }>;

/** On a nullable column the comparison also demands a value, so that NOT of it is its exact complement. */
function applyComparison(qb: Knex.QueryBuilder, entity: EntityDef, alias: string, where: Comparison): void {
  const column = columnOf(entity, alias, where.field);
  if (!entity.fields[where.field].nullable) return compare(qb, column, where);
  qb.where((guarded) => {
    guarded.whereNotNull(column);
    compare(guarded, column, where);
  });
}

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
    default:
      assertNever(where);
  }
}

function compareWithList(qb: Knex.QueryBuilder, column: string, where: Extract<Where, { kind: 'in' }>): void {
  const { values, negated, insensitive } = where;
  if (values.length === 0) {
    if (!negated) qb.whereRaw('false');
    return;
  }
  if (!insensitive) {
    if (negated) qb.whereNotIn(column, values);
    else qb.whereIn(column, values);
    return;
  }
  const placeholders = values.map(() => 'lower(?)').join(', ');
  qb.whereRaw(`lower(??) ${negated ? 'not in' : 'in'} (${placeholders})`, [column, ...values]);
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
 * every → NOT EXISTS (related row not matching).
 */
function applyRelationFilter(sql: SqlContext, qb: Knex.QueryBuilder, entity: EntityDef, alias: string, where: Extract<Where, { kind: 'relation' }>): void {
  const relation = entity.relations[where.relation];
  if (where.where === null) {
    // is: null / isNot: null only exist for kind 'one': the foreign key is (not) set.
    const foreignKey = `${alias}.${relation.foreignKey}`;
    if (where.quantifier === 'is') qb.whereNull(foreignKey);
    else qb.whereNotNull(foreignKey);
    return;
  }
  const target = ENTITIES[relation.target];
  const { subquery, subAlias } = relatedRowsOf(sql, relation, alias);
  const filter: Where = where.quantifier === 'every' ? { kind: 'not', item: where.where } : where.where;
  applyWhere(sql, subquery, target, subAlias, filter);
  if (where.quantifier === 'some' || where.quantifier === 'is') qb.whereExists(subquery);
  else qb.whereNotExists(subquery);
}

/** `select 1 from <target> where <target row belongs to the outer row>`. */
function relatedRowsOf(sql: SqlContext, relation: RelationDef, outerAlias: string): { subquery: Knex.QueryBuilder; subAlias: string } {
  const target = ENTITIES[relation.target];
  const subAlias = sql.nextAlias();
  const subquery = sql.knex({ [subAlias]: target.table }).select(sql.knex.raw('1'));
  if (relation.kind === 'many') subquery.where(`${subAlias}.${relation.foreignKey}`, sql.knex.ref(`${outerAlias}.id`));
  else subquery.where(`${subAlias}.id`, sql.knex.ref(`${outerAlias}.${relation.foreignKey}`));
  return { subquery, subAlias };
}

export function columnOf(entity: EntityDef, alias: string, field: string): string {
  return `${alias}.${entity.fields[field].column}`;
}

// ---------------------------------------------------------------------------------------------
// include / select / _count

async function toObjects(sql: SqlContext, entity: EntityDef, rows: Row[], shape: Shape): Promise<ApiObject[]> {
  const objects = rows.map((row) => toApiObject(entity, row, shape.fields));
  for (const [name, load] of Object.entries(shape.relations)) {
    const relation = entity.relations[name];
    const related = relation.kind === 'many' ? await loadMany(sql, relation, rows, load) : await loadOne(sql, relation, rows, load);
    objects.forEach((object, i) => (object[name] = related[i]));
  }
  if (Object.keys(shape.counts).length > 0) {
    const counts = await loadCounts(sql, entity, rows, shape.counts);
    objects.forEach((object, i) => (object._count = counts[i]));
  }
  return objects;
}

/** The children of every parent row, as one list per parent (same order as `parents`). */
async function loadMany(sql: SqlContext, relation: RelationDef, parents: Row[], load: RelationLoad): Promise<ApiObject[][]> {
  const target = ENTITIES[relation.target];
  const parentIds = parents.map((row) => row.id as number);
  const children = parentIds.length === 0 || load.take === 0 ? [] : await selectChildren(sql, target, relation.foreignKey, parentIds, load);
  const objects = await toObjects(sql, target, children, load.shape);
  const byParent = new Map<unknown, ApiObject[]>();
  children.forEach((child, i) => {
    const siblings = byParent.get(child[relation.foreignKey]) ?? [];
    siblings.push(objects[i]);
    byParent.set(child[relation.foreignKey], siblings);
  });
  return parents.map((parent) => byParent.get(parent.id) ?? []);
}

/**
 * One query for all parents; take/skip apply per parent, so rows are numbered within each
 * parent (row_number over the requested order) and the page is cut on that number.
 */
async function selectChildren(sql: SqlContext, target: EntityDef, foreignKey: string, parentIds: number[], query: ListQuery): Promise<Row[]> {
  const alias = sql.nextAlias();
  const order = ordering(target, alias, query.orderBy);
  // Directions are 'asc' | 'desc' from the parser; columns are bound as identifiers.
  const rank = sql.knex.raw(`row_number() over (partition by ?? order by ${order.map((key) => `?? ${key.order}${key.nulls ? ` nulls ${key.nulls}` : ''}`).join(', ')}) as ??`, [
    `${alias}.${foreignKey}`,
    ...order.map((key) => key.column),
    RANK,
  ]);
  const numbered = sql.knex({ [alias]: target.table })
    .select(columnsOf(target, alias))
    .select(rank)
    .whereRaw('?? = any(?)', [`${alias}.${foreignKey}`, parentIds]);
  applyWhere(sql, numbered, target, alias, query.where);

  const first = query.skip ?? 0;
  const page = sql.knex
    .from(numbered.as('numbered'))
    .select(catalogueColumns(target).map((column) => `numbered.${column}`))
    .where(RANK, '>', first)
    .orderBy([`numbered.${foreignKey}`, RANK]);
  if (query.take !== undefined) page.where(RANK, '<=', first + query.take);
  return page;
}

/** The related row of every row of kind-'one' relation (null when the foreign key is not set). */
async function loadOne(sql: SqlContext, relation: RelationDef, rows: Row[], load: RelationLoad): Promise<(ApiObject | null)[]> {
  const target = ENTITIES[relation.target];
  const ids = [...new Set(rows.map((row) => row[relation.foreignKey] as number | null).filter((id) => id !== null))];
  const alias = sql.nextAlias();
  const related: Row[] = ids.length === 0 ? [] : await sql.knex({ [alias]: target.table }).select(columnsOf(target, alias)).whereRaw('?? = any(?)', [`${alias}.id`, ids]);
  const objects = await toObjects(sql, target, related, load.shape);
  const byId = new Map(related.map((row, i) => [row.id, objects[i]]));
  return rows.map((row) => byId.get(row[relation.foreignKey]) ?? null);
}

/** `_count`: one grouped count per relation for all rows. */
async function loadCounts(sql: SqlContext, entity: EntityDef, rows: Row[], counts: Shape['counts']): Promise<Record<string, number>[]> {
  const result = rows.map((): Record<string, number> => ({}));
  const ids = rows.map((row) => row.id as number);
  for (const [name, where] of Object.entries(counts)) {
    const relation = entity.relations[name];
    const target = ENTITIES[relation.target];
    const alias = sql.nextAlias();
    const foreignKey = `${alias}.${relation.foreignKey}`;
    const grouped = sql.knex({ [alias]: target.table })
      .select({ parent: foreignKey })
      .count({ n: '*' })
      .whereRaw('?? = any(?)', [foreignKey, ids])
      .groupBy(foreignKey);
    applyWhere(sql, grouped, target, alias, where ?? undefined);
    const counted: Row[] = ids.length === 0 ? [] : await grouped;
    const byParent = new Map(counted.map((row) => [row.parent, Number(row.n)]));
    rows.forEach((row, i) => (result[i][name] = byParent.get(row.id) ?? 0));
  }
  return result;
}
