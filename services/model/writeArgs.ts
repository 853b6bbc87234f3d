import { ENTITIES, type EntityDef, type RelationDef } from '../../contracts/entities';
import type { ChildInput, ChildrenWrite, EntityWrite, LinkWrite } from '../entities/entity.handlers';
import { badRequest } from '../shared/errors';
import { type CreateArgs, parseCreateArgs, parseDeleteArgs, parseUpdateArgs, type Shape } from './args';

/**
 * Write arguments with nested list-relation writes, on top of args.ts (which parses scalar
 * fields and to-one `connect` / `disconnect`):
 * - many-to-many (`through`): `{ connect: [{ id }], disconnect: [{ id }], set: [{ id }] }`
 *   (a single `{ id }` is accepted where a list is; `set` and `disconnect` only on update);
 * - owned children: `{ create: [{...}] }` on create; `{ create, deleteMany: {}, delete: [{ id }] }`
 *   on update (`deleteMany: {}` removes them all; with `create`, the list is replaced).
 * Other to-many relations are written from the other side (`connect` on the child).
 */

export interface EntityCreateArgs { write: EntityWrite; shape: Shape }
export interface EntityUpdateArgs extends EntityCreateArgs { where: { id: number } }

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const fail = (path: string, message: string): never => {
  throw badRequest('invalid-argument', `${path}: ${message}`, { path });
};

function allowOnly(input: Json, allowed: string[], path: string): void {
  for (const key of Object.keys(input)) if (!allowed.includes(key)) fail(`${path}.${key}`, `unknown argument; accepted: ${allowed.join(', ')}`);
}

/** Splits `data` into what args.ts parses and the list-relation writes parsed here. */
function split(entity: EntityDef, body: unknown): { rest: Json; data: Json | undefined; lists: [string, RelationDef, unknown][] } {
  if (!isObject(body)) fail('', 'the body must be a JSON object');
  const rest = { ...(body as Json) };
  const data = isObject(rest.data) ? { ...rest.data } : undefined;
  const lists: [string, RelationDef, unknown][] = [];
  if (data) {
    for (const [key, value] of Object.entries(data)) {
      const relation = Object.hasOwn(entity.relations, key) ? entity.relations[key] : undefined;
      if (relation?.scalar && entity.fields[relation.scalar]?.fromActor) fail(`data.${key}`, 'is set by the server to the caller, not written');
      if (relation && relation.kind === 'many' && (relation.through || relation.owned) && value !== undefined) {
        lists.push([key, relation, value]);
        delete data[key];
      }
    }
    rest.data = data;
  }
  return { rest, data, lists };
}

function ids(value: unknown, path: string): number[] {
  const items = Array.isArray(value) ? value : [value];
  return items.map((item, i) => {
    const itemPath = Array.isArray(value) ? `${path}[${i}]` : path;
    if (!isObject(item)) return fail(itemPath, 'must be { id }');
    allowOnly(item, ['id'], itemPath);
    if (typeof item.id !== 'number' || !Number.isInteger(item.id) || item.id < 1 || item.id > 2147483647) return fail(`${itemPath}.id`, 'must be a positive integer');
    return item.id;
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

export function parseEntityCreate(entity: EntityDef, body: unknown): EntityCreateArgs {
  const { rest, lists } = split(entity, body);
  const args = parseCreateArgs(entity, rest);
  return { write: { ...toWrite(args), ...listWrites(entity, lists, 'create') }, shape: args.shape };
}

export function parseEntityUpdate(entity: EntityDef, body: unknown): EntityUpdateArgs {
  const { rest, data, lists } = split(entity, body);
  const nested = listWrites(entity, lists, 'update');
  if (lists.length > 0 && data && Object.keys(data).length === 0) {
    // Only list relations change: args.ts would refuse the empty remainder.
    const { data: _data, ...others } = rest;
    const args = parseDeleteArgs(entity, others);
    return { where: args.where, shape: args.shape, write: { data: {}, connect: {}, ...nested } };
  }
  const args = parseUpdateArgs(entity, rest);
  return { where: args.where, shape: args.shape, write: { ...toWrite(args), ...nested } };
}
