/**
 * The events of catalogue entities written through the generic entity aggregate
 * (services/entities/): for an entity `testRun`, `TestRunCreated`, `TestRunUpdated` and
 * `TestRunDeleted` on the stream `testRun-<id>`. Their JSON Schemas are generated from the
 * catalogue (scripts/event-schemas.ts) and checked in; the projection and the decider read them
 * through these helpers, so names are decided in one place.
 *
 * Data shapes:
 * - Created: `{ <idKey>, ...values, createdAt }` — every field the entity's rows hold that is not
 *   derived (id, timestamps, isDeleted, projected counters), foreign keys by their scalar name,
 *   many-to-many links as `<linkField>: number[]`, owned children as `<relation>: [{ id, ... }]`.
 * - Updated: `{ <idKey>, changes: { ...only what changed }, updatedAt }` (links and children whole).
 * - Deleted: `{ <idKey>, deletedAt }`: a soft delete where the entity has `softDeleteField`,
 *   otherwise the row goes.
 */
import { ENTITIES, type EntityDef, type EntityName, isEntityName, type RelationDef, writtenAs } from './entities';

/** Entities whose events are written by the generic aggregate (folders and users have their own). */
export const GENERIC_ENTITIES: readonly EntityName[] = (Object.keys(ENTITIES) as EntityName[])
  .filter((name) => writtenAs(ENTITIES[name]) === 'aggregate' && name !== 'repositoryFolder' && name !== 'user');

const ID_KEYS: Partial<Record<EntityName, string>> = { repositoryCase: 'caseId', repositoryFolder: 'folderId', user: 'userId' };

export const idKeyOf = (entity: EntityDef): string => ID_KEYS[entity.name] ?? `${entity.name}Id`;
export const streamOf = (entity: EntityDef, id: number): string => `${entity.name}-${id}`;
const pascal = (name: string) => name[0].toUpperCase() + name.slice(1);

export interface EntityEventTypes { created: string; updated: string; deleted: string }
export const eventTypesOf = (entity: EntityDef): EntityEventTypes => ({
  created: `${pascal(entity.name)}Created`,
  updated: `${pascal(entity.name)}Updated`,
  deleted: `${pascal(entity.name)}Deleted`,
});

/** `tags` → `tagIds`, `caseFields` → `caseFieldIds`, `variants` → `variantIds`. */
export const linkField = (relationName: string): string => `${relationName.replace(/s$/, '')}Ids`;

/** Memoised per entity: these run for every event a projection applies. */
function perEntity<T>(compute: (entity: EntityDef) => T): (entity: EntityDef) => T {
  const cache = new Map<string, T>();
  return (entity) => {
    let value = cache.get(entity.name);
    if (value === undefined) cache.set(entity.name, (value = compute(entity)));
    return value;
  };
}

/** Fields kept in events: what a client or the server decides, not what the projection derives. */
export const eventFields = perEntity((entity: EntityDef): string[] =>
  Object.entries(entity.fields)
    .filter(([name, f]) => name !== 'id' && name !== 'createdAt' && name !== 'updatedAt' && name !== entity.softDeleteField
      && (f.writable || f.fromActor || isForeignKey(entity, name)))
    .map(([name]) => name));

export const isForeignKey = (entity: EntityDef, field: string): boolean =>
  Object.values(entity.relations).some((r) => r.kind === 'one' && r.scalar === field);

export const linkRelations = perEntity((entity: EntityDef): [string, RelationDef][] =>
  Object.entries(entity.relations).filter(([, r]) => r.through !== undefined && writesLinks(entity, r)));

export const ownedRelations = perEntity((entity: EntityDef): [string, RelationDef][] =>
  Object.entries(entity.relations).filter(([, r]) => r.owned === true));

/**
 * A many-to-many link is written by one side only: the side the catalogue lists first among
 * aggregates (cases carry their tags; a tag does not carry its cases).
 */
function writesLinks(entity: EntityDef, relation: RelationDef): boolean {
  const owner = LINK_OWNERS[relation.through!.table];
  return owner === entity.name;
}

/** The entity whose events carry each join table. */
export const LINK_OWNERS: Record<string, EntityName> = {
  repository_case_tags: 'repositoryCase',
  test_run_tags: 'testRun',
  session_tags: 'session',
  template_case_fields: 'template',
  template_result_fields: 'template',
  configuration_variants: 'configuration',
  signature_meaning_roles: 'signatureMeaning',
};

/** Which entity, id and event kind an event of the generic aggregate is about; null for others. */
export function entityEventOf(type: string): { entity: EntityDef; kind: keyof EntityEventTypes } | null {
  return EVENT_INDEX.get(type) ?? null;
}

const EVENT_INDEX = new Map<string, { entity: EntityDef; kind: keyof EntityEventTypes }>();
for (const name of GENERIC_ENTITIES) {
  const entity = ENTITIES[name];
  const types = eventTypesOf(entity);
  for (const kind of ['created', 'updated', 'deleted'] as const) EVENT_INDEX.set(types[kind], { entity, kind });
}

/**
 * The rows of an external import's bulk chunk (ExternalImportRowsWritten), each as the data of its
 * entity's Created event; null when the chunk names no catalogue entity.
 */
export function rowsWrittenOf(data: { entity: string; fields: string[]; rows: unknown[][] }): { entity: EntityDef; rows: Record<string, unknown>[] } | null {
  if (!isEntityName(data.entity) || !GENERIC_ENTITIES.includes(data.entity) || !Array.isArray(data.rows) || !Array.isArray(data.fields)) return null;
  const rows = data.rows.map((values) => {
    const row: Record<string, unknown> = {};
    data.fields.forEach((field, i) => { row[field] = values[i]; });
    return row;
  });
  return { entity: ENTITIES[data.entity], rows };
}
