import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf, ImportJobEvent } from '../contracts/events';
import type { Projection } from './runtime/projection';

/**
 * Import jobs as GET /api/imports/{jobId} shows them: state, files, counts, warnings, error. One
 * row per job stream; an event changes the row only when it is newer than the revision the row
 * holds, so a redelivery changes nothing. A job has a handful of events plus one per chunk of a few
 * hundred results: one statement per event is cheap here.
 */
const JOB_EVENTS: ReadonlySet<string> = new Set<ImportJobEvent['type']>([
  'ImportRequested', 'ImportFileStored', 'ImportParsed', 'ImportTestRunPlanned', 'TestResultsImported', 'ImportCompleted', 'ImportFailed',
]);

export const importsProjection: Projection = {
  name: 'imports',
  types: JOB_EVENTS,
  // An import chunk's columns are the read model's business: this projection reads their summary.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten', 'ExternalImportChunkPlanned'],
  tables: ['import_jobs'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    for (const e of events) {
      if (!JOB_EVENTS.has(e.type)) continue;
      const revision = e.revision.toString();
      const at = e.recordedAt;
      const update = (jobId: number, changes: Record<string, unknown>) =>
        trx('import_jobs').where({ job_id: jobId }).andWhere('revision', '<', revision).update({ ...changes, updated_at: at, revision });
      switch (e.type as ImportJobEvent['type']) {
        case 'ImportRequested': {
          const d = e.data as DataOf<'ImportRequested'>;
          const { jobId, projectId, endpoint, format, testRunName, testRunId, requestedAt, branch, commit, buildUrl, ciJobId, attempt, newAttempt, ...options } = d;
          const actor = e.metadata.actor;
          // v1 events have no CI context; a job without any shows null.
          const ci = [branch, commit, buildUrl, ciJobId, attempt].some((v) => v !== undefined && v !== null)
            ? { branch: branch ?? null, commit: commit ?? null, buildUrl: buildUrl ?? null, ciJobId: ciJobId ?? null, attempt: attempt ?? null, newAttempt: newAttempt ?? false }
            : null;
          await trx('import_jobs').insert({
            job_id: jobId, project_id: projectId, test_run_id: testRunId, state: 'queued', endpoint, format, test_run_name: testRunName,
            ci: ci && JSON.stringify(ci), options: JSON.stringify(options), files: JSON.stringify([]), warnings: JSON.stringify([]), created_by_id: actor.userId ?? null,
            token_id: actor.tokenId ?? null, via: actor.via, created_at: requestedAt, updated_at: requestedAt, revision,
          }).onConflict('job_id').ignore();
          break;
        }
        case 'ImportFileStored': {
          const d = e.data as DataOf<'ImportFileStored'>;
          const file = { index: d.index, name: d.fileName, sizeBytes: d.sizeBytes, sha256: d.sha256 };
          await update(d.jobId, { files: trx.raw(`files || ?::jsonb`, [JSON.stringify([file])]) });
          break;
        }
        case 'ImportParsed': {
          const d = e.data as DataOf<'ImportParsed'>;
          await update(d.jobId, { state: 'running', format: d.format, total_cases: d.cases, warnings: JSON.stringify(d.warnings), warning_count: d.warningCount });
          break;
        }
        case 'ImportTestRunPlanned': {
          const d = e.data as DataOf<'ImportTestRunPlanned'>;
          await update(d.jobId, { test_run_id: d.testRunId });
          break;
        }
        case 'TestResultsImported': {
          const d = e.data as DataOf<'TestResultsImported'>;
          await update(d.jobId, { processed_cases: d.processedCases, chunks: d.chunk + 1 });
          break;
        }
        case 'ImportCompleted': {
          const d = e.data as DataOf<'ImportCompleted'>;
          await update(d.jobId, { state: 'completed', counts: JSON.stringify(d.counts), finished_at: d.completedAt, final_position: e.position });
          break;
        }
        case 'ImportFailed': {
          const d = e.data as DataOf<'ImportFailed'>;
          await update(d.jobId, { state: 'failed', error: JSON.stringify({ error: d.error, code: d.code, details: d.details }), finished_at: d.failedAt, final_position: e.position });
          break;
        }
      }
    }
  },
};
