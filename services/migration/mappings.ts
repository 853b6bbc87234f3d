import type { Knex } from 'knex';
import { ENTITIES, type EntityName } from '../../contracts/entities';
import type { ExternalMappingEntry, ExternalMappingKey, ExternalMappings, ExternalSourceEntry } from '../../contracts/events';
import { activeClaim, lastEventOf } from '../claims/uniqueClaims';
import { emailReservationStream, userDecider } from '../identity/user.decider';
import { badRequest, DomainError } from '../shared/errors';
import type { EventStore } from '../shared/eventStore';
import { fieldTypeOf } from './fieldTypes';
import { allStagedRows } from './staging';
import { LIMITS } from '../../contracts/limits';
import { parseId } from '../shared/validate';

/**
 * The configuration step of the external-tool migration: the export's configuration rows (states,
 * statuses, users, ...) as sources, a suggested mapping for each (an existing entity of the same
 * name, e-mail for users, system name for statuses and fields; else create), and the checks of an
 * administrator's mapping (every target exists and is of the right kind; a created row's unique
 * name is free). A mapping entry maps, creates or skips one source row.
 */

export const MAPPING_KEYS: readonly ExternalMappingKey[] = [
  'states', 'statuses', 'users', 'roles', 'templates', 'templateFields', 'milestoneTypes', 'groups', 'issueTrackers', 'configurations', 'tags',
];

interface MappingDef {
  dataset: string;
  /** The entity a `map` targets (templateFields: caseField or resultField, by the entry's kind). */
  entity: EntityName;
  /** The source row's name as shown and matched. */
  nameOf(row: Record<string, unknown>): string;
  /** The column an existing entity is matched by (lower-cased, trimmed). */
  matchColumn: string;
}

const text = (v: unknown) => (typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : '');
const firstText = (row: Record<string, unknown>, ...keys: string[]) => keys.map((k) => text(row[k])).find((v) => v !== '') ?? '';
const named = (row: Record<string, unknown>) => firstText(row, 'name', 'title', 'display_name', 'label');

export const MAPPING_DEFS: Readonly<Record<ExternalMappingKey, MappingDef>> = {
  states: { dataset: 'states', entity: 'workflow', nameOf: named, matchColumn: 'name' },
  statuses: { dataset: 'statuses', entity: 'status', nameOf: named, matchColumn: 'system_name' },
  users: { dataset: 'users', entity: 'user', nameOf: (r) => firstText(r, 'email', 'email_address', 'user_email').toLowerCase(), matchColumn: 'email' },
  roles: { dataset: 'roles', entity: 'role', nameOf: named, matchColumn: 'name' },
  templates: { dataset: 'templates', entity: 'template', nameOf: named, matchColumn: 'name' },
  templateFields: { dataset: 'fields', entity: 'caseField', nameOf: (r) => firstText(r, 'name', 'system_name', 'display_name'), matchColumn: 'system_name' },
  milestoneTypes: { dataset: 'milestone_types', entity: 'milestoneType', nameOf: named, matchColumn: 'name' },
  groups: { dataset: 'groups', entity: 'group', nameOf: named, matchColumn: 'name' },
  issueTrackers: { dataset: 'issue_targets', entity: 'integration', nameOf: named, matchColumn: 'name' },
  configurations: { dataset: 'configs', entity: 'configuration', nameOf: named, matchColumn: 'name' },
  tags: { dataset: 'tags', entity: 'tag', nameOf: named, matchColumn: 'name' },
};

/** Source rows one mapping list may hold (the whole list travels in the job's events). */
export const MAX_SOURCE_ROWS = LIMITS.mappedRows;

export const emptyMappings = (): ExternalMappings => Object.fromEntries(MAPPING_KEYS.map((k) => [k, []])) as unknown as ExternalMappings;

/** The configuration rows of a staged export, per mapping key, with the hints the suggestions and the wizard use. */
export async function sourcesOf(knex: Knex, jobId: number): Promise<Record<ExternalMappingKey, ExternalSourceEntry[]>> {
  const sources = {} as Record<ExternalMappingKey, ExternalSourceEntry[]>;
  const fieldKinds = new Map<string, 'caseField' | 'resultField'>();
  for (const row of await allStagedRows(knex, jobId, 'template_fields')) {
    const result = row.target_type === 'result' || row.is_result === true || row.is_result === 1;
    if (row.field_id !== undefined) fieldKinds.set(String(row.field_id), result ? 'resultField' : 'caseField');
  }
  for (const key of MAPPING_KEYS) {
    const def = MAPPING_DEFS[key];
    const rows = await allStagedRows(knex, jobId, def.dataset);
    if (rows.length > MAX_SOURCE_ROWS) {
      throw badRequest('export-too-many-rows', `The export's ${def.dataset} has ${rows.length} rows; at most ${MAX_SOURCE_ROWS} are mapped`, { dataset: def.dataset, rows: rows.length });
    }
    sources[key] = rows.filter((r) => r.id !== undefined && r.id !== null).map((row) => {
      const hint: Record<string, unknown> = {};
      if (key === 'users') hint.name = firstText(row, 'name', 'full_name', 'display_name', 'username');
      if (key === 'statuses') Object.assign(hint, { systemName: text(row.system_name), color: text(row.color) });
      if (key === 'templateFields') Object.assign(hint, { kind: fieldKinds.get(String(row.id)) ?? 'caseField', type: fieldTypeOf(row) });
      return { sourceId: String(row.id), name: def.nameOf(row).slice(0, 1000), ...(Object.keys(hint).length > 0 && { hint }) };
    });
  }
  return sources;
}

