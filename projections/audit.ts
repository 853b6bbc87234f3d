import type { Knex } from 'knex';
import { ENTITIES, type EntityName, isEntityName } from '../contracts/entities';
import { type EventEnvelope, streamCategory } from '../contracts/envelope';
import { idKeyOf, rowsWrittenOf } from '../contracts/entityEvents';
import { SECRET_NAME } from '../contracts/secrets';
import type { Projection } from './runtime/projection';
import { upsertRecords } from './runtime/rowBatch';

/**
 * The audit trail: one row per event of the log (who, through which token or session, from where,
 * under which correlation id, which fields), with the project the event belongs to, so that GET
 * /api/audit can answer per project. The project comes from the event's own `projectId`, or along
 * the entity's `projectPath` through this projection's own map of entity → project, filled from
 * earlier events (so it depends on nothing but the log).
 */

const TABLES = { events: 'audit_events', projects: 'audit_entity_projects', pending: 'audit_pending_projects' } as const;

/** Field names whose values are credentials (or derived from them): never listed, even by name (contracts/secrets.ts). */
const SECRET_FIELD = SECRET_NAME;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const positiveInt = (v: unknown): number | undefined => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : undefined);

/**
 * What an event changed, by field name: the keys of `changes` for an update (only what changed is
 * there), otherwise the keys of the data. Sorted (PostgreSQL's jsonb keeps its own key order), no secrets.
 */
export function changedFieldsOf(data: unknown): string[] {
  if (!isObject(data)) return [];
  const fields = Object.keys(isObject(data.changes) ? data.changes : data);
  return fields.filter((f) => !SECRET_FIELD.test(f)).sort();
}

/** How an entity reaches its project: it is one, it names it, or it names a parent that has one. */
type ProjectHop = { kind: 'self' } | { kind: 'project'; scalar: string } | { kind: 'parent'; scalar: string; target: EntityName };

const HOPS = new Map<string, ProjectHop>();
for (const entity of Object.values(ENTITIES)) {
  if (entity.projectPath === undefined) continue;
  if (entity.projectPath.length === 0) {
    HOPS.set(entity.name, { kind: 'self' });
    continue;
  }
  const relation = entity.relations[entity.projectPath[0]];
  if (!relation?.scalar) continue;
  HOPS.set(entity.name, relation.target === 'project'
    ? { kind: 'project', scalar: relation.scalar }
    : { kind: 'parent', scalar: relation.scalar, target: relation.target });
}

interface EntityProject { projectId: number | null; parent: { entity: string; id: number } | null }

const keyOf = (entity: string, id: number) => `${entity}:${id}`;

/** The columns of audit_entity_projects, as ProjectMap writes them. */
const MAP_TYPES = { entity: 'text', entity_id: 'integer', project_id: 'integer', parent_entity: 'text', parent_id: 'integer' };

/** The (entity, id) → project map, as far as this batch needs it: loaded once, changed in memory, written back once. */
class ProjectMap {
  private readonly entries = new Map<string, EntityProject | null>();
  private readonly dirty = new Set<string>();

  constructor(private readonly trx: Knex.Transaction) {}

  /** Loads the entries of these keys, then (rarely needed) the parents of entries whose project is still unknown. */
  async load(keys: { entity: string; id: number }[]): Promise<void> {
    let wanted = keys;
    for (let round = 0; round < 4 && wanted.length > 0; round++) {
      const missing = [...new Map(wanted.filter((k) => !this.entries.has(keyOf(k.entity, k.id))).map((k) => [keyOf(k.entity, k.id), k])).values()];
      if (missing.length === 0) return;
      const { rows } = await this.trx.raw(
        `SELECT m.entity, m.entity_id, m.project_id, m.parent_entity, m.parent_id FROM ${TABLES.projects} m
         JOIN json_to_recordset(?::json) AS k(entity text, id integer) ON m.entity = k.entity AND m.entity_id = k.id`,
        [JSON.stringify(missing)]);
      for (const k of missing) this.entries.set(keyOf(k.entity, k.id), null);
      for (const r of rows as { entity: string; entity_id: number; project_id: number | null; parent_entity: string | null; parent_id: number | null }[]) {
        this.entries.set(keyOf(r.entity, r.entity_id), {
          projectId: r.project_id, parent: r.parent_entity !== null && r.parent_id !== null ? { entity: r.parent_entity, id: r.parent_id } : null,
        });
      }
      wanted = (rows as { project_id: number | null; parent_entity: string | null; parent_id: number | null }[])
        .filter((r) => r.project_id === null && r.parent_entity !== null && r.parent_id !== null)
        .map((r) => ({ entity: r.parent_entity!, id: r.parent_id! }));
    }
  }

  get(entity: string, id: number): EntityProject | null {
    return this.entries.get(keyOf(entity, id)) ?? null;
  }

