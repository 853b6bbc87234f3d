import type { Knex } from 'knex';
import { ENTITIES, type EntityDef, type EntityName } from '../../contracts/entities';
import type { EventEnvelope } from '../../contracts/envelope';
import { idKeyOf, rowsWrittenOf } from '../../contracts/entityEvents';
import type { EventStore } from '../shared/eventStore';

/**
 * The import chunk that created a row an import wrote in bulk (docs/imports.md, docs/migration.md):
 * such a row has no Created event of its own; its creation is one row of a chunk event on the
 * import job's stream. Found by the row's job (its `import_job_id` / `external_import_job_id`) and
 * a search of that job's chunks: a job allocates ids in the order it writes its chunks, so the
 * chunks are searched by halves (one whole chunk read per step), and one after the other whenever
 * a chunk does not tell which half holds the id.
 */

export interface ImportOrigin {
  kind: 'results' | 'external';
  jobId: number;
  chunk: number;
  event: EventEnvelope;
  /** The row's values as the chunk wrote them (field name → value). */
  values: Record<string, unknown>;
}

/** A result import's chunk (TestResultsImported): the table of each entity it writes, and that table's id column. */
const RESULT_TABLES: Partial<Record<string, { table: string; id: string }>> = {
  repositoryFolder: { table: 'folders', id: 'folderId' },
  repositoryCase: { table: 'cases', id: 'caseId' },
  testRunCase: { table: 'runCases', id: 'testRunCaseId' },
  testRunResult: { table: 'results', id: 'resultId' },
};

type Probe = { found: Record<string, unknown> } | { min: number; max: number } | null;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The row `id` of the entity in a chunk event, or where the chunk's ids of that entity lie (null: it has none). */
function probe(entity: EntityDef, event: EventEnvelope, id: number): Probe {
  const data = event.data as Record<string, unknown>;
  if (event.type === 'ExternalImportRowsWritten') {
    const written = rowsWrittenOf(data as { entity: string; fields: string[]; rows: unknown[][] });
    if (!written || written.entity.name !== entity.name) return null;
    const key = idKeyOf(entity);
    const ids = written.rows.map((r) => r[key] as number);
    const at = ids.indexOf(id);
    if (at !== -1) return { found: written.rows[at] };
    return ids.length === 0 ? null : { min: Math.min(...ids), max: Math.max(...ids) };
  }
  const shape = RESULT_TABLES[entity.name];
  const columns = shape && isObject(data[shape.table]) ? (data[shape.table] as Record<string, unknown[]>) : undefined;
  const ids = columns?.[shape!.id];
  if (!Array.isArray(ids) || ids.length === 0) return null;
  const at = ids.indexOf(id);
  if (at !== -1) {
    const values: Record<string, unknown> = {};
    for (const [column, list] of Object.entries(columns!)) if (Array.isArray(list) && column !== shape!.id) values[column] = list[at] ?? null;
    // The chunk names the run and the project once for all of its rows.
    if (entity.fields.testRunId) values.testRunId = data.testRunId;
    if (entity.fields.projectId) values.projectId = data.projectId;
    return { found: values };
  }
  return { min: Math.min(...(ids as number[])), max: Math.max(...(ids as number[])) };
}

/**
 * Every row a chunk event writes (a result import's TestResultsImported, an external import's
 * ExternalImportRowsWritten), each with its values as `probe` finds one; none for other events.
 */
export function chunkRows(event: EventEnvelope): { entity: string; id: number; values: Record<string, unknown> }[] {
  const data = event.data as Record<string, unknown>;
  if (event.type === 'ExternalImportRowsWritten') {
    const written = rowsWrittenOf(data as { entity: string; fields: string[]; rows: unknown[][] });
    if (!written) return [];
    const key = idKeyOf(written.entity);
    return written.rows.map((row) => ({ entity: written.entity.name, id: row[key] as number, values: row }));
  }
  if (event.type !== 'TestResultsImported') return [];
  const rows: { entity: string; id: number; values: Record<string, unknown> }[] = [];
  for (const [entity, shape] of Object.entries(RESULT_TABLES)) {
    const columns = isObject(data[shape!.table]) ? (data[shape!.table] as Record<string, unknown[]>) : undefined;
    const ids = columns?.[shape!.id];
    if (!Array.isArray(ids)) continue;
    ids.forEach((id, at) => {
      const values: Record<string, unknown> = {};
      for (const [column, list] of Object.entries(columns!)) if (Array.isArray(list) && column !== shape!.id) values[column] = list[at] ?? null;
      // The chunk names the run and the project once for all of its rows.
      if (ENTITIES[entity as EntityName].fields.testRunId) values.testRunId = data.testRunId;
      if (ENTITIES[entity as EntityName].fields.projectId) values.projectId = data.projectId;
      rows.push({ entity, id: id as number, values });
    });
  }
  return rows;
}

/** The creating chunk of a row an import wrote in bulk; null when the row was not written so (or its chunk is not found). */
export async function importOriginOf(knex: Knex, store: EventStore, entity: EntityDef, id: number): Promise<ImportOrigin | null> {
  const markers = (['importJobId', 'externalImportJobId'] as const).filter((f) => entity.fields[f]);
  if (markers.length === 0) return null;
  const row = (await knex(entity.table).where({ id }).first(markers.map((f) => `${entity.fields[f].column} as ${f}`))) as Record<string, number | null> | undefined;
  const external = row?.externalImportJobId ?? null;
  const results = row?.importJobId ?? null;
  if (external === null && results === null) return null;
  const kind = external !== null ? 'external' : 'results';
  const jobId = (external ?? results)!;
  const streamId = kind === 'external' ? `externalImport-${jobId}` : `importJob-${jobId}`;
  const chunkType = kind === 'external' ? 'ExternalImportRowsWritten' : 'TestResultsImported';
  // The job's chunks without their rows (cheap), then the candidates read whole, one at a time.
  const summaries = await store.readStream(streamId, { shallow: [chunkType] });
  const candidates = summaries.filter((e) => e.type === chunkType && (kind === 'results' || (e.data as { entity?: string }).entity === entity.name));
  const read = async (i: number) => (await store.readStream(streamId, { fromRevision: BigInt(candidates[i].revision), maxCount: 1 }))[0];
  const tried = new Set<number>();
  const origin = (event: EventEnvelope, values: Record<string, unknown>): ImportOrigin =>
    ({ kind, jobId, chunk: (event.data as { chunk: number }).chunk, event, values });
  let low = 0;
  let high = candidates.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    tried.add(mid);
    const event = await read(mid);
    const seen = probe(entity, event, id);
    if (seen && 'found' in seen) return origin(event, seen.found);
    if (seen === null || (id > seen.min && id < seen.max)) break; // this chunk does not tell which half: search the rest in order
    if (id < seen.min) high = mid - 1;
    else low = mid + 1;
  }
  for (let i = 0; i < candidates.length; i++) {
    if (tried.has(i)) continue;
    const event = await read(i);
    const seen = probe(entity, event, id);
    if (seen && 'found' in seen) return origin(event, seen.found);
  }
  return null;
}
