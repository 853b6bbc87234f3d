import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { expect } from 'chai';
import { ENTITIES, type EntityName, writtenAs } from '../../../contracts/entities';
import { CATEGORIES, type Category, openApiFor, operationsOf } from '../../../services/api/openapi';
import { parseAggregateArgs, parseDeleteArgs, parseFindArgs, parseGroupByArgs } from '../../../services/model/args';
import { parseEntityCreate, parseEntityUpdate } from '../../../services/model/writeArgs';

type Doc = ReturnType<typeof openApiFor>;
type Json = Record<string, any>;

/** OpenAPI 3.0's `nullable` as JSON Schema: it adds null to the `type` beside it, and means nothing without one (3.0.3). */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, toJsonSchema(v)]));
  if (out.nullable === undefined) return out;
  const { nullable, ...rest } = out;
  return nullable === true && typeof rest.type === 'string' ? { ...rest, type: [rest.type, 'null'] } : rest;
}

const validators = new Map<Doc, Ajv>();
/** A validator for one component schema of a category's document. */
function validatorOf(doc: Doc, schema: string): ValidateFunction {
  let ajv = validators.get(doc);
  if (!ajv) {
    ajv = new Ajv({ strict: false, allErrors: true });
    addFormats(ajv);
    for (const format of ['int32', 'double', 'binary']) ajv.addFormat(format, true);
    ajv.addSchema(toJsonSchema({ components: doc.components }) as Json, 'doc');
    validators.set(doc, ajv);
  }
  const id = `doc#/components/schemas/${schema}`;
  return ajv.getSchema(id) ?? ajv.compile({ $ref: id });
}

const documents = new Map<Category, Doc>();
const docOf = (entity: EntityName) => {
  const category = ENTITIES[entity].category as Category;
  if (!documents.has(category)) documents.set(category, openApiFor(category, '0.0.0'));
  return documents.get(category)!;
};
const schemaOf = (entity: EntityName, name: string) => docOf(entity).components!.schemas![name] as Json;

