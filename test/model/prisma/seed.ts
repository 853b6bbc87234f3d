import type { Knex } from 'knex';
import type { EntityDef, FieldDef } from '../../../contracts/entities';
import type { Catalogue } from './schema';
import { seededRandom } from '../../../bench/support';

/**
 * Small, collision-rich data for every catalogue entity whose table exists, written straight into
 * the read-model tables: values come from short pools (so filters match several rows, ties need
 * the id tiebreak, case and LIKE metacharacters matter), foreign keys point at existing rows or
 * are null, join tables link random pairs. Deterministic for a given seed.
 */

export const POOLS = {
  int: [-5, -1, 0, 1, 2, 3, 7, 42, 1000],
  float: [-2.5, 0, 0.5, 1, 1.25, 3.75, 100],
  string: ['alpha', 'Alpha', 'ALPHA beta', 'beta', 'beta_1', 'betaX1', 'Gamma 100%', 'gamma 1000', 'delta\\path', 'Login works', 'login fails', 'Ärger', 'ärger', ''],
  /** Search texts for contains / startsWith / endsWith: substrings of the pool, LIKE metacharacters, misses. */
  fragment: ['a', 'A', 'al', 'ALPHA', 'beta', 'Beta', '_', '%', '1', '100%', 'a_1', '\\', 'in', 'är', 'ÄR', ' ', 'works', 'zzz'],
  datetime: ['2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z', '2024-02-29T12:30:00.000Z', '2024-06-01T08:00:00.250Z', '2025-01-01T00:00:00.000Z', '2023-12-31T23:59:59.999Z'],
  json: [{ a: 1 }, { b: [1, 2] }, [1, 'x'], 'text', 7, true],
  list: ['smoke', 'Smoke', 'regression', 'p1'],
} as const;

export interface ColumnInfo {
  column: string;
  dataType: string;
  nullable: boolean;
  hasDefault: boolean;
}

/** table → column → info, for the tables of the current schema. */
export async function readColumns(knex: Knex): Promise<Map<string, Map<string, ColumnInfo>>> {
  const rows: { table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }[] = (
    await knex.raw(`SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = current_schema()`)
  ).rows;
  const tables = new Map<string, Map<string, ColumnInfo>>();
  for (const row of rows) {
    if (!tables.has(row.table_name)) tables.set(row.table_name, new Map());
    tables.get(row.table_name)!.set(row.column_name, {
      column: row.column_name, dataType: row.data_type, nullable: row.is_nullable === 'YES', hasDefault: row.column_default !== null,
    });
  }
  return tables;
}

/** table → the column lists of its unique indexes (expression indexes left out). */
async function readUniqueIndexes(knex: Knex): Promise<Map<string, string[][]>> {
  const rows: { table: string; columns: (string | null)[] }[] = (await knex.raw(`
    SELECT t.relname AS table, array_agg(a.attname::text ORDER BY k.n) AS columns
      FROM pg_index i
      JOIN pg_class t ON t.oid = i.indrelid
      JOIN pg_namespace ns ON ns.oid = t.relnamespace
      CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
      LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
     WHERE i.indisunique AND ns.nspname = current_schema()
     GROUP BY i.indexrelid, t.relname`)).rows;
  const result = new Map<string, string[][]>();
  for (const { table, columns } of rows) {
    if (columns.some((column) => column === null)) continue;
    result.set(table, [...(result.get(table) ?? []), columns as string[]]);
  }
  return result;
}

/** PostgreSQL types a catalogue type may live in. */
const COMPATIBLE: Record<FieldDef['type'], readonly string[]> = {
  int: ['integer', 'smallint', 'bigint'],
  float: ['double precision', 'real', 'numeric'],
  string: ['text', 'character varying', 'character'],
  boolean: ['boolean'],
  datetime: ['timestamp with time zone'],
  json: ['jsonb', 'json'],
};

/**
 * The catalogue restricted to entities whose table exists (relations to the others dropped), and
 * the mismatches between catalogue and tables (a missing column, an incompatible type) for the
 * entities kept: the model API would fail on those too.
 */
export function catalogueOnTables(catalogue: Catalogue, tables: Map<string, Map<string, ColumnInfo>>): { catalogue: Catalogue; missingTables: string[]; mismatches: string[] } {
  const kept = Object.values(catalogue).filter((entity) => tables.has(entity.table));
  const names = new Set(kept.map((entity) => entity.name));
  const mismatches: string[] = [];
  const result: Record<string, EntityDef> = {};
  for (const entity of kept) {
    const columns = tables.get(entity.table)!;
    for (const [name, field] of Object.entries(entity.fields)) {
      const column = columns.get(field.column);
      if (!column) mismatches.push(`${entity.name}.${name}: no column ${entity.table}.${field.column}`);
      else if (field.list ? column.dataType !== 'ARRAY' : !COMPATIBLE[field.type].includes(column.dataType)) {
        mismatches.push(`${entity.name}.${name}: ${field.list ? `${field.type}[]` : field.type} in a ${column.dataType} column`);
      }
    }
    const relations = Object.fromEntries(Object.entries(entity.relations).filter(([, relation]) => {
      if (!names.has(relation.target)) return false;
      return !relation.through || tables.has(relation.through.table);
    }));
    result[entity.name] = { ...entity, relations };
  }
  const missingTables = Object.values(catalogue).filter((entity) => !tables.has(entity.table)).map((entity) => `${entity.name} (${entity.table})`);
  return { catalogue: result, missingTables, mismatches };
}

export interface SeedOptions {
  rowsPerEntity: number;
  linksPerTable: number;
  seed: number;
}

