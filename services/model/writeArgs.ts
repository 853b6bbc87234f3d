import { ENTITIES, type EntityDef, type EntityName, type RelationDef } from '../../contracts/entities';
import { linkRelations, ownedRelations } from '../../contracts/entityEvents';
import { LIMITS } from '../../contracts/limits';
import type { ChildInput, ChildrenWrite, EntityWrite, LinkWrite } from '../entities/entity.handlers';
import { PASSWORD_LENGTH } from '../identity/user.decider';
import { badRequest } from '../shared/errors';
import { type CreateArgs, parseCreateArgs, parseDeleteArgs, parseUpdateArgs, type Shape, type UniqueWhere } from './args';
import { parseId } from '../shared/validate';

/**
 * Write arguments with nested list-relation writes, on top of args.ts (which parses scalar
 * fields and to-one `connect` / `disconnect`):
 * - many-to-many (`through`): `{ connect: [{ id }], disconnect: [{ id }], set: [{ id }] }`
 *   (a single `{ id }` is accepted where a list is; `set` and `disconnect` only on update);
 * - owned children: `{ create: [{...}] }` on create; `{ create, deleteMany: {}, delete: [{ id }] }`
 *   on update (`deleteMany: {}` removes them all; with `create`, the list is replaced).
 * Other to-many relations are written from the other side (`connect` on the child), and so is a
 * many-to-many relation whose links the other side's events carry (a tag's cases are written as
 * the case's tags): which lists an entity writes is read from the same functions the event
 * contracts are generated from (contracts/entityEvents.ts), so that whatever parses, the contract
 * takes. Every other list relation is a 400 here.
 */

/**
 * Inputs an entity takes that are not catalogue fields: written, never read (no select, where,
 * orderBy or answer names them). A user's password is hashed by the user's commands; only the
 * hash is stored, and it is not a field either.
 */
export interface WriteOnlyInput { minLength: number; maxLength: number; requiredOnCreate: boolean; description: string }
export const WRITE_ONLY_INPUTS: Partial<Record<EntityName, Record<string, WriteOnlyInput>>> = {
  user: {
    password: {
      minLength: PASSWORD_LENGTH.min, maxLength: PASSWORD_LENGTH.max, requiredOnCreate: true,
      description: 'write-only: hashed (argon2id) by the server; neither the password nor its hash can ever be read',
    },
  },
};

/** Fields given on create only: an update naming them is refused (a user's e-mail is their identity and claimed for good). */
export const CREATE_ONLY_FIELDS: Partial<Record<EntityName, readonly string[]>> = { user: ['email'] };

export interface EntityCreateArgs { write: EntityWrite; shape: Shape }
export interface EntityUpdateArgs extends EntityCreateArgs { where: UniqueWhere }

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const fail = (path: string, message: string, details: Record<string, unknown> = {}): never => {
  throw badRequest('invalid-argument', `${path}: ${message}`, { ...details, path });
};

function allowOnly(input: Json, allowed: string[], path: string): void {
  for (const key of Object.keys(input)) if (!allowed.includes(key)) fail(`${path}.${key}`, `unknown argument; accepted: ${allowed.join(', ')}`);
}

