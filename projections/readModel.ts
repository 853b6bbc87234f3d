import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import { type DataOf, externalImportStream, type ImportedSuiteProperty } from '../contracts/events';
import { copyRows } from '../infra/postgres/copy';
import { SUITE_PROPERTY_LIMITS } from '../contracts/limits';
import { ENTITIES, type EntityDef, historyTableOf } from '../contracts/entities';
import { entityEventOf, eventFields, eventTypesOf, idKeyOf, isForeignKey, linkField, linkRelations, ownedRelations, rowsWrittenOf } from '../contracts/entityEvents';
import { catalogueTables, columnType, historyTables } from './migrations/catalogueTables';
import type { Projection } from './runtime/projection';
import { type ColumnTypes, insertRecords, RowBatch, RowCache, type VersionedRow } from './runtime/rowBatch';
import { countCaseVersion, ProjectDays, refreshStatistics, type Touched, touchedNothing } from './statistics';
import { queueStatistics } from './statisticsQueue';

/**
 * The read model behind the model API: one table per catalogue entity, kept from the generic
 * entity events (contracts/entityEvents.ts) and the folder events. Many-to-many links and owned
 * children arrive as whole lists on their owner's events and replace what the tables held; every
 * change of a test case also adds a row to its version history.
 *
 * Every row carries `valid_from`, the position of the event that wrote it as it is, and every
 * version a change replaces or removes goes to the table's history table with `valid_to`, the
 * position that did: the model API reads `asOf` any position from them (docs/history.md).
 */

function columnTypesOf(entity: EntityDef): ColumnTypes {
  const types: ColumnTypes = { revision: 'bigint', valid_from: 'bigint' };
  for (const f of Object.values(entity.fields)) types[f.column] = columnType(f);
  return types;
}

type Values = Record<string, unknown>;

/** Event values (keyed by field) → columns of the entity's table. */
function toColumns(entity: EntityDef, values: Values): Values {
  const row: Values = {};
  for (const [name, value] of Object.entries(values)) {
    const f = entity.fields[name];
    if (f) row[f.column] = value;
  }
  return row;
}

/** Columns of a new row before its event's values: defaults, and null for what older event versions lack. */
const DEFAULT_ROWS = new Map<string, Values>();
function createdDefaults(entity: EntityDef): Values {
  let row = DEFAULT_ROWS.get(entity.name);
  if (!row) {
    row = {};
    const carried = new Set(eventFields(entity));
    for (const [field, f] of Object.entries(entity.fields)) {
      if (f.default !== undefined) row[f.column] = f.default;
      else if (carried.has(field)) row[f.column] = null;
    }
    DEFAULT_ROWS.set(entity.name, row);
  }
  return row;
}

const FOLDERS = ENTITIES.repositoryFolder;

/**
 * A case's version after one more change of its own. Counted from the row rather than the stream
 * revision: a case a result import created is version 1 without a Created event on its stream.
 */
const nextVersion = (row: Values) => Number(row.current_version) + 1;
const CASES = ENTITIES.repositoryCase;

/** A list given on an owner's event, with the event's position. */
interface Given<T> { position: string; items: T[] }

/**
 * Child rows and link lists replaced in this batch, flushed after the owners' rows. Each owner
 * keeps every list it was given, in order: the rows it had go to the history table closed at the
 * first, each list but the last goes there closed at the next, the last is what the table holds.
 */
class Replacements {
  readonly children = new Map<string, Map<number, Given<Values>[]>>();
  readonly links = new Map<string, Map<number, Given<number>[]>>();
  /** One per applied case event, with the case row as it was right after it. */
  readonly versions: { values: Values; row: VersionedRow }[] = [];
  /**
   * Owners (`<entity>:<id>`) created in this batch by an import's bulk chunk: they have no children or links yet
   * (the same id is never in a table twice: ids are reserved), so none are deleted before theirs go in.
   */
  readonly fresh = new Set<string>();

  /** `copy`: in a rebuild, the versions are written with COPY, each with its snapshot (RowBatch's `copy`). */
  constructor(private readonly copy = false) {}

  child(table: string, parentId: number, rows: Values[], position: string): void {
    given(this.children, table, parentId).push({ position, items: rows });
  }

  link(table: string, ownerId: number, ids: number[], position: string): void {
    given(this.links, table, ownerId).push({ position, items: ids });
  }

