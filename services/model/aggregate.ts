import type { Knex } from 'knex';
import type { EntityDef, FieldDef } from '../../contracts/entities';
import { havingAggregateField, type AggregateArgs, type Aggregates, type GroupByArgs } from './args';
import { applyPage, applyScope, applyWhere, columnOf, columnsOf, fetchRows, limitToRowBudget, rowsOf, spendRowBudget, sqlContext, type ReadOptions } from './query';
import { toApiValue, type ApiObject, type Row } from './shape';

/**
 * Prisma's `aggregate` and `groupBy` over the read model, one SQL query each. Values reach SQL as
 * bound parameters; identifiers come from the catalogue only; aggregate output columns get
 * generated aliases (`a0`, `g0`, ...) and are mapped back to API keys here. Only rows within the
 * caller's scope (see query.ts) are aggregated.
 *
 * Result conventions (as Prisma): `_count` values are numbers (`_count: true` → a bare number),
 * `_sum` of an int is a number (null over no rows), `_avg` a float (null over no rows), `_min` /
 * `_max` carry the field's API type (datetimes as ISO strings). `count(field)` counts non-null values.
 */

export type AggregateResult = ApiObject;

export async function runAggregate(knex: Knex, entity: EntityDef, args: AggregateArgs, options: ReadOptions = {}): Promise<AggregateResult> {
  const sql = sqlContext(knex, options);
  const alias = sql.nextAlias();
  // orderBy/cursor/take/skip choose the rows *before* aggregation: a subquery.
  const rows = rowsOf(sql, entity, alias).select(columnsOf(entity, alias));
  applyWhere(sql, rows, entity, alias, args.where);
  applyScope(sql, rows, entity, alias);
  if (args.take !== undefined || args.skip || args.cursor !== undefined) applyPage(sql, rows, entity, alias, args);
  const outerAlias = sql.nextAlias();
  const plan = aggregatePlan(entity, args.aggregates);
  const [row] = await fetchRows(knex.from(rows.as(outerAlias)).select(plan.map((item) => item.select(knex, outerAlias))));
  return readAggregates(entity, plan, row);
}

/**
 * The groups are computed in an inner query (by columns `g<i>`, requested aggregates `a<i>`,
 * aggregates that `having` compares `h<i>` and that orderBy sorts on `o<i>`); the outer query
 * filters them with `having` (through the ordinary where translation, over a pseudo-entity whose
 * fields are those columns), orders and pages them.
 */
