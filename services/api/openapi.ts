import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { ENTITIES, type EntityDef, type EntityName, type FieldDef, type RelationDef, type ScalarType, writtenAs } from '../../contracts/entities';
import { DEFAULT_MAX_ROWS } from '../model/query';
import { uniqueKeysOf, MAX_DISTINCT_FIELDS, MAX_ORDER_BY_KEYS, MAX_ORDER_BY_RELATIONS, MAX_RELATION_FILTERS, MAX_RELATION_LOADS } from '../model/args';
import { CREATE_ONLY_FIELDS, WRITE_ONLY_INPUTS, writtenLists } from '../model/writeArgs';
import { auditPaths } from '../audit/audit.openapi';
import { historyPaths } from '../history/history.openapi';
import { analyticsPaths } from '../analytics/analytics.openapi';
import { quarantinePaths } from '../quarantine/quarantine.openapi';
import { signaturePaths } from '../signatures/signatures.openapi';
import { evidencePaths } from '../evidence/evidence.openapi';
import { searchPaths } from '../search/search.openapi';
import { filePaths } from '../files/files.openapi';
import { importPaths } from '../imports/imports.openapi';
import { externalImportPaths } from '../migration/externalImport.openapi';
import { lookupPaths } from '../lookup/lookup.openapi';
import { notificationPaths } from '../notifications/notifications.openapi';
import { adminPaths } from '../admin/admin.openapi';
import { parkedEventsPaths } from '../parking/parkedEvents.openapi';
import { integrityPaths } from '../integrity/integrity.openapi';
import { searchAdminPaths } from '../searchAdmin/searchAdmin.openapi';

/** The API categories of the interface spec, in its order. */
export const CATEGORIES = {
  custom: 'Authentication, tokens, file uploads, result imports, search, admin endpoints',
  projects: 'Projects and folders',
  testCases: 'Test cases, steps, templates, custom fields',
  testRuns: 'Test runs, sessions, execution tracking',
  planning: 'Milestones, configurations, tags, workflows, statuses',
  users: 'Users, roles, groups, account settings',
  integrations: 'External integrations, SSO, AI/LLM features',
  other: 'Attachments, comments, imports',
} as const;
export type Category = keyof typeof CATEGORIES;

export function isCategory(name: string): name is Category {
  return Object.prototype.hasOwnProperty.call(CATEGORIES, name);
}

/*
 * The descriptions follow what the model API accepts (services/model/args.ts, writeArgs.ts,
 * bulk.ts, model.commands.ts): the same fields, operators and nesting, so that a request valid
 * against the document is one the API takes. Names follow Prisma's where they have an equivalent
 * (ProjectWhereInput, IntNullableFilter, ...).
 */

type Schema = OpenAPIV3.SchemaObject | OpenAPIV3.ReferenceObject;
type Schemas = Record<string, Schema>;
const ref = (name: string): OpenAPIV3.ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const pascal = (s: string) => s[0].toUpperCase() + s.slice(1);
/** `asOf` of every read (docs/history.md). */
const AS_OF: Schema = {
  anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: '^(0|[1-9][0-9]{0,18})$' }, { type: 'string', format: 'date-time' }],
  description: 'read as of this point of the log: an event position, or a date-time with a zone (the last position recorded at or before it). '
    + 'The answer is what the same read answered right after it; access is decided by your rights now; accounts (users) are read as they are now',
};

const object = (properties: Record<string, Schema>, extra: Partial<OpenAPIV3.NonArraySchemaObject> = {}): OpenAPIV3.SchemaObject =>
  ({ type: 'object', additionalProperties: false, properties, ...extra });
/** `one` or a list of them, as the API accepts both. */
const oneOrMany = (item: Schema, maxItems?: number): OpenAPIV3.SchemaObject =>
  ({ anyOf: [item, { type: 'array', items: item, ...(maxItems !== undefined && { maxItems }) }] });
/** null and nothing else (OpenAPI 3.0 has no null type). */
const NULL_ONLY: OpenAPIV3.SchemaObject = { type: 'object', nullable: true, enum: [null], description: 'null' };
/**
 * The schema or null. OpenAPI 3.0.3's `nullable` adds null only to a `type` beside it, so a `$ref`
 * (or a schema without a type) is made nullable by an alternative that is null alone.
 */
const orNull = (schema: Schema, extra: Partial<OpenAPIV3.NonArraySchemaObject> = {}): OpenAPIV3.SchemaObject => ({ anyOf: [schema, NULL_ONLY], ...extra });
/** A referenced schema that may also be null. */
const nullableRef = (name: string): OpenAPIV3.SchemaObject => orNull(ref(name));

const isReadOnly = (entity: EntityDef) => writtenAs(entity) !== 'aggregate';
/** Lists and JSON have no order: not orderable, not distinct or groupBy keys. */
const isComparable = (field: FieldDef) => !field.list && field.type !== 'json';
const fieldsOf = (entity: EntityDef) => Object.entries(entity.fields);
const relationsOf = (entity: EntityDef) => Object.entries(entity.relations);
const listRelationsOf = (entity: EntityDef) => relationsOf(entity).filter(([, r]) => r.kind === 'many');
/** A to-one relation may be unset when its scalar field is nullable. */
const isOptionalRelation = (entity: EntityDef, relation: RelationDef) => (relation.scalar ? entity.fields[relation.scalar]?.nullable : true) ?? true;

// ---------------------------------------------------------------------------------------------
// values

const BASE: Record<ScalarType, OpenAPIV3.SchemaObject> = {
  int: { type: 'integer', format: 'int32' },
  float: { type: 'number', format: 'double' },
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  datetime: { type: 'string', format: 'date-time' },
  json: { description: 'any JSON value' },
};

/** One value of the field: an item of a list field, an enum value, or the scalar. */
function itemSchema(field: FieldDef, nullable = false): OpenAPIV3.SchemaObject {
  if (field.enum) return { type: 'string', enum: nullable ? [...field.enum, null] : [...field.enum], ...(nullable && { nullable: true }) };
  // A schema without a type already takes null: a JSON field that is not nullable says it does not.
  if (field.type === 'json') return nullable ? { ...BASE.json } : { ...BASE.json, not: NULL_ONLY };
  return nullable ? { ...BASE[field.type], nullable: true } : { ...BASE[field.type] };
}

/** The field's value as stored and written: lists as arrays, null where the field is nullable. */
function valueSchema(field: FieldDef): OpenAPIV3.SchemaObject {
  if (field.list) return { type: 'array', items: itemSchema(field), ...(field.nullable && { nullable: true }) };
  return itemSchema(field, field.nullable);
}

