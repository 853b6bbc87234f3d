import type { EventMetadata } from '../../contracts/envelope';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand, loadAggregate } from '../shared/decider';
import { factOf } from '../entities/entity.handlers';
import { checkFolderInProject, checkProject, type FolderFact, type ProjectFact, folderStream, repositoryFolderDecider } from './repositoryFolder.decider';

async function folderFact(deps: Pick<CommandDeps, 'store'>, folderId: number): Promise<FolderFact> {
  const { state } = await loadAggregate(deps.store, folderStream(folderId), repositoryFolderDecider);
  return { id: folderId, exists: state.exists, isDeleted: state.isDeleted, projectId: state.projectId };
}

/** Refuses before an id is reserved, so a refused create appends nothing; the decider checks again. */
function checkPlacement(project: ProjectFact, folder: FolderFact | null | undefined): void {
  checkProject(project);
  if (folder) checkFolderInProject(folder, project.id);
}

const MAX_FOLDER_DEPTH = 1000;

/** A prospective parent folder, with its ancestors read from their streams (nearest first). */
async function parentFact(deps: Pick<CommandDeps, 'store'>, folderId: number): Promise<FolderFact> {
  let state = (await loadAggregate(deps.store, folderStream(folderId), repositoryFolderDecider)).state;
  const fact: FolderFact = { id: folderId, exists: state.exists, isDeleted: state.isDeleted, projectId: state.projectId };
  const ancestorIds: number[] = [];
  while (state.parentId !== null && ancestorIds.length < MAX_FOLDER_DEPTH && !ancestorIds.includes(state.parentId)) {
    ancestorIds.push(state.parentId);
    state = (await loadAggregate(deps.store, folderStream(state.parentId), repositoryFolderDecider)).state;
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
  deps: CommandDeps, input: { name: string; projectId: number; parentId: number | null }, metadata: EventMetadata,
): Promise<number> {
  const [project, parent] = await Promise.all([projectFact(deps, input.projectId), optionalFolder(deps, input.parentId)]);
  checkPlacement(project, parent);
  const folderId = await deps.ids.next('repositoryFolder', metadata);
  const outcome = await handleCommand(deps.store, folderStream(folderId), repositoryFolderDecider, {
    type: 'CreateRepositoryFolder', folderId, name: input.name, project, parent: parent ?? null, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  return folderId;
}

export async function updateFolder(
  deps: CommandDeps, input: { folderId: number; changes: { name?: string }; parentId?: number | null }, metadata: EventMetadata,
): Promise<void> {
  const parent = input.parentId === undefined || input.parentId === null ? input.parentId : await parentFact(deps, input.parentId);
  const outcome = await handleCommand(deps.store, folderStream(input.folderId), repositoryFolderDecider, {
    type: 'UpdateRepositoryFolder', folderId: input.folderId, changes: input.changes, parent, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}

export async function deleteFolder(deps: CommandDeps, input: { folderId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, folderStream(input.folderId), repositoryFolderDecider, {
    type: 'DeleteRepositoryFolder', folderId: input.folderId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}
