import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf, SearchReindexEvent } from '../contracts/events';
import type { Projection } from './runtime/projection';

/**
 * Search reindex jobs as GET /api/admin/search/reindex lists them: phase, progress per type,
 * who asked, times, error. One row per job stream; an event changes the row only when it is newer
 * than the revision the row holds, so a redelivery changes nothing. A job has a few events plus one
 * per batch of documents: one statement per event.
 */
const JOB_EVENTS: ReadonlySet<string> = new Set<SearchReindexEvent['type']>([
  'SearchReindexRequested', 'SearchReindexStarted', 'SearchReindexProgressed', 'SearchReindexPaused', 'SearchReindexResumed',
  'SearchReindexCancelled', 'SearchReindexCompleted', 'SearchReindexFailed',
]);

export const searchReindexProjection: Projection = {
  name: 'searchReindex',
  types: JOB_EVENTS,
  // An import chunk's columns are the read model's business: on the direct transport this projection reads their top level only.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten', 'ExternalImportChunkPlanned'],
  tables: ['search_reindex_jobs'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    for (const e of events) {
      if (!JOB_EVENTS.has(e.type)) continue;
      const revision = e.revision.toString();
      const update = (jobId: number, changes: Record<string, unknown>) =>
        trx('search_reindex_jobs').where({ job_id: jobId }).andWhere('revision', '<', revision).update({ ...changes, updated_at: e.recordedAt, revision });
      switch (e.type as SearchReindexEvent['type']) {
        case 'SearchReindexRequested': {
          const d = e.data as DataOf<'SearchReindexRequested'>;
          const actor = e.metadata.actor;
          await trx('search_reindex_jobs').insert({
            job_id: d.jobId, mode: d.mode, project_ids: d.projectIds && JSON.stringify(d.projectIds), types: d.types && JSON.stringify(d.types),
            batch_size: d.batchSize, run_at: d.runAt, repeat_every_minutes: d.repeatEveryMinutes, repeat_of: d.repeatOf, state: 'queued',
            created_by_id: actor.userId ?? null, token_id: actor.tokenId ?? null, via: actor.via,
            created_at: d.requestedAt, updated_at: d.requestedAt, revision,
          }).onConflict('job_id').ignore();
          break;
        }
        case 'SearchReindexStarted': {
          const d = e.data as DataOf<'SearchReindexStarted'>;
          const progress = Object.fromEntries(Object.entries(d.totals).map(([type, total]) => [type, { documents: 0, total, afterId: 0, done: false }]));
          await update(d.jobId, {
            state: 'running', engine: d.engine, target: d.target, version: d.version, replaces_version: d.replacesVersion, progress: JSON.stringify(progress),
            documents: 0, total: Object.values(d.totals).reduce((a, b) => a + (b ?? 0), 0), started_at: d.startedAt,
          });
          break;
        }
        case 'SearchReindexProgressed': {
          const d = e.data as DataOf<'SearchReindexProgressed'>;
          await update(d.jobId, {
            documents: trx.raw(`documents + ? - COALESCE((progress #>> ARRAY[?, 'documents'])::integer, 0)`, [d.documents, d.type]),
            progress: trx.raw(`progress || jsonb_build_object(?::text, COALESCE(progress -> ?, '{}'::jsonb) || ?::jsonb)`,
              [d.type, d.type, JSON.stringify({ documents: d.documents, afterId: d.afterId, done: d.typeDone })]),
          });
          break;
        }
        case 'SearchReindexPaused': {
          const d = e.data as DataOf<'SearchReindexPaused'>;
          await update(d.jobId, { state: 'paused', paused_at: d.pausedAt });
          break;
        }
        case 'SearchReindexResumed': {
          const d = e.data as DataOf<'SearchReindexResumed'>;
          await update(d.jobId, { state: trx.raw(`CASE WHEN started_at IS NULL THEN 'queued' ELSE 'running' END`), paused_at: null });
          break;
        }
        case 'SearchReindexCancelled': {
          const d = e.data as DataOf<'SearchReindexCancelled'>;
          await update(d.jobId, { state: 'cancelled', finished_at: d.cancelledAt });
          break;
        }
        case 'SearchReindexCompleted': {
          const d = e.data as DataOf<'SearchReindexCompleted'>;
          await update(d.jobId, { state: 'completed', switched: d.switched, dropped_versions: JSON.stringify(d.droppedVersions), finished_at: d.completedAt });
          break;
        }
        case 'SearchReindexFailed': {
          const d = e.data as DataOf<'SearchReindexFailed'>;
          await update(d.jobId, { state: 'failed', error: JSON.stringify({ error: d.error, code: d.code, details: d.details }), finished_at: d.failedAt });
          break;
        }
      }
    }
  },
};