function fieldNotes(entity: EntityDef, name: string, field: FieldDef): string | undefined {
  const notes = [
    field.unique && (field.unique === 'forever' ? 'unique for good (a deleted row keeps it); a unique key' : 'unique among rows not deleted; a unique key'),
    entity.uniqueTogether?.includes(name) && `unique together with ${entity.uniqueTogether.filter((f) => f !== name).join(', ')}`,
    field.fromActor && 'set by the server from the acting user',
    CREATE_ONLY_FIELDS[entity.name]?.includes(name) && 'set on create only: an update naming it is refused (400 invalid-argument)',
    field.type === 'json' && 'any JSON value',
    field.holdsSecrets && 'values under keys named like credentials (apiToken, password, ...) are secrets: sealed before they enter an event, answered as {"$secret": "<id>"}, which written back keeps them',
  ].filter(Boolean);
  return notes.length > 0 ? notes.join('; ') : undefined;
}

// ---------------------------------------------------------------------------------------------
// filters shared by every entity

const FILTERED_TYPES = ['int', 'float', 'string', 'boolean', 'datetime'] as const;
const filterName = (type: Exclude<ScalarType, 'json'>, nullable: boolean) =>
  `${type === 'datetime' ? 'DateTime' : type === 'boolean' ? 'Bool' : pascal(type)}${nullable ? 'Nullable' : ''}Filter`;

/** equals / not / in / notIn / lt / lte / gt / gte (+ contains / startsWith / endsWith / mode on strings; equals / not on booleans). */
function scalarFilter(type: (typeof FILTERED_TYPES)[number], nullable: boolean): OpenAPIV3.SchemaObject {
  const item = { ...BASE[type] };
  const self = filterName(type, nullable);
  const equals = nullable ? { ...item, nullable: true } : item;
  const properties: Record<string, Schema> = { equals, not: { anyOf: [equals, ref(self)] } };
  if (type !== 'boolean') {
    Object.assign(properties, {
      in: { type: 'array', items: item }, notIn: { type: 'array', items: item },
      lt: item, lte: item, gt: item, gte: item,
    });
  }
  if (type === 'string') {
    Object.assign(properties, {
      contains: item, startsWith: item, endsWith: item,
      mode: { type: 'string', enum: ['default', 'insensitive'], description: 'insensitive: case-insensitive comparisons' },
    });
  }
  return object(properties, nullable ? { description: 'null (equals / not) only on optional fields' } : {});
}

function sharedSchemas(): Schemas {
  const filters = Object.fromEntries(FILTERED_TYPES.flatMap((t) => [false, true].map((n) => [filterName(t, n), scalarFilter(t, n)])));
  const id = idSchema();
  return {
    ...filters,
    JsonNullableFilter: object({ equals: NULL_ONLY, not: NULL_ONLY }, { description: 'a JSON field filters on null only; JSON value and path filters are not offered' }),
    SortOrder: { type: 'string', enum: ['asc', 'desc'] },
    NullsOrder: { type: 'string', enum: ['first', 'last'] },
    SortOrderInput: object({ sort: ref('SortOrder'), nulls: ref('NullsOrder') }, { required: ['sort'], description: 'nulls: where null values go (default: last ascending, first descending)' }),
    SortOrderWithoutNullsInput: object({ sort: ref('SortOrder') }, { required: ['sort'] }),
    RelationCountOrderByInput: object({ _count: ref('SortOrder') }, { required: ['_count'], description: 'orders by the number of related rows' }),
    IdInput: object({ id }, { required: ['id'] }),
    ConnectInput: object({ connect: ref('IdInput') }, { required: ['connect'] }),
    DisconnectInput: object({ disconnect: { type: 'boolean', enum: [true] } }, { required: ['disconnect'] }),
    LinkCreateInput: object({ connect: oneOrMany(ref('IdInput')), set: oneOrMany(ref('IdInput')) }, {
      minProperties: 1, description: 'many-to-many links: connect adds, set replaces the whole list',
    }),
    LinkUpdateInput: object({ connect: oneOrMany(ref('IdInput')), disconnect: oneOrMany(ref('IdInput')), set: oneOrMany(ref('IdInput')) }, {
      minProperties: 1, description: 'many-to-many links: connect adds, disconnect removes, set replaces the whole list',
    }),
    BatchPayload: object({ count: { type: 'integer' } }, { required: ['count'] }),
    Error: object({ error: { type: 'string' }, code: { type: 'string' }, details: { type: 'object', additionalProperties: true } }, { required: ['error', 'code', 'details'] }),
  };
}

// ---------------------------------------------------------------------------------------------
// per entity: filters of enum and list fields, where, orderBy, include/select

const enumFilterName = (entity: EntityDef, field: string, nullable: boolean) => `${pascal(entity.name)}${pascal(field)}${nullable ? 'Nullable' : ''}Filter`;
const listFilterName = (entity: EntityDef, field: string) => `${pascal(entity.name)}${pascal(field)}ListFilter`;

function enumFilter(entity: EntityDef, name: string, field: FieldDef, nullable: boolean): OpenAPIV3.SchemaObject {
  const value = itemSchema(field, nullable);
  const item = itemSchema(field);
  return object({
    equals: value, not: { anyOf: [value, ref(enumFilterName(entity, name, nullable))] },
    in: { type: 'array', items: item }, notIn: { type: 'array', items: item },
  });
}

function listFilter(field: FieldDef): OpenAPIV3.SchemaObject {
  const item = itemSchema(field);
  const list: OpenAPIV3.SchemaObject = { type: 'array', items: item };
  return object({
    equals: field.nullable ? { ...list, nullable: true } : list,
    has: item,
    hasSome: { ...list, description: 'any of them ([] matches nothing)' },
    hasEvery: { ...list, description: 'all of them ([] matches every list)' },
    isEmpty: { type: 'boolean' },
  }, { description: 'scalar list filters' });
}

/** The filter of a field in a where: a value (equals) or a filter object; absent when the field cannot be filtered. */
function whereFieldSchema(entity: EntityDef, name: string, field: FieldDef): Schema | null {
  if (field.list) return field.nullable ? nullableRef(listFilterName(entity, name)) : ref(listFilterName(entity, name));
  if (field.type === 'json') return field.nullable ? nullableRef('JsonNullableFilter') : null; // a required JSON field has no null to look for
  const filter = field.enum ? enumFilterName(entity, name, field.nullable) : filterName(field.type, field.nullable);
  return { anyOf: [itemSchema(field, field.nullable), ref(filter)] };
}

