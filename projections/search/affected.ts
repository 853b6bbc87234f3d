import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { entityEventOf, idKeyOf, rowsWrittenOf } from '../../contracts/entityEvents';
import type { EntityName } from '../../contracts/entities';
import { FAILURE_STATUS, TABLE_OF, type IndexedType } from './documents';

/**
 * Which documents a batch of events touches, from the events alone (their ids and the names of
 * what changed), before anything is read:
 * - `direct`: the document of an entity created, updated or deleted (a case's steps, tags and
 *   custom field values arrive on the case's own events), a result's failure document;
 * - `fanOuts`: documents that show something else's name (a tag, folder, template, workflow state,
 *   status, configuration, custom field, user, project, or a failure's case and run), or live under
 *   something deleted, and the rows an import chunk wrote: found by SQL against the read model in
 *   keyset pages (`fanOutPages`), never one statement per document.
 */

type Values = Record<string, unknown>;

/** A set of rows of one type, found by `where` (over alias `x`, with `?::integer[]` bound to `ids`). */
export interface FanOut { type: IndexedType; where: string; bindings: unknown[] }

export interface Affected {
  direct: Map<IndexedType, Set<string>>;
  fanOuts: FanOut[];
}

/** Documents showing a named thing, per kind of thing: the rows to read again when it changes. */
const SHOWN_BY: Record<string, { type: IndexedType; where: string }[]> = {
  tag: [
    { type: 'repository_cases', where: 'x.id IN (SELECT j.repository_case_id FROM repository_case_tags j WHERE j.tag_id = ANY(?::integer[]))' },
    { type: 'test_runs', where: 'x.id IN (SELECT j.test_run_id FROM test_run_tags j WHERE j.tag_id = ANY(?::integer[]))' },
    { type: 'sessions', where: 'x.id IN (SELECT j.session_id FROM session_tags j WHERE j.tag_id = ANY(?::integer[]))' },
  ],
  repositoryFolder: [{
    type: 'repository_cases',
    where: `x.folder_id IN (WITH RECURSIVE down AS (SELECT f.id FROM repository_folders f WHERE f.id = ANY(?::integer[])
      UNION SELECT f.id FROM repository_folders f JOIN down ON f.parent_id = down.id) SELECT id FROM down)`,
  }],
  template: [
    { type: 'repository_cases', where: 'x.template_id = ANY(?::integer[])' },
    { type: 'sessions', where: 'x.template_id = ANY(?::integer[])' },
  ],
  workflow: [
    { type: 'repository_cases', where: 'x.state_id = ANY(?::integer[])' },
    { type: 'test_runs', where: 'x.state_id = ANY(?::integer[])' },
    { type: 'sessions', where: 'x.state_id = ANY(?::integer[])' },
  ],
  status: [{ type: 'failures', where: 'x.status_id = ANY(?::integer[])' }],
  configuration: [
    { type: 'test_runs', where: 'x.config_id = ANY(?::integer[])' },
    { type: 'sessions', where: 'x.config_id = ANY(?::integer[])' },
    { type: 'failures', where: 'x.test_run_id IN (SELECT r.id FROM test_runs r WHERE r.config_id = ANY(?::integer[]))' },
  ],
  caseField: [{ type: 'repository_cases', where: 'x.id IN (SELECT v.repository_case_id FROM case_field_values v WHERE v.field_id = ANY(?::integer[]))' }],
  fieldOption: [{
    type: 'repository_cases',
    where: 'x.id IN (SELECT v.repository_case_id FROM case_field_values v JOIN field_options o ON o.case_field_id = v.field_id WHERE o.id = ANY(?::integer[]))',
  }],
  user: [
    ...(['projects', 'repository_cases', 'test_runs', 'sessions', 'milestones', 'comments'] as const).map((type) => ({ type, where: 'x.created_by_id = ANY(?::integer[])' })),
    { type: 'failures', where: 'x.executed_by_id = ANY(?::integer[])' },
  ],
  project: [
    ...(['repository_cases', 'test_runs', 'sessions', 'milestones', 'comments'] as const).map((type) => ({ type, where: 'x.project_id = ANY(?::integer[])' })),
    { type: 'failures', where: 'x.test_run_id IN (SELECT r.id FROM test_runs r WHERE r.project_id = ANY(?::integer[]))' },
  ],
  repositoryCase: [
    { type: 'failures', where: 'x.test_run_case_id IN (SELECT rc.id FROM test_run_cases rc WHERE rc.repository_case_id = ANY(?::integer[]))' },
    { type: 'comments', where: 'x.repository_case_id = ANY(?::integer[])' },
  ],
  testRun: [
    { type: 'failures', where: 'x.test_run_id = ANY(?::integer[])' },
    { type: 'comments', where: 'x.test_run_id = ANY(?::integer[])' },
  ],
  testRunCase: [{ type: 'failures', where: 'x.test_run_case_id = ANY(?::integer[])' }],
  session: [{ type: 'comments', where: 'x.session_id = ANY(?::integer[])' }],
  milestone: [{ type: 'comments', where: 'x.milestone_id = ANY(?::integer[])' }],
};