describe('OpenAPI documents generated from the catalogue', () => {
  it('every entity of the catalogue is in its category, with read operations always and write operations only when written as an aggregate', () => {
    for (const entity of Object.values(ENTITIES)) {
      expect(Object.keys(CATEGORIES), entity.name).to.include(entity.category);
      const paths = Object.keys(docOf(entity.name).paths).filter((p) => p.startsWith(`/api/model/${entity.name}/`)).map((p) => p.split('/').pop());
      expect(paths, entity.name).to.have.members([...operationsOf(entity)]);
      if (writtenAs(entity) === 'aggregate') expect(paths, entity.name).to.include.members(['create', 'createMany', 'update', 'updateMany', 'upsert', 'delete', 'deleteMany']);
      else {
        expect(paths, entity.name).to.not.include.members(['create']);
        expect(schemaOf(entity.name, `${entity.name[0].toUpperCase()}${entity.name.slice(1)}CreateArgs`), entity.name).to.equal(undefined);
      }
    }
    expect(operationsOf(ENTITIES.step)).to.not.include('create');
    expect(operationsOf(ENTITIES.repositoryCaseVersion)).to.not.include('update');
    expect(operationsOf(ENTITIES.user)).to.include('delete'); // users are an aggregate of their own (services/identity)
  });

  it('describes a user\'s password as a write-only input of create and update, and no read schema names it or its hash', () => {
    const doc = docOf('user');
    const schemas = doc.components!.schemas! as Record<string, Json>;
    const create = schemas.UserCreateInput;
    expect(create.properties.password).to.deep.include({ type: 'string', writeOnly: true, minLength: 8, maxLength: 1024 });
    expect(create.required).to.include.members(['email', 'name', 'password']);
    expect(schemas.UserUpdateInput.properties.password).to.deep.include({ type: 'string', writeOnly: true });
    expect(schemas.UserUpdateInput.properties, 'the e-mail is set on create only').to.not.have.property('email');
    expect(schemas.UserUpdateManyArgs.properties.data.properties).to.not.have.any.keys('password', 'email');
    expect(schemas.User.properties.email.description).to.include('create only');
    // Anywhere else in every document: no property, enum value or required name mentions a password.
    const offenders: string[] = [];
    const walk = (node: unknown, at: string, allowed: boolean): void => {
      if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${at}[${i}]`, allowed));
      if (typeof node !== 'object' || node === null) {
        if (typeof node === 'string' && /password/i.test(node) && !allowed && !at.endsWith('.description')) offenders.push(at);
        return;
      }
      for (const [key, value] of Object.entries(node)) {
        if (/password/i.test(key) && !allowed) offenders.push(`${at}.${key}`);
        walk(value, `${at}.${key}`, allowed);
      }
    };
    for (const category of Object.keys(CATEGORIES) as Category[]) {
      if (category === 'custom') continue; // login takes a password: that is its job
      const { schemas: all } = openApiFor(category, '0.0.0').components as { schemas: Record<string, unknown> };
      for (const [name, schema] of Object.entries(all)) walk(schema, `${category}:${name}`, name === 'UserCreateInput' || name === 'UserUpdateInput');
    }
    expect(offenders).to.deep.equal([]);
  });

  it('every category generates, with unique operation ids', () => {
    for (const category of Object.keys(CATEGORIES) as Category[]) {
      const doc = openApiFor(category, '0.0.0');
      const ids = Object.values(doc.paths).flatMap((item) => Object.values(item ?? {}).map((op) => (op as { operationId?: string }).operationId));
      expect(ids.every(Boolean), category).to.equal(true);
      expect(new Set(ids).size, category).to.equal(ids.length);
    }
  });

  it('describes field types: float as number, json as any value, lists as arrays, enums as enums', () => {
    expect(schemaOf('caseField', 'CaseField').properties.minValue).to.deep.include({ type: 'number', nullable: true });
    expect(schemaOf('integration', 'Integration').properties.settings).to.not.have.property('type');
    expect(schemaOf('status', 'Status').properties.aliases).to.deep.include({ type: 'array', items: { type: 'string' } });
    expect(schemaOf('status', 'Status').properties.scopes.items.enum).to.deep.equal(['RUNS', 'SESSIONS', 'AUTOMATION']);
    expect(schemaOf('repositoryCase', 'RepositoryCase').properties.source.enum).to.include.members(['MANUAL', 'JUNIT']);
    expect(schemaOf('status', 'StatusCreateInput').properties.scopes.default).to.deep.equal(['RUNS', 'SESSIONS', 'AUTOMATION']);
    expect(Object.keys(schemaOf('status', 'StatusAliasesListFilter').properties)).to.have.members(['equals', 'has', 'hasSome', 'hasEvery', 'isEmpty']);
  });

  it('keeps fields set from the acting user out of every write input, and marks them read-only', () => {
    for (const name of ['RepositoryCaseCreateInput', 'RepositoryCaseUpdateInput']) {
      expect(schemaOf('repositoryCase', name).properties, name).to.not.have.any.keys('createdById', 'createdBy', 'currentVersion', 'isDeleted');
    }
    expect(schemaOf('repositoryCase', 'RepositoryCase').properties.createdById.readOnly).to.equal(true);
    expect(schemaOf('repositoryCase', 'RepositoryCaseCreateInput').required).to.deep.equal(['title', 'project']);
    expect(schemaOf('repositoryCase', 'RepositoryCaseUpdateInput').properties).to.not.have.property('project'); // never moves project
    expect(schemaOf('project', 'ProjectUpdateInput').properties).to.have.property('isDeleted');
    expect(schemaOf('project', 'ProjectCreateInput').properties).to.not.have.property('isDeleted');
  });

  it('describes nested writes: links with connect/disconnect/set, owned children with create/delete/deleteMany', () => {
    const create = schemaOf('repositoryCase', 'RepositoryCaseCreateInput').properties;
    expect(create.tags).to.deep.equal({ $ref: '#/components/schemas/LinkCreateInput' });
    expect(create.steps.properties.create.anyOf[0]).to.deep.equal({ $ref: '#/components/schemas/StepNestedCreateInput' });
    expect(create).to.not.have.any.keys('versions', 'testRunCases', 'attachments'); // written from the other side
    const update = schemaOf('repositoryCase', 'RepositoryCaseUpdateInput').properties;
    expect(update.tags).to.deep.equal({ $ref: '#/components/schemas/LinkUpdateInput' });
    expect(Object.keys(update.steps.properties)).to.have.members(['create', 'delete', 'deleteMany']);
    const step = schemaOf('repositoryCase', 'StepNestedCreateInput');
    expect(Object.keys(step.properties)).to.have.members(['step', 'expectedResult', 'order']);
    expect(step.required).to.deep.equal(['step']);
    expect(schemaOf('testRunResult', 'ResultFieldValueNestedCreateInput').required).to.deep.equal(['field']);
  });

  // The documents promise what the API does: requests the parsers accept validate against the
  // schemas, and requests they refuse do not.
  const samples: [EntityName, string, Json, boolean][] = [
    ['repositoryCase', 'FindManyArgs', {
      where: { title: { contains: 'x', mode: 'insensitive' }, tags: { some: { name: 'a' } }, folder: { is: null }, project: { name: 'P' }, source: 'API', estimate: { not: { gt: 3 } } },
      orderBy: [{ folder: { name: { sort: 'asc', nulls: 'first' } } }, { tags: { _count: 'desc' } }, { estimate: { sort: 'asc', nulls: 'last' } }],
      cursor: { id: 3 }, take: -5, skip: 1,
      include: { steps: { orderBy: { order: 'asc' }, take: 2 }, project: { select: { name: true } }, _count: { select: { tags: true, steps: { where: { step: 'x' } } } } },
    }, true],
    ['repositoryCase', 'FindManyArgs', { where: { source: 'NOPE' } }, false],
    ['repositoryCase', 'FindManyArgs', { where: { source: { contains: 'A' } } }, false],
    ['repositoryCase', 'FindManyArgs', { where: { title: null } }, false],
    ['repositoryCase', 'FindManyArgs', { where: { folder: null, OR: [{ folder: { isNot: null } }, { folder: { is: { name: 'f' } } }] } }, true],
    ['repositoryCase', 'FindManyArgs', { where: { project: null } }, false],
    ['repositoryCase', 'FindManyArgs', { where: { project: { is: null } } }, false],
    ['repositoryCase', 'FindManyArgs', { orderBy: { title: 'asc', id: 'desc' } }, false],
    ['repositoryCase', 'FindManyArgs', { orderBy: { title: { sort: 'asc', nulls: 'first' } } }, false],
    ['repositoryCase', 'FindManyArgs', { distinct: ['source', 'folderId'], skip: -1 }, false],
    ['repositoryCase', 'FindManyArgs', { include: { steps: true }, where: { steps: { every: { step: { startsWith: 'a' } } } } }, true],
    ['repositoryCase', 'FindManyArgs', { include: { title: true } }, false],
    ['status', 'FindManyArgs', { where: { aliases: { has: 'x' }, scopes: { hasSome: ['RUNS'], isEmpty: false } } }, true],
    ['status', 'FindManyArgs', { where: { scopes: { has: 'NOPE' } } }, false],
    ['status', 'FindManyArgs', { where: { aliases: ['x'] } }, false],
    ['status', 'FindManyArgs', { orderBy: { aliases: 'asc' } }, false],
    ['integration', 'FindManyArgs', { where: { settings: null, NOT: { settings: { not: null } } } }, true],
    ['integration', 'FindManyArgs', { where: { settings: { equals: { a: 1 } } } }, false],
    ['integration', 'FindManyArgs', { orderBy: { settings: 'asc' } }, false],
    ['caseField', 'FindManyArgs', { where: { minValue: { gt: 1.5 }, OR: [{ maxValue: null }, { maxValue: { lte: 2 } }] } }, true],
    ['caseField', 'FindManyArgs', { where: { minValue: 'x' } }, false],
    ['repositoryCaseVersion', 'FindManyArgs', { where: { snapshot: null } }, false],
    ['repositoryCase', 'GroupByArgs', { by: ['source'], having: { estimate: { _avg: { gt: 3 } }, source: { not: 'API' } }, _count: { _all: true }, orderBy: { _count: { id: 'desc' } }, take: 3 }, true],
    ['repositoryCase', 'GroupByArgs', { by: ['source'], take: -1 }, false],
    ['status', 'GroupByArgs', { by: ['aliases'] }, false],
    ['caseField', 'AggregateArgs', { _avg: { minValue: true }, _max: { displayName: true }, take: -2 }, true],
    ['caseField', 'AggregateArgs', { _avg: { displayName: true } }, false],
    ['caseField', 'AggregateArgs', { _count: false }, false],
    ['repositoryCase', 'CreateArgs', {
      data: { title: 't', project: { connect: { id: 1 } }, tags: { connect: [{ id: 1 }] }, steps: { create: [{ step: 's', expectedResult: 'e' }] }, fieldValues: { create: { field: { connect: { id: 2 } }, value: { any: ['json'] } } } },
      include: { steps: true },
    }, true],
    ['repositoryCase', 'CreateArgs', { data: { title: 't', project: { connect: { id: 1 } }, createdById: 3 } }, false],
    ['repositoryCase', 'CreateArgs', { data: { title: 't', project: { connect: { id: 1 } }, steps: { create: [{ step: 's', repositoryCase: { connect: { id: 1 } } }] } } }, false],
    ['repositoryCase', 'CreateArgs', { data: { project: { connect: { id: 1 } } } }, false],
    ['repositoryCase', 'CreateArgs', { data: { title: 't', project: { connect: { id: 1 } }, source: 'NOPE' } }, false],
    ['repositoryCase', 'CreateArgs', { data: { title: 't', project: { connect: { id: 1 } }, tags: { disconnect: [{ id: 1 }] } } }, false],
    ['repositoryCase', 'UpdateArgs', { where: { id: 1 }, data: { tags: { set: [], disconnect: { id: 2 } }, folder: { disconnect: true } } }, true],
    ['repositoryCase', 'UpdateArgs', { where: { id: 1 }, data: { steps: { deleteMany: {}, create: [{ step: 'x' }] } } }, true],
    ['repositoryCase', 'UpdateArgs', { where: { id: 1 }, data: { steps: { deleteMany: { step: 'x' } } } }, false],
    ['repositoryCase', 'UpdateArgs', { where: { id: 1 }, data: {} }, false],
    ['status', 'CreateArgs', { data: { name: 'n', systemName: 's', scopes: ['RUNS'], aliases: ['a'] } }, true],
    ['status', 'CreateArgs', { data: { name: 'n', systemName: 's', scopes: ['X'] } }, false],
    ['caseField', 'CreateArgs', { data: { displayName: 'd', systemName: 's', type: 'NUMBER', minValue: 0.5 } }, true],
    ['user', 'CreateArgs', { data: { email: 'a@example.com', name: 'A', password: 'eight-ch', access: 'ADMIN', isActive: false, role: { connect: { id: 2 } } } }, true],
    ['user', 'CreateArgs', { data: { email: 'a@example.com', name: 'A' } }, false],
    ['user', 'CreateArgs', { data: { email: 'a@example.com', name: 'A', password: 'seven-c' } }, false],
    ['user', 'CreateArgs', { data: { email: 'a@example.com', name: 'A', password: 'x'.repeat(1025) } }, false],
    ['user', 'CreateArgs', { data: { email: 'a@example.com', name: 'A', password: 'eight-ch', passwordHash: 'h' } }, false],
    ['user', 'CreateArgs', { data: { email: 'a@example.com', name: 'A', password: 'eight-ch' }, select: { password: true } }, false],
    ['user', 'UpdateArgs', { where: { id: 1 }, data: { password: 'eight-ch' } }, true],
    ['user', 'UpdateArgs', { where: { id: 1 }, data: { name: 'B', isActive: true, role: { disconnect: true } } }, true],
    ['user', 'UpdateArgs', { where: { id: 1 }, data: { email: 'b@example.com' } }, false],
    ['user', 'UpdateArgs', { where: { id: 1 }, data: { isDeleted: true } }, false],
    ['user', 'FindManyArgs', { where: { passwordHash: { not: null } } }, false],
    ['user', 'FindManyArgs', { orderBy: { password: 'asc' } }, false],
    // Unique wheres: any unique key the catalogue declares, as a value, other filters beside it.
    ['tag', 'FindUniqueArgs', { where: { name: 'smoke' } }, true],
    ['tag', 'FindUniqueArgs', { where: { name: { contains: 's' } } }, false],
    ['tag', 'FindUniqueArgs', { where: { createdAt: { lt: '2024-01-01T00:00:00Z' } } }, false],
    ['status', 'FindUniqueArgs', { where: { systemName: 'passed', isEnabled: true, NOT: { name: 'x' } } }, true],
    ['project', 'FindUniqueArgs', { where: { id: 1, name: 'p' } }, true],
    ['project', 'FindUniqueArgs', { where: { name: 'p' } }, false],
    ['projectAssignment', 'DeleteArgs', { where: { userId_projectId: { userId: 1, projectId: 2 } } }, true],
    ['projectAssignment', 'DeleteArgs', { where: { userId_projectId: { userId: 1 } } }, false],
    ['user', 'UpdateArgs', { where: { email: 'a@example.com' }, data: { name: 'B' } }, true],
    ['repositoryCase', 'FindManyArgs', { cursor: { id: 1 } }, true],
    ['tag', 'FindManyArgs', { cursor: { name: 'smoke' } }, false],
  ];
  const parse = (entity: EntityName, args: string, body: Json) => {
    const def = ENTITIES[entity];
    switch (args) {
      case 'FindManyArgs': return parseFindArgs(def, 'findMany', body);
      case 'GroupByArgs': return parseGroupByArgs(def, body);
      case 'AggregateArgs': return parseAggregateArgs(def, body);
      case 'CreateArgs': return parseEntityCreate(def, body);
      case 'UpdateArgs': return parseEntityUpdate(def, body);
      case 'FindUniqueArgs': return parseFindArgs(def, 'findUnique', body);
      case 'DeleteArgs': return parseDeleteArgs(def, body);
      default: throw new Error(args);
    }
  };

  samples.forEach(([entity, args, body, valid], i) => {
    it(`sample ${i}: ${entity} ${args} ${JSON.stringify(body).slice(0, 90)} is ${valid ? 'accepted' : 'refused'} by schema and API`, () => {
      const name = `${entity[0].toUpperCase()}${entity.slice(1)}${args}`;
      const validate = validatorOf(docOf(entity), name);
      const bySchema = validate(body);
      expect(bySchema, JSON.stringify(validate.errors)).to.equal(valid);
      let byApi = true;
      try {
        parse(entity, args, body);
      } catch {
        byApi = false;
      }
      expect(byApi, 'the API parser').to.equal(valid);
    });
  });
});
