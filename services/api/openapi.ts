import type { OpenAPIV3 } from 'openapi-types';
import { ENTITIES, type EntityDef, type FieldDef, type ScalarType } from '../../contracts/entities';

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

type Schema = OpenAPIV3.SchemaObject | OpenAPIV3.ReferenceObject;
const ref = (name: string): OpenAPIV3.ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
const pascal = (s: string) => s[0].toUpperCase() + s.slice(1);

function scalarSchema(field: FieldDef): OpenAPIV3.SchemaObject {
  const base: OpenAPIV3.SchemaObject = SCALAR_SCHEMA[field.type];
  return field.nullable ? { ...base, nullable: true } : base;
}

const SCALAR_SCHEMA: Record<ScalarType, OpenAPIV3.SchemaObject> = {
  int: { type: 'integer' }, float: { type: 'number' }, string: { type: 'string' }, boolean: { type: 'boolean' },
  datetime: { type: 'string', format: 'date-time' }, json: { description: 'any JSON value' },
};

const FILTER_OF: Record<ScalarType, string> = {
  int: 'IntFilter', float: 'FloatFilter', string: 'StringFilter', datetime: 'DateTimeFilter', boolean: 'BoolFilter', json: 'JsonFilter',
};

/** Filter operators per scalar type: what services/model/args.ts accepts. */
function filterSchemas(): Record<string, OpenAPIV3.SchemaObject> {
  const comparable = (item: OpenAPIV3.SchemaObject): OpenAPIV3.SchemaObject => ({
    type: 'object',
    additionalProperties: false,
    properties: {
      equals: { ...item, nullable: true }, not: { ...item, nullable: true },
      in: { type: 'array', items: item }, notIn: { type: 'array', items: item },
      lt: item, lte: item, gt: item, gte: item,
    },
  });
  const string = comparable({ type: 'string' });
  string.properties = {
    ...string.properties,
    contains: { type: 'string' }, startsWith: { type: 'string' }, endsWith: { type: 'string' },
    mode: { type: 'string', enum: ['default', 'insensitive'] },
  };
  return {
    IntFilter: comparable({ type: 'integer' }),
    FloatFilter: comparable({ type: 'number' }),
    JsonFilter: { type: 'object', additionalProperties: false, description: 'null checks only', properties: { equals: { type: 'object', nullable: true, enum: [null] }, not: { type: 'object', nullable: true, enum: [null] } } },
    DateTimeFilter: comparable({ type: 'string', format: 'date-time' }),
    StringFilter: string,
    BoolFilter: { type: 'object', additionalProperties: false, properties: { equals: { type: 'boolean', nullable: true }, not: { type: 'boolean', nullable: true } } },
    SortOrder: { type: 'string', enum: ['asc', 'desc'] },
    BatchPayload: { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } },
    Error: {
      type: 'object', required: ['error', 'code', 'details'], additionalProperties: false,
      properties: { error: { type: 'string' }, code: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
    },
  };
}

/** `_count`, `_sum`, `_avg`, `_min`, `_max`: which fields each may name (as services/model/args.ts checks). */
function aggregateSelections(fields: [string, FieldDef][]): Record<string, Schema> {
  const pick = (names: string[], extra: Record<string, Schema> = {}): OpenAPIV3.SchemaObject => ({
    type: 'object', additionalProperties: false, properties: { ...extra, ...Object.fromEntries(names.map((f) => [f, { type: 'boolean' }])) },
  });
  const ints = fields.filter(([, d]) => d.type === 'int').map(([f]) => f);
  const ordered = fields.filter(([, d]) => d.type !== 'boolean').map(([f]) => f);
  return {
    _count: { anyOf: [{ type: 'boolean' }, pick(fields.map(([f]) => f), { _all: { type: 'boolean' } })] },
    _sum: pick(ints), _avg: pick(ints), _min: pick(ordered), _max: pick(ordered),
  };
}

