import type { ProjectCreated, ProjectDeleted, ProjectUpdated } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';

export type ProjectEvent = ProjectCreated | ProjectUpdated | ProjectDeleted;

export type ProjectCommand =
  | { type: 'CreateProject'; projectId: number; name: string; now: string }
  | { type: 'UpdateProject'; projectId: number; changes: { name?: string; isDeleted?: boolean }; now: string }
  | { type: 'DeleteProject'; projectId: number; now: string };

export interface ProjectState {
  exists: boolean;
  id: number | null;
  name: string;
  isDeleted: boolean;
}

export const initialState: ProjectState = { exists: false, id: null, name: '', isDeleted: false };

export const projectStream = (projectId: number) => `project-${projectId}`;

export function decide(cmd: ProjectCommand, s: ProjectState): ProjectEvent[] {
  switch (cmd.type) {
    case 'CreateProject':
      if (s.exists) throw new DomainError('project-exists', `Project ${cmd.projectId} already exists`);
      return [{ type: 'ProjectCreated', data: { projectId: cmd.projectId, name: cmd.name, createdAt: cmd.now } }];
    case 'UpdateProject': {
      if (!s.exists) throw new DomainError('project-not-found', `Project ${cmd.projectId} does not exist`);
      const changes: ProjectUpdated['data']['changes'] = {};
      if (cmd.changes.name !== undefined && cmd.changes.name !== s.name) changes.name = cmd.changes.name;
      if (cmd.changes.isDeleted !== undefined && cmd.changes.isDeleted !== s.isDeleted) changes.isDeleted = cmd.changes.isDeleted;
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'ProjectUpdated', data: { projectId: cmd.projectId, changes, updatedAt: cmd.now } }];
    }
    case 'DeleteProject':
      if (!s.exists) throw new DomainError('project-not-found', `Project ${cmd.projectId} does not exist`);
      if (s.isDeleted) return [];
      return [{ type: 'ProjectDeleted', data: { projectId: cmd.projectId, deletedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: ProjectState, e: ProjectEvent): ProjectState {
  switch (e.type) {
    case 'ProjectCreated':
      return { exists: true, id: e.data.projectId, name: e.data.name, isDeleted: false };
    case 'ProjectUpdated':
      return { ...s, ...e.data.changes };
    case 'ProjectDeleted':
      return { ...s, isDeleted: true };
    default:
      return assertNever(e);
  }
}

export const projectDecider = { initialState, decide, evolve };
