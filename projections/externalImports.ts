import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf, ExternalImportEvent } from '../contracts/events';
import type { Projection } from './runtime/projection';

/**
 * External import jobs as GET /api/admin/imports/external/jobs lists them (phase, analysis,
 * mappings, progress per dataset, counts, error, creator, times), and the provenance of every row
 * a job planned (`external_import_rows`: source id, key, creator and time → the new entity), which
 * POST /api/lookup answers by. A job row changes only for an event newer than the revision it
 * holds, and provenance rows are keyed by (job, dataset, source id): a redelivery changes nothing.
 */
const JOB_EVENTS: ReadonlySet<string> = new Set<ExternalImportEvent['type']>([
  'ExternalImportUploaded', 'ExternalImportAnalysisStarted', 'ExternalImportAnalysed', 'ExternalImportConfigured', 'ExternalImportQueued',
  'ExternalImportStarted', 'ExternalImportChunkPlanned', 'ExternalImportChunkImported', 'ExternalImportCompleted', 'ExternalImportFailed',
  'ExternalImportCancelRequested', 'ExternalImportCancelled', 'ExternalImportRollbackRequested', 'ExternalImportRollbackProgressed',
  'ExternalImportRolledBack', 'ExternalImportClosed',
]);

const json = (value: unknown) => JSON.stringify(value);