  async flush(trx: Knex.Transaction): Promise<void> {
    for (const entity of Object.values(ENTITIES)) {
      for (const [, relation] of ownedRelations(entity)) {
        const child = ENTITIES[relation.target];
        const byParent = this.children.get(child.table);
        if (!byParent) continue;
        await closeReplaced(trx, child.table, relation.foreignKey, byParent, (id) => this.fresh.has(`${entity.name}:${id}`));
        await insertGiven(trx, child.table, columnTypesWithoutRevision(child), byParent,
          (parentId, item) => ({ ...toColumns(child, item), id: item.id, [relation.foreignKey]: parentId }));
      }
      for (const [, relation] of linkRelations(entity)) {
        const { table, sourceKey, targetKey } = relation.through!;
        const byOwner = this.links.get(table);
        if (!byOwner) continue;
        await closeReplaced(trx, table, sourceKey, byOwner, (id) => this.fresh.has(`${entity.name}:${id}`));
        await insertGiven(trx, table, { [sourceKey]: 'integer', [targetKey]: 'integer', valid_from: 'bigint' }, byOwner,
          (ownerId, id) => ({ [sourceKey]: ownerId, [targetKey]: id }));
      }
    }
    if (this.versions.length > 0 && this.copy) {
      await copyRows(trx, 'repository_case_versions', ['repository_case_id', 'version', 'title', 'snapshot', 'changed_by_id', 'created_at', 'valid_from'],
        this.versions.map(({ values: v, row }) => [v.repository_case_id, v.version, row.title, JSON.stringify(caseSnapshot(row)), v.changed_by_id, v.created_at, v.valid_from]));
    } else if (this.versions.length > 0) {
      // No ON CONFLICT: a version is only added when its case row applied the event, so a redelivery adds none.
      // The latest version of each case is the row as flushed: PostgreSQL builds its snapshot from
      // the table (no JSON round trip); earlier versions in the same batch carry theirs from here.
      const latest = new Map<unknown, number>();
      this.versions.forEach((v, i) => latest.set(v.values.repository_case_id, i));
      const fromTable = this.versions.filter((_, i) => latest.get(this.versions[i].values.repository_case_id) === i).map((v) => v.values);
      const earlier = this.versions.filter((_, i) => latest.get(this.versions[i].values.repository_case_id) !== i)
        .map(({ values, row }) => ({ ...values, title: row.title, snapshot: caseSnapshot(row) }));
      const types = columnTypesWithoutRevision(ENTITIES.repositoryCaseVersion);
      delete types.id;
      await insertRecords(trx, 'repository_case_versions', types, earlier);
      for (let i = 0; i < fromTable.length; i += 5000) {
        await trx.raw(`INSERT INTO repository_case_versions (repository_case_id, version, title, snapshot, changed_by_id, created_at, valid_from)
          SELECT x.repository_case_id, x.version, c.title, ${SNAPSHOT_SQL}, x.changed_by_id, x.created_at, x.valid_from
          FROM json_to_recordset(?::json) AS x(repository_case_id integer, version integer, changed_by_id integer, created_at timestamptz, valid_from bigint)
          JOIN repository_cases c ON c.id = x.repository_case_id`, [JSON.stringify(fromTable.slice(i, i + 5000))]);
      }
    }
  }
}

function columnTypesWithoutRevision(entity: EntityDef): ColumnTypes {
  const { revision: _r, ...types } = columnTypesOf(entity);
  return types;
}

function given<T>(lists: Map<string, Map<number, Given<T>[]>>, table: string, ownerId: number): Given<T>[] {
  let byOwner = lists.get(table);
  if (!byOwner) lists.set(table, (byOwner = new Map()));
  let list = byOwner.get(ownerId);
  if (!list) byOwner.set(ownerId, (list = []));
  return list;
}

