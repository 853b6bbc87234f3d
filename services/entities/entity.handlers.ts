import { createHash } from 'node:crypto';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import { ENTITIES, type EntityDef, type EntityName, type RelationDef, writtenAs } from '../../contracts/entities';
import { eventFields, linkField, linkRelations, ownedRelations, streamOf } from '../../contracts/entityEvents';
import { LIMITS } from '../../contracts/limits';
import { activeClaim, claimRevisionAfter, lastEventOf, writeWithClaims } from '../claims/uniqueClaims';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand, loadAggregate } from '../shared/decider';
import { DomainError, badRequest } from '../shared/errors';
import type { IdAllocator } from '../shared/ids';
import { keyInScope } from '../repository/caseIdentity';
import { folderStream, repositoryFolderDecider } from '../repository/repositoryFolder.decider';
import { userDecider, userStream } from '../identity/user.decider';
import { entityDecider, kebab, projectIdOf } from './entity.decider';
import type { Fact, Facts } from './entity.facts';
import { sealSecrets } from './entitySecrets';
import { importedRowHolding, withImportedFolderOrigin, withImportedOrigin } from './importedRows';

/**
 * Create, update and delete any catalogue entity that uses the generic aggregate: look up the
 * facts the decider needs (referenced rows, from their own streams), claim unique values, hand out
 * ids for new children, append, and wait until the read model has the change.
 */

/** A many-to-many write: the whole list (`set`), or ids to add and remove. */
export interface LinkWrite { set?: number[]; connect?: number[]; disconnect?: number[] }
/** Owned children: new ones, and which existing ones go (all of them with `deleteMany`). */
export interface ChildrenWrite { create?: ChildInput[]; deleteMany?: boolean; delete?: number[] }
export interface ChildInput { data: Record<string, unknown>; connect: Record<string, number | null> }

export interface EntityWrite {
  /** Writable scalar fields, validated against the catalogue. */
  data: Record<string, unknown>;
  /** One-relations: target id, or null to disconnect. */
  connect: Record<string, number | null>;
  links?: Record<string, LinkWrite>;
  children?: Record<string, ChildrenWrite>;
  /** Inputs that are not fields (a user's password): used by the entity's own commands, never stored or read back as given. */
  writeOnly?: Record<string, string>;
  /** The creator to record instead of the actor (an external import keeps the source row's creator; the event's actor stays the importer). */
  createdById?: number | null;
}

const DECIDERS = new Map<EntityName, ReturnType<typeof entityDecider>>();
export function deciderOf(entity: EntityDef) {
  let decider = DECIDERS.get(entity.name);
  if (!decider) DECIDERS.set(entity.name, (decider = entityDecider(entity)));
  return decider;
}

/** Creates a row; `plannedId` is for seeding and imports, whose ids are reserved ahead (see seed.ts, services/migration). */
export async function createEntity(deps: CommandDeps, name: EntityName, write: EntityWrite, metadata: EventMetadata, plannedId?: number): Promise<number> {
  const entity = ENTITIES[name];
  const values = createdValues(entity, write, metadata);
  const facts = await factsFor(deps, entity, values, Object.keys(write.connect), write);
  const decider = deciderOf(entity);
  // Decide once against an empty stream, and check the events against their contracts, before anything
  // is claimed or reserved: a refused create appends nothing.
  deps.store.validate?.(decider.decide({ type: 'Create', id: 1, values, facts, now: deps.clock().toISOString() }, decider.initialState));
  const free = await refuseTakenValues(deps, entity, plannedId ?? null, {}, values);
  const id = plannedId ?? (await deps.ids.next(name, metadata));
  // Secrets are sealed once the create is known to be valid, before they enter its event.
  await sealSecrets(deps, entity, values, {}, `${name} ${id}`);
  await allocateChildIds(deps, entity, values, metadata);
  // The row's values are claimed, then the row appended; a failed append releases the claims again.
  const outcome = await writeWithClaims(deps.store, claimsOf(free, id), () => handleCommand(deps.store, streamOf(entity, id), decider, {
    type: 'Create', id, values, facts, now: deps.clock().toISOString(),
  }, metadata), (claim) => claimLost(entity, claim.scope), metadata);
  await readYourWrites(deps, outcome);
  return id;
}