/** Splits `data` into what args.ts parses, the list-relation writes and the write-only inputs parsed here. */
function split(entity: EntityDef, body: unknown, op: 'create' | 'update'): { rest: Json; data: Json | undefined; lists: [string, RelationDef, unknown][]; writeOnly: Record<string, string> } {
  if (!isObject(body)) fail('', 'the body must be a JSON object');
  const rest = { ...(body as Json) };
  const data = isObject(rest.data) ? { ...rest.data } : undefined;
  const lists: [string, RelationDef, unknown][] = [];
  const writeOnly: Record<string, string> = {};
  if (data) {
    for (const key of CREATE_ONLY_FIELDS[entity.name] ?? []) {
      if (op === 'update' && data[key] !== undefined) fail(`data.${key}`, `is set on create only and cannot be changed`);
    }
    for (const [key, input] of Object.entries(WRITE_ONLY_INPUTS[entity.name] ?? {})) {
      const value = data[key];
      delete data[key];
      // The value is never echoed in a message: it may be a password.
      if (value === undefined) {
        if (op === 'create' && input.requiredOnCreate) fail(`data.${key}`, 'is required');
        continue;
      }
      if (typeof value !== 'string' || value.length < input.minLength || value.length > input.maxLength) {
        fail(`data.${key}`, `must be a string of ${input.minLength} to ${input.maxLength} characters`);
      }
      writeOnly[key] = value as string;
    }
    for (const [key, value] of Object.entries(data)) {
      const relation = Object.hasOwn(entity.relations, key) ? entity.relations[key] : undefined;
      if (relation?.scalar && entity.fields[relation.scalar]?.fromActor) fail(`data.${key}`, 'is set by the server to the caller, not written');
      if (!relation || relation.kind !== 'many' || value === undefined) continue;
      if (!writtenLists(entity).has(key)) fail(`data.${key}`, `cannot be written on ${entity.name}: ${otherSide(entity, key, relation)}`);
      lists.push([key, relation, value]);
      delete data[key];
    }
    rest.data = data;
  }
  return { rest, data, lists, writeOnly };
}

/** The list relations whose writes the entity's events carry: its links and its owned children (OpenAPI documents these). */
export const writtenLists = (entity: EntityDef): ReadonlySet<string> =>
  new Set([...linkRelations(entity), ...ownedRelations(entity)].map(([name]) => name));

/** Where a list relation the entity does not write is written instead. */
function otherSide(entity: EntityDef, name: string, relation: RelationDef): string {
  const target = ENTITIES[relation.target];
  const inverse = Object.entries(target.relations).find(([, r]) => (relation.through
    ? r.through?.table === relation.through.table
    : r.kind === 'one' && r.target === entity.name && r.foreignKey === relation.foreignKey))?.[0];
  if (!inverse) return `${name} is not written through the model API`;
  if (relation.through) return `the links are written on each ${target.name} (${target.name}.${inverse}: { connect, disconnect, set })`;
  return `write each ${target.name}'s ${inverse} instead (${target.name}.${inverse}: { connect: { id } })`;
}

function ids(value: unknown, path: string): number[] {
  const items = Array.isArray(value) ? value : [value];
  if (items.length > LIMITS.items) fail(path, `has more than ${LIMITS.items} items`, { maxItems: LIMITS.items });
  return items.map((item, i) => {
    const itemPath = Array.isArray(value) ? `${path}[${i}]` : path;
    if (!isObject(item)) return fail(itemPath, 'must be { id }');
    allowOnly(item, ['id'], itemPath);
    return parseId(`${itemPath}.id`, item.id, 'json');
  });
}

function parseLinks(value: unknown, path: string, op: 'create' | 'update'): LinkWrite {
  if (!isObject(value)) return fail(path, 'must be an object with connect, disconnect or set');
  allowOnly(value, op === 'create' ? ['connect', 'set'] : ['connect', 'disconnect', 'set'], path);
  const links: LinkWrite = {};
  if (value.set !== undefined) links.set = ids(value.set, `${path}.set`);
  if (value.connect !== undefined) links.connect = ids(value.connect, `${path}.connect`);
  if (value.disconnect !== undefined) links.disconnect = ids(value.disconnect, `${path}.disconnect`);
  if (Object.keys(links).length === 0) fail(path, 'needs connect, disconnect or set');
  return links;
}

