import type { EntityDef } from '../../contracts/entities';
import { attachmentUrlProblem } from '../files/fileUrl';
import { ciValueProblem } from '../shared/ciContext';
import { DomainError } from '../shared/errors';
import type { Fact, Facts } from './entity.facts';

/**
 * Rules of particular entities, beyond what the catalogue says (references exist, share the
 * project, unique values). Pure, like the decider that calls them.
 */

/** Cases, runs and sessions each take a workflow state of their own scope. */
const STATE_SCOPE: Record<string, string> = { repositoryCase: 'CASES', testRun: 'RUNS', session: 'SESSIONS' };

const single = (fact: Fact | Fact[] | undefined): Fact | undefined => (Array.isArray(fact) ? undefined : fact);

/** The required free-text fields of an entity (computed once per entity: this runs for every row an import writes). */
function requiredTextOf(entity: EntityDef): readonly string[] {
  let names = requiredText.get(entity);
  if (!names) {
    names = Object.entries(entity.fields).filter(([, f]) => f.requiredOnCreate && f.type === 'string' && !f.enum).map(([name]) => name);
    requiredText.set(entity, names);
  }
  return names;
}
const requiredText = new WeakMap<EntityDef, readonly string[]>();

export function checkEntityRules(entity: EntityDef, values: Record<string, unknown>, facts: Facts): void {
  for (const name of requiredTextOf(entity)) {
    if (typeof values[name] === 'string' && (values[name] as string).trim() === '') {
      throw new DomainError('invalid-value', `${name} cannot be empty`, { path: `data.${name}` });
    }
  }
  const scope = STATE_SCOPE[entity.name];
  const state = single(facts.state);
  if (scope && state && state.values.scope !== scope) {
    throw new DomainError('workflow-scope-mismatch', `Workflow state ${state.id} is for ${String(state.values.scope)}, not ${scope}`, { path: 'data.state', id: state.id, scope });
  }
  switch (entity.name) {
    case 'testRunResult': {
      const runCase = single(facts.testRunCase);
      if (runCase && runCase.values.testRunId !== values.testRunId) {
        throw new DomainError('test-run-case-not-in-run', `Run case ${runCase.id} is not part of test run ${String(values.testRunId)}`, { path: 'data.testRunCase' });
      }
      break;
    }
    case 'project':
    case 'userProjectPermission':
    case 'groupProjectPermission': {
      // SPECIFIC_ROLE names its role; the other access types take none.
      const [typeField, roleField, rolePath] = entity.name === 'project' ? ['defaultAccessType', 'defaultRoleId', 'data.defaultRole'] : ['accessType', 'roleId', 'data.role'];
      if (values[typeField] === 'SPECIFIC_ROLE' && values[roleField] == null) {
        throw new DomainError('role-required', `${typeField} SPECIFIC_ROLE needs a role`, { path: rolePath });
      }
      if (values[typeField] !== 'SPECIFIC_ROLE' && values[typeField] !== undefined && values[roleField] != null) {
        throw new DomainError('invalid-value', `Only ${typeField} SPECIFIC_ROLE takes a role`, { path: rolePath });
      }
      break;
    }
    case 'testRun':
      for (const [name, field] of [['branch', 'branch'], ['commit', 'commit'], ['buildUrl', 'buildUrl'], ['ciJobId', 'ciJobId'], ['ciAttempt', 'attempt']] as const) {
        const problem = values[name] === undefined ? null : ciValueProblem(field, values[name]);
        if (problem) throw new DomainError('invalid-ci-context', `${name} ${problem}`, { path: `data.${name}` });
      }
      break;
    case 'attachment': {
      const problem = typeof values.url === 'string' ? attachmentUrlProblem(values.url) : null;
      if (problem) throw new DomainError('invalid-value', problem, { path: 'data.url' });
      break;
    }
    case 'fieldOption':
      if ((values.caseFieldId == null) === (values.resultFieldId == null)) {
        throw new DomainError('invalid-value', 'A field option belongs to exactly one case field or result field', { path: 'data.caseField' });
      }
      break;
  }
  for (const [name, f] of Object.entries(entity.fields)) {
    if (f.type === 'int' && !f.list && typeof values[name] === 'number' && NON_NEGATIVE.has(name) && (values[name] as number) < 0) {
      throw new DomainError('invalid-value', `${name} cannot be negative`, { path: `data.${name}` });
    }
  }
}

const NON_NEGATIVE = new Set(['size', 'attempt', 'durationMs', 'estimate', 'elapsedMs']);
