import type { EventMetadata } from '../../contracts/envelope';
import { ENTITIES, type EntityDef, type EntityName } from '../../contracts/entities';
import type { CommandDeps } from '../shared/commandBus';
import { HttpError, badRequest, notFound } from '../shared/errors';
import { parseDeleteArgs, parseFindArgs } from './args';
import { deciderOf, type EntityWrite } from '../entities/entity.handlers';
import { refuseUnknownReferences } from '../entities/entitySecrets';
import { streamOf } from '../../contracts/entityEvents';
import { secretFieldsOf } from '../../contracts/secrets';
import { loadAggregate } from '../shared/decider';
import { authorizeWrite, checkVisible, type Policy, targetsOf } from './policy';
import { parseEntityCreate, parseEntityUpdate } from './writeArgs';
import { ENTITY_COMMANDS } from './model.commands';
import { findRowById, findUniqueRowId, runFind } from './query';
import { checkWriteAnswer } from './writeAnswer';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function onlyKeys(body: Json, allowed: string[], operation: string): void {
  for (const key of Object.keys(body))
    if (!allowed.includes(key)) throw badRequest('invalid-argument', `${operation} accepts ${allowed.join(', ')}; "${key}" is not one of them`, { path: key });
}

/** Re-roots the path of a validation error: `data.title` of element 3 becomes `data[3].title`. */
function within<T>(prefix: string, replace: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof HttpError && typeof error.details.path === 'string' && error.details.path.startsWith(prefix))
      throw new HttpError(error.status, error.code, error.message.replace(prefix, replace), { ...error.details, path: replace + error.details.path.slice(prefix.length) });
    throw error;
  }
}

/** Rows that `where` matches, by id (the bulk operations act on each). */
async function matchingIds(deps: CommandDeps, entity: EntityDef, where: unknown, policy: Policy): Promise<number[]> {
  const args = parseFindArgs(entity, 'findMany', where === undefined ? { select: { id: true } } : { where, select: { id: true } });
  const rows = (await runFind(deps.knex, entity, 'findMany', args, policy.read)) as { id: number }[];
  return rows.map((r) => r.id);
}

/**
 * Every `connect` target of every element exists (and is not deleted) before anything is written:
 * a bulk write with a bad element changes nothing.
 */
async function checkConnectTargets(deps: CommandDeps, entity: EntityDef, items: EntityWrite[]): Promise<void> {
  for (const [relationName, relation] of Object.entries(entity.relations)) {
    if (relation.kind !== 'one') continue;
    const ids = [...new Set(items.map((i) => i.connect[relationName]).filter((id): id is number => typeof id === 'number'))];
    if (ids.length === 0) continue;
    const target = ENTITIES[relation.target];
    const query = deps.knex(target.table).whereIn('id', ids).select('id');
    if (target.softDeleteField) query.andWhere(target.fields[target.softDeleteField].column, false);
    const found = new Set((await query).map((r: { id: number }) => r.id));
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length > 0) throw notFound(`No ${relation.target} with id ${missing.join(', ')}`, { path: `data.${relationName}`, missing });
  }
}

/** createMany: `{ data: [...] }` → `{ count }`. Every element is validated, and its targets checked, first. */
export async function createMany(deps: CommandDeps, name: EntityName, body: unknown, metadata: EventMetadata, policy: Policy): Promise<{ count: number }> {
  const entity = ENTITIES[name];
  if (!isObject(body)) throw badRequest('invalid-argument', 'the body must be an object', { path: '' });
  onlyKeys(body, ['data'], 'createMany');
  if (!Array.isArray(body.data)) throw badRequest('invalid-argument', 'data must be a list', { path: 'data' });
  if (body.data.length > 1000) throw badRequest('invalid-argument', 'createMany takes at most 1000 elements', { path: 'data' });
  const items = body.data.map((data, i) => within('data', `data[${i}]`, () => parseEntityCreate(entity, { data }).write));
  policy.checkWriteAccess(entity, 'create');
  for (const item of items) await checkVisible(deps.knex, policy, targetsOf(entity, item));
  for (const item of items) await authorizeWrite(deps.knex, policy, entity, 'create', { write: item });
  await checkConnectTargets(deps, entity, items);
  for (const item of items) await ENTITY_COMMANDS[name].create(deps, item, metadata);
  return { count: items.length };
}

