import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf, StoredFileEvent } from '../contracts/events';
import type { Projection } from './runtime/projection';

/**
 * Stored files (`stored_files`): one row per file stream `file-<key>`, saying what owns the file
 * (its project, an import job, an attachment), who stored it and through what, and whether and
 * why it was deleted. Download permissions, the storage quota and the sweep of files whose owner
 * is gone read it. An event changes a row only when it is newer than the revision the row holds.
 */
const FILE_EVENTS: ReadonlySet<string> = new Set<StoredFileEvent['type']>(['FileStored', 'FileAttached', 'FileDeleted']);

export const filesProjection: Projection = {
  name: 'files',
  types: FILE_EVENTS,
  // An import chunk's columns are the read model's business: on the direct transport this projection reads their top level only.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten', 'ExternalImportChunkPlanned'],
  tables: ['stored_files'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    for (const e of events) {
      if (!FILE_EVENTS.has(e.type)) continue;
      const revision = e.revision.toString();
      const update = (key: string, changes: Record<string, unknown>) =>
        trx('stored_files').where({ key }).andWhere('revision', '<', revision).update({ ...changes, revision });
      switch (e.type as StoredFileEvent['type']) {
        case 'FileStored': {
          const d = e.data as DataOf<'FileStored'>;
          const actor = e.metadata.actor;
          await trx('stored_files').insert({
            key: d.key, project_id: d.projectId, owner: d.importJobId === null ? 'project' : 'importJob', import_job_id: d.importJobId,
            name: d.name, mime_type: d.mimeType, size: d.size, sha256: d.sha256, uploaded_by_id: d.uploadedById,
            token_id: actor.tokenId ?? null, via: actor.via, stored_at: d.storedAt, revision,
          }).onConflict('key').ignore();
          break;
        }
        case 'FileAttached': {
          const d = e.data as DataOf<'FileAttached'>;
          await update(d.key, { owner: 'attachment', attachment_id: d.attachmentId });
          break;
        }
        case 'FileDeleted': {
          const d = e.data as DataOf<'FileDeleted'>;
          await update(d.key, { deleted_at: d.deletedAt, delete_reason: d.reason });
          break;
        }
      }
    }
  },
};
