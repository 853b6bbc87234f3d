import type { Knex } from 'knex';
import type { ExternalDurationUnit, ExternalMappingKey, ExternalMappings } from '../../contracts/events';
import { CHILD_DATASETS, childSkipReason, type Decision, entryOf, IMPORT_STEPS, type ImportContext, NOT_PLACED } from './importers';
import { MAPPING_DEFS, userCreateRefusal } from './mappings';
import type { EventStore } from '../shared/eventStore';
import { stagedCounts, stagedRows } from './staging';

/**
 * POST …/{jobId}/preview: a dry run of the import with the job's mappings. Every staged row is
 * decided as the import would decide it (created, mapped to an existing entity, or skipped with
 * the reason), in the same order, with rows that would be created standing in for their new ids;
 * nothing is written. Per dataset: counts, the reasons rows are skipped, and the first rows with
 * what they become.
 */

export interface DatasetPreview {
  dataset: string;
  entity: string;
  rows: number;
  create: number;
  map: number;
  skip: number;
  skipReasons: Record<string, number>;
  /** A dataset read with its owner's rows (a template's fields, a case's steps): the owner dataset; `create` counts the rows kept with it. */
  readWith?: string;
  sample: Array<{ sourceId: string; action: 'create' | 'map' | 'skip'; targetId?: number; reason?: string }>;
}

const SAMPLE_ROWS = 5;
const READ_ROWS = 5000;

/** A row execute would refuse (the job would fail on it): shown before it runs, to be mapped or skipped instead. */
export interface PreviewConflict { dataset: string; sourceId: string; code: string; message: string; details: Record<string, unknown> }

export async function previewImport(knex: Knex, store: EventStore, jobId: number, mappings: ExternalMappings, durationUnit: ExternalDurationUnit): Promise<{
  datasets: DatasetPreview[]; skipped: Array<{ dataset: string; rows: number; reason: string }>; conflicts: PreviewConflict[];
}> {
  const conflicts: PreviewConflict[] = [];
  const counts = (await stagedCounts(knex, jobId)) ?? {};
  /** Rows that would be created, by dataset: a stand-in id (negative), so rows pointing at them resolve as they will. */
  const wouldCreate = new Map<string, Map<string, number>>();
  let standIn = 0;
  const mappingOf = new Map<string, ExternalMappingKey>(Object.entries(MAPPING_DEFS).map(([key, def]) => [def.dataset, key as ExternalMappingKey]));
  const snapshotRows = await knex('external_import_staging').where({ job_id: jobId, dataset: 'repositories' }).select('source_id', 'row');
  const truthy = (v: unknown) => v === true || v === 1 || v === '1' || v === 'true';
  const ctx: ImportContext = {
    knex, jobId, mappings, durationUnit, cache: new Map(),
    snapshotRepos: new Set(snapshotRows.filter((r: { row: Record<string, unknown> }) => truthy(r.row.is_snapshot)).map((r: { source_id: string }) => r.source_id)),
    idOf(dataset, sourceId) {
      if (sourceId === null || sourceId === undefined || sourceId === '') return null;
      const planned = wouldCreate.get(dataset)?.get(String(sourceId));
      if (planned !== undefined) return planned;
      const key = mappingOf.get(dataset);
      const entry = key ? entryOf(mappings, key, sourceId) : undefined;
      return entry?.action === 'map' ? entry.targetId! : null;
    },
  };
  const datasets: DatasetPreview[] = [];
  for (const step of IMPORT_STEPS) {
    const rows = counts[step.dataset] ?? 0;
    if (rows === 0) continue;
    const preview: DatasetPreview = { dataset: step.dataset, entity: step.entity, rows, create: 0, map: 0, skip: 0, skipReasons: {}, sample: [] };
    const created = new Map<string, number>();
    wouldCreate.set(step.dataset, created);
    for (let after = 0; ;) {
      const chunk = await stagedRows(knex, jobId, step.dataset, after, READ_ROWS);
      if (chunk.length === 0) break;
      after = chunk[chunk.length - 1].index;
      for (const { index, row } of chunk) {
        const sourceId = step.sourceIdOf ? step.sourceIdOf(row, index) : row.id === undefined || row.id === null ? `#${index}` : String(row.id);
        let decision: Decision = created.has(sourceId) ? { skip: `a second row with id ${sourceId}` } : await step.decide(row, ctx);
        if (sourceId.startsWith('#') && !step.sourceIdOf) decision = { skip: 'the row has no id' };
        if ('create' in decision && step.dataset === 'users') {
          // Registered as execute registers a placeholder: an e-mail claimed meanwhile (by an account, or a deleted one) is refused.
          const email = MAPPING_DEFS.users.nameOf(row);
          const name = [row.name, row.full_name, row.display_name, row.username].find((v): v is string => typeof v === 'string' && v.trim() !== '')?.trim() ?? '';
          const refusal = await userCreateRefusal(store, email, name);
          if (refusal) conflicts.push({ dataset: step.dataset, sourceId, code: refusal.code, message: `The row with id ${sourceId} of users would be refused: ${refusal.message}`, details: refusal.details });
        }
        if ('create' in decision) {
          preview.create++;
          created.set(sourceId, --standIn);
        } else if ('map' in decision) {
          preview.map++;
          created.set(sourceId, decision.map);
        } else {
          preview.skip++;
          preview.skipReasons[decision.skip] = (preview.skipReasons[decision.skip] ?? 0) + 1;
        }
        if (preview.sample.length < SAMPLE_ROWS) {
          preview.sample.push('create' in decision ? { sourceId, action: 'create' } : 'map' in decision ? { sourceId, action: 'map', targetId: decision.map } : { sourceId, action: 'skip', reason: decision.skip });
        }
      }
    }
    datasets.push(preview);
  }
  // Rows read with their owner: kept with it, or skipped with the reason (an owner not imported or mapped, a field or tag not imported).
  const ownerOf = (dataset: string, sourceId: unknown) => {
    const id = sourceId === null || sourceId === undefined ? undefined : wouldCreate.get(dataset)?.get(String(sourceId));
    return id === undefined ? null : id < 0 ? 'created' as const : 'mapped' as const;
  };
  for (const [dataset, child] of CHILD_DATASETS) {
    const rows = counts[dataset] ?? 0;
    if (rows === 0) continue;
    const owner = IMPORT_STEPS.find((step) => step.dataset === child.owner)!;
    const preview: DatasetPreview = { dataset, entity: owner.entity, readWith: child.owner, rows, create: 0, map: 0, skip: 0, skipReasons: {}, sample: [] };
    for (let after = 0; ;) {
      const chunk = await stagedRows(knex, jobId, dataset, after, READ_ROWS);
      if (chunk.length === 0) break;
      after = chunk[chunk.length - 1].index;
      for (const { index, row } of chunk) {
        const reason = childSkipReason(dataset, row, ownerOf, ctx);
        const sourceId = row.id === undefined || row.id === null ? `#${index}` : String(row.id);
        if (reason === null) preview.create++;
        else {
          preview.skip++;
          preview.skipReasons[reason] = (preview.skipReasons[reason] ?? 0) + 1;
        }
        if (preview.sample.length < SAMPLE_ROWS) preview.sample.push(reason === null ? { sourceId, action: 'create' } : { sourceId, action: 'skip', reason });
      }
    }
    datasets.push(preview);
  }
  const skipped = Object.entries(counts).filter(([dataset]) => NOT_PLACED.has(dataset)).map(([dataset, rows]) => ({ dataset, rows, reason: NOT_PLACED.get(dataset)! }));
  return { datasets, skipped, conflicts };
}