/** updateMany: `{ where?, data }` (scalar fields only) → `{ count }`. */
export async function updateMany(deps: CommandDeps, name: EntityName, body: unknown, metadata: EventMetadata, policy: Policy): Promise<{ count: number }> {
  const entity = ENTITIES[name];
  if (!isObject(body)) throw badRequest('invalid-argument', 'the body must be an object', { path: '' });
  onlyKeys(body, ['where', 'data'], 'updateMany');
  const { write } = parseEntityUpdate(entity, { where: { id: 1 }, data: body.data });
  // Nor a write-only input: one password for many accounts is a mistake, not a bulk edit.
  const nested = [...Object.keys(write.connect), ...Object.keys(write.links ?? {}), ...Object.keys(write.children ?? {}), ...Object.keys(write.writeOnly ?? {})];
  if (nested.length > 0) throw badRequest('invalid-argument', 'updateMany changes scalar fields only', { path: `data.${nested[0]}` });
  policy.checkWriteAccess(entity, 'update');
  const ids = await matchingIds(deps, entity, body.where, policy);
  // Every row is authorised before the first is changed: a refused updateMany changes nothing.
  for (const id of ids) await authorizeWrite(deps.knex, policy, entity, 'update', { id, write });
  // A secret given back by reference must be one every row holds (services/entities/entitySecrets.ts).
  if (secretFieldsOf(entity).some((field) => Object.hasOwn(write.data, field))) {
    for (const id of ids) refuseUnknownReferences(entity, write.data, (await loadAggregate(deps.store, streamOf(entity, id), deciderOf(entity))).state.values);
  }
  for (const id of ids) await ENTITY_COMMANDS[name].update(deps, id, write, metadata);
  return { count: ids.length };
}

/** deleteMany: `{ where? }` → `{ count }` (soft deletes, like delete). */
export async function deleteMany(deps: CommandDeps, name: EntityName, body: unknown, metadata: EventMetadata, policy: Policy): Promise<{ count: number }> {
  const entity = ENTITIES[name];
  const input = body === undefined ? {} : body;
  if (!isObject(input)) throw badRequest('invalid-argument', 'the body must be an object', { path: '' });
  onlyKeys(input, ['where'], 'deleteMany');
  policy.checkWriteAccess(entity, 'delete');
  const ids = await matchingIds(deps, entity, input.where, policy);
  for (const id of ids) await authorizeWrite(deps.knex, policy, entity, 'delete', { id });
  for (const id of ids) await ENTITY_COMMANDS[name].delete(deps, id, metadata);
  return { count: ids.length };
}

/**
 * upsert: `{ where, create, update, include?, select? }`, `where` a unique where as findUnique's
 * (`{ id }`, `{ name }`, `{ userId_projectId: { userId, projectId } }`, with other filters beside):
 * updates the row when it exists, creates one otherwise (ids are allocated by the server: the new
 * row gets its own id). `update: {}` is Prisma's "create if missing": a row that exists is answered
 * as it is, and nothing is written.
 */
export async function upsert(deps: CommandDeps, name: EntityName, body: unknown, metadata: EventMetadata, policy: Policy, maxRows: number): Promise<{ row: unknown; created: boolean }> {
  const entity = ENTITIES[name];
  if (!isObject(body)) throw badRequest('invalid-argument', 'the body must be an object', { path: '' });
  onlyKeys(body, ['where', 'create', 'update', 'include', 'select'], 'upsert');
  const shapeOnly = { ...(body.include !== undefined && { include: body.include }), ...(body.select !== undefined && { select: body.select }) };
  const { where, shape } = parseDeleteArgs(entity, { where: body.where, ...shapeOnly });
  const nothingToUpdate = isObject(body.update) && Object.keys(body.update).length === 0;
  const update = nothingToUpdate ? null : within('data', 'update', () => parseEntityUpdate(entity, { where: body.where, data: body.update, ...shapeOnly })).write;
  const create = within('data', 'create', () => parseEntityCreate(entity, { data: body.create, ...shapeOnly })).write;
  // A row the caller may not see does not exist for them: upsert then creates.
  const existing = await findUniqueRowId(deps.knex, entity, where, policy.read);
  if (existing !== null && update === null) return { row: await findRowById(deps.knex, entity, existing, shape, { ...policy.read, maxRows }), created: false };
  const write = existing !== null ? update! : create;
  policy.checkWriteAccess(entity, existing !== null ? 'update' : 'create');
  await checkVisible(deps.knex, policy, targetsOf(entity, write));
  await authorizeWrite(deps.knex, policy, entity, existing !== null ? 'update' : 'create', existing !== null ? { id: existing, write } : { write });
  await checkWriteAnswer(deps.knex, entity, existing !== null ? { id: existing } : { write }, shape, { ...policy.read, maxRows });
  const id = existing !== null
    ? await ENTITY_COMMANDS[name].update(deps, existing, write, metadata)
    : await ENTITY_COMMANDS[name].create(deps, write, metadata);
  return { row: await findRowById(deps.knex, entity, id, shape, policy.read), created: existing === null };
}
