import type { Knex } from 'knex';
import { ENTITIES, type EntityDef } from '../../contracts/entities';
import { eventFields, linkField, linkRelations, ownedRelations } from '../../contracts/entityEvents';
import type { EntityState } from './entity.decider';

/**
 * Rows an import created in bulk arrive in the chunk events of the import's own stream, not as a
 * Created event on a stream of their own: a result import's folders, cases, run cases and results
 * (`TestResultsImported`, the row's `import_job_id`), and the external-tool migration's cases,
 * runs, run cases, results, sessions and session results (`ExternalImportRowsWritten`, the row's
 * `external_import_job_id`). When such a row is first changed on its own, its stream begins with
 * that change: the aggregate's state before it comes from the read model's row (the import's
 * values, plus what later imports set on it), with its lists (tags, steps, field values) as the
 * read model holds them, and the row's own events fold on top.
 */

/** The columns that mark a row an import wrote in bulk. */
function markersOf(entity: EntityDef): string[] {
  return [entity.fields.importJobId?.column, entity.fields.externalImportJobId?.column].filter((c): c is string => c !== undefined);
}

function whereImported(query: Knex.QueryBuilder, markers: string[]): Knex.QueryBuilder {
  return query.where((w) => {
    for (const column of markers) w.orWhereNotNull(column);
  });
}

/** The read-model row of an imported row, or null when the row was not made by an import. */
export async function importedRow(knex: Knex, entity: EntityDef, id: number): Promise<Record<string, unknown> | null> {
  const markers = markersOf(entity);
  if (markers.length === 0) return null;
  const row = await whereImported(knex(entity.table).where({ id }), markers).first();
  return row ?? null;
}

/**
 * The id of an imported row, other than `exceptId` (null: any) and not deleted, that holds these values of a
 * unique key now (imported rows never claimed theirs: they came in a chunk), or null.
 * `caseInsensitive`: the values are given trimmed and in lower case, and compared so.
 */
export async function importedRowHolding(knex: Knex, entity: EntityDef, fields: Record<string, string | number>, caseInsensitive: boolean, exceptId: number | null): Promise<number | null> {
  const markers = markersOf(entity);
  if (markers.length === 0) return null;
  const query = whereImported(knex(entity.table).first('id'), markers);
  if (exceptId !== null) query.whereNot('id', exceptId);
  for (const [name, value] of Object.entries(fields)) {
    const column = entity.fields[name].column;
    if (caseInsensitive) query.whereRaw('lower(trim(??)) = ?', [column, value]);
    else query.where(column, value);
  }
  if (entity.softDeleteField) query.where(entity.fields[entity.softDeleteField].column, false);
  const row = (await query) as { id: number } | undefined;
  return row ? row.id : null;
}

const toEventValue = (value: unknown): unknown => (value instanceof Date ? value.toISOString() : value ?? null);

/** The generic aggregate's state an imported row starts from: the row's values and its lists as the read model holds them. */
export async function entityStateOf(knex: Knex, entity: EntityDef, row: Record<string, unknown>): Promise<EntityState> {
  const id = row.id as number;
  const values: Record<string, unknown> = {};
  for (const field of eventFields(entity)) values[field] = toEventValue(row[entity.fields[field].column]);
  for (const [relation, def] of linkRelations(entity)) {
    const { table, sourceKey, targetKey } = def.through!;
    values[linkField(relation)] = await knex(table).where(sourceKey, id).orderBy(targetKey).pluck(targetKey);
  }
  for (const [relation, def] of ownedRelations(entity)) {
    const child = ENTITIES[def.target];
    const fields = eventFields(child).filter((f) => child.fields[f].column !== def.foreignKey);
    const rows = (await knex(child.table).where(def.foreignKey, id).orderBy('id')) as Record<string, unknown>[];
    values[relation] = rows.map((r) => {
      const item: Record<string, unknown> = { id: r.id };
      for (const f of fields) item[f] = toEventValue(r[child.fields[f].column]);
      return item;
    });
  }
  const deleted = entity.softDeleteField ? row[entity.fields[entity.softDeleteField].column] === true : false;
  return { exists: true, isDeleted: deleted, values };
}

/** A decider whose state before the stream's first event is the imported row's, when the row is one. */
export async function withImportedOrigin<D extends { initialState: EntityState }>(knex: Knex, entity: EntityDef, id: number, decider: D): Promise<D> {
  const row = await importedRow(knex, entity, id);
  return row ? { ...decider, initialState: await entityStateOf(knex, entity, row) } : decider;
}

interface FolderState { exists: boolean; projectId: number | null; parentId: number | null; name: string; isDeleted: boolean }

/** The folder decider (services/repository, a decider of its own), starting from the row when an import made the folder. */
export async function withImportedFolderOrigin<D extends { initialState: FolderState }>(knex: Knex, id: number, decider: D): Promise<D> {
  const row = await knex('repository_folders').where({ id }).whereNotNull('import_job_id').first('project_id', 'parent_id', 'name', 'is_deleted');
  if (!row) return decider;
  return { ...decider, initialState: { exists: true, projectId: row.project_id, parentId: row.parent_id, name: row.name, isDeleted: row.is_deleted } };
}
