import type { RepositoryFolderCreated, RepositoryFolderDeleted, RepositoryFolderUpdated } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';

export type RepositoryFolderEvent = RepositoryFolderCreated | RepositoryFolderUpdated | RepositoryFolderDeleted;

/** Facts the handler looked up before deciding: the decider itself does no I/O. */
export interface ProjectFact { id: number; exists: boolean; isDeleted: boolean }
export interface FolderFact {
  id: number; exists: boolean; isDeleted: boolean; projectId: number | null;
  /** Ids of the folder's ancestors, nearest first (needed to refuse a move into its own subtree). */
  ancestorIds?: number[];
}

export type RepositoryFolderCommand =
  | { type: 'CreateRepositoryFolder'; folderId: number; name: string; project: ProjectFact; parent: FolderFact | null; now: string }
  | {
    type: 'UpdateRepositoryFolder'; folderId: number; changes: { name?: string }; parent?: FolderFact | null;
    /** The project the caller names: a folder stays in its own (docs/access.md). */
    projectId?: number; now: string;
  }
  | { type: 'DeleteRepositoryFolder'; folderId: number; now: string };

export interface RepositoryFolderState {
  exists: boolean;
  projectId: number | null;
  parentId: number | null;
  name: string;
  isDeleted: boolean;
}

export const initialState: RepositoryFolderState = { exists: false, projectId: null, parentId: null, name: '', isDeleted: false };

export const folderStream = (folderId: number) => `repositoryFolder-${folderId}`;

export function checkProject(project: ProjectFact): void {
  if (!project.exists) throw new DomainError('project-not-found', `Project ${project.id} does not exist`, { projectId: project.id });
  if (project.isDeleted) throw new DomainError('project-deleted', `Project ${project.id} is deleted`, { projectId: project.id });
}

export function checkFolderInProject(folder: FolderFact, projectId: number | null): void {
  if (!folder.exists || folder.isDeleted) throw new DomainError('folder-not-found', `Folder ${folder.id} does not exist`, { folderId: folder.id });
  if (folder.projectId !== projectId)
    throw new DomainError('folder-in-other-project', `Folder ${folder.id} belongs to another project`, { folderId: folder.id });
}

export function decide(cmd: RepositoryFolderCommand, s: RepositoryFolderState): RepositoryFolderEvent[] {
  switch (cmd.type) {
    case 'CreateRepositoryFolder':
      if (s.exists) throw new DomainError('folder-exists', `Folder ${cmd.folderId} already exists`);
      checkProject(cmd.project);
      if (cmd.parent) checkFolderInProject(cmd.parent, cmd.project.id);
      return [{
        type: 'RepositoryFolderCreated',
        data: { folderId: cmd.folderId, projectId: cmd.project.id, parentId: cmd.parent?.id ?? null, name: cmd.name, createdAt: cmd.now },
      }];
    case 'UpdateRepositoryFolder': {
      if (!s.exists || s.isDeleted) throw new DomainError('folder-not-found', `Folder ${cmd.folderId} does not exist`);
      if (cmd.projectId !== undefined && cmd.projectId !== s.projectId) {
        throw new DomainError('cross-project-move', `Folders do not move to another project (from ${s.projectId} to ${cmd.projectId})`, { path: 'data.project', from: s.projectId, to: cmd.projectId });
      }
      const changes: RepositoryFolderUpdated['data']['changes'] = {};
      if (cmd.changes.name !== undefined && cmd.changes.name !== s.name) changes.name = cmd.changes.name;
      if (cmd.parent !== undefined) {
        const parentId = cmd.parent?.id ?? null;
        if (cmd.parent) checkFolderInProject(cmd.parent, s.projectId);
        if (parentId === cmd.folderId || cmd.parent?.ancestorIds?.includes(cmd.folderId))
          throw new DomainError('folder-cycle', 'A folder cannot move into itself or one of its subfolders', { folderId: cmd.folderId, parentId });
        if (parentId !== s.parentId) changes.parentId = parentId;
      }
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'RepositoryFolderUpdated', data: { folderId: cmd.folderId, changes, updatedAt: cmd.now } }];
    }
    case 'DeleteRepositoryFolder':
      if (!s.exists) throw new DomainError('folder-not-found', `Folder ${cmd.folderId} does not exist`);
      if (s.isDeleted) return [];
      return [{ type: 'RepositoryFolderDeleted', data: { folderId: cmd.folderId, deletedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: RepositoryFolderState, e: RepositoryFolderEvent): RepositoryFolderState {
  switch (e.type) {
    case 'RepositoryFolderCreated':
      return { exists: true, projectId: e.data.projectId, parentId: e.data.parentId, name: e.data.name, isDeleted: false };
    case 'RepositoryFolderUpdated':
      return { ...s, ...e.data.changes };
    case 'RepositoryFolderDeleted':
      return { ...s, isDeleted: true };
    default:
      return assertNever(e);
  }
}

export const repositoryFolderDecider = { initialState, decide, evolve };