  set(entity: string, id: number, value: EntityProject): void {
    this.entries.set(keyOf(entity, id), value);
    this.dirty.add(keyOf(entity, id));
  }

  /** The entity's project, walking up through parents whose project is known by now; null when not (yet) known. */
  resolve(entity: string, id: number, depth = 0): number | null {
    const entry = this.entries.get(keyOf(entity, id));
    if (!entry) return null;
    if (entry.projectId !== null || entry.parent === null || depth > 4) return entry.projectId;
    const projectId = this.resolve(entry.parent.entity, entry.parent.id, depth + 1);
    if (projectId !== null) this.set(entity, id, { ...entry, projectId });
    return projectId;
  }

  async flush(): Promise<void> {
    if (this.dirty.size === 0) return;
    const rows = [...this.dirty].sort().map((key) => {
      const [entity, id] = key.split(':');
      const e = this.entries.get(key)!;
      return { entity, entity_id: Number(id), project_id: e.projectId, parent_entity: e.parent?.entity ?? null, parent_id: e.parent?.id ?? null };
    });
    this.dirty.clear();
    await upsertRecords(this.trx, TABLES.projects, MAP_TYPES, rows,
      'ON CONFLICT (entity, entity_id) DO UPDATE SET project_id = EXCLUDED.project_id, parent_entity = EXCLUDED.parent_entity, parent_id = EXCLUDED.parent_id');
  }
}

/** Where an event sits: the stream's category (an entity name for entity streams) and the rest of the stream id. */
function subjectOf(event: EventEnvelope): { entity: string; entityId: string; numericId: number | null; hop: ProjectHop | undefined } {
  const entity = streamCategory(event.streamId);
  const entityId = event.streamId.length > entity.length ? event.streamId.slice(entity.length + 1) : '';
  const numericId = /^[1-9][0-9]{0,15}$/.test(entityId) && Number.isSafeInteger(Number(entityId)) ? Number(entityId) : null;
  return { entity, entityId, numericId, hop: isEntityName(entity) && numericId !== null ? HOPS.get(entity) : undefined };
}

/** A value the event sets: in its data (created) or among its changes (updated). */
function valueOf(data: Record<string, unknown>, field: string): number | undefined {
  return positiveInt(data[field]) ?? (isObject(data.changes) ? positiveInt(data.changes[field]) : undefined);
}

/** The rows of an external import's bulk chunk, with the project each names or the parent that has it. */
interface BulkRow { entity: string; id: number; projectId: number | null; parentKey: { entity: string; id: number } | null }
function bulkRowsOf(event: EventEnvelope): BulkRow[] {
  if (event.type !== 'ExternalImportRowsWritten' || !isObject(event.data)) return [];
  const written = rowsWrittenOf(event.data as { entity: string; fields: string[]; rows: unknown[][] });
  const hop = written ? HOPS.get(written.entity.name) : undefined;
  if (!written || !hop || hop.kind === 'self') return [];
  return written.rows.flatMap((row): BulkRow[] => {
    const id = positiveInt(row[idKeyOf(written.entity)]);
    if (id === undefined) return [];
    const target = positiveInt(row[hop.scalar]);
    if (hop.kind === 'project') return [{ entity: written.entity.name, id, projectId: target ?? null, parentKey: null }];
    return [{ entity: written.entity.name, id, projectId: null, parentKey: target === undefined ? null : { entity: hop.target, id: target } }];
  });
}

interface AuditRow {
  position: string; event_id: string; stream_id: string; type: string; entity: string; entity_id: string; project_id: number | null;
  actor_user_id: number | null; token_id: number | null; session_ref: string | null; via: string; ip: string | null;
  correlation_id: string; causation_id: string | null; recorded_at: string; changed_fields: string[];
}

const ROW_TYPES = `position bigint, event_id uuid, stream_id text, type text, entity text, entity_id text, project_id integer,
  actor_user_id integer, token_id integer, session_ref text, via text, ip text, correlation_id text, causation_id text,
  recorded_at timestamptz, changed_fields text[]`;
const ROW_COLUMNS = 'position, event_id, stream_id, type, entity, entity_id, project_id, actor_user_id, token_id, session_ref, via, ip, correlation_id, causation_id, recorded_at, changed_fields';
const CHUNK = 2000;

