import type { EntityDef, FieldDef } from '../../contracts/entities';
import { redactSecrets } from '../../contracts/secrets';

/**
 * Read-model rows → API objects. Only catalogue fields ever leave: internal columns such as
 * `revision` are neither selected (see `catalogueColumns`) nor copied.
 */

/** A row as the database driver returns it, keyed by column name. */
export type Row = Record<string, unknown>;

export type ApiObject = Record<string, unknown>;

/**
 * The columns to select for an entity: the catalogue's, never `*`: its fields' columns and the
 * foreign keys of its to-one relations (needed to load and sort through them, never returned
 * unless they are fields).
 */
export function catalogueColumns(entity: EntityDef): string[] {
  const columns = Object.values(entity.fields).map((field) => field.column);
  for (const relation of Object.values(entity.relations)) {
    if (relation.kind === 'one' && !columns.includes(relation.foreignKey)) columns.push(relation.foreignKey);
  }
  return columns;
}

/** The named fields of a row (all catalogue fields by default), in catalogue order as given. */
export function toApiObject(entity: EntityDef, row: Row, fields: readonly string[] = Object.keys(entity.fields)): ApiObject {
  const object: ApiObject = {};
  for (const name of fields) {
    const field = entity.fields[name];
    object[name] = toApiValue(field, row[field.column]);
  }
  return object;
}

export function toApiValue(field: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (field.list && Array.isArray(value)) return value.map((item) => toApiScalar(field, item));
  return toApiScalar(field, value);
}

/** An ISO 8601 text exactly as `toISOString()` writes it. */
const CANONICAL_ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function toApiScalar(field: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (field.type) {
    case 'datetime':
      // The model's reads have timestamps as this text already (infra/postgres/isoTimestamps.ts).
      if (typeof value === 'string' && CANONICAL_ISO.test(value)) return value;
      return (value instanceof Date ? value : new Date(String(value))).toISOString();
    case 'int':
    case 'float':
      // pg returns bigint and numeric as strings; the API promises numbers.
      return typeof value === 'number' ? value : Number(value);
    case 'boolean':
    case 'string':
      return value;
    case 'json':
      // jsonb arrives parsed: returned as stored, secrets by reference only (contracts/secrets.ts).
      return field.holdsSecrets ? redactSecrets(value) : value;
  }
}