function whereSchema(entity: EntityDef): OpenAPIV3.SchemaObject {
  const self = `${pascal(entity.name)}WhereInput`;
  const properties: Record<string, Schema> = {};
  for (const [name, field] of fieldsOf(entity)) {
    const schema = whereFieldSchema(entity, name, field);
    if (schema) properties[name] = schema;
  }
  for (const [name, relation] of relationsOf(entity)) {
    const target = `${pascal(relation.target)}WhereInput`;
    if (relation.kind === 'many') {
      properties[name] = object({ some: ref(target), every: ref(target), none: ref(target) });
    } else {
      const optional = isOptionalRelation(entity, relation);
      const quantified = object({ is: optional ? nullableRef(target) : ref(target), isNot: optional ? nullableRef(target) : ref(target) });
      properties[name] = { anyOf: [quantified, ref(target), ...(optional ? [NULL_ONLY] : [])], description: 'is / isNot, or a where on the related row (shorthand for is)' };
    }
  }
  return object({ ...properties, AND: oneOrMany(ref(self)), OR: oneOrMany(ref(self)), NOT: oneOrMany(ref(self)) }, {
    description: `NOT with a list: none of them. The filters of one request go through at most ${MAX_RELATION_FILTERS} relations together (each relation filter counts once), else 400 query-too-large`,
  });
}

/**
 * Prisma's (5+) WhereUniqueInput: a where with at least one unique key given as a value (`id`, a
 * unique field, a compound unique `a_b: { a, b }`), other filters beside it.
 */
function uniqueWhereSchema(entity: EntityDef): OpenAPIV3.SchemaObject {
  const where = whereSchema(entity);
  const keys = uniqueKeysOf(entity);
  const properties: Record<string, Schema> = { ...where.properties };
  for (const key of keys) {
    properties[key.name] = key.fields.length === 1
      ? itemSchema(entity.fields[key.name])
      : object(Object.fromEntries(key.fields.map((f) => [f, itemSchema(entity.fields[f])])), { required: key.fields });
  }
  return {
    ...where, properties, ...(keys.length === 1 ? { required: [keys[0].name] } : { anyOf: keys.map((key) => ({ required: [key.name] })) }),
    description: `at least one unique key (${keys.map((key) => key.name).join(', ')}) as a value; other filters beside it. A unique value other than an id names the row not deleted that holds it`,
  };
}

/**
 * One key per object (use an array to order by several): a field, a to-one relation holding the
 * next level, or a list relation by its number of rows. `optionalPath`: reached through an
 * optional relation, where every field may be null, so `nulls` applies to all.
 */
function orderBySchema(entity: EntityDef, optionalPath: boolean): OpenAPIV3.SchemaObject {
  const properties: Record<string, Schema> = {};
  for (const [name, field] of fieldsOf(entity)) {
    if (!isComparable(field)) continue;
    properties[name] = { anyOf: [ref('SortOrder'), ref(field.nullable || optionalPath ? 'SortOrderInput' : 'SortOrderWithoutNullsInput')] };
  }
  for (const [name, relation] of relationsOf(entity)) {
    if (relation.kind === 'many') properties[name] = ref('RelationCountOrderByInput');
    else properties[name] = ref(orderByName(relation.target, optionalPath || isOptionalRelation(entity, relation)));
  }
  return object(properties, { minProperties: 1, maxProperties: 1 });
}
const orderByName = (entity: EntityName, optionalPath: boolean) => `${pascal(entity)}${optionalPath ? 'Optional' : ''}OrderByInput`;

function relationLoad(relation: RelationDef): Schema {
  return { anyOf: [{ type: 'boolean' }, ref(`${pascal(relation.target)}${relation.kind === 'many' ? 'ListRelationArgs' : 'RelationArgs'}`)] };
}

function countSelection(entity: EntityDef): Schema {
  const lists = listRelationsOf(entity);
  if (lists.length === 0) return { type: 'boolean' };
  return { anyOf: [{ type: 'boolean', description: 'true: every list relation' }, ref(`${pascal(entity.name)}CountSelect`)] };
}

function shapeProperties(entity: EntityDef): Record<string, Schema> {
  return { include: ref(`${pascal(entity.name)}Include`), select: ref(`${pascal(entity.name)}Select`) };
}
const SHAPE_NOTE = `include and select cannot both be given; they load at most ${MAX_RELATION_LOADS} relations (included or counted, at every level together), else 400 query-too-large`;
const ROWS_NOTE = `An answer holds at most MODEL_MAX_ROWS rows (default ${DEFAULT_MAX_ROWS}), the rows of every include counted, else 400 too-many-rows: read in pages with take and cursor`;
const ORDER_BY_NOTE = `at most ${MAX_ORDER_BY_KEYS} sort keys, going through at most ${MAX_ORDER_BY_RELATIONS} relations together, else 400 query-too-large`;

const take = (negative: boolean): OpenAPIV3.SchemaObject => (negative
  ? { type: 'integer', description: 'negative: the last rows of the ordering (after skip rows from the end), returned in the requested order' }
  : { type: 'integer', minimum: 0 });
const skip: OpenAPIV3.SchemaObject = { type: 'integer', minimum: 0 };

function listArgs(entity: EntityDef): Record<string, Schema> {
  const name = pascal(entity.name);
  return {
    where: ref(`${name}WhereInput`),
    orderBy: { ...oneOrMany(ref(`${name}OrderByInput`), MAX_ORDER_BY_KEYS), description: ORDER_BY_NOTE },
    cursor: { allOf: [ref('IdInput')], description: 'the page starts at this row (ends there with a negative take)' },
    take: take(true),
    skip,
  };
}

// ---------------------------------------------------------------------------------------------
// per entity: aggregates

const SUMMABLE: readonly ScalarType[] = ['int', 'float'];
const ORDERED: readonly ScalarType[] = ['int', 'float', 'datetime', 'string'];
const aggregatable = (entity: EntityDef, types: readonly ScalarType[]) => fieldsOf(entity).filter(([, f]) => !f.list && types.includes(f.type));

function aggregateSelections(entity: EntityDef): Record<string, Schema> {
  const pick = (names: string[], extra: Record<string, Schema> = {}) =>
    object({ ...extra, ...Object.fromEntries(names.map((f) => [f, { type: 'boolean' }])) }, { minProperties: 1 });
  const selections: Record<string, Schema> = {
    _count: { anyOf: [{ type: 'boolean', enum: [true] }, pick(fieldsOf(entity).map(([f]) => f), { _all: { type: 'boolean' } })] },
  };
  const summable = aggregatable(entity, SUMMABLE).map(([f]) => f);
  const ordered = aggregatable(entity, ORDERED).map(([f]) => f);
  if (summable.length > 0) Object.assign(selections, { _sum: pick(summable), _avg: pick(summable) });
  if (ordered.length > 0) Object.assign(selections, { _min: pick(ordered), _max: pick(ordered) });
  return selections;
}