export async function runGroupBy(knex: Knex, entity: EntityDef, args: GroupByArgs, options: ReadOptions = {}): Promise<AggregateResult[]> {
  if (args.take === 0) return [];
  const sql = sqlContext(knex, options);
  const alias = sql.nextAlias();
  const byColumns = args.by.map((field) => columnOf(entity, alias, field));
  const plan = aggregatePlan(entity, args.aggregates);
  const groups = rowsOf(sql, entity, alias)
    .select(byColumns.map((column, i) => ({ [`g${i}`]: column })))
    .select(plan.map((item) => item.select(knex, alias)))
    .groupBy(byColumns);
  applyWhere(sql, groups, entity, alias, args.where);
  applyScope(sql, groups, entity, alias);

  const groupFields: Record<string, FieldDef> = {};
  args.by.forEach((field, i) => (groupFields[field] = { ...entity.fields[field], column: `g${i}` }));
  args.havingAggregates.forEach((aggregate, i) => {
    groupFields[aggregate.name] = { ...havingAggregateField(entity, aggregate), column: `h${i}` };
    // Sums and averages compare as numeric: a bigint sum must take a fractional bound too.
    const numeric = aggregate.fn === '_sum' || aggregate.fn === '_avg';
    groups.select(knex.raw(`${AGGREGATE_SQL[aggregate.fn]}(??)${numeric ? '::numeric' : ''} as ??`, [columnOf(entity, alias, aggregate.field), `h${i}`]));
  });
  args.orderBy.forEach((key, i) => {
    if (key.kind === 'aggregate') groups.select(aggregateSql(knex, entity, alias, key.fn, key.field, `o${i}`));
  });

  const outer = sql.nextAlias();
  const query = knex
    .from(groups.as(outer))
    .select([...args.by.map((_, i) => `g${i}`), ...plan.map((item) => item.alias)].map((column) => `${outer}.${column}`));
  applyWhere(sql, query, { ...entity, fields: groupFields, relations: {} }, outer, args.having);

  // The requested order, then the by fields ascending, so that groups (and pages) come out stably.
  const keys = args.orderBy.map((key, i) => ({
    column: `${outer}.${key.kind === 'field' ? `g${args.by.indexOf(key.field)}` : `o${i}`}`,
    direction: key.direction,
  }));
  args.by.forEach((field, i) => {
    if (!args.orderBy.some((key) => key.kind === 'field' && key.field === field)) keys.push({ column: `${outer}.g${i}`, direction: 'asc' });
  });
  query.orderByRaw(keys.map((key) => `?? ${key.direction}`).join(', '), keys.map((key) => key.column));
  if (args.take !== undefined) query.limit(args.take);
  if (args.skip) query.offset(args.skip);
  limitToRowBudget(sql, query, args.take);

  const rows = await fetchRows(query);
  spendRowBudget(sql, rows.length);
  return rows.map((row) => {
    const group: AggregateResult = {};
    args.by.forEach((field, i) => (group[field] = toApiValue(entity.fields[field], row[`g${i}`])));
    return { ...group, ...readAggregates(entity, plan, row) };
  });
}

// ---------------------------------------------------------------------------------------------
// aggregate columns

const AGGREGATE_SQL = { _count: 'count', _sum: 'sum', _avg: 'avg', _min: 'min', _max: 'max' } as const;
type AggregateKey = keyof typeof AGGREGATE_SQL;

/** `fn(column) as alias`; count of a field counts its non-null values. */
function aggregateSql(knex: Knex, entity: EntityDef, tableAlias: string, key: AggregateKey, field: string, alias: string): Knex.Raw {
  return knex.raw(`${AGGREGATE_SQL[key]}(??) as ??`, [columnOf(entity, tableAlias, field), alias]);
}

interface PlannedAggregate {
  key: AggregateKey;
  /** A field name, `_all` (count(*)), or null for the bare `_count: true`. */
  field: string | null;
  alias: string;
  select(knex: Knex, tableAlias: string): Knex.Raw;
}

function aggregatePlan(entity: EntityDef, aggregates: Aggregates): PlannedAggregate[] {
  const plan: PlannedAggregate[] = [];
  const add = (key: AggregateKey, field: string | null) => {
    const alias = `a${plan.length}`;
    const counted = field === null || field === '_all';
    plan.push({
      key,
      field,
      alias,
      select: (knex, tableAlias) => (counted ? knex.raw('count(*) as ??', [alias]) : aggregateSql(knex, entity, tableAlias, key, field, alias)),
    });
  };
  const count = aggregates._count;
  if (count?.bare) add('_count', null);
  else if (count) {
    if (count.all) add('_count', '_all');
    for (const field of count.fields) add('_count', field);
  }
  for (const key of ['_sum', '_avg', '_min', '_max'] as const) {
    for (const field of aggregates[key] ?? []) add(key, field);
  }
  return plan;
}

function readAggregates(entity: EntityDef, plan: PlannedAggregate[], row: Row): AggregateResult {
  const result: Record<string, unknown> = {};
  for (const { key, field, alias } of plan) {
    const value = row[alias];
    if (field === null) {
      result[key] = Number(value);
      continue;
    }
    const values = (result[key] ??= {}) as Record<string, unknown>;
    if (key === '_count') values[field] = Number(value);
    // pg returns sum (bigint) and avg (numeric) as strings.
    else if (key === '_sum' || key === '_avg') values[field] = value === null || value === undefined ? null : Number(value);
    else values[field] = toApiValue(entity.fields[field], value);
  }
  return result;
}