/** The fields whose change alters other documents (an Updated event without them fans out nothing); a Deleted event always does. */
const SHOWN_FIELDS: Record<string, readonly string[]> = {
  tag: ['name'], repositoryFolder: ['name', 'parentId'], template: ['name'], workflow: ['name'],
  status: ['name', 'isSuccess', 'isFailure', 'isCompleted'], configuration: ['name'], caseField: ['displayName'], fieldOption: ['name'],
  user: ['name'], project: ['name', 'isDeleted'], repositoryCase: ['title'], testRun: ['name', 'configId', 'branch'], testRunCase: [],
  session: ['name'], milestone: ['name'],
};

/** The document an entity's own events touch. */
const OWN_DOCUMENT: Partial<Record<EntityName, IndexedType>> = {
  project: 'projects', repositoryCase: 'repository_cases', testRun: 'test_runs', session: 'sessions', milestone: 'milestones',
  comment: 'comments', testRunResult: 'failures',
};

/** Import chunks: the rows a chunk wrote carry its job id and its `importedAt` as created_at (projections/readModel.ts). */
const IMPORTED: { type: IndexedType; where: string }[] = [
  { type: 'repository_cases', where: '(x.import_job_id, x.created_at) IN (SELECT * FROM unnest(?::integer[], ?::timestamptz[]))' },
  {
    type: 'failures',
    where: `(x.import_job_id, x.created_at) IN (SELECT * FROM unnest(?::integer[], ?::timestamptz[]))
      AND x.status_id IN (SELECT s.id FROM statuses s WHERE ${FAILURE_STATUS})`,
  },
];

/** Import chunk events and a migration's chunk plans are read shallow: only their top-level scalars (job id, importedAt) are used. */
export const SHALLOW_EVENTS = ['TestResultsImported', 'ExternalImportChunkPlanned'] as const;

/**
 * `failureStatuses`: the ids of the statuses a failure has (FAILURE_STATUS), for the results an
 * external import writes in bulk: each row carries its status, so its failures are known without
 * reading the rows back (`failureStatusesOf`; needed only when such a chunk is in the batch).
 */
