import type { EventMetadata } from '../../contracts/envelope';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand, loadAggregate } from '../shared/decider';
import { factOf } from '../entities/entity.handlers';
import { withImportedFolderOrigin } from '../entities/importedRows';
import { checkFolderInProject, checkProject, type FolderFact, type ProjectFact, folderStream, repositoryFolderDecider } from './repositoryFolder.decider';

/** The folder decider, starting from the row when an import made the folder (it has no Created event of its own). */
const folderDecider = (deps: Pick<CommandDeps, 'knex'>, folderId: number) => withImportedFolderOrigin(deps.knex, folderId, repositoryFolderDecider);

async function folderFact(deps: Pick<CommandDeps, 'store' | 'knex'>, folderId: number): Promise<FolderFact> {
  const { state } = await loadAggregate(deps.store, folderStream(folderId), await folderDecider(deps, folderId));
  return { id: folderId, exists: state.exists, isDeleted: state.isDeleted, projectId: state.projectId };
}

/** Refuses before an id is reserved, so a refused create appends nothing; the decider checks again. */
function checkPlacement(project: ProjectFact, folder: FolderFact | null | undefined): void {
  checkProject(project);
  if (folder) checkFolderInProject(folder, project.id);
}

const MAX_FOLDER_DEPTH = 1000;

/** A prospective parent folder, with its ancestors read from their streams (nearest first). */
async function parentFact(deps: Pick<CommandDeps, 'store' | 'knex'>, folderId: number): Promise<FolderFact> {
  let state = (await loadAggregate(deps.store, folderStream(folderId), await folderDecider(deps, folderId))).state;
  const fact: FolderFact = { id: folderId, exists: state.exists, isDeleted: state.isDeleted, projectId: state.projectId };
  const ancestorIds: number[] = [];
  while (state.parentId !== null && ancestorIds.length < MAX_FOLDER_DEPTH && !ancestorIds.includes(state.parentId)) {
    ancestorIds.push(state.parentId);
    state = (await loadAggregate(deps.store, folderStream(state.parentId), await folderDecider(deps, state.parentId))).state;
  }
  return { ...fact, ancestorIds };
}

/** What a folder needs to know about its project, from the project's own stream. */
async function projectFact(deps: Pick<CommandDeps, 'store' | 'knex'>, projectId: number): Promise<ProjectFact> {
  const { exists, isDeleted } = await factOf(deps, 'project', projectId);
  return { id: projectId, exists, isDeleted };
}

const optionalFolder = (deps: CommandDeps, id: number | null | undefined) =>
  id === undefined ? Promise.resolve(undefined) : id === null ? Promise.resolve(null) : folderFact(deps, id);

export async function createFolder(
  deps: CommandDeps, input: { name: string; projectId: number; parentId: number | null }, metadata: EventMetadata, plannedId?: number,
): Promise<number> {
  const [project, parent] = await Promise.all([projectFact(deps, input.projectId), optionalFolder(deps, input.parentId)]);
  checkPlacement(project, parent);
  const folderId = plannedId ?? (await deps.ids.next('repositoryFolder', metadata));
  const outcome = await handleCommand(deps.store, folderStream(folderId), repositoryFolderDecider, {
    type: 'CreateRepositoryFolder', folderId, name: input.name, project, parent: parent ?? null, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  return folderId;
}

export async function updateFolder(
  deps: CommandDeps, input: { folderId: number; changes: { name?: string }; parentId?: number | null; projectId?: number }, metadata: EventMetadata,
): Promise<void> {
  const parent = input.parentId === undefined || input.parentId === null ? input.parentId : await parentFact(deps, input.parentId);
  const outcome = await handleCommand(deps.store, folderStream(input.folderId), await folderDecider(deps, input.folderId), {
    type: 'UpdateRepositoryFolder', folderId: input.folderId, changes: input.changes, parent,
    ...(input.projectId !== undefined && { projectId: input.projectId }), now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}

export async function deleteFolder(deps: CommandDeps, input: { folderId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, folderStream(input.folderId), await folderDecider(deps, input.folderId), {
    type: 'DeleteRepositoryFolder', folderId: input.folderId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}