/**
 * The values a create writes: the write's data, its creator (or the actor), the catalogue's
 * defaults, its references, links and new children (with stand-in ids until allocated).
 */
export function createdValues(entity: EntityDef, write: EntityWrite, metadata: EventMetadata): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const field of eventFields(entity)) {
    const def = entity.fields[field];
    if (def.fromActor) values[field] = write.createdById !== undefined ? write.createdById : metadata.actor.userId ?? null;
    else if (field in write.data) values[field] = write.data[field];
    else if (def.default !== undefined) values[field] = Array.isArray(def.default) ? [...def.default] : def.default;
    else if (def.nullable) values[field] = null;
  }
  for (const [relation, targetId] of Object.entries(write.connect)) values[entity.relations[relation].scalar!] = targetId;
  for (const [relation] of linkRelations(entity)) values[linkField(relation)] = applyLinks([], write.links?.[relation]);
  for (const [relation, def] of ownedRelations(entity)) {
    values[relation] = newChildren(ENTITIES[def.target], def, [], write.children?.[relation]);
  }
  for (const field of eventFields(entity)) {
    if (!(field in values)) throw new DomainError('invalid-argument', `${field} is required`, { path: `data.${field}` });
  }
  return values;
}

export async function updateEntity(deps: CommandDeps, name: EntityName, id: number, write: EntityWrite, metadata: EventMetadata): Promise<void> {
  const entity = ENTITIES[name];
  const decider = await withImportedOrigin(deps.knex, entity, id, deciderOf(entity));
  const { state } = await loadAggregate(deps.store, streamOf(entity, id), decider);
  if (!state.exists) throw new DomainError(`${kebab(name)}-not-found`, `${name} ${id} does not exist`, { id });
  const values: Record<string, unknown> = { ...write.data };
  for (const [relation, targetId] of Object.entries(write.connect)) values[entity.relations[relation].scalar!] = targetId;
  for (const [relation, links] of Object.entries(write.links ?? {})) {
    values[linkField(relation)] = applyLinks((state.values[linkField(relation)] as number[] | undefined) ?? [], links);
  }
  for (const [relation, children] of Object.entries(write.children ?? {})) {
    const def = entity.relations[relation];
    const current = (state.values[relation] as Record<string, unknown>[] | undefined) ?? [];
    values[relation] = newChildren(ENTITIES[def.target], def, current, children);
  }
  refuseLongLists(entity, values);
  const merged = { ...state.values, ...values };
  await refuseCycles(deps, entity, id, write.connect);
  // The project path's first hop is looked up too, so that new references are checked against the row's project.
  const changedRelations = [...Object.keys(write.connect), ...(entity.projectPath?.length ? [entity.projectPath[0]] : [])];
  const facts = await factsFor(deps, entity, merged, changedRelations, write);
  // So are the references the update keeps that belong to a project, and the project the row is in now:
  // an update reaches its project along every relation, and moves along none.
  const keptRelations = Object.entries(entity.relations)
    .filter(([relation, r]) => r.kind === 'one' && !changedRelations.includes(relation) && ENTITIES[r.target].projectPath !== undefined)
    .map(([relation]) => relation);
  const kept = await factsFor(deps, entity, merged, keptRelations, { data: {}, connect: {} });
  const projectBefore = await projectOfValues(deps, entity, id, state.values, facts);
  const command = { type: 'Update' as const, id, values, facts, kept, projectBefore, now: deps.clock().toISOString() };
  // Decided once against the state just loaded, its events checked against their contracts, before a value is claimed or an
  // id reserved: a refused update appends nothing.
  deps.store.validate?.(decider.decide(command, state));
  await sealSecrets(deps, entity, values, state.values, `${name} ${id}`);
  await allocateChildIds(deps, entity, values, metadata);
  const free = await refuseTakenValues(deps, entity, id, state.values, merged);
  await claimUniqueValues(deps, entity, id, free, metadata);
  const outcome = await handleCommand(deps.store, streamOf(entity, id), decider, command, metadata);
  const renamed = name === 'repositoryCase' && typeof values.title === 'string' && values.title !== state.values.title
    ? await keepImportIdentity(deps, id, state.values.title as string, values.title, metadata) : null;
  await readYourWrites(deps, outcome);
  if (renamed) await readYourWrites(deps, renamed);
}

