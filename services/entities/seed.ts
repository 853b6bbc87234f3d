import type { EventMetadata } from '../../contracts/envelope';
import { APPLICATION_AREAS, type EntityName } from '../../contracts/entities';
import type { DefaultsPlanned } from '../../contracts/events';
import type { CommandDeps } from '../shared/commandBus';
import { ConcurrencyError, DomainError } from '../shared/errors';
import { createEntity, factOf } from './entity.handlers';

/**
 * What a fresh installation starts with, created through events like everything else: workflow
 * states for cases, runs and sessions; the result statuses (result import finds them by
 * systemName or alias); a default template; roles with their permissions; milestone types.
 *
 * Crash-safe: the plan (every default with the id it will get) is appended first, on a stream
 * that can only be started once; each start then creates whatever of the plan does not exist.
 */
export const DEFAULTS_STREAM = 'defaults-v1';

interface Default {
  key: string;
  entity: EntityName;
  data: Record<string, unknown>;
  /** One-relations to other defaults, by key. */
  connect?: Record<string, string>;
}

const workflow = (scope: string, name: string, workflowType: string, order: number, isDefault = false): Default => ({
  key: `workflow:${scope}:${name}`, entity: 'workflow', data: { name, scope, workflowType, order, isDefault },
});

const status = (systemName: string, name: string, order: number, flags: Record<string, unknown>, aliases: string[] = []): Default => ({
  key: `status:${systemName}`, entity: 'status', data: { systemName, name, order, aliases, ...flags },
});

const ALL = { canAddEdit: true, canDelete: true, canClose: true };
const TESTER_AREAS = ['TestCaseRepository', 'TestRuns', 'TestRunResults', 'Sessions', 'SessionResults', 'Tags', 'Milestones', 'Documentation'];

function role(name: string, isDefault: boolean, permissions: Record<string, Record<string, boolean>>): Default[] {
  return [
    { key: `role:${name}`, entity: 'role', data: { name, isDefault } },
    ...Object.entries(permissions).map(([area, flags]): Default => ({
      key: `rolePermission:${name}:${area}`, entity: 'rolePermission', data: { area, ...flags }, connect: { role: `role:${name}` },
    })),
  ];
}

export const DEFAULTS: readonly Default[] = [
  ...(['CASES', 'RUNS', 'SESSIONS'] as const).flatMap((scope) => scope === 'CASES'
    ? [workflow(scope, 'Draft', 'NOT_STARTED', 1, true), workflow(scope, 'In Review', 'IN_PROGRESS', 2), workflow(scope, 'Ready', 'DONE', 3)]
    : [workflow(scope, 'New', 'NOT_STARTED', 1, true), workflow(scope, 'In Progress', 'IN_PROGRESS', 2), workflow(scope, 'Done', 'DONE', 3)]),
  status('untested', 'Untested', 1, { color: '#9e9e9e' }, ['not run', 'notrun']),
  status('passed', 'Passed', 2, { isSuccess: true, isCompleted: true, color: '#2e7d32' }, ['pass', 'success', 'ok']),
  status('failed', 'Failed', 3, { isFailure: true, isCompleted: true, color: '#c62828' }, ['fail', 'failure']),
  status('error', 'Error', 4, { isFailure: true, isCompleted: true, color: '#6a1b9a' }, ['errored', 'broken']),
  status('skipped', 'Skipped', 5, { isCompleted: true, color: '#f9a825' }, ['skip', 'ignored', 'pending', 'disabled']),
  status('blocked', 'Blocked', 6, { color: '#37474f' }),
  status('retest', 'Retest', 7, { color: '#ef6c00' }),
  { key: 'template:Default', entity: 'template', data: { name: 'Default', isDefault: true } },
  ...role('Project Admin', false, Object.fromEntries(APPLICATION_AREAS.map((area) => [area, ALL]))),
  ...role('Tester', true, Object.fromEntries(TESTER_AREAS.map((area) => [area, { canAddEdit: true, canDelete: false, canClose: false }]))),
  ...role('Viewer', false, {}),
  { key: 'milestoneType:Release', entity: 'milestoneType', data: { name: 'Release', isDefault: true } },
  { key: 'milestoneType:Sprint', entity: 'milestoneType', data: { name: 'Sprint' } },
  { key: 'milestoneType:Iteration', entity: 'milestoneType', data: { name: 'Iteration' } },
];

/** Seeds the defaults unless a previous start did; returns how many rows this call created. */
export async function seedDefaults(deps: CommandDeps, metadata: EventMetadata): Promise<number> {
  const plan = await planOf(deps, metadata);
  const ids = new Map(plan.map((item) => [item.key, item.id]));
  let created = 0;
  for (const item of DEFAULTS) {
    const id = ids.get(item.key);
    if (id === undefined || (await factOf(deps, item.entity, id)).exists) continue;
    const connect = Object.fromEntries(Object.entries(item.connect ?? {}).map(([relation, key]) => [relation, ids.get(key)!]));
    try {
      await createEntity(deps, item.entity, { data: item.data, connect }, metadata, id);
      created++;
    } catch (error) {
      // An installation that already has, say, a status named "passed" keeps its own.
      if (!(error instanceof DomainError && error.code.endsWith('-taken'))) throw error;
    }
  }
  return created;
}

async function planOf(deps: CommandDeps, metadata: EventMetadata): Promise<DefaultsPlanned['data']['items']> {
  const [existing] = await deps.store.readStream(DEFAULTS_STREAM, { maxCount: 1 });
  if (existing) return (existing.data as DefaultsPlanned['data']).items;
  const items: DefaultsPlanned['data']['items'] = [];
  for (const item of DEFAULTS) items.push({ key: item.key, entity: item.entity, id: await deps.ids.next(item.entity, metadata) });
  try {
    await deps.store.append(DEFAULTS_STREAM, [{ type: 'DefaultsPlanned', data: { items } }], { expectedRevision: 'no-stream', metadata });
    return items;
  } catch (error) {
    if (!(error instanceof ConcurrencyError)) throw error;
    // Another process planned first: follow its plan.
    return planOf(deps, metadata);
  }
}
