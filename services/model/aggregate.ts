import type { Knex } from 'knex';
import type { EntityDef } from '../../contracts/entities';
import type { AggregateArgs, Aggregates, GroupByArgs } from './args';
import { applyWhere, columnOf, columnsOf, ordering, sqlContext } from './query';
import { toApiValue, type ApiObject, type Row } from './shape';

/**
 * Prisma's `aggregate` and `groupBy` over the read model, one SQL query each. Values reach SQL as
 * bound parameters; identifiers come from the catalogue only; aggregate output columns get
 * generated aliases (`a0`, `g0`, ...) and are mapped back to API keys here.
 *
 * Result conventions (as Prisma): `_count` values are numbers (`_count: true` → a bare number),
 * `_sum` of an int is a number (null over no rows), `_avg` a float (null over no rows), `_min` /
 * `_max` carry the field's API type (datetimes as ISO strings). `count(field)` counts non-null values.
 */

export type AggregateResult = ApiObject;

export async function runAggregate(knex: Knex, entity: EntityDef, args: AggregateArgs): Promise<AggregateResult> {
  const sql = sqlContext(knex);
  const alias = sql.nextAlias();
  // take/skip (and the order they depend on) choose the rows *before* aggregation: a subquery.
  const rows = knex({ [alias]: entity.table }).select(columnsOf(entity, alias));
  applyWhere(sql, rows, entity, alias, args.where);
  if (args.take !== undefined || args.skip) {
    rows.orderBy(ordering(entity, alias, args.orderBy));
    if (args.take !== undefined) rows.limit(args.take);
    if (args.skip) rows.offset(args.skip);
  }
  const outerAlias = sql.nextAlias();
  const plan = aggregatePlan(entity, args.aggregates);
  const [row] = (await knex.from(rows.as(outerAlias)).select(plan.map((item) => item.select(knex, outerAlias)))) as Row[];
  return readAggregates(entity, plan, row);
}

export async function runGroupBy(knex: Knex, entity: EntityDef, args: GroupByArgs): Promise<AggregateResult[]> {
  if (args.take === 0) return [];
  const sql = sqlContext(knex);
  const alias = sql.nextAlias();
  const byColumns = args.by.map((field) => columnOf(entity, alias, field));
  const plan = aggregatePlan(entity, args.aggregates);
  const query = knex({ [alias]: entity.table })
    .select(byColumns.map((column, i) => ({ [`g${i}`]: column })))
    .select(plan.map((item) => item.select(knex, alias)))
    .groupBy(byColumns);
  applyWhere(sql, query, entity, alias, args.where);

  // The requested order, then the by fields ascending, so that groups (and pages) come out stably.
  const keys: { sql: string; bindings: string[] }[] = args.orderBy.map((key) =>
    key.kind === 'field'
      ? { sql: `?? ${key.direction}`, bindings: [columnOf(entity, alias, key.field)] }
      : { sql: `${AGGREGATE_SQL[key.fn]}(??) ${key.direction}`, bindings: [columnOf(entity, alias, key.field)] },
  );
  for (const field of args.by) {
    if (!args.orderBy.some((key) => key.kind === 'field' && key.field === field)) keys.push({ sql: '?? asc', bindings: [columnOf(entity, alias, field)] });
  }
  query.orderByRaw(keys.map((key) => key.sql).join(', '), keys.flatMap((key) => key.bindings));
  if (args.take !== undefined) query.limit(args.take);
  if (args.skip) query.offset(args.skip);

  const rows = (await query) as Row[];
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
      select: (knex, tableAlias) =>
        counted ? knex.raw('count(*) as ??', [alias]) : knex.raw(`${AGGREGATE_SQL[key]}(??) as ??`, [columnOf(entity, tableAlias, field), alias]),
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