export const auditProjection: Projection = {
  name: 'audit',
  // An import chunk's columns are the read model's business, a migration's chunk plan the provenance's: this projection reads their summary.
  shallow: ['TestResultsImported', 'ExternalImportChunkPlanned'],
  tables: [TABLES.events, TABLES.projects, TABLES.pending],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    const map = new ProjectMap(trx);
    const subjects = events.map(subjectOf);
    const keys: { entity: string; id: number }[] = [];
    subjects.forEach((s, i) => {
      if (!s.hop || s.numericId === null) return;
      keys.push({ entity: s.entity, id: s.numericId });
      const data = isObject(events[i].data) ? events[i].data as Record<string, unknown> : {};
      const parentId = s.hop.kind === 'parent' ? valueOf(data, s.hop.scalar) : undefined;
      if (s.hop.kind === 'parent' && parentId !== undefined) keys.push({ entity: s.hop.target, id: parentId });
    });
    const bulk = events.flatMap(bulkRowsOf);
    for (const { parentKey } of bulk) if (parentKey) keys.push(parentKey);
    await map.load(keys);
    // Rows an external import wrote in bulk have no stream of their own yet: their projects are known from the chunk.
    for (const { entity, id, projectId, parentKey } of bulk) {
      map.set(entity, id, { projectId: projectId ?? (parentKey ? map.resolve(parentKey.entity, parentKey.id) : null), parent: parentKey ?? null });
    }

    const rows: AuditRow[] = [];
    const pending: { position: string; entity: string; entity_id: number }[] = [];
    events.forEach((event, i) => {
      const { entity, entityId, numericId, hop } = subjects[i];
      const data = isObject(event.data) ? event.data as Record<string, unknown> : {};
      const named = valueOf(data, 'projectId') ?? null;
      let projectId = named;
      if (hop && numericId !== null) {
        if (hop.kind === 'self') {
          projectId = numericId;
          map.set(entity, numericId, { projectId, parent: null });
        } else {
          const hopId = valueOf(data, hop.scalar);
          if (hop.kind === 'project' && hopId !== undefined) map.set(entity, numericId, { projectId: hopId, parent: null });
          if (hop.kind === 'parent' && hopId !== undefined) {
            map.set(entity, numericId, { projectId: named ?? map.resolve(hop.target, hopId), parent: { entity: hop.target, id: hopId } });
          }
          projectId ??= map.resolve(entity, numericId);
          // Not known yet: the parent's events have not been applied (on Kafka, its partition may run behind).
          if (projectId === null && map.get(entity, numericId)?.parent) pending.push({ position: event.position, entity, entity_id: numericId });
        }
      }
      const { actor } = event.metadata;
      rows.push({
        position: event.position, event_id: event.id, stream_id: event.streamId, type: event.type, entity, entity_id: entityId,
        project_id: projectId, actor_user_id: actor.userId, token_id: actor.tokenId ?? null, session_ref: actor.sessionRef ?? null,
        via: actor.via, ip: event.metadata.ip ?? null, correlation_id: event.metadata.correlationId,
        causation_id: event.metadata.causationId ?? null, recorded_at: event.recordedAt, changed_fields: changedFieldsOf(event.data),
      });
    });

    // json, not jsonb: parsed once and not converted first, which makes the bulk insert of a rebuild a third faster.
    for (let i = 0; i < rows.length; i += CHUNK) {
      await trx.raw(`INSERT INTO ${TABLES.events} (${ROW_COLUMNS}) SELECT ${ROW_COLUMNS} FROM json_to_recordset(?::json) AS x(${ROW_TYPES})
        ON CONFLICT (position) DO NOTHING`, [JSON.stringify(rows.slice(i, i + CHUNK))]);
    }
    if (pending.length > 0) {
      await trx.raw(`INSERT INTO ${TABLES.pending} (position, entity, entity_id) SELECT position, entity, entity_id
        FROM json_to_recordset(?::json) AS x(position bigint, entity text, entity_id integer) ON CONFLICT (position) DO NOTHING`, [JSON.stringify(pending)]);
    }
    await map.flush();
    await resolvePending(trx, map);
  },
};

/**
 * Rows whose project was not known when they were applied get it once their parent's events are
 * in. On the direct transport (and in a rebuild) parents always come first and this finds nothing;
 * on Kafka, partitions are applied independently, so a child may come before its parent.
 */
async function resolvePending(trx: Knex.Transaction, map: ProjectMap): Promise<void> {
  const waiting = (await trx(TABLES.pending).select('position', 'entity', 'entity_id').orderBy('position')) as { position: string; entity: string; entity_id: number }[];
  if (waiting.length === 0) return;
  await map.load(waiting.map((w) => ({ entity: w.entity, id: w.entity_id })));
  const resolved = waiting.map((w) => ({ position: w.position, project_id: map.resolve(w.entity, w.entity_id) })).filter((r) => r.project_id !== null);
  if (resolved.length === 0) return;
  await trx.raw(`UPDATE ${TABLES.events} a SET project_id = x.project_id FROM json_to_recordset(?::json) AS x(position bigint, project_id integer)
    WHERE a.position = x.position`, [JSON.stringify(resolved)]);
  await trx(TABLES.pending).whereIn('position', resolved.map((r) => r.position)).delete();
  await map.flush();
}