function aggregateResults(entity: EntityDef): Record<string, Schema> {
  const numbers = (names: string[]) => object(Object.fromEntries(names.map((f) => [f, { type: 'number', nullable: true }])));
  const results: Record<string, Schema> = {
    _count: { anyOf: [{ type: 'integer' }, object({ _all: { type: 'integer' }, ...Object.fromEntries(fieldsOf(entity).map(([f]) => [f, { type: 'integer' }])) })] },
  };
  const summable = aggregatable(entity, SUMMABLE).map(([f]) => f);
  const ordered = aggregatable(entity, ORDERED);
  if (summable.length > 0) Object.assign(results, { _sum: numbers(summable), _avg: numbers(summable) });
  if (ordered.length > 0) {
    const extremes = object(Object.fromEntries(ordered.map(([f, def]) => [f, itemSchema(def, true)])));
    Object.assign(results, { _min: extremes, _max: extremes });
  }
  return results;
}

/** groupBy `having`: per field, aggregate filters (`{ _avg: { gt: 3 } }`) and, on by fields, plain filters. */
function havingSchema(entity: EntityDef): OpenAPIV3.SchemaObject {
  const self = `${pascal(entity.name)}HavingInput`;
  const properties: Record<string, Schema> = {};
  for (const [name, field] of fieldsOf(entity)) {
    const aggregates: Record<string, Schema> = { _count: ref('IntFilter') };
    if (!field.list && SUMMABLE.includes(field.type)) Object.assign(aggregates, { _sum: ref('FloatNullableFilter'), _avg: ref('FloatNullableFilter') });
    if (!field.list && ORDERED.includes(field.type)) {
      const extreme = ref(field.enum ? enumFilterName(entity, name, true) : filterName(field.type as Exclude<ScalarType, 'json'>, true));
      Object.assign(aggregates, { _min: extreme, _max: extreme });
    }
    if (!isComparable(field)) {
      properties[name] = object(aggregates);
      continue;
    }
    const plain = field.enum ? enumFilter(entity, name, field, field.nullable) : scalarFilter(field.type as (typeof FILTERED_TYPES)[number], field.nullable);
    properties[name] = {
      anyOf: [itemSchema(field, field.nullable), object({ ...plain.properties, ...aggregates })],
      description: 'a value or plain operators filter a by field; _count, _sum, _avg, _min, _max filter that aggregate of the group',
    };
  }
  return object({ ...properties, AND: oneOrMany(ref(self)), OR: oneOrMany(ref(self)), NOT: oneOrMany(ref(self)) });
}

function groupByOrderBy(entity: EntityDef): OpenAPIV3.SchemaObject {
  const one = (names: string[]) => object(Object.fromEntries(names.map((f) => [f, ref('SortOrder')])), { minProperties: 1, maxProperties: 1 });
  const comparable = fieldsOf(entity).filter(([, f]) => isComparable(f)).map(([f]) => f);
  const properties: Record<string, Schema> = {
    ...Object.fromEntries(comparable.map((f) => [f, { allOf: [ref('SortOrder')], description: 'must be one of the by fields' }])),
    _count: one(fieldsOf(entity).map(([f]) => f)),
  };
  const summable = aggregatable(entity, SUMMABLE).map(([f]) => f);
  const ordered = aggregatable(entity, ORDERED).map(([f]) => f);
  if (summable.length > 0) Object.assign(properties, { _sum: one(summable), _avg: one(summable) });
  if (ordered.length > 0) Object.assign(properties, { _min: one(ordered), _max: one(ordered) });
  return object(properties, { minProperties: 1, maxProperties: 1 });
}

// ---------------------------------------------------------------------------------------------
// per entity: write inputs

/** The to-one relation of an owned child that points back at its parent (set by the parent, never given). */
function parentRelationOf(parent: EntityDef, relation: RelationDef): string | undefined {
  return relationsOf(ENTITIES[relation.target]).find(([, r]) => r.kind === 'one' && r.target === parent.name && r.foreignKey === relation.foreignKey)?.[0];
}

/** A relation whose scalar the server sets from the acting user (createdBy) is not the client's to write. */
const isActorRelation = (entity: EntityDef, relation: RelationDef) => !!(relation.scalar && entity.fields[relation.scalar]?.fromActor);

function writableFields(entity: EntityDef, op: 'create' | 'update'): [string, FieldDef][] {
  return fieldsOf(entity).filter(([name, f]) => f.writable && !f.fromActor && !(op === 'create' && name === entity.softDeleteField)
    && !(op === 'update' && CREATE_ONLY_FIELDS[entity.name]?.includes(name)));
}

/** Inputs that are not fields (a user's password): in create and update data only, marked writeOnly, never in a row or a filter. */
function writeOnlyInputs(entity: EntityDef, op: 'create' | 'update'): { properties: Record<string, Schema>; required: string[] } {
  const inputs = Object.entries(WRITE_ONLY_INPUTS[entity.name] ?? {});
  return {
    properties: Object.fromEntries(inputs.map(([name, i]) => [name, { type: 'string', minLength: i.minLength, maxLength: i.maxLength, writeOnly: true, description: i.description }])),
    required: op === 'create' ? inputs.filter(([, i]) => i.requiredOnCreate).map(([name]) => name) : [],
  };
}

function fieldInput(entity: EntityDef, name: string, field: FieldDef, withDefault: boolean): OpenAPIV3.SchemaObject {
  const description = fieldNotes(entity, name, field);
  return {
    ...valueSchema(field),
    ...(withDefault && field.default !== undefined && { default: Array.isArray(field.default) ? [...field.default] : field.default }),
    ...(description && { description }),
  };
}

/**
 * Create data: writable fields, to-one `connect`, many-to-many links, owned children (`create`).
 * An owned child created inside its parent (`parent` given) takes fields and to-one relations only.
 */
function createInput(entity: EntityDef, parent?: string): OpenAPIV3.SchemaObject {
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  for (const [name, field] of writableFields(entity, 'create')) {
    properties[name] = fieldInput(entity, name, field, true);
    if (field.requiredOnCreate) required.push(name);
  }
  if (parent === undefined) {
    const secret = writeOnlyInputs(entity, 'create');
    Object.assign(properties, secret.properties);
    required.push(...secret.required);
  }
  for (const [name, relation] of relationsOf(entity)) {
    if (name === parent || isActorRelation(entity, relation)) continue;
    if (relation.kind === 'one') {
      properties[name] = ref('ConnectInput');
      if (relation.requiredOnCreate) required.push(name);
    } else if (parent !== undefined || !writtenLists(entity).has(name)) {
      continue; // a list written from the other side (a tag's cases: each case's tags)
    } else if (relation.through) {
      properties[name] = ref('LinkCreateInput');
    } else if (relation.owned) {
      properties[name] = object({ create: oneOrMany(ref(`${pascal(relation.target)}NestedCreateInput`), 1000) }, {
        required: ['create'], description: `the ${relation.target} rows, created with this ${entity.name} and owned by it`,
      });
    }
  }
  return object(properties, required.length > 0 ? { required } : {});
}

