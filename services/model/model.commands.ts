import type { EventMetadata } from '../../contracts/envelope';
import type { EntityName } from '../../contracts/entities';
import type { CommandDeps } from '../shared/commandBus';
import { badRequest } from '../shared/errors';
import { createProject, deleteProject, updateProject } from '../projects/project.handlers';
import { createCase, createFolder, deleteCase, deleteFolder, updateCase, updateFolder } from '../repository/repository.handlers';
import type { CreateArgs, DeleteArgs, UpdateArgs } from './args';

/**
 * Model API writes, translated into commands of the owning bounded context. Each returns the id
 * of the entity once the read model has applied the events.
 */
export interface EntityCommands {
  create(deps: CommandDeps, args: CreateArgs, metadata: EventMetadata): Promise<number>;
  update(deps: CommandDeps, args: UpdateArgs, metadata: EventMetadata): Promise<number>;
  delete(deps: CommandDeps, args: DeleteArgs, metadata: EventMetadata): Promise<number>;
}

const str = (v: unknown) => v as string;
const optionalStr = (v: unknown) => (v === undefined ? undefined : (v as string | null));
const only = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

export const ENTITY_COMMANDS: Record<EntityName, EntityCommands> = {
  project: {
    async create(deps, { data }, metadata) {
      if (data.isDeleted !== undefined) throw badRequest('invalid-argument', 'isDeleted cannot be set on create', { path: 'data.isDeleted' });
      return createProject(deps, { name: str(data.name) }, metadata);
    },
    async update(deps, { where, data }, metadata) {
      await updateProject(deps, { projectId: where.id, changes: only({ name: data.name as string | undefined, isDeleted: data.isDeleted as boolean | undefined }) }, metadata);
      return where.id;
    },
    async delete(deps, { where }, metadata) {
      await deleteProject(deps, { projectId: where.id }, metadata);
      return where.id;
    },
  },
  repositoryFolder: {
    async create(deps, { data, connect }, metadata) {
      if (data.isDeleted !== undefined) throw badRequest('invalid-argument', 'isDeleted cannot be set on create', { path: 'data.isDeleted' });
      return createFolder(deps, { name: str(data.name), projectId: connect.project as number, parentId: connect.parent ?? null }, metadata);
    },
    async update(deps, { where, data, connect }, metadata) {
      if (data.isDeleted !== undefined) throw badRequest('invalid-argument', 'use delete to delete a folder', { path: 'data.isDeleted' });
      if (connect.project !== undefined) throw badRequest('invalid-argument', 'a folder cannot move to another project', { path: 'data.project' });
      await updateFolder(deps, { folderId: where.id, changes: only({ name: data.name as string | undefined }), parentId: connect.parent }, metadata);
      return where.id;
    },
    async delete(deps, { where }, metadata) {
      await deleteFolder(deps, { folderId: where.id }, metadata);
      return where.id;
    },
  },
  repositoryCase: {
    async create(deps, { data, connect }, metadata) {
      if (data.isDeleted !== undefined) throw badRequest('invalid-argument', 'isDeleted cannot be set on create', { path: 'data.isDeleted' });
      return createCase(deps, {
        title: str(data.title), description: optionalStr(data.description) ?? null, projectId: connect.project as number, folderId: connect.folder ?? null,
      }, metadata);
    },
    async update(deps, { where, data, connect }, metadata) {
      if (data.isDeleted !== undefined) throw badRequest('invalid-argument', 'use delete to delete a case', { path: 'data.isDeleted' });
      if (connect.project !== undefined) throw badRequest('invalid-argument', 'a case cannot move to another project', { path: 'data.project' });
      await updateCase(deps, {
        caseId: where.id, changes: only({ title: data.title as string | undefined, description: optionalStr(data.description) }), folderId: connect.folder,
      }, metadata);
      return where.id;
    },
    async delete(deps, { where }, metadata) {
      await deleteCase(deps, { caseId: where.id }, metadata);
      return where.id;
    },
  },
};