function parseChildren(entity: EntityDef, relation: RelationDef, value: unknown, path: string, op: 'create' | 'update'): ChildrenWrite {
  if (!isObject(value)) return fail(path, 'must be an object with create' + (op === 'update' ? ', delete or deleteMany' : ''));
  allowOnly(value, op === 'create' ? ['create'] : ['create', 'delete', 'deleteMany'], path);
  const child = ENTITIES[relation.target];
  const parentRelation = Object.entries(child.relations).find(([, r]) => r.kind === 'one' && r.target === entity.name && r.foreignKey === relation.foreignKey)?.[0];
  const write: ChildrenWrite = {};
  if (value.create !== undefined) {
    const items = Array.isArray(value.create) ? value.create : [value.create];
    if (items.length > 1000) fail(`${path}.create`, 'at most 1000 at once');
    write.create = items.map((item, i): ChildInput => {
      const itemPath = Array.isArray(value.create) ? `${path}.create[${i}]` : `${path}.create`;
      if (isObject(item) && parentRelation && item[parentRelation] !== undefined) fail(`${itemPath}.${parentRelation}`, `is set by the ${entity.name} it belongs to`);
      const parsed = reroot('data', itemPath, () => parseCreateArgs(child, { data: item }));
      return { data: parsed.data, connect: parsed.connect as Record<string, number | null> };
    });
  }
  if (value.deleteMany !== undefined) {
    if (!isObject(value.deleteMany) || Object.keys(value.deleteMany).length > 0) fail(`${path}.deleteMany`, 'must be {} (all of them)');
    write.deleteMany = true;
  }
  if (value.delete !== undefined) write.delete = ids(value.delete, `${path}.delete`);
  if (Object.keys(write).length === 0) fail(path, `needs create${op === 'update' ? ', delete or deleteMany' : ''}`);
  return write;
}

function reroot<T>(prefix: string, replacement: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    const details = (error as { details?: { path?: unknown } }).details;
    if (details && typeof details.path === 'string' && details.path.startsWith(prefix)) {
      const path = replacement + details.path.slice(prefix.length);
      throw badRequest('invalid-argument', (error as Error).message.replace(details.path, path), { ...details, path });
    }
    throw error;
  }
}

function listWrites(entity: EntityDef, lists: [string, RelationDef, unknown][], op: 'create' | 'update'): Pick<EntityWrite, 'links' | 'children'> {
  const links: Record<string, LinkWrite> = {};
  const children: Record<string, ChildrenWrite> = {};
  for (const [name, relation, value] of lists) {
    if (relation.through) links[name] = parseLinks(value, `data.${name}`, op);
    else children[name] = parseChildren(entity, relation, value, `data.${name}`, op);
  }
  return { links, children };
}

const toWrite = (args: Pick<CreateArgs, 'data' | 'connect'>): EntityWrite => ({ data: args.data, connect: args.connect });

const withWriteOnly = (writeOnly: Record<string, string>) => (Object.keys(writeOnly).length > 0 ? { writeOnly } : {});

export function parseEntityCreate(entity: EntityDef, body: unknown): EntityCreateArgs {
  const { rest, lists, writeOnly } = split(entity, body, 'create');
  const args = parseCreateArgs(entity, rest);
  return { write: { ...toWrite(args), ...listWrites(entity, lists, 'create'), ...withWriteOnly(writeOnly) }, shape: args.shape };
}

export function parseEntityUpdate(entity: EntityDef, body: unknown): EntityUpdateArgs {
  const { rest, data, lists, writeOnly } = split(entity, body, 'update');
  const nested = { ...listWrites(entity, lists, 'update'), ...withWriteOnly(writeOnly) };
  if ((lists.length > 0 || Object.keys(writeOnly).length > 0) && data && Object.keys(data).length === 0) {
    // Only list relations or write-only inputs change: args.ts would refuse the empty remainder.
    const { data: _data, ...others } = rest;
    const args = parseDeleteArgs(entity, others);
    return { where: args.where, shape: args.shape, write: { data: {}, connect: {}, ...nested } };
  }
  const args = parseUpdateArgs(entity, rest);
  return { where: args.where, shape: args.shape, write: { ...toWrite(args), ...nested } };
}
