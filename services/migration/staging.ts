import type { Knex } from 'knex';
import { type ExportLimits, readExport } from './exportReader';

/**
 * An export's rows, copied out of the uploaded file once (at analysis) into
 * `external_import_staging`, so that the import reads each dataset in the order it needs, a
 * dataset's children with their parents (a case's steps, a run test's results) and the
 * configuration rows whole for the mapping step, without reading the file again. Not a read
 * model: it is derived from the file, replaced whole when staged again, and dropped when the job ends.
 */

/** The column of a dataset's rows that names their parent row (for reading children by parent). */
export const PARENT_FIELD: ReadonlyMap<string, string> = new Map(Object.entries({
  field_values: 'field_id', template_fields: 'template_id', user_groups: 'user_id',
  repository_folders: 'parent_id', milestones: 'parent_id',
  repository_case_steps: 'case_id', repository_case_values: 'case_id', repository_case_tags: 'case_id',
  run_tests: 'run_id', run_results: 'test_id', run_result_steps: 'result_id', run_tags: 'run_id',
  session_results: 'session_id', session_tags: 'session_id', session_values: 'session_id',
}));

/** Rows per INSERT: the rows of one statement travel as one JSON parameter. */
const BATCH_ROWS = 2000;

const idText = (value: unknown): string | null =>
  (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value.trim() !== '') ? String(value).trim() : null;

export interface StagedRow { index: number; row: Record<string, unknown> }

/**
 * Stages every row of the export at `file` (uploaded as `name`) for the job (replacing what an interrupted staging
 * left), in one transaction with its mark: a staging is whole or absent. Returns the rows per dataset.
 */
export async function stageExport(knex: Knex, jobId: number, file: string, limits: Partial<ExportLimits> = {}, name?: string): Promise<Record<string, number>> {
  return knex.transaction(async (trx) => {
    await trx('external_import_staged').where({ job_id: jobId }).delete();
    await trx('external_import_staging').where({ job_id: jobId }).delete();
    // Keyed by the export's own dataset names (`constructor`, `__proto__` included): no prototype to meet.
    const counts: Record<string, number> = Object.create(null);
    let batch: Array<{ dataset: string; row_index: number; source_id: string | null; parent_id: string | null; row: unknown }> = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await trx.raw(`INSERT INTO external_import_staging (job_id, dataset, row_index, source_id, parent_id, row)
        SELECT ?, x.dataset, x.row_index, x.source_id, x.parent_id, x.row
        FROM json_to_recordset(?::json) AS x(dataset text, row_index integer, source_id text, parent_id text, row jsonb)
        ON CONFLICT DO NOTHING`, [jobId, JSON.stringify(batch)]);
      batch = [];
    };
    for await (const record of readExport(file, limits, name)) {
      if (record.type !== 'row') continue;
      const row = record.row;
      if (typeof row !== 'object' || row === null || Array.isArray(row)) continue; // the analysis reported it
      const index = (counts[record.dataset] = (counts[record.dataset] ?? 0) + 1);
      const fields = row as Record<string, unknown>;
      const parentField = PARENT_FIELD.get(record.dataset);
      batch.push({ dataset: record.dataset, row_index: index, source_id: idText(fields.id), parent_id: parentField ? idText(fields[parentField]) : null, row });
      if (batch.length >= BATCH_ROWS) await flush();
    }
    await flush();
    for (const dataset of TREES) if (counts[dataset]) await parentsFirst(trx, jobId, dataset);
    await trx('external_import_staged').insert({ job_id: jobId, counts: JSON.stringify(counts), staged_at: new Date() });
    return counts;
  });
}

/** Datasets whose rows point at a parent row of the same dataset. */
const TREES = ['repository_folders', 'milestones'];

/**
 * Numbers a tree dataset's rows parents first (by depth, then file order), so a row is read after
 * the row it points at whatever order the export wrote them in. Rows in a cycle (or under one)
 * have no depth: they come last, and the import skips them (their parent is never imported).
 */