/** Update data: as create, plus `disconnect` on optional to-one relations and `set`/`disconnect`/`delete`/`deleteMany` on lists. */
function updateInput(entity: EntityDef): OpenAPIV3.SchemaObject {
  const properties: Record<string, Schema> = {};
  for (const [name, field] of writableFields(entity, 'update')) properties[name] = fieldInput(entity, name, field, false);
  Object.assign(properties, writeOnlyInputs(entity, 'update').properties);
  // A row never moves to another project (its own again changes nothing, another is 400 cross-project-move).
  const fixed = entity.projectPath?.[0] === 'project' ? 'project' : undefined;
  for (const [name, relation] of relationsOf(entity)) {
    if (name === fixed || isActorRelation(entity, relation)) continue;
    if (relation.kind === 'many' && !writtenLists(entity).has(name)) continue;
    if (relation.kind === 'one') {
      properties[name] = isOptionalRelation(entity, relation) ? { anyOf: [ref('ConnectInput'), ref('DisconnectInput')] } : ref('ConnectInput');
    } else if (relation.through) {
      properties[name] = ref('LinkUpdateInput');
    } else if (relation.owned) {
      properties[name] = object({
        create: oneOrMany(ref(`${pascal(relation.target)}NestedCreateInput`), 1000),
        delete: oneOrMany(ref('IdInput')),
        deleteMany: { type: 'object', maxProperties: 0, description: '{}: remove them all (with create: replace the list)' },
      }, { minProperties: 1 });
    }
  }
  return object(properties, { minProperties: 1, description: 'must change at least one field or relation' });
}

function writeSchemas(entity: EntityDef): Schemas {
  const name = pascal(entity.name);
  const unique = ref(`${name}WhereUniqueInput`);
  const scalarsOnly = object(Object.fromEntries(writableFields(entity, 'update').map(([f, def]) => [f, fieldInput(entity, f, def, false)])), {
    minProperties: 1, description: 'scalar fields only',
  });
  return {
    [`${name}CreateInput`]: createInput(entity),
    [`${name}UpdateInput`]: updateInput(entity),
    [`${name}CreateArgs`]: object({ data: ref(`${name}CreateInput`), ...shapeProperties(entity) }, { required: ['data'], description: SHAPE_NOTE }),
    [`${name}UpdateArgs`]: object({ where: unique, data: ref(`${name}UpdateInput`), ...shapeProperties(entity) }, { required: ['where', 'data'], description: SHAPE_NOTE }),
    [`${name}DeleteArgs`]: object({ where: unique, ...shapeProperties(entity) }, {
      required: ['where'], description: entity.softDeleteField ? `sets ${entity.softDeleteField}; ${SHAPE_NOTE}` : SHAPE_NOTE,
    }),
    [`${name}CreateManyArgs`]: object({ data: { type: 'array', maxItems: 1000, items: ref(`${name}CreateInput`) } }, {
      required: ['data'], description: 'all or nothing: every element is validated, and its connect targets checked, before anything is written',
    }),
    [`${name}UpdateManyArgs`]: object({ where: ref(`${name}WhereInput`), data: scalarsOnly }, { required: ['data'] }),
    [`${name}DeleteManyArgs`]: object({ where: ref(`${name}WhereInput`) }),
    [`${name}UpsertArgs`]: object({ where: unique, create: ref(`${name}CreateInput`), update: ref(`${name}UpdateInput`), ...shapeProperties(entity) }, {
      required: ['where', 'create', 'update'], description: `updates the row when it exists, creates one (with an id of its own) otherwise; ${SHAPE_NOTE}`,
    }),
    // Owned children are created inside this entity's data.
    ...Object.fromEntries(relationsOf(entity).filter(([, r]) => r.owned).map(([, r]) =>
      [`${pascal(r.target)}NestedCreateInput`, createInput(ENTITIES[r.target], parentRelationOf(entity, r) ?? ''),
    ])),
  };
}

// ---------------------------------------------------------------------------------------------
// per entity: everything

function entityDescription(entity: EntityDef): string {
  const how = writtenAs(entity) === 'owned'
    ? 'Read-only here: rows are written through their parent (nested create / delete / deleteMany).'
    : writtenAs(entity) === 'projected' ? 'Read-only: derived from other changes.' : '';
  const together = entity.uniqueTogether ? `${entity.uniqueTogether.join(' + ')} unique together among rows not deleted.` : '';
  const soft = entity.softDeleteField ? `delete sets ${entity.softDeleteField}.` : '';
  return [how, together, soft].filter(Boolean).join(' ');
}

/** The tag of an entity's operations: where its rows live, then what entityDescription says. */
function entityTagDescription(entity: EntityDef): string {
  const path = entity.projectPath;
  const scope = path === undefined ? 'Global: its rows belong to no project.'
    : path.length === 0 ? 'Each row is a project.'
      : path.length === 1 ? 'Each row belongs to a project.'
        : `Each row belongs to a project through its ${path.slice(0, -1).join(' → ')}.`;
  return [`The model API of ${entity.name}: /api/model/${entity.name}/{operation}.`, scope, entityDescription(entity)].filter(Boolean).join(' ');
}

/** The tags of the custom category's operations, in the order shown. */
const CUSTOM_TAGS: Record<string, string> = {
  auth: 'Log in and out with a session cookie; who the caller is',
  tokens: 'The caller\'s own API tokens, for the Authorization: Bearer header',
  files: 'Files uploaded for a project, held by attachments, kept as evidence of result imports; read with their owner\'s permission',
  imports: 'Test result files (JUnit, TestNG, NUnit, xUnit, MSTest, Mocha, Cucumber) imported into test runs, and the import jobs',
  lookup: 'Ids by exact name, for scripts and CI',
  notifications: 'The caller\'s own notifications (an import finished, ...): list them, mark them read',
  audit: 'The audit trail of every change',
  history: 'History for analysts: an entity\'s timeline and diffs field by field, two runs compared case by case, quarantined cases, the log itself',
  search: 'Full-text search and facet counts over cases, runs, sessions, failures and more, limited to the projects the caller may read',
  evidence: 'Evidence for auditors: electronic signatures of runs, milestones and cases, evidence bundles checked against the hash chain',
  admin: 'Administration: every user\'s API tokens, the integrity of the event log',
  docs: 'These OpenAPI descriptions',
  health: 'Liveness and readiness probes, without authentication',
};