/** The table of a mapping's target entity (templateFields: by the entry's kind). */
function targetEntity(key: ExternalMappingKey, entry: Pick<ExternalMappingEntry, 'kind'>): EntityName {
  return key === 'templateFields' ? (entry.kind ?? 'caseField') : MAPPING_DEFS[key].entity;
}

/** Existing, not deleted rows of an entity, by the lower-cased value of the column a source row is matched by. */
async function existingByName(knex: Knex, entity: EntityName, column: string): Promise<Map<string, number>> {
  const def = ENTITIES[entity];
  const query = knex(def.table).select('id', knex.raw(`lower(trim(??::text)) AS k`, [column])).orderBy('id');
  if (def.softDeleteField) query.where(def.fields[def.softDeleteField].column, false);
  const found = new Map<string, number>();
  for (const row of (await query) as Array<{ id: number; k: string | null }>) if (row.k !== null && !found.has(row.k)) found.set(row.k, row.id);
  return found;
}

/**
 * The user an e-mail address is claimed by (users' e-mails are unique through claims that outlive
 * a deleted user), or null when it is free: a placeholder for a claimed address would be refused.
 */
export async function emailClaimedBy(store: EventStore, email: string): Promise<number | null> {
  if (email === '') return null;
  return activeClaim(await lastEventOf(store, emailReservationStream(email)))?.ownerId ?? null;
}

/**
 * Why creating a placeholder for a source user would be refused (execute registers it:
 * identity.handlers.ts), or null: its e-mail claimed (by an existing or a deleted user), or an
 * e-mail or name the user rules refuse.
 */
export async function userCreateRefusal(store: EventStore, email: string, userName: string): Promise<{ code: string; message: string; details: Record<string, unknown> } | null> {
  const owner = await emailClaimedBy(store, email);
  if (owner !== null) {
    return { code: 'email-taken', message: `the e-mail ${email} is claimed by user ${owner} (an existing or a deleted account)`, details: { email, claimedBy: owner } };
  }
  const name = (userName || email).slice(0, 255);
  try {
    userDecider.decide({ type: 'RegisterUser', userId: 1, email, name, passwordHash: 'x', access: 'USER', isActive: false, now: new Date(0).toISOString() }, userDecider.initialState);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { code: err.code, message: err.message, details: { email } };
  }
  return null;
}

/**
 * The suggested mapping: each source row mapped to the existing entity matching it, else created;
 * a user no existing account matches whose placeholder would be refused (its e-mail still claimed
 * by a deleted account, an e-mail the user rules refuse) is skipped: neither a create nor a map
 * to the deleted account would be accepted.
 */
export async function suggestMappings(knex: Knex, store: EventStore, sources: Record<ExternalMappingKey, ExternalSourceEntry[]>): Promise<ExternalMappings> {
  const mappings = emptyMappings();
  for (const key of MAPPING_KEYS) {
    const def = MAPPING_DEFS[key];
    const byKind = new Map<EntityName, Map<string, number>>();
    const statusNames = key === 'statuses' ? await existingByName(knex, 'status', 'name') : null;
    for (const source of sources[key]) {
      const kind = key === 'templateFields' ? ((source.hint?.kind as 'caseField' | 'resultField' | undefined) ?? 'caseField') : undefined;
      const entity = targetEntity(key, { kind });
      if (!byKind.has(entity)) byKind.set(entity, await existingByName(knex, entity, def.matchColumn));
      // Statuses match by system name, then by name.
      const match = byKind.get(entity)!.get(((key === 'statuses' ? (source.hint?.systemName as string) || source.name : source.name) ?? '').toLowerCase())
        ?? statusNames?.get(source.name.toLowerCase());
      const refused = match === undefined && key === 'users' ? await userCreateRefusal(store, source.name, (source.hint?.name as string | undefined) ?? '') : null;
      const entry: ExternalMappingEntry = match !== undefined ? { sourceId: source.sourceId, action: 'map', targetId: match }
        : { sourceId: source.sourceId, action: refused === null ? 'create' : 'skip' };
      if (kind) entry.kind = kind;
      mappings[key].push(entry);
    }
  }
  return mappings;
}