function entitySchemas(entity: EntityDef): Record<string, OpenAPIV3.SchemaObject> {
  const name = pascal(entity.name);
  const fields = Object.entries(entity.fields);
  const relations = Object.entries(entity.relations);
  const row: OpenAPIV3.SchemaObject = {
    type: 'object',
    required: fields.map(([f]) => f),
    properties: {
      ...Object.fromEntries(fields.map(([f, def]) => [f, scalarSchema(def)])),
      ...Object.fromEntries(relations.map(([r, def]) => [r, def.kind === 'many'
        ? { type: 'array', items: ref(pascal(def.target)), description: 'present when included' }
        : { allOf: [ref(pascal(def.target))], nullable: true, description: 'present when included' }])),
    },
  };
  const where: OpenAPIV3.SchemaObject = {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...Object.fromEntries(fields.map(([f, def]) => [f, { anyOf: [scalarSchema(def), ref(FILTER_OF[def.type])] }])),
      ...Object.fromEntries(relations.map(([r, def]) => [r, def.kind === 'many'
        ? { type: 'object', additionalProperties: false, properties: { some: ref(`${pascal(def.target)}WhereInput`), every: ref(`${pascal(def.target)}WhereInput`), none: ref(`${pascal(def.target)}WhereInput`) } }
        : { type: 'object', additionalProperties: false, nullable: true, properties: { is: ref(`${pascal(def.target)}WhereInput`), isNot: ref(`${pascal(def.target)}WhereInput`) } }])),
      AND: { anyOf: [ref(`${name}WhereInput`), { type: 'array', items: ref(`${name}WhereInput`) }] },
      OR: { type: 'array', items: ref(`${name}WhereInput`) },
      NOT: { anyOf: [ref(`${name}WhereInput`), { type: 'array', items: ref(`${name}WhereInput`) }] },
    },
  };
  const connect: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false,
    properties: { connect: { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { type: 'integer' } } }, disconnect: { type: 'boolean' } },
  };
  const writable = fields.filter(([, def]) => def.writable);
  const oneRelations = relations.filter(([, def]) => def.kind === 'one');
  const data = (create: boolean): OpenAPIV3.SchemaObject => ({
    type: 'object',
    additionalProperties: false,
    required: create ? [...writable.filter(([, d]) => d.requiredOnCreate).map(([f]) => f), ...oneRelations.filter(([, d]) => d.requiredOnCreate).map(([r]) => r)] : undefined,
    properties: {
      ...Object.fromEntries(writable.map(([f, def]) => [f, scalarSchema(def)])),
      ...Object.fromEntries(oneRelations.map(([r]) => [r, connect])),
    },
  });
  const createData = data(true);
  if (createData.required?.length === 0) delete createData.required;
  const shape = { include: { type: 'object', additionalProperties: true } as Schema, select: { type: 'object', additionalProperties: true } as Schema };
  const orderBy: Schema = {
    anyOf: [
      { type: 'object', additionalProperties: false, properties: Object.fromEntries(fields.map(([f]) => [f, ref('SortOrder')])) },
      { type: 'array', items: { type: 'object', additionalProperties: false, properties: Object.fromEntries(fields.map(([f]) => [f, ref('SortOrder')])) } },
    ],
  };
  const unique: OpenAPIV3.SchemaObject = { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { type: 'integer' } } };
  return {
    [name]: row,
    [`${name}WhereInput`]: where,
    [`${name}WhereUniqueInput`]: unique,
    [`${name}FindManyArgs`]: {
      type: 'object', additionalProperties: false,
      properties: {
        where: ref(`${name}WhereInput`), orderBy, take: { type: 'integer' }, skip: { type: 'integer', minimum: 0 }, ...shape,
        distinct: { anyOf: [{ type: 'string', enum: fields.map(([f]) => f) }, { type: 'array', minItems: 1, items: { type: 'string', enum: fields.map(([f]) => f) } }] },
      },
    },
    [`${name}FindUniqueArgs`]: { type: 'object', required: ['where'], additionalProperties: false, properties: { where: ref(`${name}WhereUniqueInput`), ...shape } },
    [`${name}CountArgs`]: { type: 'object', additionalProperties: false, properties: { where: ref(`${name}WhereInput`) } },
    [`${name}CreateArgs`]: { type: 'object', required: ['data'], additionalProperties: false, properties: { data: createData, ...shape } },
    [`${name}UpdateArgs`]: { type: 'object', required: ['where', 'data'], additionalProperties: false, properties: { where: ref(`${name}WhereUniqueInput`), data: data(false), ...shape } },
    [`${name}DeleteArgs`]: { type: 'object', required: ['where'], additionalProperties: false, properties: { where: ref(`${name}WhereUniqueInput`), ...shape } },
    [`${name}AggregateArgs`]: {
      type: 'object', additionalProperties: false,
      properties: { where: ref(`${name}WhereInput`), orderBy, take: { type: 'integer' }, skip: { type: 'integer', minimum: 0 }, ...aggregateSelections(fields) },
    },
    [`${name}GroupByArgs`]: {
      type: 'object', required: ['by'], additionalProperties: false,
      properties: {
        by: { anyOf: [{ type: 'string', enum: fields.map(([f]) => f) }, { type: 'array', minItems: 1, items: { type: 'string', enum: fields.map(([f]) => f) } }] },
        where: ref(`${name}WhereInput`), orderBy: { anyOf: [{ type: 'object' }, { type: 'array', items: { type: 'object' } }] },
        take: { type: 'integer' }, skip: { type: 'integer', minimum: 0 }, ...aggregateSelections(fields),
      },
    },
    [`${name}CreateManyArgs`]: { type: 'object', required: ['data'], additionalProperties: false, properties: { data: { type: 'array', maxItems: 1000, items: createData } } },
    [`${name}UpdateManyArgs`]: { type: 'object', required: ['data'], additionalProperties: false, properties: { where: ref(`${name}WhereInput`), data: { ...data(false), properties: Object.fromEntries(writable.map(([f, def]) => [f, scalarSchema(def)])) } } },
    [`${name}DeleteManyArgs`]: { type: 'object', additionalProperties: false, properties: { where: ref(`${name}WhereInput`) } },
    [`${name}UpsertArgs`]: {
      type: 'object', required: ['where', 'create', 'update'], additionalProperties: false,
      properties: { where: ref(`${name}WhereUniqueInput`), create: createData, update: data(false), ...shape },
    },
  };
}