/** Rows written, per table. */
export async function seedCatalogue(knex: Knex, catalogue: Catalogue, tables: Map<string, Map<string, ColumnInfo>>, options: SeedOptions): Promise<Record<string, number>> {
  const random = seededRandom(options.seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)];
  const counts: Record<string, number> = {};
  const uniques = await readUniqueIndexes(knex);
  const rowsOf = (entity: string) => (catalogue[entity] ? options.rowsPerEntity : 0);

  for (const entity of Object.values(catalogue)) {
    const columns = tables.get(entity.table)!;
    const foreignKeys = new Map<string, string>(); // column → target entity
    for (const relation of Object.values(entity.relations)) {
      if (relation.kind === 'one') foreignKeys.set(relation.foreignKey, relation.target);
    }
    const ids = shuffle(Array.from({ length: rowsOf(entity.name) }, (_, i) => i + 1), random);
    // The table's unique indexes, and the catalogue's compound uniques (claimed on streams, not indexed).
    const together = entity.uniqueTogether ? [entity.uniqueTogether.map((name) => entity.fields[name].column)] : [];
    const uniqueKeys = [...(uniques.get(entity.table) ?? []), ...together].filter((columns) => !(columns.length === 1 && columns[0] === 'id'));
    const taken = uniqueKeys.map(() => new Set<string>());
    const uniqueColumns = new Set(uniqueKeys.filter((columns) => columns.length === 1).map(([column]) => column));
    const makeRow = (id: number) => {
      const row: Record<string, unknown> = {};
      for (const [name, field] of Object.entries(entity.fields)) {
        if (name === 'id') row[field.column] = id;
        else if (foreignKeys.has(field.column)) {
          const targetRows = rowsOf(foreignKeys.get(field.column)!);
          row[field.column] = field.nullable && random() < 0.25 ? null : 1 + Math.floor(random() * targetRows);
        } else row[field.column] = valueFor(field, id, random, pick, Boolean(field.unique) || uniqueColumns.has(field.column));
      }
      // Columns the catalogue does not expose (revision, ...): any value of their type.
      for (const column of columns.values()) {
        if (column.column in row || column.nullable || column.hasDefault) continue;
        row[column.column] = fillerFor(column.dataType);
      }
      return row;
    };
    // A row that would break a unique index (e.g. case id + version) is drawn again.
    const rows = ids.map((id) => {
      for (let attempt = 0; attempt < 100; attempt++) {
        const row = makeRow(id);
        const keys = uniqueKeys.map((columns) => JSON.stringify(columns.map((column) => row[column])));
        if (keys.some((key, i) => taken[i].has(key))) continue;
        keys.forEach((key, i) => taken[i].add(key));
        return row;
      }
      throw new Error(`no row for ${entity.table} satisfies its unique indexes ${JSON.stringify(uniqueKeys)}`);
    });
    await insertRows(knex, entity.table, rows);
    counts[entity.table] = rows.length;
  }

  const linkTables = new Map<string, { sourceKey: string; source: string; targetKey: string; target: string }>();
  for (const entity of Object.values(catalogue)) {
    for (const relation of Object.values(entity.relations)) {
      if (!relation.through || linkTables.has(relation.through.table)) continue;
      linkTables.set(relation.through.table, { ...relation.through, source: entity.name, target: relation.target });
    }
  }
  for (const [table, link] of linkTables) {
    const pairs = new Map<string, Record<string, unknown>>();
    for (let i = 0; i < options.linksPerTable; i++) {
      const sourceId = 1 + Math.floor(random() * rowsOf(link.source));
      const targetId = 1 + Math.floor(random() * rowsOf(link.target));
      const row: Record<string, unknown> = { [link.sourceKey]: sourceId, [link.targetKey]: targetId };
      for (const column of tables.get(table)!.values()) {
        if (!(column.column in row) && !column.nullable && !column.hasDefault) row[column.column] = fillerFor(column.dataType);
      }
      pairs.set(`${sourceId}:${targetId}`, row);
    }
    await insertRows(knex, table, [...pairs.values()]);
    counts[table] = pairs.size;
  }
  return counts;
}

/** Rows already there (a user registered through events) are kept. */
async function insertRows(knex: Knex, table: string, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) await knex(table).insert(rows.slice(i, i + 500)).onConflict().ignore();
}

function valueFor(field: FieldDef, id: number, random: () => number, pick: <T>(values: readonly T[]) => T, unique: boolean): unknown {
  if (field.list) {
    const pool = field.enum ?? (field.type === 'int' ? POOLS.int : POOLS.list);
    return pool.filter(() => random() < 0.4);
  }
  if (field.nullable && random() < 0.2) return null;
  switch (field.type) {
    case 'int':
      return pick(POOLS.int);
    case 'float':
      return pick(POOLS.float);
    case 'boolean':
      return random() < 0.5;
    case 'datetime':
      return pick(POOLS.datetime);
    case 'json':
      // pg would send a JS array as a PostgreSQL array: JSON goes as text.
      return JSON.stringify(pick(POOLS.json));
    case 'string':
      if (field.enum) return pick(field.enum);
      return unique ? `${pick(POOLS.string)}#${id}` : pick(POOLS.string);
  }
}

function fillerFor(dataType: string): unknown {
  if (['integer', 'smallint', 'bigint', 'numeric', 'double precision', 'real'].includes(dataType)) return 0;
  if (dataType === 'boolean') return false;
  if (dataType.startsWith('timestamp')) return '2024-01-01T00:00:00Z';
  if (dataType === 'jsonb' || dataType === 'json') return '{}';
  if (dataType === 'ARRAY') return [];
  return '';
}

function shuffle<T>(values: T[], random: () => number): T[] {
  for (let i = values.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [values[i], values[j]] = [values[j], values[i]];
  }
  return values;
}