/** The tags the operations name: described ones first, in their order; any other would have no description (redocly lint warns). */
function tagsOf(paths: OpenAPIV3.PathsObject, descriptions: Record<string, string>): OpenAPIV3.TagObject[] {
  const used = new Set(Object.values(paths).flatMap((item) => Object.values(item ?? {}).flatMap((op) => (op as OpenAPIV3.OperationObject).tags ?? [])));
  return [
    ...Object.entries(descriptions).filter(([name]) => used.has(name)).map(([name, description]) => ({ name, description })),
    ...[...used].filter((name) => !(name in descriptions)).map((name) => ({ name })),
  ];
}

/**
 * An entity's schemas. `own`: its category's document, with the arguments and results of its
 * operations; otherwise only what other entities' schemas reference (row, where, orderBy, shapes).
 */
function entitySchemas(entity: EntityDef, own: boolean): Schemas {
  const name = pascal(entity.name);
  const fields = fieldsOf(entity);
  const relations = relationsOf(entity);
  const comparable = fields.filter(([, f]) => isComparable(f)).map(([f]) => f);
  const fieldList = (names: string[]) => oneOrMany({ type: 'string', enum: names });
  const description = entityDescription(entity);
  const row: OpenAPIV3.SchemaObject = {
    type: 'object',
    required: fields.map(([f]) => f),
    ...(description && { description }),
    properties: {
      ...Object.fromEntries(fields.map(([f, def]) => {
        const notes = fieldNotes(entity, f, def);
        return [f, { ...valueSchema(def), ...(def.fromActor && { readOnly: true }), ...(notes && { description: notes }) }];
      })),
      ...Object.fromEntries(relations.map(([r, def]) => [r, def.kind === 'many'
        ? { type: 'array', items: ref(pascal(def.target)), description: 'present when included' }
        : orNull(ref(pascal(def.target)), { description: 'present when included' })])),
      _count: { type: 'object', additionalProperties: { type: 'integer' }, description: 'numbers of related rows, present when requested' },
    },
  };
  const schemas: Schemas = {
    [name]: row,
    [`${name}WhereInput`]: whereSchema(entity),
    [`${name}WhereUniqueInput`]: uniqueWhereSchema(entity),
    [`${name}OrderByInput`]: orderBySchema(entity, false),
    [`${name}OptionalOrderByInput`]: orderBySchema(entity, true),
    [`${name}Include`]: object({ ...Object.fromEntries(relations.map(([r, def]) => [r, relationLoad(def)])), _count: countSelection(entity) }),
    [`${name}Select`]: object({
      ...Object.fromEntries(fields.map(([f]) => [f, { type: 'boolean' }])),
      ...Object.fromEntries(relations.map(([r, def]) => [r, relationLoad(def)])),
      _count: countSelection(entity),
    }, { minProperties: 1 }),
    [`${name}ListRelationArgs`]: object({ ...listArgs(entity), ...shapeProperties(entity) }, { description: SHAPE_NOTE }),
    [`${name}RelationArgs`]: object(shapeProperties(entity), { description: SHAPE_NOTE }),
  };
  if (listRelationsOf(entity).length > 0) {
    schemas[`${name}CountSelect`] = object({
      select: object(Object.fromEntries(listRelationsOf(entity).map(([r, def]) =>
        [r, { anyOf: [{ type: 'boolean' }, object({ where: ref(`${pascal(def.target)}WhereInput`) }, { required: ['where'] })] }])), { minProperties: 1 }),
    }, { required: ['select'] });
  }
  for (const [f, def] of fields) {
    if (def.list) schemas[listFilterName(entity, f)] = listFilter(def);
    else if (def.enum) for (const nullable of [false, true]) schemas[enumFilterName(entity, f, nullable)] = enumFilter(entity, f, def, nullable);
  }
  if (!own) return schemas;

  const operations: Schemas = {
    [`${name}FindManyArgs`]: object({
      ...listArgs(entity), ...shapeProperties(entity), asOf: AS_OF,
      distinct: { ...oneOrMany({ type: 'string', enum: comparable }, MAX_DISTINCT_FIELDS), description: 'of rows equal on these fields, only the first in the requested order' },
    }, { description: `${SHAPE_NOTE}. ${ROWS_NOTE}` }),
    [`${name}FindUniqueArgs`]: object({ where: ref(`${name}WhereUniqueInput`), ...shapeProperties(entity), asOf: AS_OF }, { required: ['where'], description: SHAPE_NOTE }),
    [`${name}CountArgs`]: object({ where: ref(`${name}WhereInput`), asOf: AS_OF }),
    [`${name}AggregateArgs`]: object({ ...listArgs(entity), ...aggregateSelections(entity), asOf: AS_OF }, { description: 'at least one of _count, _sum, _avg, _min, _max' }),
    [`${name}AggregateResult`]: object(aggregateResults(entity)),
    [`${name}HavingInput`]: havingSchema(entity),
    [`${name}GroupByArgs`]: object({
      by: { ...fieldList(comparable), description: 'scalar fields (not lists or JSON), each once' },
      where: ref(`${name}WhereInput`),
      having: ref(`${name}HavingInput`),
      orderBy: { ...oneOrMany(ref(`${name}GroupByOrderByInput`), MAX_ORDER_BY_KEYS), description: ORDER_BY_NOTE },
      take: take(false), skip,
      ...aggregateSelections(entity),
      asOf: AS_OF,
    }, { required: ['by'], description: ROWS_NOTE }),
    [`${name}GroupByOrderByInput`]: groupByOrderBy(entity),
    [`${name}GroupByResult`]: object({
      ...Object.fromEntries(fields.filter(([, f]) => isComparable(f)).map(([f, def]) => [f, valueSchema(def)])),
      ...aggregateResults(entity),
    }, { description: 'the by fields and the requested aggregates of one group' }),
  };
  return { ...schemas, ...operations, ...(isReadOnly(entity) ? {} : writeSchemas(entity)) };
}

// ---------------------------------------------------------------------------------------------
// paths

const errors = (...statuses: number[]): OpenAPIV3.ResponsesObject =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: ERROR_TEXT[s], content: { 'application/json': { schema: ref('Error') } } }]));
const ERROR_TEXT: Record<number, string> = {
  400: 'invalid parameters; details.path names the offending field', 401: 'not authenticated; or session-expired (see the session security scheme)', 404: 'not found',
  405: 'method not allowed for this operation', 409: 'conflict: changed concurrently, or a unique value taken', 413: 'request body too large',
  415: 'unsupported media type', 503: 'read model lagging',
};
const dataOf = (schema: Schema): OpenAPIV3.MediaTypeObject => ({ schema: { type: 'object', required: ['data'], properties: { data: schema } } });

