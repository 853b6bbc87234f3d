import { ENTITIES, type EntityDef, type EntityName } from '../../contracts/entities';
import type { EventEnvelope } from '../../contracts/envelope';
import { entityEventOf, eventFields, idKeyOf, linkField, linkRelations, ownedRelations } from '../../contracts/entityEvents';
import { SECRET_NAME } from '../../contracts/secrets';

/**
 * An entity's history as field changes: its events folded in order, each answering what it changed
 * from what to what. Pure: the events come from the caller (the entity's stream, and the import
 * chunk that created it when an import wrote it in bulk).
 *
 * Only fields a reader of the entity can see appear: the catalogue's fields, link lists and owned
 * children; never a credential (a password hash, a token), not even by name, and no key inside a
 * JSON value that names one.
 */

export interface FieldChange { field: string; before: unknown; after: unknown }

export interface TimelineStep {
  event: EventEnvelope;
  kind: 'created' | 'updated' | 'deleted' | 'other';
  changes: FieldChange[];
}

/** Names of credentials (or values derived from them): never shown, at any depth (contracts/secrets.ts). */
const SECRET = SECRET_NAME;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON value without the keys that name credentials. */
function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !SECRET.test(k)).map(([k, v]) => [k, withoutSecrets(v)]));
}

/**
 * What other aggregates keep about an entity and its timeline shows as its fields, with their value
 * before any such event: a case's quarantine (services/quarantine/, on `caseQuarantine-<caseId>`).
 */
const STATES_BESIDE: Partial<Record<string, Record<string, unknown>>> = { repositoryCase: { quarantined: false, quarantineReason: null } };

/** The fields of an entity its timeline shows, in catalogue order, then those other aggregates keep about it. */
export function visibleFields(entity: EntityDef): string[] {
  let fields = VISIBLE.get(entity.name);
  if (!fields) VISIBLE.set(entity.name, (fields = computeVisibleFields(entity)));
  return fields;
}

/** Per entity: a timeline asks for them once per event. */
const VISIBLE = new Map<string, string[]>();

function computeVisibleFields(entity: EntityDef): string[] {
  const fields = [
    ...eventFields(entity),
    ...linkRelations(entity).map(([relation]) => linkField(relation)),
    ...ownedRelations(entity).map(([relation]) => relation),
    ...Object.keys(entity.fields).filter((f) => f !== 'id' && f !== 'createdAt' && f !== 'updatedAt' && !eventFields(entity).includes(f)),
    ...Object.keys(STATES_BESIDE[entity.name] ?? {}),
  ];
  return [...new Set(fields)].filter((f) => !SECRET.test(f));
}

/**
 * How an event of the entity's stream changes its fields: generic aggregates (`<Entity>Created`,
 * `…Updated` with `changes`, `…Deleted`), folders (the same shape) and users (registered, updated,
 * deactivated and reactivated; a password change shows as an event that changes no visible field).
 */