/** The columns a table has (its history table has them too, and `valid_to`), read once per process. */
const COLUMNS = new Map<string, Promise<string[]>>();
function columnsOfTable(trx: Knex.Transaction, table: string): Promise<string[]> {
  let columns = COLUMNS.get(table);
  if (!columns) {
    columns = trx.raw(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`, [table])
      .then(({ rows }) => (rows as { column_name: string }[]).map((r) => `"${r.column_name}"`));
    columns.catch(() => COLUMNS.delete(table));
    COLUMNS.set(table, columns);
  }
  return columns;
}

/**
 * Copies the rows of `table` that `from` selects (a FROM clause naming the table `t`) to its
 * history table, closed at `validTo` (an SQL expression over `from`), before they change.
 */
async function closeVersions(trx: Knex.Transaction, table: string, from: string, validTo: string, bindings: Knex.RawBinding[]): Promise<void> {
  const columns = await columnsOfTable(trx, table);
  await trx.raw(`INSERT INTO "${historyTableOf(table)}" (${columns.join(', ')}, valid_to) SELECT ${columns.map((c) => `t.${c}`).join(', ')}, ${validTo} FROM ${from}`, bindings);
}

/** Deletes the rows of the owners that are given new lists (not the fresh ones), keeping them in history closed at each owner's first list. */
async function closeReplaced<T>(trx: Knex.Transaction, table: string, ownerKey: string, byOwner: Map<number, Given<T>[]>, fresh: (id: number) => boolean): Promise<void> {
  const owners = [...byOwner.keys()].filter((id) => !fresh(id));
  if (owners.length === 0) return;
  const columns = await columnsOfTable(trx, table);
  await trx.raw(`WITH t AS (DELETE FROM "${table}" WHERE "${ownerKey}" = ANY(?::integer[]) RETURNING *)
    INSERT INTO "${historyTableOf(table)}" (${columns.join(', ')}, valid_to) SELECT ${columns.map((c) => `t.${c}`).join(', ')}, x.p
    FROM t JOIN unnest(?::integer[], ?::bigint[]) AS x(id, p) ON t."${ownerKey}" = x.id`, [owners, owners, owners.map((id) => byOwner.get(id)![0].position)]);
}

/** Inserts each owner's last list into `table` and the lists before it into its history table. */
async function insertGiven<T>(trx: Knex.Transaction, table: string, types: ColumnTypes, byOwner: Map<number, Given<T>[]>, row: (ownerId: number, item: T) => Values): Promise<void> {
  const live: Values[] = [];
  const past: Values[] = [];
  for (const [ownerId, lists] of byOwner) {
    lists.forEach(({ position, items }, i) => {
      const next = lists[i + 1]?.position;
      for (const item of items) (next === undefined ? live : past).push({ ...row(ownerId, item), valid_from: position, ...(next !== undefined && { valid_to: next }) });
    });
  }
  await insertRecords(trx, table, types, live);
  await insertRecords(trx, historyTableOf(table), { ...types, valid_to: 'bigint' }, past);
}

/** What a case version keeps: the case's own values after the change (not its ids, counters or timestamps). */
const SNAPSHOT_FIELDS = Object.entries(CASES.fields).filter(([name, f]) => f.writable || isForeignKey(CASES, name));
function caseSnapshot(row: VersionedRow): Values {
  const snapshot: Values = {};
  for (const [name, f] of SNAPSHOT_FIELDS) snapshot[name] = row[f.column];
  snapshot.isDeleted = row.is_deleted;
  return snapshot;
}
/** The same snapshot, built by PostgreSQL from the case row `c`. */
const SNAPSHOT_SQL = `jsonb_build_object(${[...SNAPSHOT_FIELDS.map(([name, f]) => `'${name}', c."${f.column}"`), `'isDeleted', c.is_deleted`].join(', ')})`;

/** How a live batch counts the statistics of what it touched (a rebuild always counts them in its transaction). */
type CountStatistics = (trx: Knex.Transaction, touched: Touched) => Promise<void>;

/**
 * The read model as the projectors run it: a batch queues the statistics of what it touched, for a
 * statistics worker to count after it commits (projections/statisticsQueue.ts). A process that runs
 * it runs a worker too (startStatisticsWorker); a test that applies batches itself calls
 * countPendingStatistics.
 */
export const readModelProjection: Projection = readModel(queueStatistics);

function readModel(countStatistics: CountStatistics): Projection {
  return {
    name: 'readModel',
    // A migration's chunk plan (source ids → new ids) is the provenance's (projections/externalImports.ts).
    shallow: ['ExternalImportChunkPlanned'],
    tables: [...catalogueTables(), ...historyTables().map(({ table }) => historyTableOf(table)), 'history_kept', 'repository_case_aliases', 'test_run_suite_outputs', 'case_quarantines', 'statistics_pending'],

    apply: (trx, events) => applyEvents(trx, events, countStatistics),

    /**
     * A rebuild counts the project days (statistics) across its batches and writes them once at its
     * end, and keeps the rows it wrote of the tables only RowBatch writes (ROW_CACHED) across batches.
     */
    rebuilding() {
      const rebuild: Rebuild = { days: new ProjectDays(), caches: new Map() };
      return {
        apply: (trx, events) => applyEvents(trx, events, (t, touched) => refreshStatistics(t, touched, rebuild.days), rebuild),
        finish: (trx) => rebuild.days.write(trx),
        mark: () => {
          const days = rebuild.days.copy();
          return () => {
            rebuild.days = days;
            // The rows kept may be the failed page's: they are read again from the tables.
            rebuild.caches.clear();
          };
        },
      };
    },
  };
}

interface Rebuild { days: ProjectDays; caches: Map<string, RowCache> }

/**
 * The entities whose rows a rebuild keeps across its batches: not the run cases (result imports
 * update their rows with SQL of their own), nor owned children (replaced as lists with their
 * owner). Cases are kept too: the few of their rows a result import adopts or a rename re-keys
 * with SQL of its own are forgotten then (forgetCasesWrittenBySql).
 */
const ROW_CACHED = new Set(Object.values(ENTITIES).map((e) => e.name).filter((name) => name !== 'testRunCase'
  && !Object.values(ENTITIES).some((owner) => [...ownedRelations(owner)].some(([, r]) => r.target === name))));

/** After applyImportedChunks and applyAliases: the case (and run) rows they changed with SQL are read again when next needed. */
function forgetCasesWrittenBySql(rebuild: Rebuild | undefined, events: EventEnvelope[]): void {
  const runs = rebuild?.caches.get(ENTITIES.testRun.name);
  if (runs) {
    // A run given suite properties (addSuiteProperties) is read again too.
    for (const event of events) {
      if (event.type === 'TestResultsImported' && (event.data as DataOf<'TestResultsImported'>).suiteProperties?.name.length > 0) runs.delete((event.data as DataOf<'TestResultsImported'>).testRunId);
    }
  }
  const cache = rebuild?.caches.get(CASES.name);
  if (!cache) return;
  for (const event of events) {
    if (event.type === 'TestResultsImported') for (const id of (event.data as DataOf<'TestResultsImported'>).adopted?.caseId ?? []) cache.delete(id);
    if (event.type === 'RepositoryCaseAliasAdded') cache.delete((event.data as DataOf<'RepositoryCaseAliasAdded'>).caseId);
  }
}

/** Events applied with SQL of their own after the batch's rows are written (result import chunks, renamed cases' keys). */
const APPLIED_BY_SQL: ReadonlySet<string> = new Set(['TestResultsImported', 'RepositoryCaseAliasAdded']);
/** Events whose rows RowBatch folds (the generic aggregates, folders, external import rows). */
const foldsRows = (type: string) => entityEventOf(type) !== null || type.startsWith('RepositoryFolder') || type === 'ExternalImportRowsWritten';

/**
 * Applies a batch in segments: rows are folded and written first, the events applied by SQL of
 * their own after them, so a segment ends where a folded event follows one applied by SQL (a case
 * an import created, then renamed, then deleted, in one batch: each in the order of the log).
 */
async function applyEvents(trx: Knex.Transaction, events: EventEnvelope[], countStatistics: CountStatistics, rebuild?: Rebuild): Promise<void> {
  let start = 0;
  let bySql = false;
  for (let i = 0; i < events.length; i++) {
    if (bySql && foldsRows(events[i].type)) {
      await applySegment(trx, events.slice(start, i), countStatistics, rebuild);
      start = i;
      bySql = false;
    }
    if (APPLIED_BY_SQL.has(events[i].type)) bySql = true;
  }
  await applySegment(trx, start === 0 ? events : events.slice(start), countStatistics, rebuild);
}

/**
 * Applies a segment of a batch. With `rebuild`, a rebuild's: the project days' counts are added to
 * it rather than written, the rows of creations are not looked for, rows are written with COPY,
 * and some are kept in memory across batches.
 */
async function applySegment(trx: Knex.Transaction, events: EventEnvelope[], countStatistics: CountStatistics, rebuild?: Rebuild): Promise<void> {
  const batches = new Map<string, RowBatch>();
  const cacheOf = (entity: EntityDef) => {
    if (!rebuild || !ROW_CACHED.has(entity.name)) return undefined;
    let cache = rebuild.caches.get(entity.name);
    if (!cache) rebuild.caches.set(entity.name, (cache = new RowCache()));
    return cache;
  };
  const batchOf = (entity: EntityDef) => {
    let batch = batches.get(entity.name);
    if (!batch) {
      batches.set(entity.name, (batch = new RowBatch(entity.table, columnTypesOf(entity), historyTableOf(entity.table), { copy: rebuild !== undefined, cache: cacheOf(entity) })));
    }
    return batch;
  };
  const days = rebuild?.days;
  const createdHere = new Set<string>();
  const replaced = new Replacements(rebuild !== undefined);
  const relevant: { event: EventEnvelope; entity: EntityDef; id: number; kind: 'created' | 'updated' | 'deleted'; bulkJob?: number }[] = [];
  for (const event of events) {
    if (event.type === 'ExternalImportRowsWritten') {
      // Each row as its entity's Created event, at revision -1: the row has no stream of its own yet.
      const d = event.data as DataOf<'ExternalImportRowsWritten'>;
      const written = rowsWrittenOf(d);
      if (!written) continue;
      const created = eventTypesOf(written.entity).created;
      // New rows (their ids were reserved for the chunk): nothing to load first, no old children to replace.
      for (const data of written.rows) {
        const id = data[idKeyOf(written.entity)] as number;
        batchOf(written.entity);
        replaced.fresh.add(`${written.entity.name}:${id}`);
        relevant.push({ event: { ...event, type: created, data, revision: '-1' }, entity: written.entity, id, kind: 'created', bulkJob: d.jobId });
      }
      continue;
    }
    const folderKind = event.type.startsWith('RepositoryFolder') ? event.type.slice('RepositoryFolder'.length).toLowerCase() : null;
    const target = folderKind ? { entity: FOLDERS, kind: folderKind as 'created' | 'updated' | 'deleted' } : entityEventOf(event.type);
    if (!target) continue;
    const id = (event.data as Values)[idKeyOf(target.entity)] as number;
    // A rebuild starts from empty tables: the row a creation makes cannot be there yet, nor before it is made.
    const key = `${target.entity.name}:${id}`;
    if (days && target.kind === 'created') createdHere.add(key);
    if (!(days && createdHere.has(key))) batchOf(target.entity).want(id);
    else batchOf(target.entity);
    relevant.push({ event, id, ...target });
  }
  const imported = events.filter((e) => e.type === 'TestResultsImported');
  const touched = touchedBy(relevant, imported, events);
  if (relevant.length === 0) {
    await applyImportedChunks(trx, imported);
    await applyQuarantines(trx, events);
    await applyAliases(trx, events);
    forgetCasesWrittenBySql(rebuild, events);
    return countStatistics(trx, touched);
  }
  for (const batch of batches.values()) await batch.load(trx);

  for (const { event, entity, id, kind, bulkJob } of relevant) {
    const rows = batchOf(entity);
    const data = event.data as Values;
    const replaceLists = (values: Values) => {
      for (const [name, relation] of ownedRelations(entity)) {
        if (values[name] !== undefined) replaced.child(ENTITIES[relation.target].table, id, values[name] as Values[], event.position);
      }
      for (const [name, relation] of linkRelations(entity)) {
        if (values[linkField(name)] !== undefined) replaced.link(relation.through!.table, id, values[linkField(name)] as number[], event.position);
      }
    };
    switch (kind) {
      case 'created': {
        const values = entity === FOLDERS ? { name: data.name, projectId: data.projectId, parentId: data.parentId } : (data as Values);
        rows.apply(id, event, () => {
          replaceLists(values);
          return {
            id,
            ...createdDefaults(entity),
            ...toColumns(entity, values),
            ...(entity.softDeleteField && { [entity.fields[entity.softDeleteField].column]: false }),
            ...(entity.fields.currentVersion && { current_version: bulkJob === undefined ? Number(event.revision) + 1 : 1 }),
            ...(bulkJob !== undefined && { external_import_job_id: bulkJob }),
            created_at: data.createdAt,
            ...(entity.fields.updatedAt && { updated_at: data.createdAt }),
          };
        });
        break;
      }
      case 'updated': {
        const changes = data.changes as Values;
        rows.apply(id, event, (row) => {
          if (!row) return undefined;
          replaceLists(changes);
          return {
            ...row,
            ...toColumns(entity, changes),
            ...(entity.fields.currentVersion && { current_version: nextVersion(row) }),
            updated_at: data.updatedAt,
          };
        });
        break;
      }
      case 'deleted':
        if (!entity.softDeleteField) {
          rows.remove(id, event);
          break;
        }
        rows.apply(id, event, (row) => row && {
          ...row,
          [entity.fields[entity.softDeleteField!].column]: true,
          ...(entity.fields.currentVersion && { current_version: nextVersion(row) }),
          updated_at: data.deletedAt,
        });
        break;
    }
    if (entity === CASES) {
      const row = batchOf(CASES).peek(id);
      if (row && row.revision === BigInt(event.revision)) {
        replaced.versions.push({
          values: {
            repository_case_id: id, version: row.current_version as number, changed_by_id: event.metadata.actor.userId ?? null, created_at: event.recordedAt, valid_from: event.position,
          },
          row,
        });
      }
    }
  }
  for (const batch of batches.values()) await batch.flush(trx);
  await replaced.flush(trx);
  await applyImportedChunks(trx, imported);
  await applyQuarantines(trx, events);
  await applyAliases(trx, events);
  forgetCasesWrittenBySql(rebuild, events);
  for (const { values, row } of replaced.versions) countCaseVersion(touched, row.project_id as number, values.created_at as string, values.version as number);
  forgetRolledBack(touched, relevant, batches);
  await countStatistics(trx, touched);
}

/** The sets of Touched a deleted run, run case or result is counted in. */
const TOUCHED_BY_DELETION: Readonly<Record<string, ReadonlyArray<'runs' | 'runTotals' | 'runCases' | 'results'>>> = {
  testRun: ['runs', 'runTotals'], testRunCase: ['runCases'], testRunResult: ['results'],
};

/**
 * The runs, run cases and results a migration's rollback deletes (rows its job wrote, deleted
 * under the job's correlation id) are counted out when the rollback ends, all at once, as they
 * were counted in when the job ended: batch by batch, each batch of deleted results recomputed the
 * whole history of every case it touched (some 27 s of database time for 100,000 results).
 */
function forgetRolledBack(touched: Touched, relevant: { event: EventEnvelope; entity: EntityDef; id: number; kind: string }[], batches: Map<string, RowBatch>): void {
  for (const { event, entity, id, kind } of relevant) {
    const sets = TOUCHED_BY_DELETION[entity.name];
    if (kind !== 'deleted' || !sets) continue;
    const job = batches.get(entity.name)?.peek(id)?.external_import_job_id;
    if (typeof job !== 'number' || event.metadata.correlationId !== externalImportStream(job)) continue;
    for (const set of sets) touched[set].delete(id);
  }
}

/**
 * What the statistics (projections/statistics.ts) recompute after this batch: the runs, run cases
 * and results its events wrote, and the case versions a result import's chunks added (the other
 * case versions are counted as they are made). A run changed in what its executions are counted
 * by (its configuration or branch, or deleted) is touched whole, its statistics alone otherwise.
 * The runs, run cases and results an external-tool migration writes in bulk are counted when its
 * job ends (completed, failed or cancelled): all of the job's runs and cases, once; and counted out
 * once more when its rollback ends (forgetRolledBack).
 */
function touchedBy(relevant: { event: EventEnvelope; entity: EntityDef; id: number; kind: string; bulkJob?: number }[], imported: EventEnvelope[], events: EventEnvelope[]): Touched {
  const touched = touchedNothing();
  for (const { event, entity, id, kind, bulkJob } of relevant) {
    // A migration's bulk rows count when their job ends (below), all at once.
    if (bulkJob !== undefined) continue;
    if (entity.name === 'testRunCase') touched.runCases.add(id);
    else if (entity.name === 'testRunResult') touched.results.add(id);
    else if (entity.name === 'testRun') {
      const changes = kind === 'updated' ? Object.keys((event.data as { changes: Values }).changes) : [];
      if (kind === 'deleted' || changes.some((f) => RUN_CONTEXT.has(f))) touched.runs.add(id);
      else touched.runTotals.add(id);
    }
  }
  // A chunk's new run cases are added to their run's totals; an older run case a chunk changed (a
  // later result of a case imported before) has its run counted whole (statistics.ts).
  for (const event of imported) {
    const d = event.data as DataOf<'TestResultsImported'>;
    let created = touched.importedRunCases.get(d.testRunId);
    if (!created) touched.importedRunCases.set(d.testRunId, (created = new Set()));
    for (const id of d.runCases.testRunCaseId) created.add(id);
    if (d.cases.caseId.length > 0) countCaseVersion(touched, d.projectId, d.importedAt, 1, d.cases.caseId.length);
    for (const id of d.cases.caseId) touched.freshCases.add(id);
  }
  for (const event of imported) {
    const d = event.data as DataOf<'TestResultsImported'>;
    const created = touched.importedRunCases.get(d.testRunId)!;
    for (const id of d.results.testRunCaseId) if (!created.has(id)) touched.runCases.add(id);
  }
  for (const event of events) {
    if (JOB_ENDED.has(event.type)) touched.jobs.add((event.data as { jobId: number }).jobId);
  }
  return touched;
}

/** The end of an external-tool migration job, or of its rollback: when the runs and run cases it wrote in bulk are counted (in, or out). */
const JOB_ENDED: ReadonlySet<string> = new Set(['ExternalImportCompleted', 'ExternalImportFailed', 'ExternalImportCancelled', 'ExternalImportRolledBack']);

/** The fields of a run its executions are counted by (projections/statistics.ts). */
const RUN_CONTEXT = new Set(['configId', 'branch', 'projectId', 'isDeleted']);

/** Quarantined cases (CaseQuarantined / CaseReleased): each case's state now, with the last reason, who and when. */
async function applyQuarantines(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
  for (const event of events) {
    if (event.type !== 'CaseQuarantined' && event.type !== 'CaseReleased') continue;
    const d = event.data as DataOf<'CaseQuarantined'>;
    const quarantined = event.type === 'CaseQuarantined';
    await trx.raw(`INSERT INTO case_quarantines (repository_case_id, project_id, is_quarantined, reason, changed_by_id, changed_at, quarantined_since)
      VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (repository_case_id) DO UPDATE SET project_id = EXCLUDED.project_id, is_quarantined = EXCLUDED.is_quarantined,
        reason = EXCLUDED.reason, changed_by_id = EXCLUDED.changed_by_id, changed_at = EXCLUDED.changed_at, quarantined_since = EXCLUDED.quarantined_since`,
    [d.caseId, d.projectId, quarantined, d.reason, event.metadata.actor.userId ?? null, d.at, quarantined ? d.at : null]);
  }
}

/**
 * Renamed cases (RepositoryCaseAliasAdded): the old identity key becomes an alias of the case and
 * the new name's key its identity. Applied once per event (the alias row is the event's mark).
 */
async function applyAliases(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
  for (const event of events) {
    if (event.type !== 'RepositoryCaseAliasAdded') continue;
    const d = event.data as DataOf<'RepositoryCaseAliasAdded'>;
    await trx.raw(`INSERT INTO repository_case_aliases (project_id, source, identity_key, repository_case_id, title, created_at)
      VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project_id, source, identity_key) DO UPDATE SET repository_case_id = EXCLUDED.repository_case_id,
        title = EXCLUDED.title, created_at = EXCLUDED.created_at`, [d.projectId, d.source, d.alias, d.caseId, d.aliasTitle, d.addedAt]);
    await closeVersions(trx, 'repository_cases', 'repository_cases t WHERE t.id = ?', '?::bigint', [event.position, d.caseId]);
    await trx('repository_cases').where({ id: d.caseId }).update({ identity_key: d.identityKey, valid_from: event.position });
    // The new name's key may have been an alias of this case (renamed back): the case's own key wins.
    await trx('repository_case_aliases').where({ project_id: d.projectId, source: d.source, identity_key: d.identityKey, repository_case_id: d.caseId }).delete();
  }
}

/**
 * A run's suite properties (`test_runs.suite_properties`, `{name: [values]}`) with an import's added:
 * each value of a name once, at most SUITE_PROPERTY_LIMITS.valuesPerName of a name (the first met)
 * and SUITE_PROPERTY_LIMITS.pairs in all, across the imports into the run. A new version of the run
 * when anything was added.
 */
async function addSuiteProperties(trx: Knex.Transaction, runId: number, pairs: ImportedSuiteProperty[], position: string): Promise<void> {
  const row = await trx('test_runs').where({ id: runId }).first('suite_properties');
  if (!row) return;
  const kept: Record<string, string[]> = { ...(row.suite_properties ?? {}) };
  let count = Object.values(kept).reduce((n, values) => n + values.length, 0);
  let added = false;
  for (const { name, value } of pairs) {
    const values = Object.hasOwn(kept, name) ? kept[name] : [];
    if (values.includes(value) || values.length >= SUITE_PROPERTY_LIMITS.valuesPerName || count >= SUITE_PROPERTY_LIMITS.pairs) continue;
    kept[name] = [...values, value];
    count++;
    added = true;
  }
  if (!added) return;
  await closeVersions(trx, 'test_runs', 'test_runs t WHERE t.id = ?', '?::bigint', [position, runId]);
  await trx('test_runs').where({ id: runId }).update({ suite_properties: JSON.stringify(kept), valid_from: position });
}

/**
 * Result-import chunks (TestResultsImported, on an import job's stream): their folders, cases
 * (with version 1 of each), run cases and results, written with COPY, one per table for all the
 * chunks of a batch (applied once: the checkpoint moves in the same transaction). A new run case
 * shows its latest result from the start; run cases made before are updated. Rows made by an
 * import carry its job id and revision -1 (they have no stream of their own yet).
 */
async function applyImportedChunks(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
  for (const group of chunksApart(events)) await applyChunks(trx, group);
}

/**
 * The chunks in runs where no run case or case is touched twice: each run is written at once, and
 * every row a run updates then has one version per chunk (its history stays exact between chunks).
 */
function chunksApart(events: EventEnvelope[]): EventEnvelope[][] {
  const groups: EventEnvelope[][] = [];
  let touched = new Set<string>();
  for (const event of events) {
    const d = event.data as DataOf<'TestResultsImported'>;
    const keys = [
      ...d.runCases.testRunCaseId.map((id) => `r${id}`), ...d.results.testRunCaseId.map((id) => `r${id}`),
      ...d.cases.caseId.map((id) => `c${id}`), ...(d.adopted?.caseId ?? []).map((id) => `c${id}`),
    ];
    if (groups.length === 0 || keys.some((k) => touched.has(k))) {
      groups.push([]);
      touched = new Set();
    }
    groups[groups.length - 1].push(event);
    for (const k of keys) touched.add(k);
  }
  return groups;
}

async function applyChunks(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
  const folders: unknown[][] = [];
  const cases: unknown[][] = [];
  const caseIds: number[] = [];
  const runCases = new Map<number, unknown[]>();
  const results: unknown[][] = [];
  /** Per run case, its last result here not retried: [status, executedAt, durationMs, importedAt, position]. */
  const latest = new Map<number, [number, string, number | null, string, string]>();
  /** v2: the status each touched run case shows (the worst of its results not retried), which overrides the last result's. */
  const shownStatus = new Map<number, number>();
  const adopted: unknown[][] = [];
  const suiteOutputs: unknown[][] = [];
  /** v4: per run, the suite properties its chunks here carry, and the position of the last. */
  const suiteProperties = new Map<number, { pairs: ImportedSuiteProperty[]; position: string }>();
  for (const event of events) {
    const d = event.data as DataOf<'TestResultsImported'>;
    const by = event.metadata.actor.userId ?? null;
    const at = d.importedAt;
    const p = event.position;
    const f = d.folders;
    f.folderId.forEach((id, i) => folders.push([id, d.projectId, f.parentId[i], f.name[i], d.jobId, false, at, at, -1, p]));
    const c = d.cases;
    c.caseId.forEach((id, i) => {
      caseIds.push(id);
      cases.push([id, d.projectId, c.folderId[i], c.title[i], c.className[i], d.caseSource, d.caseTemplateId, d.caseStateId, true, by, d.jobId, 1, false, at, at, -1,
        c.identityKey?.[i] ?? null, c.scope?.[i] == null ? null : d.scopes[c.scope[i]!], p]);
    });
    const rc = d.runCases;
    rc.testRunCaseId.forEach((id, i) => runCases.set(id, [id, d.testRunId, rc.repositoryCaseId[i], rc.order[i], d.jobId, false, at, at, -1, p]));
    const r = d.results;
    r.resultId.forEach((id, i) => {
      const executedAt = r.executedAt[i] ?? at;
      results.push([id, d.testRunId, r.testRunCaseId[i], r.statusId[i], r.durationMs[i], executedAt, r.message[i], r.failureType[i], r.stackTrace[i],
        r.systemOut[i], r.systemErr[i], r.file[i], r.line[i], r.properties[i], r.attempt[i], by, d.jobId, false, at, at, -1, r.retried?.[i] ?? false, p]);
      if (r.retried?.[i]) return; // a retried attempt shows nothing: a case's status comes from its results not retried
      latest.set(r.testRunCaseId[i], [r.statusId[i], executedAt, r.durationMs[i], at, p]);
      shownStatus.delete(r.testRunCaseId[i]); // an earlier chunk's word is replaced by this one's (its own `shown`, or its last result)
    });
    d.shown?.testRunCaseId.forEach((id, i) => shownStatus.set(id, d.shown.statusId[i]));
    d.adopted?.caseId.forEach((id, i) => adopted.push([id, d.adopted.identityKey[i], d.adopted.identityScope[i], p]));
    d.suiteOutputs?.folderId.forEach((folderId, i) => {
      const o = d.suiteOutputs;
      suiteOutputs.push([d.testRunId, d.jobId, folderId, o.suite[i], o.systemOut[i], o.systemErr[i], at]);
    });
    if (d.suiteProperties?.name.length > 0) {
      const run = suiteProperties.get(d.testRunId) ?? { pairs: [], position: p };
      d.suiteProperties.name.forEach((name, i) => run.pairs.push({ name, value: d.suiteProperties.value[i] }));
      run.position = p;
      suiteProperties.set(d.testRunId, run);
    }
  }
  for (const [id, status] of shownStatus) {
    const last = latest.get(id);
    if (last) last[0] = status;
  }
  const statusIds = [...new Set([...latest.values()].map(([status]) => status))];
  const completing = new Set<number>((await trx('statuses').whereIn('id', statusIds).where('is_completed', true).select('id')).map((s) => s.id as number));
  const shown = (runCaseId: number) => {
    const last = latest.get(runCaseId);
    if (!last) return [null, false, null, null];
    const [status, executedAt, durationMs] = last;
    return [status, completing.has(status), completing.has(status) ? executedAt : null, durationMs];
  };

  await copyRows(trx, 'repository_folders', ['id', 'project_id', 'parent_id', 'name', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision', 'valid_from'], folders);
  await copyRows(trx, 'repository_cases', [
    'id', 'project_id', 'folder_id', 'title', 'class_name', 'source', 'template_id', 'state_id', 'automated', 'created_by_id', 'import_job_id',
    'current_version', 'is_deleted', 'created_at', 'updated_at', 'revision', 'identity_key', 'identity_scope', 'valid_from'], cases);
  if (adopted.length > 0) {
    const columns = [0, 1, 2, 3].map((k) => adopted.map((row) => row[k])) as unknown as Knex.RawBinding[];
    const source = 'unnest(?::integer[], ?::text[], ?::text[], ?::bigint[]) AS x(id, k, s, p)';
    await closeVersions(trx, 'repository_cases', `repository_cases t JOIN ${source} ON t.id = x.id`, 'x.p', columns);
    await trx.raw(`UPDATE repository_cases c SET identity_key = x.k, identity_scope = x.s, valid_from = x.p FROM ${source} WHERE c.id = x.id`, columns);
  }
  await copyRows(trx, 'test_run_suite_outputs', ['test_run_id', 'import_job_id', 'folder_id', 'suite', 'system_out', 'system_err', 'created_at'], suiteOutputs);
  for (const [runId, { pairs, position }] of suiteProperties) await addSuiteProperties(trx, runId, pairs, position);
  if (caseIds.length > 0) {
    await trx.raw(`INSERT INTO repository_case_versions (repository_case_id, version, title, snapshot, changed_by_id, created_at, valid_from)
      SELECT c.id, 1, c.title, ${SNAPSHOT_SQL}, c.created_by_id, c.created_at, c.valid_from FROM repository_cases c WHERE c.id = ANY(?::integer[])`, [caseIds]);
  }
  await copyRows(trx, 'test_run_cases', [
    'id', 'test_run_id', 'repository_case_id', 'sort_order', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision', 'valid_from',
    'status_id', 'is_completed', 'completed_at', 'elapsed_ms'], [...runCases.values()].map((row) => [...row, ...shown(row[0] as number)]));
  await copyRows(trx, 'test_run_results', [
    'id', 'test_run_id', 'test_run_case_id', 'status_id', 'duration_ms', 'executed_at', 'message', 'failure_type', 'stack_trace', 'system_out',
    'system_err', 'file', 'line', 'properties', 'attempt', 'executed_by_id', 'import_job_id', 'is_deleted', 'created_at', 'updated_at', 'revision', 'retried', 'valid_from'], results);
  const older = [...latest.keys()].filter((id) => !runCases.has(id));
  if (older.length > 0) {
    const rows = older.map((id) => [id, ...shown(id), latest.get(id)![3], latest.get(id)![4]]);
    const columns = [0, 1, 2, 3, 4, 5, 6].map((k) => rows.map((row) => row[k])) as unknown as Knex.RawBinding[];
    const source = `unnest(?::integer[], ?::integer[], ?::boolean[], ?::timestamptz[], ?::integer[], ?::timestamptz[], ?::bigint[])
      AS x(id, status_id, completed, completed_at, elapsed_ms, updated_at, p)`;
    await closeVersions(trx, 'test_run_cases', `test_run_cases t JOIN ${source} ON t.id = x.id`, 'x.p', columns);
    await trx.raw(`UPDATE test_run_cases t SET status_id = x.status_id, is_completed = x.completed, completed_at = x.completed_at,
        elapsed_ms = x.elapsed_ms, updated_at = x.updated_at, valid_from = x.p
      FROM ${source} WHERE t.id = x.id`, columns);
  }
}