const READ_OPERATIONS = ['findMany', 'findFirst', 'findFirstOrThrow', 'findUnique', 'findUniqueOrThrow', 'count', 'aggregate', 'groupBy'] as const;
const WRITE_OPERATIONS = ['create', 'createMany', 'update', 'updateMany', 'upsert', 'delete', 'deleteMany'] as const;
/** The operations the model API offers for an entity: owned and projected entities are read-only. */
export function operationsOf(entity: EntityDef): readonly string[] {
  return isReadOnly(entity) ? READ_OPERATIONS : [...READ_OPERATIONS, ...WRITE_OPERATIONS];
}

function entityPaths(entity: EntityDef): OpenAPIV3.PathsObject {
  const name = pascal(entity.name);
  const base = `/api/model/${entity.name}`;
  const tags = [entity.name];
  const body = (args: string, required = false): OpenAPIV3.RequestBodyObject => ({ required, content: { 'application/json': { schema: ref(`${name}${args}`) } } });
  const q = (args: string): OpenAPIV3.ParameterObject => ({
    name: 'q', in: 'query', required: false, description: `URL-encoded JSON: ${name}${args} (ZenStack RPC convention)`,
    content: { 'application/json': { schema: ref(`${name}${args}`) } },
  });
  const ok = (schema: Schema, status = '200'): OpenAPIV3.ResponsesObject => ({ [status]: { description: 'success', content: { 'application/json': dataOf(schema) } } });
  const read = (op: string, args: string, result: Schema, extra: number[] = []): OpenAPIV3.PathItemObject => ({
    post: { operationId: `${entity.name}_${op}`, tags, summary: `${op} ${entity.name}`, requestBody: body(args), responses: { ...ok(result), ...errors(400, 401, ...extra, 413, 415) } },
    get: { operationId: `${entity.name}_${op}_get`, tags, summary: `${op} ${entity.name} (GET)`, parameters: [q(args)], responses: { ...ok(result), ...errors(400, 401, ...extra) } },
  });
  const row = ref(name);
  const paths: OpenAPIV3.PathsObject = {
    [`${base}/findMany`]: read('findMany', 'FindManyArgs', { type: 'array', items: row }),
    [`${base}/findFirst`]: read('findFirst', 'FindManyArgs', orNull(row)),
    [`${base}/findFirstOrThrow`]: read('findFirstOrThrow', 'FindManyArgs', row, [404]),
    [`${base}/findUnique`]: read('findUnique', 'FindUniqueArgs', orNull(row)),
    [`${base}/findUniqueOrThrow`]: read('findUniqueOrThrow', 'FindUniqueArgs', row, [404]),
    [`${base}/count`]: read('count', 'CountArgs', { type: 'integer' }),
    [`${base}/aggregate`]: read('aggregate', 'AggregateArgs', ref(`${name}AggregateResult`)),
    [`${base}/groupBy`]: read('groupBy', 'GroupByArgs', { type: 'array', items: ref(`${name}GroupByResult`) }),
  };
  if (isReadOnly(entity)) return paths;

  const writeErrors = errors(400, 401, 404, 409, 413, 415, 503);
  const deleteErrors = errors(400, 401, 404, 409, 503);
  const write = (op: string, args: string, responses: OpenAPIV3.ResponsesObject, required = true, suffix = ''): OpenAPIV3.OperationObject => ({
    operationId: `${entity.name}_${op}${suffix}`, tags, summary: `${op} ${entity.name}`, requestBody: body(args, required), responses,
  });
  return {
    ...paths,
    [`${base}/create`]: { post: write('create', 'CreateArgs', { ...ok(row, '201'), ...writeErrors }) },
    [`${base}/createMany`]: { post: write('createMany', 'CreateManyArgs', { ...ok(ref('BatchPayload'), '201'), ...writeErrors }) },
    [`${base}/update`]: Object.fromEntries((['post', 'put', 'patch'] as const).map((m) =>
      [m, write('update', 'UpdateArgs', { ...ok(row), ...writeErrors }, true, m === 'post' ? '' : `_${m}`)])),
    [`${base}/updateMany`]: Object.fromEntries((['post', 'put', 'patch'] as const).map((m) =>
      [m, write('updateMany', 'UpdateManyArgs', { ...ok(ref('BatchPayload')), ...writeErrors }, true, m === 'post' ? '' : `_${m}`)])),
    [`${base}/upsert`]: { post: write('upsert', 'UpsertArgs', { ...ok(row), ...ok(row, '201'), ...writeErrors }) },
    [`${base}/delete`]: {
      post: write('delete', 'DeleteArgs', { ...ok(row), ...writeErrors }),
      delete: { operationId: `${entity.name}_delete_delete`, tags, summary: `delete ${entity.name} (DELETE)`, parameters: [q('DeleteArgs')], responses: { ...ok(row), ...deleteErrors } },
    },
    [`${base}/deleteMany`]: {
      post: write('deleteMany', 'DeleteManyArgs', { ...ok(ref('BatchPayload')), ...writeErrors }, false),
      delete: { operationId: `${entity.name}_deleteMany_delete`, tags, summary: `deleteMany ${entity.name} (DELETE)`, parameters: [q('DeleteManyArgs')], responses: { ...ok(ref('BatchPayload')), ...deleteErrors } },
    },
  };
}