const errors = (...statuses: number[]): OpenAPIV3.ResponsesObject =>
  Object.fromEntries(statuses.map((s) => [String(s), { description: ERROR_TEXT[s], content: { 'application/json': { schema: ref('Error') } } }]));
const ERROR_TEXT: Record<number, string> = {
  400: 'invalid parameters; details.path names the offending field', 401: 'not authenticated', 404: 'not found',
  405: 'method not allowed for this operation', 409: 'concurrency conflict', 415: 'body is not JSON', 503: 'read model lagging',
};
const dataOf = (schema: Schema): OpenAPIV3.MediaTypeObject => ({ schema: { type: 'object', required: ['data'], properties: { data: schema } } });

function entityPaths(entity: EntityDef): OpenAPIV3.PathsObject {
  const name = pascal(entity.name);
  const base = `/api/model/${entity.name}`;
  const body = (args: string): OpenAPIV3.RequestBodyObject => ({ required: false, content: { 'application/json': { schema: ref(`${name}${args}`) } } });
  const q = (args: string): OpenAPIV3.ParameterObject => ({
    name: 'q', in: 'query', required: false, description: `URL-encoded JSON: ${name}${args} (ZenStack RPC convention)`,
    content: { 'application/json': { schema: ref(`${name}${args}`) } },
  });
  const ok = (schema: Schema, status = '200'): OpenAPIV3.ResponsesObject => ({ [status]: { description: 'success', content: { 'application/json': dataOf(schema) } } });
  const read = (op: string, args: string, result: Schema, extra: number[] = []): OpenAPIV3.PathItemObject => ({
    post: { operationId: `${entity.name}_${op}`, tags: [entity.name], summary: `${op} ${entity.name}`, requestBody: body(args), responses: { ...ok(result), ...errors(400, 401, ...extra) } },
    get: { operationId: `${entity.name}_${op}_get`, tags: [entity.name], summary: `${op} ${entity.name} (GET)`, parameters: [q(args)], responses: { ...ok(result), ...errors(400, 401, ...extra) } },
  });
  const writeErrors = errors(400, 401, 404, 409, 503);
  return {
    [`${base}/findMany`]: read('findMany', 'FindManyArgs', { type: 'array', items: ref(name) }),
    [`${base}/findFirst`]: read('findFirst', 'FindManyArgs', { allOf: [ref(name)], nullable: true }),
    [`${base}/findFirstOrThrow`]: read('findFirstOrThrow', 'FindManyArgs', ref(name), [404]),
    [`${base}/findUnique`]: read('findUnique', 'FindUniqueArgs', { allOf: [ref(name)], nullable: true }),
    [`${base}/findUniqueOrThrow`]: read('findUniqueOrThrow', 'FindUniqueArgs', ref(name), [404]),
    [`${base}/count`]: read('count', 'CountArgs', { type: 'integer' }),
    [`${base}/aggregate`]: read('aggregate', 'AggregateArgs', { type: 'object', additionalProperties: true, description: '_count, _sum, _avg, _min, _max as requested' }),
    [`${base}/groupBy`]: read('groupBy', 'GroupByArgs', { type: 'array', items: { type: 'object', additionalProperties: true } }),
    [`${base}/create`]: {
      post: { operationId: `${entity.name}_create`, tags: [entity.name], summary: `create ${entity.name}`, requestBody: { ...body('CreateArgs'), required: true }, responses: { ...ok(ref(name), '201'), ...writeErrors } },
    },
    [`${base}/update`]: Object.fromEntries((['post', 'put', 'patch'] as const).map((m) => [m, {
      operationId: `${entity.name}_update${m === 'post' ? '' : `_${m}`}`, tags: [entity.name], summary: `update ${entity.name}`,
      requestBody: { ...body('UpdateArgs'), required: true }, responses: { ...ok(ref(name)), ...writeErrors },
    }])),
    [`${base}/createMany`]: {
      post: { operationId: `${entity.name}_createMany`, tags: [entity.name], summary: `createMany ${entity.name}`, requestBody: { ...body('CreateManyArgs'), required: true }, responses: { ...ok(ref('BatchPayload'), '201'), ...writeErrors } },
    },
    [`${base}/updateMany`]: Object.fromEntries((['post', 'put', 'patch'] as const).map((m) => [m, {
      operationId: `${entity.name}_updateMany${m === 'post' ? '' : `_${m}`}`, tags: [entity.name], summary: `updateMany ${entity.name}`,
      requestBody: { ...body('UpdateManyArgs'), required: true }, responses: { ...ok(ref('BatchPayload')), ...writeErrors },
    }])),
    [`${base}/deleteMany`]: {
      post: { operationId: `${entity.name}_deleteMany`, tags: [entity.name], summary: `deleteMany ${entity.name}`, requestBody: body('DeleteManyArgs'), responses: { ...ok(ref('BatchPayload')), ...writeErrors } },
      delete: { operationId: `${entity.name}_deleteMany_delete`, tags: [entity.name], summary: `deleteMany ${entity.name} (DELETE)`, parameters: [q('DeleteManyArgs')], responses: { ...ok(ref('BatchPayload')), ...writeErrors } },
    },
    [`${base}/upsert`]: {
      post: {
        operationId: `${entity.name}_upsert`, tags: [entity.name], summary: `upsert ${entity.name}`, requestBody: { ...body('UpsertArgs'), required: true },
        responses: { ...ok(ref(name)), ...ok(ref(name), '201'), ...writeErrors },
      },
    },
    [`${base}/delete`]: {
      post: { operationId: `${entity.name}_delete`, tags: [entity.name], summary: `delete ${entity.name}`, requestBody: { ...body('DeleteArgs'), required: true }, responses: { ...ok(ref(name)), ...writeErrors } },
      delete: { operationId: `${entity.name}_delete_delete`, tags: [entity.name], summary: `delete ${entity.name} (DELETE)`, parameters: [q('DeleteArgs')], responses: { ...ok(ref(name)), ...writeErrors } },
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
  return {
    '/api/auth/login': {
      post: {
        operationId: 'login', tags: ['auth'], security: [], summary: 'log in; sets the session cookie',
        requestBody: { required: true, content: json({ type: 'object', required: ['email', 'password'], additionalProperties: false, properties: { email: { type: 'string' }, password: { type: 'string', format: 'password' } } }) },
        responses: { 200: { description: 'logged in', content: json({ type: 'object', properties: { user } }) }, ...errors(400, 401) },
      },
    },
    '/api/auth/logout': { post: { operationId: 'logout', tags: ['auth'], responses: { 204: { description: 'session destroyed' }, ...errors(401) } } },
    '/api/auth/me': { get: { operationId: 'me', tags: ['auth'], responses: { 200: { description: 'the caller', content: json({ type: 'object', properties: { user, via: { type: 'string', enum: ['api', 'session'] }, tokenId: { type: 'integer' } } }) }, ...errors(401) } } },
    '/api/tokens': {
      post: {
        operationId: 'createToken', tags: ['tokens'], summary: 'create an API token; its value is in this response only',
        requestBody: { required: true, content: json({ type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, expiresAt: { type: 'string', format: 'date-time', nullable: true } } }) },
        responses: { 201: { description: 'created', content: json({ allOf: [token, { type: 'object', properties: { token: { type: 'string' } } }] }) }, ...errors(400, 401) },
      },
      get: { operationId: 'listTokens', tags: ['tokens'], responses: { 200: { description: 'own tokens, without values', content: json({ type: 'object', properties: { data: { type: 'array', items: token } } }) }, ...errors(401) } },
    },
    '/api/tokens/{id}': {
      delete: {
        operationId: 'revokeToken', tags: ['tokens'], parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
        responses: { 204: { description: 'revoked' }, ...errors(400, 401, 404) },
      },
    },
    '/api/docs': {
      get: {
        operationId: 'apiDocs', tags: ['docs'], security: [], summary: 'the categories, or the OpenAPI description of one',
        parameters: [{ name: 'category', in: 'query', required: false, schema: { type: 'string', enum: Object.keys(CATEGORIES) } }],
        responses: { 200: { description: 'categories, or an OpenAPI 3.0 document', content: json({ type: 'object' }) }, ...errors(400) },
      },
    },
    '/healthz': { get: { operationId: 'healthz', tags: ['health'], security: [], responses: { 200: { description: 'the process answers' } } } },
    '/readyz': { get: { operationId: 'readyz', tags: ['health'], security: [], responses: { 200: { description: 'ready' }, 503: { description: 'not ready, with reasons' } } } },
  };
}

/** The OpenAPI 3.0 description of one category, generated from the entity catalogue. */
export function openApiFor(category: Category, version: string): OpenAPIV3.Document {
  const entities = Object.values(ENTITIES).filter((e) => e.category === category);
  // A category's documents reference the schemas of related entities in other categories too.
  const referenced = new Set(entities.flatMap((e) => [e.name, ...Object.values(e.relations).map((r) => r.target)]));
  const schemas = Object.assign(filterSchemas(), ...[...referenced].map((n) => entitySchemas(ENTITIES[n as keyof typeof ENTITIES])));
  return {
    openapi: '3.0.3',
    info: { title: `Testament API: ${category}`, version, description: CATEGORIES[category] },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }, { session: [] }],
    tags: category === 'custom' ? [{ name: 'auth' }, { name: 'tokens' }, { name: 'docs' }, { name: 'health' }] : entities.map((e) => ({ name: e.name })),
    paths: category === 'custom' ? customPaths() : Object.assign({}, ...entities.map(entityPaths)),
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API token (POST /api/tokens)' },
        session: { type: 'apiKey', in: 'cookie', name: 'testament.sid', description: 'the session cookie set by POST /api/auth/login' },
      },
    },
  };
}