/**
 * A renamed case that an import identifies by its name keeps its old key as an alias, and takes
 * the key of its new name (services/repository/caseIdentity.ts): the next import under either name
 * lands on it. Appended after the rename; a process stopped in between leaves the old key in place.
 */
async function keepImportIdentity(deps: CommandDeps, id: number, oldTitle: string, newTitle: string, metadata: EventMetadata) {
  const row = await deps.knex('repository_cases').where({ id }).first('project_id', 'source', 'identity_key', 'identity_scope');
  if (!row?.identity_key || !row.identity_scope) return null;
  const identityKey = keyInScope(row.identity_scope, newTitle);
  if (identityKey === row.identity_key) return null;
  const streamId = `caseIdentity-${id}`;
  const result = await deps.store.append(streamId, [{
    type: 'RepositoryCaseAliasAdded',
    data: { caseId: id, projectId: row.project_id, source: row.source, alias: row.identity_key, aliasTitle: oldTitle, identityKey, addedAt: deps.clock().toISOString() },
  }], { expectedRevision: 'any', metadata });
  return { position: result.position, streamId };
}

export async function deleteEntity(deps: CommandDeps, name: EntityName, id: number, metadata: EventMetadata): Promise<void> {
  const entity = ENTITIES[name];
  const decider = await withImportedOrigin(deps.knex, entity, id, deciderOf(entity));
  const outcome = await handleCommand(deps.store, streamOf(entity, id), decider, { type: 'Delete', id, now: deps.clock().toISOString() }, metadata);
  await readYourWrites(deps, outcome);
}

/** How far up a tree (milestones) is followed when a move is checked. */
const MAX_TREE_DEPTH = 1000;