/** The hand-written endpoints of the `custom` category. */
function customPaths(): OpenAPIV3.PathsObject {
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const user: Schema = { type: 'object', properties: { id: { type: 'integer' }, email: { type: 'string' }, name: { type: 'string' }, access: { type: 'string', enum: ['ADMIN', 'PROJECTADMIN', 'USER', 'NONE'] } } };
  const token: Schema = {
    type: 'object',
    properties: {
      id: { type: 'integer' }, name: { type: 'string' }, prefix: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time', nullable: true },
      createdAt: { type: 'string', format: 'date-time' }, lastUsedAt: { type: 'string', format: 'date-time', nullable: true }, revokedAt: { type: 'string', format: 'date-time', nullable: true },
    },
  };
  // A cookie-authenticated unsafe request from another origin (services/identity/sessions.ts).
  const csrf = { 403: { description: 'csrf-rejected: not sent from the application (see the session security scheme)', content: json(ref('Error')) } };
  return {
    '/api/auth/login': {
      post: {
        operationId: 'login', tags: ['auth'], security: [], summary: 'log in; sets the session cookie',
        requestBody: { required: true, content: json({ type: 'object', required: ['email', 'password'], additionalProperties: false, properties: { email: { type: 'string' }, password: { type: 'string', format: 'password' } } }) },
        description: 'A new session id is issued at every login. A browser request from another origin (Sec-Fetch-Site, Origin or Referer says so) is refused (login CSRF); '
          + 'a client that sends none of these headers (curl, scripts) is not.',
        responses: { 200: { description: 'logged in', content: json({ type: 'object', properties: { user } }) }, ...errors(400, 401), ...csrf },
      },
    },
    '/api/auth/logout': { post: { operationId: 'logout', tags: ['auth'], summary: 'log out: the session ends', responses: { 204: { description: 'session destroyed' }, ...errors(401), ...csrf } } },
    '/api/auth/me': { get: { operationId: 'me', tags: ['auth'], summary: 'the caller, and whether by API token or session', responses: { 200: { description: 'the caller', content: json({ type: 'object', properties: { user, via: { type: 'string', enum: ['api', 'session'] }, tokenId: { type: 'integer' } } }) }, ...errors(401) } } },
    '/api/tokens': {
      post: {
        operationId: 'createToken', tags: ['tokens'], summary: 'create an API token; its value is in this response only',
        requestBody: { required: true, content: json({ type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, expiresAt: { type: 'string', format: 'date-time', nullable: true } } }) },
        responses: { 201: { description: 'created', content: json({ allOf: [token, { type: 'object', properties: { token: { type: 'string' } } }] }) }, ...errors(400, 401), ...csrf },
      },
      get: { operationId: 'listTokens', tags: ['tokens'], summary: 'the caller\'s own API tokens, without their values', responses: { 200: { description: 'own tokens, without values', content: json({ type: 'object', properties: { data: { type: 'array', items: token } } }) }, ...errors(401) } },
    },
    '/api/tokens/{id}': {
      delete: {
        operationId: 'revokeToken', tags: ['tokens'], summary: 'revoke one of the caller\'s own API tokens', parameters: [{ name: 'id', in: 'path', required: true, schema: idSchema() }],
        responses: { 204: { description: 'revoked' }, ...errors(400, 401, 404), ...csrf },
      },
    },
    '/api/docs': {
      get: {
        operationId: 'apiDocs', tags: ['docs'], security: [], summary: 'the categories, or the OpenAPI description of one',
        parameters: [{ name: 'category', in: 'query', required: false, schema: { type: 'string', enum: Object.keys(CATEGORIES) } }],
        responses: { 200: { description: 'categories, or an OpenAPI 3.0 document', content: json({ type: 'object' }) }, ...errors(400) },
      },
    },
    ...filePaths(),
    ...importPaths(),
    ...lookupPaths(),
    ...notificationPaths(),
    ...externalImportPaths(),
    ...auditPaths(),
    ...historyPaths(),
    ...analyticsPaths(),
    ...quarantinePaths(),
    ...signaturePaths(),
    ...evidencePaths(),
    ...searchPaths(),
    ...adminPaths(),
    ...parkedEventsPaths(),
    ...integrityPaths(),
    ...searchAdminPaths(),
    '/healthz': { get: { operationId: 'healthz', tags: ['health'], security: [], summary: 'liveness: the process answers', responses: { 200: { description: 'the process answers' } } } },
    '/readyz': { get: { operationId: 'readyz', tags: ['health'], security: [], summary: 'readiness: every dependency answers and no projection is stuck', responses: { 200: { description: 'status ready; or degraded: ready, but a projection holds parked events it cannot apply (degraded names the checks; GET /api/admin/parked-events lists them)' }, 503: { description: 'not ready, with reasons' } } } },
  };
}

// ---------------------------------------------------------------------------------------------
// documents

/** The entities whose schemas a document needs: those given and every entity reachable through relations. */
function reachable(from: EntityDef[]): EntityDef[] {
  const seen = new Set<EntityName>();
  const visit = (name: EntityName) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const relation of Object.values(ENTITIES[name].relations)) visit(relation.target);
  };
  from.forEach((e) => visit(e.name));
  return [...seen].map((n) => ENTITIES[n]);
}

/** Merges component schemas; two different schemas under one name would make a wrong document, so that fails loudly. */
function mergeSchemas(target: Schemas, source: Schemas): void {
  for (const [name, schema] of Object.entries(source)) {
    if (name in target && JSON.stringify(target[name]) !== JSON.stringify(schema)) throw new Error(`OpenAPI: two different schemas named ${name}`);
    target[name] = schema;
  }
}

const SCHEMA_REF = '#/components/schemas/';

/** The schemas `from` reaches through $ref, directly or through other schemas, in the order of `schemas`. */
function referencedSchemas(from: unknown, schemas: Schemas): Schemas {
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key !== '$ref') visit(value);
      else if (typeof value === 'string' && value.startsWith(SCHEMA_REF) && !used.has(value.slice(SCHEMA_REF.length))) {
        used.add(value.slice(SCHEMA_REF.length));
        visit(schemas[value.slice(SCHEMA_REF.length)]);
      }
    }
  };
  visit(from);
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
}

/** The OpenAPI 3.0 description of one category, generated from the entity catalogue. */
export function openApiFor(category: Category, version: string): OpenAPIV3.Document {
  const entities = Object.values(ENTITIES).filter((e) => e.category === category);
  const generated: Schemas = {};
  mergeSchemas(generated, sharedSchemas());
  for (const entity of reachable(entities)) mergeSchemas(generated, entitySchemas(entity, entity.category === category));
  const paths: OpenAPIV3.PathsObject = category === 'custom' ? customPaths() : Object.assign({}, ...entities.map(entityPaths));
  // Only what the operations use: the shared and related entities' schemas they do not reach are left out.
  const schemas = referencedSchemas(paths, generated);
  return {
    openapi: '3.0.3',
    info: { title: `Testament API: ${category}`, version, description: CATEGORIES[category], license: { name: 'MIT', url: 'https://spdx.org/licenses/MIT.html' } },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }, { session: [] }],
    tags: tagsOf(paths, category === 'custom' ? CUSTOM_TAGS : Object.fromEntries(entities.map((e) => [e.name, entityTagDescription(e)]))),
    paths,
    components: {
      schemas: schemas as Record<string, OpenAPIV3.SchemaObject | OpenAPIV3.ReferenceObject>,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API token (POST /api/tokens)' },
        session: {
          type: 'apiKey', in: 'cookie', name: 'testament.sid',
          description: 'the session cookie set by POST /api/auth/login (HttpOnly, SameSite=Lax, Secure over HTTPS behind TRUST_PROXY). '
            + 'It ends after SESSION_IDLE_TIMEOUT_MS without a request or SESSION_ABSOLUTE_TIMEOUT_MS after login: 401 session-expired, details.reason idle or absolute. '
            + 'A POST, PUT, PATCH or DELETE with it must come from the application: Sec-Fetch-Site same-origin or none, otherwise Origin (else Referer) equal to the '
            + 'API\'s own origin or one of ALLOWED_ORIGINS; else 403 csrf-rejected. Bearer requests are not checked.',
        },
      },
    },
  };
}