export const externalImportsProjection: Projection = {
  name: 'externalImports',
  types: JOB_EVENTS,
  // A result import's chunk columns are the read model's business: read at their top level only.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten'],
  tables: ['external_import_jobs', 'external_import_rows'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    for (const e of events) {
      if (!JOB_EVENTS.has(e.type)) continue;
      const revision = e.revision.toString();
      const update = (jobId: number, changes: Record<string, unknown>) =>
        trx('external_import_jobs').where({ job_id: jobId }).andWhere('revision', '<', revision).update({ ...changes, updated_at: e.recordedAt, revision });
      switch (e.type as ExternalImportEvent['type']) {
        case 'ExternalImportUploaded': {
          const d = e.data as DataOf<'ExternalImportUploaded'>;
          const actor = e.metadata.actor;
          await trx('external_import_jobs').insert({
            job_id: d.jobId, phase: 'uploaded', file_name: d.fileName, file_size: d.fileSize, sha256: d.sha256, container: d.container,
            created_by_id: actor.userId ?? null, token_id: actor.tokenId ?? null, via: actor.via, created_at: d.uploadedAt, updated_at: d.uploadedAt, revision,
          }).onConflict('job_id').ignore();
          break;
        }
        case 'ExternalImportAnalysisStarted':
          await update((e.data as DataOf<'ExternalImportAnalysisStarted'>).jobId, { phase: 'analysing' });
          break;
        case 'ExternalImportAnalysed': {
          const d = e.data as DataOf<'ExternalImportAnalysed'>;
          await update(d.jobId, {
            phase: 'analysed', datasets: json(d.datasets), totals: json(d.totals), ignored: json(d.ignored), warnings: json(d.warnings), errors: json(d.errors),
            sources: json(d.sources), suggestions: json(d.suggestions), analysed_at: d.analysedAt,
          });
          break;
        }
        case 'ExternalImportConfigured': {
          const d = e.data as DataOf<'ExternalImportConfigured'>;
          await update(d.jobId, { phase: 'configured', mappings: json(d.mappings), duration_unit: d.durationUnit, configured_at: d.configuredAt });
          break;
        }
        case 'ExternalImportQueued': {
          const d = e.data as DataOf<'ExternalImportQueued'>;
          await update(d.jobId, { phase: 'queued', queued_at: d.queuedAt });
          break;
        }
        case 'ExternalImportStarted': {
          const d = e.data as DataOf<'ExternalImportStarted'>;
          await update(d.jobId, { phase: 'importing', plan: json(d.plan), started_at: d.startedAt, current_dataset: d.plan[0]?.dataset ?? null });
          break;
        }
        case 'ExternalImportChunkPlanned': {
          const d = e.data as DataOf<'ExternalImportChunkPlanned'>;
          const r = d.rows;
          if (r.sourceId.length > 0) {
            await trx.raw(`INSERT INTO external_import_rows (job_id, dataset, source_id, entity, entity_id, source_key, source_created_by, source_created_at, skip_reason, mapped)
              SELECT ?, ?, x.source_id, ?, x.entity_id, x.source_key, x.created_by, x.created_at, x.skip_reason, x.mapped
              FROM unnest(?::text[], ?::integer[], ?::text[], ?::text[], ?::text[], ?::text[], ?::boolean[])
                AS x(source_id, entity_id, source_key, created_by, created_at, skip_reason, mapped)
              ON CONFLICT (job_id, dataset, source_id) DO NOTHING`,
            [d.jobId, d.dataset, d.entity, r.sourceId, r.id, r.key, r.createdBy, r.createdAt, r.skipReason, r.mapped] as unknown as Knex.RawBinding[]);
          }
          await update(d.jobId, { current_dataset: d.dataset });
          break;
        }
        case 'ExternalImportChunkImported': {
          const d = e.data as DataOf<'ExternalImportChunkImported'>;
          await update(d.jobId, {
            progress: trx.raw(`progress || jsonb_build_object(?::text, jsonb_build_object('lastRow', ?::integer,
                'created', COALESCE((progress #>> ARRAY[?, 'created'])::integer, 0) + ?::integer,
                'skipped', COALESCE((progress #>> ARRAY[?, 'skipped'])::integer, 0) + ?::integer))`,
            [d.dataset, d.lastRow, d.dataset, d.created, d.dataset, d.skipped]),
          });
          break;
        }
        case 'ExternalImportCompleted': {
          const d = e.data as DataOf<'ExternalImportCompleted'>;
          await update(d.jobId, { phase: 'completed', counts: json(d.counts), finished_at: d.completedAt, current_dataset: null });
          break;
        }
        case 'ExternalImportFailed': {
          const d = e.data as DataOf<'ExternalImportFailed'>;
          await update(d.jobId, { phase: 'failed', error: json({ code: d.code, error: d.error, details: d.details, phase: d.phase }), finished_at: d.failedAt });
          break;
        }
        case 'ExternalImportCancelRequested':
          await update((e.data as DataOf<'ExternalImportCancelRequested'>).jobId, { cancel_requested: true });
          break;
        case 'ExternalImportCancelled': {
          const d = e.data as DataOf<'ExternalImportCancelled'>;
          await update(d.jobId, { phase: 'cancelled', finished_at: d.cancelledAt, current_dataset: null });
          break;
        }
        case 'ExternalImportRollbackRequested':
          // The failure a rolled-back job ended with stays on it: the rollback undoes the rows, not the job's story.
          await update((e.data as DataOf<'ExternalImportRollbackRequested'>).jobId, { phase: 'rollingBack', closed: false });
          break;
        case 'ExternalImportRollbackProgressed': {
          const d = e.data as DataOf<'ExternalImportRollbackProgressed'>;
          await update(d.jobId, { deleted: trx.raw(`COALESCE(deleted, '{}'::jsonb) || jsonb_build_object(?::text, ?::integer)`, [d.dataset, d.deleted]) });
          break;
        }
        case 'ExternalImportRolledBack': {
          const d = e.data as DataOf<'ExternalImportRolledBack'>;
          await update(d.jobId, { phase: 'rolledBack', deleted: json(d.deleted), rolled_back_at: d.rolledBackAt });
          // Rows it matched to existing entities too: the job's old ids resolve no more (POST /api/lookup answers 404).
          await trx('external_import_rows').where({ job_id: d.jobId }).update({ rolled_back: true });
          break;
        }
        case 'ExternalImportClosed': {
          const d = e.data as DataOf<'ExternalImportClosed'>;
          await update(d.jobId, { closed: true, ...(d.fileDeleted && { file_deleted: true }) });
          break;
        }
      }
    }
  },
};