/** A row of a tree (a milestone under its parent) cannot move under itself or its own descendants. */
async function refuseCycles(deps: CommandDeps, entity: EntityDef, id: number, connect: Record<string, number | null>): Promise<void> {
  for (const [relation, targetId] of Object.entries(connect)) {
    const def = entity.relations[relation];
    if (def.target !== entity.name || targetId === null) continue;
    let current: number | null = targetId;
    for (let depth = 0; current !== null && depth < MAX_TREE_DEPTH; depth++) {
      if (current === id) throw new DomainError(`${kebab(entity.name)}-cycle`, `${entity.name} ${id} cannot move under itself or its descendants`, { path: `data.${relation}` });
      const fact = await factOf(deps, entity.name, current);
      current = (fact.values[def.scalar!] as number | null | undefined) ?? null;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// links and children

/** Links and children added to those a row has may outgrow a list's limit (contracts/limits.ts): refused before anything is appended. */
function refuseLongLists(entity: EntityDef, values: Record<string, unknown>): void {
  const lists = [...linkRelations(entity).map(([relation]) => [relation, linkField(relation)]), ...ownedRelations(entity).map(([relation]) => [relation, relation])];
  for (const [relation, field] of lists) {
    const list = values[field] as unknown[] | undefined;
    if (list && list.length > LIMITS.items) {
      throw badRequest('invalid-argument', `data.${relation}: would hold ${list.length} items; at most ${LIMITS.items}`, { path: `data.${relation}`, maxItems: LIMITS.items });
    }
  }
}

function applyLinks(current: number[], write: LinkWrite | undefined): number[] {
  if (!write) return current;
  let ids = write.set ? [...write.set] : [...current];
  for (const id of write.connect ?? []) if (!ids.includes(id)) ids.push(id);
  if (write.disconnect) ids = ids.filter((id) => !write.disconnect!.includes(id));
  return [...new Set(ids)];
}

/**
 * Children written anew: their ids are reserved only once the write is decided (allocateChildIds),
 * so that a refused write reserves none. Until then they hold a stand-in id the contracts accept.
 */
const unallocated = new WeakSet<Record<string, unknown>>();

function newChildren(child: EntityDef, relation: RelationDef, current: Record<string, unknown>[], write: ChildrenWrite | undefined): Record<string, unknown>[] {
  let kept = write?.deleteMany ? [] : current;
  if (write?.delete) {
    for (const id of write.delete) {
      if (!kept.some((c) => c.id === id)) throw new DomainError(`${kebab(child.name)}-not-found`, `${child.name} ${id} is not one of these`, { id });
    }
    kept = kept.filter((c) => !write.delete!.includes(c.id as number));
  }
  const fields = eventFields(child).filter((f) => child.fields[f].column !== relation.foreignKey);
  const created: Record<string, unknown>[] = [];
  for (const input of write?.create ?? []) {
    const row: Record<string, unknown> = { id: 1 };
    unallocated.add(row);
    for (const field of fields) {
      const def = child.fields[field];
      const scalarOf = Object.entries(child.relations).find(([, r]) => r.scalar === field)?.[0];
      if (scalarOf && scalarOf in input.connect) row[field] = input.connect[scalarOf];
      else if (field in input.data) row[field] = input.data[field];
      else if (def.default !== undefined) row[field] = def.default;
      else if (def.nullable) row[field] = null;
      else throw new DomainError('invalid-argument', `${field} is required`, { path: `${relation.target}.${field}` });
    }
    created.push(row);
  }
  return [...kept, ...created];
}

/** allocateChildIds for many rows of one entity at once: one reservation per child entity. */
export async function allocateChildIdsOfMany(ids: Pick<IdAllocator, 'nextMany'>, entity: EntityDef, valuesOfRows: Record<string, unknown>[], metadata: EventMetadata): Promise<void> {
  for (const [relation, def] of ownedRelations(entity)) {
    const rows = valuesOfRows.flatMap((values) => (values[relation] as Record<string, unknown>[] | undefined) ?? []).filter((row) => unallocated.has(row));
    const childIds = await ids.nextMany(def.target, rows.length, metadata);
    rows.forEach((row, i) => {
      unallocated.delete(row);
      row.id = childIds[i];
    });
  }
}

/** Gives the children written anew their ids, in place, once the write is decided. */
async function allocateChildIds(deps: CommandDeps, entity: EntityDef, values: Record<string, unknown>, metadata: EventMetadata): Promise<void> {
  for (const [relation, def] of ownedRelations(entity)) {
    const rows = values[relation] as Record<string, unknown>[] | undefined;
    for (const row of rows ?? []) {
      if (!unallocated.delete(row)) continue;
      row.id = await deps.ids.next(def.target, metadata);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// facts

/**
 * The rows a write points at, keyed as the decider's facts are: each of `relations` set (its id in
 * `values`), each row linked (a list per relation), each relation of a child created
 * (`<relation>[<i>].<childRelation>`). Ids that are null are left out.
 */
export function referencesOfWrite(entity: EntityDef, values: Record<string, unknown>, relations: Iterable<string>, write: EntityWrite):
  Array<{ key: string; target: EntityName; ids: number[]; list: boolean }> {
  const found: Array<{ key: string; target: EntityName; ids: number[]; list: boolean }> = [];
  for (const relation of new Set(relations)) {
    const def = entity.relations[relation];
    const targetId = values[def.scalar!] as number | null | undefined;
    if (targetId != null) found.push({ key: relation, target: def.target, ids: [targetId], list: false });
  }
  for (const [relation, links] of Object.entries(write.links ?? {})) {
    found.push({ key: relation, target: entity.relations[relation].target, ids: [...(links.set ?? []), ...(links.connect ?? [])], list: true });
  }
  for (const [relation, children] of Object.entries(write.children ?? {})) {
    const child = ENTITIES[entity.relations[relation].target];
    for (const [i, input] of (children.create ?? []).entries()) {
      for (const [childRelation, targetId] of Object.entries(input.connect)) {
        if (targetId !== null) found.push({ key: `${relation}[${i}].${childRelation}`, target: child.relations[childRelation].target, ids: [targetId], list: false });
      }
    }
  }
  return found;
}

export async function factsFor(deps: CommandDeps, entity: EntityDef, values: Record<string, unknown>, relations: string[], write: EntityWrite): Promise<Facts> {
  const facts: Facts = {};
  await Promise.all(referencesOfWrite(entity, values, relations, write).map(async ({ key, target, ids, list }) => {
    const found = await Promise.all(ids.map((id) => factOf(deps, target, id)));
    facts[key] = list ? found : found[0];
  }));
  return facts;
}

/**
 * The project of a row with these values: its own, or its parent's along the project path (null:
 * global). `known`: facts already looked up, by relation (the parent's, when it stays).
 */
async function projectOfValues(deps: CommandDeps, entity: EntityDef, id: number, values: Record<string, unknown>, known: Facts): Promise<number | null> {
  if (entity.name === 'project') return id;
  const own = projectIdOf(entity, values, {});
  const hop = entity.projectPath?.[0];
  if (own !== null || !hop) return own;
  const parentId = values[entity.relations[hop].scalar!] as number | null | undefined;
  if (parentId == null) return null;
  const parent = known[hop];
  if (parent && !Array.isArray(parent) && parent.id === parentId) return parent.projectId;
  return (await factOf(deps, entity.relations[hop].target, parentId)).projectId;
}

/** What a row is like now, from its own stream (never the read model, which may lag). */
export async function factOf(deps: Pick<CommandDeps, 'store' | 'knex' | 'factMemo'>, name: EntityName, id: number, depth = 0): Promise<Fact> {
  const memo = deps.factMemo;
  if (!memo) return readFact(deps, name, id, depth);
  const key = `${name}:${id}`;
  let fact = memo.get(key) as Promise<Fact> | undefined;
  if (!fact) {
    fact = readFact(deps, name, id, depth);
    memo.set(key, fact);
    // A row that is missing or deleted is read again next time (it may be written in the same batch).
    fact.then((f) => { if (!f.exists || f.isDeleted) memo.delete(key); }, () => memo.delete(key));
  }
  return fact;
}

async function readFact(deps: Pick<CommandDeps, 'store' | 'knex' | 'factMemo'>, name: EntityName, id: number, depth: number): Promise<Fact> {
  const entity = ENTITIES[name];
  if (name === 'repositoryFolder') {
    const { state } = await loadAggregate(deps.store, folderStream(id), await withImportedFolderOrigin(deps.knex, id, repositoryFolderDecider));
    return { entity: name, id, exists: state.exists, isDeleted: state.isDeleted, projectId: state.projectId, values: { ...state } };
  }
  if (name === 'user') {
    const { state } = await loadAggregate(deps.store, userStream(id), userDecider);
    return { entity: name, id, exists: state.exists, isDeleted: state.isDeleted, projectId: null, values: {} };
  }
  if (writtenAs(entity) === 'owned') return ownedFact(deps, entity, id, depth);
  const { state } = await loadAggregate(deps.store, streamOf(entity, id), await withImportedOrigin(deps.knex, entity, id, deciderOf(entity)));
  let projectId: number | null = name === 'project' ? id : null;
  if (name !== 'project' && state.exists) {
    projectId = projectIdOf(entity, state.values, {});
    const hop = entity.projectPath?.[0];
    if (projectId === null && hop && depth < 4) {
      const parentId = state.values[entity.relations[hop].scalar!] as number | null;
      if (parentId != null) projectId = (await factOf(deps, entity.relations[hop].target, parentId, depth + 1)).projectId;
    }
  }
  return { entity: name, id, exists: state.exists, isDeleted: state.isDeleted, projectId, values: state.values };
}

/**
 * An owned child (a case's step) has no stream: the read model says which parent holds it, and
 * the parent's own stream confirms that it still does.
 */
async function ownedFact(deps: Pick<CommandDeps, 'store' | 'knex'>, child: EntityDef, id: number, depth: number): Promise<Fact> {
  const [parentName, parentRelation] = Object.entries(child.relations).find(([name]) => name === child.projectPath?.[0])!;
  const row = await deps.knex(child.table).where({ id }).first(parentRelation.foreignKey);
  const parentId = row?.[parentRelation.foreignKey] as number | undefined;
  const missing: Fact = { entity: child.name, id, exists: false, isDeleted: false, projectId: null, values: {} };
  if (parentId === undefined) return missing;
  const parent = await factOf(deps, parentRelation.target, parentId, depth + 1);
  const listName = Object.entries(ENTITIES[parentRelation.target].relations).find(([, r]) => r.owned && r.target === child.name)![0];
  const values = ((parent.values[listName] as Record<string, unknown>[] | undefined) ?? []).find((c) => c.id === id);
  if (!values) return missing;
  return { entity: child.name, id, exists: true, isDeleted: parent.isDeleted, projectId: parent.projectId, values: { ...values, [parentRelation.scalar ?? parentName]: parentId } };
}

// ---------------------------------------------------------------------------------------------
// unique values

/** How long a claim whose owner never appeared is honoured (a writer killed between claim and create). */
const CLAIM_GRACE_MS = 60_000;

/** A unique value of a row: its claim stream's scope and value, and the fields that hold it. */
interface UniqueKey { scope: string; value: string; fields: Record<string, string | number>; caseInsensitive: boolean }

function uniqueKeys(entity: EntityDef, values: Record<string, unknown>): UniqueKey[] {
  const keys: UniqueKey[] = [];
  for (const [name, f] of Object.entries(entity.fields)) {
    if (f.unique && typeof values[name] === 'string') {
      keys.push({ scope: `${entity.name}.${name}`, value: (values[name] as string).trim().toLowerCase(), fields: { [name]: (values[name] as string).trim().toLowerCase() }, caseInsensitive: true });
    }
  }
  if (entity.uniqueTogether && entity.uniqueTogether.every((f) => values[f] != null)) {
    keys.push({
      scope: `${entity.name}.${entity.uniqueTogether.join('+')}`,
      value: entity.uniqueTogether.map((f) => String(values[f])).join('+'),
      fields: Object.fromEntries(entity.uniqueTogether.map((f) => [f, values[f] as string | number])),
      caseInsensitive: false,
    });
  }
  return keys;
}

const claimStream = (scope: string, value: string) =>
  `unique-${scope}-${value.length <= 80 && /^[\w.+@-]*$/.test(value) ? value : createHash('sha256').update(value).digest('hex')}`;

/** The claims of the unique values a row of `entity` with these values holds (its claim streams, scopes and values). */
export function uniqueClaimsOf(entity: EntityDef, values: Record<string, unknown>, ownerId: number): Array<{ streamId: string; scope: string; value: string; ownerId: number }> {
  return uniqueKeys(entity, values).map((key) => ({ streamId: claimStream(key.scope, key.value), scope: key.scope, value: key.value, ownerId }));
}

/** The unique values `after` holds that `before` did not. */
function newKeys(entity: EntityDef, before: Record<string, unknown>, after: Record<string, unknown>): UniqueKey[] {
  const previous = new Set(uniqueKeys(entity, before).map((k) => `${k.scope}=${k.value}`));
  return uniqueKeys(entity, after).filter((key) => !previous.has(`${key.scope}=${key.value}`));
}

/**
 * Which other row holds a unique value (null: none). A claim holds while its owner exists, is not
 * deleted and still has the value; otherwise (renamed, deleted, or never created and older than
 * the grace period) it may be taken over. Rows an import made came in bulk and never claimed:
 * the read model says whether one holds the value.
 */
async function holderOf(deps: CommandDeps, entity: EntityDef, key: UniqueKey, ownerId: number | null, last: EventEnvelope | undefined): Promise<number | null> {
  // A released claim holds nothing.
  const claimant = activeClaim(last)?.ownerId;
  if (claimant !== undefined && claimant !== ownerId && (await claimHolds(deps, entity, claimant, key, last!.recordedAt))) return claimant;
  return importedRowHolding(deps.knex, entity, key.fields, key.caseInsensitive, ownerId);
}

function valueTaken(entity: EntityDef, key: UniqueKey, holder: number): DomainError {
  const field = key.scope.split('.')[1];
  return new DomainError(`${kebab(entity.name)}-${kebab(field).replace(/\+/g, '-')}-taken`, `Another ${entity.name} already has this ${field}`, { path: `data.${field}`, ownerId: holder });
}

const lastClaim = (deps: CommandDeps, key: UniqueKey) => lastEventOf(deps.store, claimStream(key.scope, key.value));

/** A unique value found free, and the last claim on its stream when it was looked at (the lock for claiming it). */
interface FreeValue { key: UniqueKey; last: EventEnvelope | undefined }

/** Refuses a unique value another row holds, before anything is appended (an id block for a new row included). */
async function refuseTakenValues(deps: CommandDeps, entity: EntityDef, ownerId: number | null, before: Record<string, unknown>, after: Record<string, unknown>): Promise<FreeValue[]> {
  const free: FreeValue[] = [];
  for (const key of newKeys(entity, before, after)) {
    const last = await lastClaim(deps, key);
    const holder = await holderOf(deps, entity, key, ownerId, last);
    if (holder !== null) throw valueTaken(entity, key, holder);
    free.push({ key, last });
  }
  return free;
}

/** The claims of the values found free, each at the revision it was seen at: a claim appended in between makes this one fail rather than both hold. */
const claimsOf = (values: readonly FreeValue[], ownerId: number) => values.map(({ key, last }) => ({
  claim: { streamId: claimStream(key.scope, key.value), scope: key.scope, value: key.value, ownerId }, expectedRevision: claimRevisionAfter(last),
}));

const claimLost = (entity: EntityDef, scope: string) =>
  new DomainError(`${kebab(entity.name)}-taken`, `Another ${entity.name} is claiming this value right now`, { path: `data.${scope.split('.')[1]}` });

/**
 * Claims the values found free on their own streams (see claimsOf). An update's claims are not
 * released when its append fails: a claim holds only while its owner has the value (claimHolds).
 */
async function claimUniqueValues(deps: CommandDeps, entity: EntityDef, ownerId: number, values: readonly FreeValue[], metadata: EventMetadata): Promise<void> {
  await writeWithClaims(deps.store, claimsOf(values, ownerId), async () => undefined, (claim) => claimLost(entity, claim.scope), metadata);
}

async function claimHolds(deps: CommandDeps, entity: EntityDef, holder: number, key: UniqueKey, claimedAt: string): Promise<boolean> {
  const fact = await factOf(deps, entity.name, holder);
  if (!fact.exists) return Date.now() - Date.parse(claimedAt) < CLAIM_GRACE_MS;
  if (fact.isDeleted) return false;
  return uniqueKeys(entity, fact.values).some((k) => k.scope === key.scope && k.value === key.value);
}