async function parentsFirst(trx: Knex.Transaction, jobId: number, dataset: string): Promise<void> {
  await trx.raw(`
    WITH RECURSIVE rows AS MATERIALIZED (
      SELECT row_index, source_id, parent_id FROM external_import_staging WHERE job_id = :jobId AND dataset = :dataset
    ), tree AS (
      SELECT r.row_index, r.source_id, 0 AS depth FROM rows r LEFT JOIN rows p ON p.source_id = r.parent_id
        WHERE r.parent_id IS NULL OR p.row_index IS NULL
      UNION ALL
      SELECT c.row_index, c.source_id, t.depth + 1 FROM rows c JOIN tree t ON c.parent_id = t.source_id WHERE t.depth < 10000
    ), numbered AS (
      SELECT r.row_index, row_number() OVER (ORDER BY d.depth NULLS LAST, r.row_index) AS next
      FROM rows r LEFT JOIN (SELECT row_index, min(depth) AS depth FROM tree GROUP BY row_index) d ON d.row_index = r.row_index
    )
    UPDATE external_import_staging s SET row_index = -n.next FROM numbered n
      WHERE s.job_id = :jobId AND s.dataset = :dataset AND s.row_index = n.row_index`, { jobId, dataset });
  await trx.raw('UPDATE external_import_staging SET row_index = -row_index WHERE job_id = ? AND dataset = ? AND row_index < 0', [jobId, dataset]);
}

/** The rows per dataset of the job's staging, or null when it has none (never staged, or dropped). */
export async function stagedCounts(knex: Knex, jobId: number): Promise<Record<string, number> | null> {
  const row = await knex('external_import_staged').where({ job_id: jobId }).first('counts');
  return row ? (row.counts as Record<string, number>) : null;
}

/** Up to `limit` rows of a dataset after row `afterRow`, in file order. */
export async function stagedRows(knex: Knex, jobId: number, dataset: string, afterRow: number, limit: number): Promise<StagedRow[]> {
  const rows = await knex('external_import_staging').where({ job_id: jobId, dataset }).andWhere('row_index', '>', afterRow)
    .orderBy('row_index').limit(limit).select('row_index', 'row');
  return rows.map((r: { row_index: number; row: Record<string, unknown> }) => ({ index: r.row_index, row: r.row }));
}

/** Every row of a dataset (for the small configuration datasets). */
export async function allStagedRows(knex: Knex, jobId: number, dataset: string): Promise<Record<string, unknown>[]> {
  const rows = await knex('external_import_staging').where({ job_id: jobId, dataset }).orderBy('row_index').select('row');
  return rows.map((r: { row: Record<string, unknown> }) => r.row);
}

/** The rows of a child dataset whose parent is one of `parentIds`, grouped by parent, each group in file order. */
export async function stagedChildren(knex: Knex, jobId: number, dataset: string, parentIds: string[]): Promise<Map<string, Record<string, unknown>[]>> {
  const byParent = new Map<string, Record<string, unknown>[]>();
  if (parentIds.length === 0) return byParent;
  const rows = await knex('external_import_staging').where({ job_id: jobId, dataset }).whereRaw('parent_id = ANY(?::text[])', [parentIds])
    .orderBy('row_index').select('parent_id', 'row');
  for (const r of rows as Array<{ parent_id: string; row: Record<string, unknown> }>) {
    const list = byParent.get(r.parent_id);
    if (list) list.push(r.row);
    else byParent.set(r.parent_id, [r.row]);
  }
  return byParent;
}

/** The parents among `parentIds` that have at least one row in a child dataset. */
export async function parentsWithChildren(knex: Knex, jobId: number, dataset: string, parentIds: string[]): Promise<Set<string>> {
  if (parentIds.length === 0) return new Set();
  const rows = await knex('external_import_staging').where({ job_id: jobId, dataset }).whereRaw('parent_id = ANY(?::text[])', [parentIds]).distinct('parent_id');
  return new Set(rows.map((r: { parent_id: string }) => r.parent_id));
}

export async function dropStaging(knex: Knex, jobId: number): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx('external_import_staged').where({ job_id: jobId }).delete();
    await trx('external_import_staging').where({ job_id: jobId }).delete();
  });
}