/** The lists of mappings an administrator sent, each entry's shape checked (no job needed): a 400 naming the first bad one. */
export type GivenMappings = Partial<Record<ExternalMappingKey, ExternalMappingEntry[]>>;

export function readMappings(given: unknown): GivenMappings {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw badRequest('invalid-argument', 'mappings must be an object', { path: 'mappings' });
  const read: GivenMappings = {};
  for (const [key, list] of Object.entries(given)) {
    if (!MAPPING_KEYS.includes(key as ExternalMappingKey)) throw badRequest('invalid-argument', `Unknown mapping list "${key}"; the lists are ${MAPPING_KEYS.join(', ')}`, { path: `mappings.${key}`, allowed: MAPPING_KEYS });
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw badRequest('invalid-argument', `mappings.${key} must be a list`, { path: `mappings.${key}` });
    read[key as ExternalMappingKey] = list.map((raw, i) => readEntry(raw, `mappings.${key}[${i}]`, key as ExternalMappingKey));
  }
  return read;
}

/**
 * An administrator's mappings (readMappings), checked against the job and merged over `base` (the
 * current configuration, or the suggestions): entries given replace those of the same source row.
 * Throws a 400 naming the first bad entry (`details.path`): an unknown source row, a target that
 * does not exist or is of the wrong kind, a created row whose unique name is taken.
 */
export async function checkMappings(
  knex: Knex, store: EventStore, given: GivenMappings, base: ExternalMappings, sources: Record<ExternalMappingKey, ExternalSourceEntry[]>,
): Promise<ExternalMappings> {
  const merged = emptyMappings();
  for (const key of MAPPING_KEYS) {
    const list = given[key];
    const known = new Map(sources[key].map((s) => [s.sourceId, s]));
    const byId = new Map(base[key].map((e) => [e.sourceId, e]));
    if (list !== undefined) {
      const seen = new Set<string>();
      for (const [i, entry] of list.entries()) {
        const path = `mappings.${key}[${i}]`;
        if (!known.has(entry.sourceId)) throw badRequest('invalid-mapping', `${path}: the export has no ${MAPPING_DEFS[key].dataset} row with id ${entry.sourceId}`, { path: `${path}.sourceId`, sourceId: entry.sourceId });
        if (seen.has(entry.sourceId)) throw badRequest('invalid-mapping', `${path}: source row ${entry.sourceId} is mapped twice`, { path: `${path}.sourceId`, sourceId: entry.sourceId });
        seen.add(entry.sourceId);
        byId.set(entry.sourceId, entry);
      }
    }
    merged[key] = sources[key].map((s) => byId.get(s.sourceId) ?? { sourceId: s.sourceId, action: 'create' });
  }
  await checkTargets(knex, merged, sources);
  await checkUserCreates(store, merged, sources);
  return merged;
}

function readEntry(raw: unknown, path: string, key: ExternalMappingKey): ExternalMappingEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('invalid-argument', `${path} must be an object`, { path });
  const e = raw as Record<string, unknown>;
  for (const k of Object.keys(e)) {
    if (!['sourceId', 'action', 'targetId', 'kind'].includes(k)) throw badRequest('invalid-argument', `${path}: unknown field "${k}"`, { path: `${path}.${k}` });
  }
  const sourceId = typeof e.sourceId === 'number' ? String(e.sourceId) : e.sourceId;
  if (typeof sourceId !== 'string' || sourceId === '' || sourceId.length > 200) throw badRequest('invalid-argument', `${path}.sourceId must be the source row's id`, { path: `${path}.sourceId` });
  if (e.action !== 'map' && e.action !== 'create' && e.action !== 'skip') throw badRequest('invalid-argument', `${path}.action must be map, create or skip`, { path: `${path}.action`, allowed: ['map', 'create', 'skip'] });
  if (e.kind !== undefined && (key !== 'templateFields' || (e.kind !== 'caseField' && e.kind !== 'resultField')))
    throw badRequest('invalid-argument', `${path}.kind is caseField or resultField, for templateFields only`, { path: `${path}.kind` });
  if (e.action === 'map') {
    parseId(`${path}.targetId`, e.targetId, 'json');
  } else if (e.targetId !== undefined) {
    throw badRequest('invalid-argument', `${path}: targetId goes with action map only`, { path: `${path}.targetId` });
  }
  return { sourceId, action: e.action, ...(e.action === 'map' && { targetId: e.targetId as number }), ...(e.kind !== undefined && { kind: e.kind as 'caseField' | 'resultField' }) };
}

