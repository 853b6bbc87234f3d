/**
 * JSON Schemas of the generic entity events, generated from the catalogue. The files in
 * contracts/events/ are written by `npx tsx scripts/event-schemas.ts` and checked in (a published
 * schema never changes: when the catalogue changes an entity, the script writes a new version);
 * test/contracts/entitySchemas.unit.spec.ts fails while the files and the catalogue disagree.
 */
import { ENTITIES, type EntityDef, type FieldDef } from './entities';
import { eventFields, eventTypesOf, idKeyOf, isForeignKey, linkField, linkRelations, ownedRelations } from './entityEvents';
import { LIMITS, idSchema, intSchema, jsonValueDefs, jsonValueRef, timeSchema } from './limits';

type Schema = Record<string, unknown>;

const ID = idSchema();
const TIME = timeSchema();

function valueSchema(entity: EntityDef, name: string, f: FieldDef): Schema {
  let item: Schema;
  switch (f.type) {
    case 'int': item = isForeignKey(entity, name) || f.fromActor ? { ...ID } : intSchema(); break;
    case 'float': item = { type: 'number' }; break;
    case 'boolean': item = { type: 'boolean' }; break;
    case 'datetime': item = { ...TIME }; break;
    case 'json': return jsonValueRef();
    case 'string':
      item = f.enum ? { type: 'string', enum: [...f.enum] } : { type: 'string', ...(f.requiredOnCreate && { minLength: 1 }), maxLength: f.maxLength ?? LIMITS.text };
      break;
  }
  if (f.list) item = { type: 'array', maxItems: LIMITS.items, items: item };
  if (f.nullable) {
    const { type, ...rest } = item;
    item = { type: [type, 'null'], ...rest };
    if (item.enum) item.enum = [...(item.enum as string[]), null];
  }
  return item;
}

/** The properties a Created event carries (and an Updated event may carry in `changes`). */
function valueProperties(entity: EntityDef, options: { forChanges: boolean }): Record<string, Schema> {
  const properties: Record<string, Schema> = {};
  for (const name of eventFields(entity)) {
    const f = entity.fields[name];
    if (options.forChanges && f.fromActor) continue;
    properties[name] = valueSchema(entity, name, f);
  }
  for (const [name] of linkRelations(entity)) properties[linkField(name)] = { type: 'array', maxItems: LIMITS.items, uniqueItems: true, items: { ...ID } };
  for (const [name, relation] of ownedRelations(entity)) {
    const child = ENTITIES[relation.target];
    const childFields = eventFields(child).filter((f) => child.fields[f].column !== relation.foreignKey);
    properties[name] = {
      type: 'array',
      maxItems: LIMITS.items,
      items: {
        type: 'object', additionalProperties: false, required: ['id', ...childFields],
        properties: { id: { ...ID }, ...Object.fromEntries(childFields.map((f) => [f, valueSchema(child, f, child.fields[f])])) },
      },
    };
  }
  return properties;
}

export function entityEventSchemas(entity: EntityDef, version: number): Record<string, Schema> {
  const types = eventTypesOf(entity);
  const idKey = idKeyOf(entity);
  const created = valueProperties(entity, { forChanges: false });
  const changes = valueProperties(entity, { forChanges: true });
  const label = entity.name.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`);
  return withJsonDefs({
    [types.created]: {
      $id: `${types.created}.v${version}`, title: types.created, description: `A ${label} was created; every value it holds.`,
      type: 'object', additionalProperties: false, required: [idKey, ...Object.keys(created), 'createdAt'],
      properties: { [idKey]: { ...ID }, ...created, createdAt: { ...TIME } },
    },
    [types.updated]: {
      $id: `${types.updated}.v${version}`, title: types.updated,
      description: `Values of a ${label} changed; only the changed values are present (links and children as whole lists).`,
      type: 'object', additionalProperties: false, required: [idKey, 'changes', 'updatedAt'],
      properties: {
        [idKey]: { ...ID },
        changes: {
          type: 'object', additionalProperties: false, minProperties: 1,
          properties: { ...changes, ...(entity.softDeleteField && entity.fields[entity.softDeleteField].writable && { [entity.softDeleteField]: { type: 'boolean' } }) },
        },
        updatedAt: { ...TIME },
      },
    },
    [types.deleted]: {
      $id: `${types.deleted}.v${version}`, title: types.deleted,
      description: entity.softDeleteField ? `A ${label} was deleted (soft: it stays, marked deleted).` : `A ${label} was removed.`,
      type: 'object', additionalProperties: false, required: [idKey, 'deletedAt'],
      properties: { [idKey]: { ...ID }, deletedAt: { ...TIME } },
    },
  });
}

/** A schema that holds a JSON value gets the definitions its reference points into. */
function withJsonDefs(schemas: Record<string, Schema>): Record<string, Schema> {
  return Object.fromEntries(Object.entries(schemas).map(([type, schema]) =>
    [type, JSON.stringify(schema).includes('"#/$defs/json') ? { ...schema, $defs: jsonValueDefs() } : schema]));
}