export function affectedBy(events: readonly EventEnvelope[], failureStatuses: ReadonlySet<number> = new Set()): Affected {
  const direct = new Map<IndexedType, Set<string>>();
  const named = new Map<string, Set<number>>();
  const chunks: { jobId: number; importedAt: string }[] = [];
  const touch = (type: IndexedType, id: unknown) => {
    if (!direct.has(type)) direct.set(type, new Set());
    direct.get(type)!.add(String(id));
  };
  const shown = (kind: string, id: unknown, changes: Values | null) => {
    if (!SHOWN_BY[kind] || typeof id !== 'number') return;
    if (changes && !SHOWN_FIELDS[kind].some((f) => changes[f] !== undefined)) return;
    if (!named.has(kind)) named.set(kind, new Set());
    named.get(kind)!.add(id);
  };
  for (const event of events) {
    const data = event.data as Values;
    switch (event.type) {
      case 'RepositoryFolderUpdated':
        shown('repositoryFolder', data.folderId, data.changes as Values);
        continue;
      case 'RepositoryFolderDeleted':
        shown('repositoryFolder', data.folderId, null);
        continue;
      case 'UserUpdated':
        shown('user', data.userId, data.changes as Values);
        continue;
      case 'TestResultsImported':
        chunks.push({ jobId: data.jobId as number, importedAt: data.importedAt as string });
        continue;
      case 'ExternalImportRowsWritten': {
        // An external import's bulk chunk: each row is new, as if created on its own.
        const written = rowsWrittenOf(data as { entity: string; fields: string[]; rows: unknown[][] });
        const own = written && OWN_DOCUMENT[written.entity.name];
        if (!own) continue;
        // New results have no document yet: only those whose status is a failure get one.
        if (own === 'failures') {
          for (const row of written.rows) if (failureStatuses.has(row.statusId as number)) touch(own, row[idKeyOf(written.entity)]);
        } else for (const row of written.rows) touch(own, row[idKeyOf(written.entity)]);
        continue;
      }
    }
    const target = entityEventOf(event.type);
    if (!target) continue;
    const id = data[idKeyOf(target.entity)];
    const own = OWN_DOCUMENT[target.entity.name];
    if (own) touch(own, id);
    if (target.kind === 'updated') shown(target.entity.name, id, (data.changes as Values) ?? {});
    if (target.kind === 'deleted') shown(target.entity.name, id, null);
  }
  const fanOuts: FanOut[] = [];
  for (const [kind, ids] of named) {
    for (const { type, where } of SHOWN_BY[kind]) fanOuts.push({ type, where, bindings: [[...ids]] });
  }
  if (chunks.length > 0) {
    for (const { type, where } of IMPORTED) fanOuts.push({ type, where, bindings: [chunks.map((c) => c.jobId), chunks.map((c) => c.importedAt)] });
  }
  return { direct, fanOuts };
}

/** Whether a batch holds results an external import wrote in bulk (affectedBy then needs the failure statuses). */
export function writesResultsInBulk(events: readonly EventEnvelope[]): boolean {
  return events.some((e) => e.type === 'ExternalImportRowsWritten' && (e.data as Values).entity === 'testRunResult');
}

/** The ids of the statuses a failure has (FAILURE_STATUS), as the read model holds them now. */
export async function failureStatusesOf(knex: Knex): Promise<Set<number>> {
  const { rows } = await knex.raw(`SELECT s.id FROM statuses s WHERE ${FAILURE_STATUS}`);
  return new Set((rows as { id: number }[]).map((r) => Number(r.id)));
}

/**
 * How many ids of a fan-out one statement reads: handed on `pageSize` at a time. A result import
 * of 100,000 cases fans out to 120,000 documents: in statements of a page of 100 each that was
 * 1,240 statements (PostgreSQL 2.5 s of the indexer's, BENCH_PG_STATS).
 */
export const FAN_OUT_IDS_PER_READ = 2000;

/** The ids of a fan-out, in pages of at most `pageSize` (keyset by id, rows not deleted), read FAN_OUT_IDS_PER_READ at a time. */
export async function* fanOutPages(knex: Knex, fanOut: FanOut, pageSize: number, idsPerRead = FAN_OUT_IDS_PER_READ): AsyncGenerator<string[]> {
  const readSize = Math.max(pageSize, idsPerRead);
  let after = 0;
  for (;;) {
    const { rows } = await knex.raw(
      `SELECT x.id FROM ${TABLE_OF[fanOut.type]} x WHERE (${fanOut.where}) AND NOT x.is_deleted AND x.id > ? ORDER BY x.id LIMIT ?`,
      [...fanOut.bindings, after, readSize] as Knex.RawBinding[],
    );
    const ids = (rows as { id: number }[]).map((r) => String(r.id));
    for (let i = 0; i < ids.length; i += pageSize) yield ids.slice(i, i + pageSize);
    if (rows.length < readSize) return;
    after = Number(rows[rows.length - 1].id);
  }
}
