import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type FieldDef, historyTableOf } from '../../contracts/entities';

/**
 * Read-model tables as the entity catalogue describes them: one per entity, one per
 * many-to-many join table. Idempotent (creates what is missing, adds missing columns), so a
 * migration that follows a catalogue change calls it again.
 */
export const COLUMN_TYPES: Record<FieldDef['type'], string> = {
  int: 'integer', float: 'double precision', string: 'text', boolean: 'boolean', datetime: 'timestamptz', json: 'jsonb',
};

export const columnType = (f: FieldDef): string => `${f.wide ? 'bigint' : COLUMN_TYPES[f.type]}${f.list ? '[]' : ''}`;

function columnDefault(knex: Knex, f: FieldDef): Knex.Raw | undefined {
  if (f.default === undefined) return undefined;
  if (Array.isArray(f.default)) return knex.raw(`'{${f.default.join(',')}}'::${columnType(f)}`);
  return knex.raw('?', [f.default as string | number | boolean]);
}

/** Foreign keys that lead a unique index of their own (added by a migration): no second index. */
const COVERED: Record<string, string[]> = { repository_case_versions: ['repository_case_id'] };

/** The columns a table has now (none when it does not exist): one read, not one per column (~3,000 reads on a new database). */
async function columnsOf(knex: Knex, table: string): Promise<Set<string>> {
  const { rows } = await knex.raw('SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?', [table]);
  return new Set((rows as { column_name: string }[]).map((r) => r.column_name));
}

async function syncEntityTable(knex: Knex, entity: EntityDef): Promise<void> {
  const columns = await columnsOf(knex, entity.table);
  const exists = columns.size > 0;
  const missing: [string, FieldDef][] = Object.values(entity.fields).filter((f) => !columns.has(f.column)).map((f) => [f.column, f]);
  const build = (t: Knex.CreateTableBuilder) => {
    for (const [column, f] of missing) {
      if (column === 'id') {
        if (entity.writtenAs === 'projected') t.increments('id').primary();
        else t.integer('id').primary();
        continue;
      }
      const c = t.specificType(column, columnType(f));
      // Rows written before a column existed get its default; without one the column stays nullable.
      const fallback = columnDefault(knex, f);
      if (fallback !== undefined) c.defaultTo(fallback);
      if (!f.nullable && (fallback !== undefined || !exists)) c.notNullable();
      if (Object.values(entity.relations).some((r) => r.kind === 'one' && r.foreignKey === column) && !COVERED[entity.table]?.includes(column)) c.index();
    }
    if (!exists && (entity.writtenAs ?? 'aggregate') === 'aggregate') t.bigInteger('revision').notNullable();
  };
  if (!exists) await knex.schema.createTable(entity.table, build);
  else if (missing.length > 0) {
    await knex.schema.alterTable(entity.table, build);
    // Its history table keeps the same columns (nullable there: versions from before the column had none).
    const history = historyTableOf(entity.table);
    if (await knex.schema.hasTable(history)) {
      await knex.schema.alterTable(history, (t) => { for (const [column, f] of missing) t.specificType(column, columnType(f)); });
    }
  }
}

async function syncJoinTable(knex: Knex, table: string, sourceKey: string, targetKey: string): Promise<void> {
  if (await knex.schema.hasTable(table)) return;
  const [a, b] = [sourceKey, targetKey].sort();
  await knex.schema.createTable(table, (t) => {
    t.integer(a).notNullable();
    t.integer(b).notNullable();
    t.primary([a, b]);
    t.index([b]);
  });
}

export async function syncCatalogueTables(knex: Knex): Promise<void> {
  for (const entity of Object.values(ENTITIES)) {
    if (entity.table === 'users') continue; // the identity projection's table
    await syncEntityTable(knex, entity);
    for (const relation of Object.values(entity.relations)) {
      if (relation.through) await syncJoinTable(knex, relation.through.table, relation.through.sourceKey, relation.through.targetKey);
    }
  }
}

/** Every read-model table the catalogue describes (entity tables and join tables), users excepted. */
export function catalogueTables(): string[] {
  const tables = new Set<string>();
  for (const entity of Object.values(ENTITIES)) {
    if (entity.table !== 'users') tables.add(entity.table);
    for (const relation of Object.values(entity.relations)) if (relation.through) tables.add(relation.through.table);
  }
  return [...tables];
}

/**
 * The catalogue tables that keep history (entities with `keepsHistory: false` do not; users are
 * the identity projection's), each with the columns a read as of a point looks its rows up by: the
 * id and the foreign keys (the indexes of the table itself), or a join table's two ends.
 */
export function historyTables(): { table: string; keys: string[] }[] {
  const tables = new Map<string, string[]>();
  for (const entity of Object.values(ENTITIES)) {
    if (entity.table === 'users' || entity.keepsHistory === false) continue;
    const keys = ['id', ...new Set(Object.values(entity.relations).filter((r) => r.kind === 'one').map((r) => r.foreignKey))];
    tables.set(entity.table, keys);
    for (const relation of Object.values(entity.relations)) {
      if (relation.through) tables.set(relation.through.table, [relation.through.sourceKey, relation.through.targetKey]);
    }
  }
  return [...tables].map(([table, keys]) => ({ table, keys }));
}

/**
 * Point-in-time history of the catalogue tables (historyTables): each gets `valid_from` (the
 * position of the event that wrote the row as it is; null for rows written before history was
 * kept) and a history table with the same columns plus `valid_to` (the position of the event that
 * replaced or removed that version). Idempotent like syncCatalogueTables, so a migration that adds
 * an entity calls both.
 */
export async function syncHistoryTables(knex: Knex): Promise<void> {
  for (const { table, keys } of historyTables()) {
    if (!(await columnsOf(knex, table)).has('valid_from')) await knex.schema.alterTable(table, (t) => t.bigInteger('valid_from'));
    const history = historyTableOf(table);
    if (await knex.schema.hasTable(history)) continue;
    await knex.raw(`CREATE TABLE "${history}" (LIKE "${table}")`);
    await knex.schema.alterTable(history, (t) => {
      t.bigInteger('valid_to').notNullable();
      for (const key of keys) t.index(key === 'id' ? ['id', 'valid_from'] : [key]);
    });
  }
}
