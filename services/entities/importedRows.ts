import type { Knex } from 'knex';
import type { EntityDef } from '../../contracts/entities';
import { eventFields, linkField, linkRelations, ownedRelations } from '../../contracts/entityEvents';
import type { EntityState } from './entity.decider';

/**
 * Rows a result import created (folders, repository cases, run cases, results) arrive in bulk, in
 * the chunk events of the import's own stream (`TestResultsImported`), not as a Created event on a
 * stream of their own. When such a row is first changed on its own, its stream begins with that
 * change: the aggregate's state before it comes from the row (the import's values, plus what later
 * imports set on it), and the row's own events fold on top. Lists (tags, steps, field values) start
 * empty: an import writes none, and every own event that sets a list carries all of it.
 */

/** The read-model row of an imported row, or null when the row was not made by an import. */
export async function importedRow(knex: Knex, entity: EntityDef, id: number): Promise<Record<string, unknown> | null> {
  if (!entity.fields.importJobId) return null;
  const row = await knex(entity.table).where({ id }).whereNotNull('import_job_id').first();
  return row ?? null;
}

/**
 * The id of an imported row, other than `exceptId` (null: any) and not deleted, that holds these values of a
 * unique key now (imported rows never claimed theirs: they came in a chunk), or null.
 * `caseInsensitive`: the values are given trimmed and in lower case, and compared so.
 */
export async function importedRowHolding(knex: Knex, entity: EntityDef, fields: Record<string, string | number>, caseInsensitive: boolean, exceptId: number | null): Promise<number | null> {
  if (!entity.fields.importJobId) return null;
  const query = knex(entity.table).whereNotNull('import_job_id').first('id');
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

/** The generic aggregate's state an imported row starts from. */
export function entityStateOf(entity: EntityDef, row: Record<string, unknown>): EntityState {
  const values: Record<string, unknown> = {};
  for (const field of eventFields(entity)) values[field] = toEventValue(row[entity.fields[field].column]);
  for (const [relation] of linkRelations(entity)) values[linkField(relation)] = [];
  for (const [relation] of ownedRelations(entity)) values[relation] = [];
  const deleted = entity.softDeleteField ? row[entity.fields[entity.softDeleteField].column] === true : false;
  return { exists: true, isDeleted: deleted, values };
}

/** A decider whose state before the stream's first event is the imported row's, when the row is one. */
export async function withImportedOrigin<D extends { initialState: EntityState }>(knex: Knex, entity: EntityDef, id: number, decider: D): Promise<D> {
  const row = await importedRow(knex, entity, id);
  return row ? { ...decider, initialState: entityStateOf(entity, row) } : decider;
}

interface FolderState { exists: boolean; projectId: number | null; parentId: number | null; name: string; isDeleted: boolean }

/** The folder decider (services/repository, a decider of its own), starting from the row when an import made the folder. */
export async function withImportedFolderOrigin<D extends { initialState: FolderState }>(knex: Knex, id: number, decider: D): Promise<D> {
  const row = await knex('repository_folders').where({ id }).whereNotNull('import_job_id').first('project_id', 'parent_id', 'name', 'is_deleted');
  if (!row) return decider;
  return { ...decider, initialState: { exists: true, projectId: row.project_id, parentId: row.parent_id, name: row.name, isDeleted: row.is_deleted } };
}
