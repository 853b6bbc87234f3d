import type { EventMetadata } from '../../contracts/envelope';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand, loadAggregate } from '../shared/decider';
import { projectFact } from '../projects/project.handlers';
import { caseStream, repositoryCaseDecider } from './repositoryCase.decider';
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

export async function createCase(
  deps: CommandDeps,
  input: { title: string; description: string | null; projectId: number; folderId: number | null },
  metadata: EventMetadata,
): Promise<number> {
  const [project, folder] = await Promise.all([projectFact(deps, input.projectId), optionalFolder(deps, input.folderId)]);
  checkPlacement(project, folder);
  const caseId = await deps.ids.next('repositoryCase', metadata);
  const outcome = await handleCommand(deps.store, caseStream(caseId), repositoryCaseDecider, {
    type: 'CreateRepositoryCase', caseId, title: input.title, description: input.description, project, folder: folder ?? null, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  return caseId;
}

export async function updateCase(
  deps: CommandDeps,
  input: { caseId: number; changes: { title?: string; description?: string | null }; folderId?: number | null },
  metadata: EventMetadata,
): Promise<void> {
  const folder = await optionalFolder(deps, input.folderId);
  const outcome = await handleCommand(deps.store, caseStream(input.caseId), repositoryCaseDecider, {
    type: 'UpdateRepositoryCase', caseId: input.caseId, changes: input.changes, folder, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}

export async function deleteCase(deps: CommandDeps, input: { caseId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, caseStream(input.caseId), repositoryCaseDecider, {
    type: 'DeleteRepositoryCase', caseId: input.caseId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}
