import type { EventMetadata } from '../../contracts/envelope';
import { ENTITIES, type EntityName, writtenAs } from '../../contracts/entities';
import { createEntity, deleteEntity, type EntityWrite, updateEntity } from '../entities/entity.handlers';
import type { AccessLevel } from '../../contracts/events';
import { withAttachedFiles } from '../files/attachments';
import { createFolder, deleteFolder, updateFolder } from '../repository/repository.handlers';
import { deleteUser, registerUser, updateUser } from '../identity/identity.handlers';
import type { CommandDeps } from '../shared/commandBus';
import { HttpError, badRequest } from '../shared/errors';

/**
 * Model API writes, translated into commands: repository folders have their own aggregate (a
 * tree that must stay acyclic), users theirs (services/identity: e-mail claimed, password hashed,
 * deactivation ends sessions and tokens); every other writable entity goes through the generic
 * entity aggregate. Each returns the entity's id once the read model has applied the events.
 */
export interface EntityCommands {
  create(deps: CommandDeps, write: EntityWrite, metadata: EventMetadata): Promise<number>;
  update(deps: CommandDeps, id: number, write: EntityWrite, metadata: EventMetadata): Promise<number>;
  delete(deps: CommandDeps, id: number, metadata: EventMetadata): Promise<number>;
}

const folderCommands: EntityCommands = {
  async create(deps, { data, connect }, metadata) {
    return createFolder(deps, { name: data.name as string, projectId: connect.project as number, parentId: connect.parent ?? null }, metadata);
  },
  async update(deps, id, { data, connect }, metadata) {
    await updateFolder(deps, {
      folderId: id, changes: data.name === undefined ? {} : { name: data.name as string }, parentId: connect.parent,
      ...(connect.project != null && { projectId: connect.project }),
    }, metadata);
    return id;
  },
  async delete(deps, id, metadata) {
    await deleteFolder(deps, { folderId: id }, metadata);
    return id;
  },
};

const userCommands: EntityCommands = {
  async create(deps, { data, connect, writeOnly }, metadata) {
    return registerUser(deps, {
      email: data.email as string, name: data.name as string, password: writeOnly?.password as string,
      access: (data.access as AccessLevel | undefined) ?? 'USER', roleId: connect.role ?? null, isActive: data.isActive as boolean | undefined,
    }, metadata);
  },
  async update(deps, id, { data, connect, writeOnly }, metadata) {
    if (data.email !== undefined) throw badRequest('invalid-argument', 'data.email: is set on create only and cannot be changed', { path: 'data.email' });
    await updateUser(deps, {
      userId: id, name: data.name as string | undefined, access: data.access as AccessLevel | undefined, roleId: connect.role,
      isActive: data.isActive as boolean | undefined, password: writeOnly?.password,
    }, metadata);
    return id;
  },
  async delete(deps, id, metadata) {
    await deleteUser(deps, { userId: id }, metadata);
    return id;
  },
};

function genericCommands(name: EntityName): EntityCommands {
  const entity = ENTITIES[name];
  return {
    create(deps, write, metadata) {
      if (entity.softDeleteField && write.data[entity.softDeleteField] !== undefined) {
        throw badRequest('invalid-argument', `${entity.softDeleteField} cannot be set on create`, { path: `data.${entity.softDeleteField}` });
      }
      return createEntity(deps, name, write, metadata);
    },
    async update(deps, id, write, metadata) {
      await updateEntity(deps, name, id, write, metadata);
      return id;
    },
    async delete(deps, id, metadata) {
      await deleteEntity(deps, name, id, metadata);
      return id;
    },
  };
}

/** Refuses any write of an entity nobody writes directly (owned children, projections): 400 read-only-entity. */
export function assertWritable(name: EntityName): void {
  if (writtenAs(ENTITIES[name]) === 'aggregate') return;
  const how = writtenAs(ENTITIES[name]) === 'owned' ? 'write it through its parent (nested create / deleteMany)' : 'it is derived from other changes';
  throw new HttpError(400, 'read-only-entity', `${name} cannot be written directly: ${how}`, { entity: name });
}

function readOnly(name: EntityName): EntityCommands {
  const refuse = async (): Promise<never> => {
    assertWritable(name);
    throw new Error(`${name} is writable`);
  };
  return { create: refuse, update: refuse, delete: refuse };
}

export const ENTITY_COMMANDS = Object.fromEntries((Object.keys(ENTITIES) as EntityName[]).map((name) => [
  name,
  name === 'repositoryFolder' ? folderCommands : name === 'user' ? userCommands : name === 'attachment' ? withAttachedFiles(genericCommands(name))
    : writtenAs(ENTITIES[name]) === 'aggregate' ? genericCommands(name) : readOnly(name),
])) as Record<EntityName, EntityCommands>;