async function checkTargets(knex: Knex, mappings: ExternalMappings, sources: Record<ExternalMappingKey, ExternalSourceEntry[]>): Promise<void> {
  for (const key of MAPPING_KEYS) {
    const names = new Map(sources[key].map((s) => [s.sourceId, s.name]));
    const byEntity = new Map<EntityName, Array<{ entry: ExternalMappingEntry; index: number }>>();
    mappings[key].forEach((entry, index) => {
      if (entry.action !== 'map') return;
      const entity = targetEntity(key, entry);
      byEntity.set(entity, [...(byEntity.get(entity) ?? []), { entry, index }]);
    });
    for (const [entity, entries] of byEntity) {
      const def = ENTITIES[entity];
      const query = knex(def.table).whereIn('id', [...new Set(entries.map((e) => e.entry.targetId!))]).select('id');
      if (def.softDeleteField) query.where(def.fields[def.softDeleteField].column, false);
      const found = new Set((await query).map((r: { id: number }) => r.id));
      const missing = entries.find((e) => !found.has(e.entry.targetId!));
      if (missing) {
        throw badRequest('invalid-mapping', `mappings.${key}: source row ${missing.entry.sourceId} maps to ${entity} ${missing.entry.targetId}, which does not exist`, {
          path: `mappings.${key}[${missing.index}].targetId`, sourceId: missing.entry.sourceId, targetId: missing.entry.targetId, kind: entity,
        });
      }
    }
    // A created row takes its name: one already taken (by an existing row, or by another created row) is refused now, not mid-import.
    const creates = mappings[key].map((entry, index) => ({ entry, index })).filter(({ entry }) => entry.action === 'create');
    if (creates.length === 0 || key === 'states' || key === 'issueTrackers') continue;
    const taken = new Map<EntityName, Map<string, number>>();
    const claimed = new Map<string, string>();
    for (const { entry, index } of creates) {
      const entity = targetEntity(key, entry);
      if (!taken.has(entity)) taken.set(entity, await existingByName(knex, entity, MAPPING_DEFS[key].matchColumn));
      const name = (names.get(entry.sourceId) ?? '').toLowerCase();
      if (name === '') continue; // created under a generated name (importers.ts)
      const holder = taken.get(entity)!.get(name);
      const twin = claimed.get(`${entity}:${name}`);
      if (holder !== undefined || twin !== undefined) {
        throw badRequest('mapping-name-taken', `mappings.${key}: source row ${entry.sourceId} would create "${name}", which ${holder !== undefined ? `${entity} ${holder} has` : `source row ${twin} creates too`}; map it instead`, {
          path: `mappings.${key}[${index}].action`, sourceId: entry.sourceId, name, ...(holder !== undefined ? { existingId: holder } : { alsoCreatedBy: twin }),
        });
      }
      claimed.set(`${entity}:${name}`, entry.sourceId);
    }
  }
}

/** A placeholder user execute would refuse to register (its e-mail claimed, an e-mail or name refused): refused now. */
async function checkUserCreates(store: EventStore, mappings: ExternalMappings, sources: Record<ExternalMappingKey, ExternalSourceEntry[]>): Promise<void> {
  const byId = new Map(sources.users.map((s) => [s.sourceId, s]));
  const creates = [...mappings.users.entries()].filter(([, entry]) => entry.action === 'create' && byId.has(entry.sourceId));
  // One claim read per created user, 32 at a time; the first refused (in list order) is named.
  const refusals: Array<Awaited<ReturnType<typeof userCreateRefusal>>> = [];
  for (let i = 0; i < creates.length; i += 32) {
    refusals.push(...await Promise.all(creates.slice(i, i + 32).map(([, entry]) => {
      const source = byId.get(entry.sourceId)!;
      return userCreateRefusal(store, source.name, (source.hint?.name as string | undefined) ?? '');
    })));
  }
  for (const [n, [index, entry]] of creates.entries()) {
    const source = byId.get(entry.sourceId);
    const refusal = refusals[n];
    if (!refusal) continue;
    const path = `mappings.users[${index}].action`;
    if (refusal.code === 'email-taken') {
      throw badRequest('mapping-name-taken', `mappings.users: source row ${entry.sourceId} would create a user, but ${refusal.message}; map it to an existing user or skip it`, {
        path, sourceId: entry.sourceId, name: source!.name, ...refusal.details,
      });
    }
    throw badRequest('invalid-mapping', `mappings.users: source row ${entry.sourceId} cannot be created as a user: ${refusal.message}`, { path, sourceId: entry.sourceId, reason: refusal.code, ...refusal.details });
  }
}
