import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ENTITIES, type EntityDef, type EntityName, writtenAs } from '../../contracts/entities';
import { GENERIC_ENTITIES, eventTypesOf, linkField, linkRelations, ownedRelations } from '../../contracts/entityEvents';
import { EVENTS_SCHEMA_DIR, loadContracts } from '../../contracts/validator';
import type { EntityWrite } from '../../services/entities/entity.handlers';
import { HttpError } from '../../services/shared/errors';
import { parseEntityCreate, parseEntityUpdate } from '../../services/model/writeArgs';
import { sampleCreate } from '../support/entityFixtures';

/**
 * Every nested write the model API parses is one the event contracts carry: walks every entity's
 * relations with every nested-write operator Prisma knows, on create and on update, and checks
 * that each is either refused at parse time (400 invalid-argument, at the relation) or parsed into
 * a write whose links, children and references are properties of the entity's Created and
 * Updated schemas (contracts/events/). Before, `tag.update` with `testRuns: { set }` parsed, and
 * the contract refused its event: a 500.
 */

const OPERATORS = ['connect', 'disconnect', 'set', 'create', 'createMany', 'connectOrCreate', 'update', 'updateMany', 'upsert', 'delete', 'deleteMany'] as const;
type Operator = (typeof OPERATORS)[number];

const contracts = loadContracts();
const schemaOf = (type: string) =>
  JSON.parse(fs.readFileSync(path.join(EVENTS_SCHEMA_DIR, `${type}.v${contracts.latestVersion(type)}.schema.json`), 'utf8')) as { properties: Record<string, { properties?: Record<string, unknown> }> };

/** What each operator is given: the shapes Prisma takes (a list relation's and a to-one relation's). */
function operands(entity: EntityDef, relation: string, operator: Operator): unknown[] {
  const def = entity.relations[relation];
  const target = ENTITIES[def.target];
  const child = sampleCreate(target, () => 1, 1) ?? {};
  const one = { id: 1 };
  switch (operator) {
    case 'connect': case 'set': case 'delete':
      return def.kind === 'many' ? [[one], one] : [one];
    case 'disconnect':
      return def.kind === 'many' ? [[one], one] : [true, one];
    case 'create':
      return [child, [child]];
    case 'createMany':
      return [{ data: [child] }];
    case 'connectOrCreate':
      return [{ where: one, create: child }];
    case 'update':
      return def.kind === 'many' ? [{ where: one, data: child }] : [child];
    case 'updateMany':
      return [{ where: {}, data: child }];
    case 'upsert':
      return [{ where: one, create: child, update: child }];
    case 'deleteMany':
      return [{}, [{}]];
  }
}

/** Parses, answering the write or the 400 it is refused with (anything else fails the test). */
function attempt(parse: () => { write: EntityWrite }, what: string): EntityWrite | HttpError {
  try {
    return parse().write;
  } catch (error) {
    expect(error, what).to.be.instanceOf(HttpError);
    expect((error as HttpError).status, `${what}: ${(error as Error).message}`).to.equal(400);
    return error as HttpError;
  }
}

/** The write fits the entity's event contracts: every link, child list and reference is a property of its events. */
function expectInContract(entity: EntityDef, write: EntityWrite, op: 'create' | 'update', what: string): void {
  if (!GENERIC_ENTITIES.includes(entity.name)) {
    // Folders and users have aggregates (and events) of their own, with no lists.
    expect(Object.keys(write.links ?? {}), what).to.deep.equal([]);
    expect(Object.keys(write.children ?? {}), what).to.deep.equal([]);
    return;
  }
  const types = eventTypesOf(entity);
  const properties = op === 'create' ? schemaOf(types.created).properties : schemaOf(types.updated).properties.changes.properties!;
  for (const relation of Object.keys(write.links ?? {})) expect(properties, `${what}: links`).to.have.property(linkField(relation));
  for (const relation of Object.keys(write.children ?? {})) expect(properties, `${what}: children`).to.have.property(relation);
  for (const relation of Object.keys(write.connect)) expect(properties, `${what}: reference`).to.have.property(entity.relations[relation].scalar!);
}

describe('nested writes: what parses is what the event contracts carry', () => {
  const writable = (Object.keys(ENTITIES) as EntityName[]).filter((name) => writtenAs(ENTITIES[name]) === 'aggregate');

  for (const name of writable) {
    const entity = ENTITIES[name];
    it(`${name}: every relation with every nested-write operator, on create and on update`, () => {
      const accepted = new Set<string>();
      for (const relation of Object.keys(entity.relations)) {
        for (const operator of OPERATORS) {
          for (const operand of operands(entity, relation, operator)) {
            const nested = { [relation]: { [operator]: operand } };
            const base = sampleCreate(entity, () => 1, 1)!;
            const what = `${name}.${relation}: { ${operator}: ${JSON.stringify(operand)} }`;
            for (const op of ['create', 'update'] as const) {
              const body = op === 'create' ? { data: { ...base, ...nested } } : { where: { id: 1 }, data: nested };
              const result = attempt(() => (op === 'create' ? parseEntityCreate(entity, body) : parseEntityUpdate(entity, body)), `${op} ${what}`);
              if (result instanceof HttpError) {
                expect(String(result.details.path), `${op} ${what}: the refusal points into the relation`).to.match(new RegExp(`^data\\.${relation}(\\.|\\[|$)`));
                continue;
              }
              expectInContract(entity, result, op, `${op} ${what}`);
              if (entity.relations[relation].kind === 'many') accepted.add(relation);
            }
          }
        }
      }
      // And the other way round: every list the contracts carry can be written.
      const carried = [...linkRelations(entity), ...ownedRelations(entity)].map(([relation]) => relation);
      expect([...accepted].sort(), name).to.deep.equal(carried.sort());
    });
  }

  it('the lists written from the other side say where', () => {
    const refused = (parse: () => unknown) => {
      try {
        parse();
      } catch (error) {
        return error as HttpError;
      }
      throw new Error('expected a refusal');
    };
    const tag = refused(() => parseEntityUpdate(ENTITIES.tag, { where: { id: 1 }, data: { testRuns: { set: [] } } }));
    expect(tag).to.include({ status: 400, code: 'invalid-argument' });
    expect(tag.details.path).to.equal('data.testRuns');
    expect(tag.message).to.include('testRun.tags');
    const field = refused(() => parseEntityUpdate(ENTITIES.caseField, { where: { id: 1 }, data: { templates: { connect: { id: 1 } } } }));
    expect(field.message).to.include('template.caseFields');
    const project = refused(() => parseEntityCreate(ENTITIES.project, { data: { name: 'P', testRuns: { create: { name: 'R' } } } }));
    expect(project.details.path).to.equal('data.testRuns');
    expect(project.message).to.include('testRun.project');
  });
});
