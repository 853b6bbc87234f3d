import type { RepositoryCaseCreated, RepositoryCaseDeleted, RepositoryCaseUpdated } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';
import { checkFolderInProject, checkProject, type FolderFact, type ProjectFact } from './repositoryFolder.decider';

export type RepositoryCaseEvent = RepositoryCaseCreated | RepositoryCaseUpdated | RepositoryCaseDeleted;

export type RepositoryCaseCommand =
  | { type: 'CreateRepositoryCase'; caseId: number; title: string; description: string | null; project: ProjectFact; folder: FolderFact | null; now: string }
  | { type: 'UpdateRepositoryCase'; caseId: number; changes: { title?: string; description?: string | null }; folder?: FolderFact | null; now: string }
  | { type: 'DeleteRepositoryCase'; caseId: number; now: string };

export interface RepositoryCaseState {
  exists: boolean;
  projectId: number | null;
  folderId: number | null;
  title: string;
  description: string | null;
  isDeleted: boolean;
}

export const initialState: RepositoryCaseState = { exists: false, projectId: null, folderId: null, title: '', description: null, isDeleted: false };

export const caseStream = (caseId: number) => `repositoryCase-${caseId}`;

export function decide(cmd: RepositoryCaseCommand, s: RepositoryCaseState): RepositoryCaseEvent[] {
  switch (cmd.type) {
    case 'CreateRepositoryCase':
      if (s.exists) throw new DomainError('case-exists', `Case ${cmd.caseId} already exists`);
      checkProject(cmd.project);
      if (cmd.folder) checkFolderInProject(cmd.folder, cmd.project.id);
      return [{
        type: 'RepositoryCaseCreated',
        data: { caseId: cmd.caseId, projectId: cmd.project.id, folderId: cmd.folder?.id ?? null, title: cmd.title, description: cmd.description, createdAt: cmd.now },
      }];
    case 'UpdateRepositoryCase': {
      if (!s.exists || s.isDeleted) throw new DomainError('case-not-found', `Case ${cmd.caseId} does not exist`);
      const changes: RepositoryCaseUpdated['data']['changes'] = {};
      if (cmd.changes.title !== undefined && cmd.changes.title !== s.title) changes.title = cmd.changes.title;
      if (cmd.changes.description !== undefined && cmd.changes.description !== s.description) changes.description = cmd.changes.description;
      if (cmd.folder !== undefined) {
        if (cmd.folder) checkFolderInProject(cmd.folder, s.projectId);
        const folderId = cmd.folder?.id ?? null;
        if (folderId !== s.folderId) changes.folderId = folderId;
      }
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'RepositoryCaseUpdated', data: { caseId: cmd.caseId, changes, updatedAt: cmd.now } }];
    }
    case 'DeleteRepositoryCase':
      if (!s.exists) throw new DomainError('case-not-found', `Case ${cmd.caseId} does not exist`);
      if (s.isDeleted) return [];
      return [{ type: 'RepositoryCaseDeleted', data: { caseId: cmd.caseId, deletedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: RepositoryCaseState, e: RepositoryCaseEvent): RepositoryCaseState {
  switch (e.type) {
    case 'RepositoryCaseCreated':
      return { exists: true, projectId: e.data.projectId, folderId: e.data.folderId, title: e.data.title, description: e.data.description, isDeleted: false };
    case 'RepositoryCaseUpdated':
      return { ...s, ...e.data.changes };
    case 'RepositoryCaseDeleted':
      return { ...s, isDeleted: true };
    default:
      return assertNever(e);
  }
}

export const repositoryCaseDecider = { initialState, decide, evolve };
