import type { FileDeletionReason, FileStored, StoredFileEvent } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';

/**
 * A stored file, on its own stream `file-<key>`: stored for a project or an import job, perhaps
 * attached to one attachment of its project, deleted once. Who owns it decides who may read it
 * (storedFiles.ts); the stream records every change of owner and the deletion with the actor.
 * Pure: the caller looks up and passes the time.
 */

export const fileStream = (key: string) => `file-${key}`;

export interface StoredFileState {
  status: 'none' | 'stored' | 'deleted';
  key: string;
  projectId: number;
  importJobId: number | null;
  attachmentId: number | null;
}

export const initialStoredFileState: StoredFileState = { status: 'none', key: '', projectId: 0, importJobId: null, attachmentId: null };

export type StoredFileCommand =
  | { type: 'Store'; file: Omit<FileStored['data'], 'storedAt'>; now: string }
  | { type: 'Attach'; key: string; projectId: number; attachmentId: number; now: string }
  | { type: 'Delete'; key: string; reason: FileDeletionReason; now: string };

export function decide(cmd: StoredFileCommand, s: StoredFileState): StoredFileEvent[] {
  switch (cmd.type) {
    case 'Store':
      if (s.status !== 'none') throw new DomainError('file-exists', `A file is stored under ${s.key} already`, { key: s.key });
      return [{ type: 'FileStored', data: { ...cmd.file, storedAt: cmd.now } }];
    case 'Attach':
      // A file of another project is not there to be attached, exactly as if it did not exist.
      if (s.status !== 'stored' || s.projectId !== cmd.projectId) throw new DomainError('file-not-found', 'No file is stored under this key', { key: cmd.key, path: 'data.url' });
      if (s.attachmentId === cmd.attachmentId) return [];
      if (s.attachmentId !== null || s.importJobId !== null) {
        const owner = s.attachmentId !== null ? `attachment ${s.attachmentId}` : `import job ${s.importJobId}`;
        throw new DomainError('file-in-use', `The file belongs to ${owner}; upload it again to attach it elsewhere`, { key: s.key, path: 'data.url' });
      }
      return [{ type: 'FileAttached', data: { key: s.key, projectId: s.projectId, attachmentId: cmd.attachmentId, attachedAt: cmd.now } }];
    case 'Delete':
      if (s.status === 'none') throw new DomainError('file-not-found', 'No file is stored under this key', { key: cmd.key });
      if (s.status === 'deleted') return [];
      return [{ type: 'FileDeleted', data: { key: s.key, projectId: s.projectId, reason: cmd.reason, deletedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: StoredFileState, e: StoredFileEvent): StoredFileState {
  switch (e.type) {
    case 'FileStored':
      return { status: 'stored', key: e.data.key, projectId: e.data.projectId, importJobId: e.data.importJobId, attachmentId: null };
    case 'FileAttached':
      return { ...s, attachmentId: e.data.attachmentId };
    case 'FileDeleted':
      return { ...s, status: 'deleted' };
    default:
      return assertNever(e);
  }
}

export const storedFileDecider = { initialState: initialStoredFileState, decide, evolve };