function classify(entity: EntityDef, event: EventEnvelope): { kind: TimelineStep['kind']; values: Record<string, unknown> } {
  const data = isObject(event.data) ? event.data : {};
  const generic = entityEventOf(event.type);
  const pascal = entity.name[0].toUpperCase() + entity.name.slice(1);
  const kind = generic && generic.entity.name === entity.name ? generic.kind
    : event.type === `${pascal}Created` || event.type === 'UserRegistered' ? 'created'
      : event.type === `${pascal}Updated` ? 'updated'
        : event.type === `${pascal}Deleted` ? 'deleted'
          : null;
  if (event.type === 'UserDeactivated') return { kind: 'updated', values: { isActive: false } };
  if (event.type === 'CaseQuarantined' || event.type === 'CaseReleased') {
    return { kind: 'updated', values: { quarantined: event.type === 'CaseQuarantined', quarantineReason: data.reason ?? null } };
  }
  if (event.type === 'UserReactivated') return { kind: 'updated', values: { isActive: true } };
  if (kind === 'created') {
    const { [idKeyOf(entity)]: _id, createdAt: _c, ...values } = data;
    return { kind, values };
  }
  if (kind === 'updated') return { kind, values: isObject(data.changes) ? data.changes : {} };
  if (kind === 'deleted') return { kind, values: entity.softDeleteField ? { [entity.softDeleteField]: true } : {} };
  return { kind: 'other', values: {} };
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Folds the events in order into steps with their changes. `initial` is the state before the first
 * event (an imported row's values when its stream begins with a change); a created step starts
 * from nothing.
 */
export function foldTimeline(entityName: EntityName, events: readonly EventEnvelope[], initial: Record<string, unknown> = {}): TimelineStep[] {
  return fold(entityName, events, initial).steps;
}

/**
 * The entity's visible fields after these events (credentials left out), and whether it existed
 * then: created (or imported: `initial` given) and not deleted.
 */
export function stateAfter(entityName: EntityName, events: readonly EventEnvelope[], initial: Record<string, unknown> | null): { exists: boolean; values: Record<string, unknown> } {
  const { steps, state } = fold(entityName, events, initial ?? {});
  const entity = ENTITIES[entityName];
  let exists = initial !== null;
  for (const step of steps) {
    if (step.kind === 'created') exists = true;
    if (step.kind === 'deleted') exists = false;
  }
  const values = Object.fromEntries(visibleFields(entity).filter((f) => f in state).map((f) => [f, state[f]]));
  return { exists, values };
}

function fold(entityName: EntityName, events: readonly EventEnvelope[], initial: Record<string, unknown>): { steps: TimelineStep[]; state: Record<string, unknown> } {
  const entity = ENTITIES[entityName];
  const state: Record<string, unknown> = { ...initial };
  const steps = events.map((event): TimelineStep => {
    const { kind, values } = classify(entity, event);
    if (kind === 'created') {
      for (const key of Object.keys(state)) delete state[key];
      // What a create that names no value leaves: the catalogue's default, not deleted.
      for (const [field, def] of Object.entries(entity.fields)) if (def.default !== undefined) state[field] = def.default;
      if (entity.softDeleteField) state[entity.softDeleteField] = false;
      Object.assign(state, STATES_BESIDE[entity.name] ?? {});
    }
    const changes: FieldChange[] = [];
    for (const field of visibleFields(entity)) {
      if (!Object.prototype.hasOwnProperty.call(values, field)) continue;
      const after = withoutSecrets(values[field] ?? null);
      const before = kind === 'created' ? null : withoutSecrets(state[field] ?? (field === entity.softDeleteField ? false : null));
      state[field] = after;
      if (kind !== 'created' && same(before, after)) continue;
      if (kind === 'created' && after === null) continue;
      changes.push({ field, before, after });
    }
    return { event, kind, changes };
  });
  return { steps, state };
}

export interface ChildrenDiff {
  added: Record<string, unknown>[];
  removed: Record<string, unknown>[];
  changed: { id: unknown; changes: FieldChange[] }[];
}

/** Field changes from one state to another; owned children (a case's steps) item by item, by id. */
/** Two lists of children (objects with an `id`) compared by id: added, removed, and changed field by field. */
export function diffChildren(before: unknown, after: unknown): ChildrenDiff {
  const items = (list: unknown) => new Map((Array.isArray(list) ? list : []).filter(isObject).map((item) => [JSON.stringify(item.id), item]));
  const a = items(before);
  const b = items(after);
  const diff: ChildrenDiff = {
    added: [...b].filter(([id]) => !a.has(id)).map(([, item]) => item),
    removed: [...a].filter(([id]) => !b.has(id)).map(([, item]) => item),
    changed: [],
  };
  for (const [id, item] of b) {
    const old = a.get(id);
    if (!old) continue;
    const itemChanges = [...new Set([...Object.keys(old), ...Object.keys(item)])].filter((k) => !same(old[k] ?? null, item[k] ?? null))
      .map((k) => ({ field: k, before: old[k] ?? null, after: item[k] ?? null }));
    if (itemChanges.length > 0) diff.changed.push({ id: item.id, changes: itemChanges });
  }
  return diff;
}

export function diffStates(entityName: EntityName, from: Record<string, unknown>, to: Record<string, unknown>): { changes: FieldChange[]; children: Record<string, ChildrenDiff> } {
  const entity = ENTITIES[entityName];
  const owned = new Set(ownedRelations(entity).map(([relation]) => relation));
  const changes: FieldChange[] = [];
  const children: Record<string, ChildrenDiff> = {};
  for (const field of visibleFields(entity)) {
    const before = from[field] ?? (field === entity.softDeleteField ? false : null);
    const after = to[field] ?? (field === entity.softDeleteField ? false : null);
    if (owned.has(field)) {
      children[field] = diffChildren(before, after);
      continue;
    }
    if (!same(before, after)) changes.push({ field, before, after });
  }
  return { changes, children };
}
