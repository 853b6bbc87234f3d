import type { EventMetadata } from '../../contracts/envelope';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { handleCommand, loadAggregate } from '../shared/decider';
import { projectDecider, projectStream } from './project.decider';
import type { ProjectFact } from '../repository/repositoryFolder.decider';

export async function createProject(deps: CommandDeps, input: { name: string }, metadata: EventMetadata): Promise<number> {
  const projectId = await deps.ids.next('project', metadata);
  const outcome = await handleCommand(deps.store, projectStream(projectId), projectDecider, {
    type: 'CreateProject', projectId, name: input.name, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
  return projectId;
}

export async function updateProject(
  deps: CommandDeps, input: { projectId: number; changes: { name?: string; isDeleted?: boolean } }, metadata: EventMetadata,
): Promise<void> {
  const outcome = await handleCommand(deps.store, projectStream(input.projectId), projectDecider, {
    type: 'UpdateProject', projectId: input.projectId, changes: input.changes, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}

export async function deleteProject(deps: CommandDeps, input: { projectId: number }, metadata: EventMetadata): Promise<void> {
  const outcome = await handleCommand(deps.store, projectStream(input.projectId), projectDecider, {
    type: 'DeleteProject', projectId: input.projectId, now: deps.clock().toISOString(),
  }, metadata);
  await readYourWrites(deps, outcome);
}

/** What other aggregates need to know about a project, read from its own stream (not the read model). */
export async function projectFact(deps: Pick<CommandDeps, 'store'>, projectId: number): Promise<ProjectFact> {
  const { state } = await loadAggregate(deps.store, projectStream(projectId), projectDecider);
  return { id: projectId, exists: state.exists, isDeleted: state.isDeleted };
}
