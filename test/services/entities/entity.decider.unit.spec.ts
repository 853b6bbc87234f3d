import { ENTITIES } from '../../../contracts/entities';
import type { EntityEvent } from '../../../contracts/events';
import { entityDecider } from '../../../services/entities/entity.decider';
import type { Fact } from '../../../services/entities/entity.facts';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const T1 = '2024-03-02T10:00:00.000Z';

const fact = (entity: Fact['entity'], id: number, projectId: number | null, values: Record<string, unknown> = {}, more: Partial<Fact> = {}): Fact =>
  ({ entity, id, exists: true, isDeleted: false, projectId, values, ...more });

const cases = entityDecider(ENTITIES.repositoryCase);
const caseValues = { title: 'Pay by card', description: null, projectId: 7, folderId: 11, stateId: 3 };
const caseFacts = { project: fact('project', 7, 7), folder: fact('repositoryFolder', 11, 7), state: fact('workflow', 3, null, { scope: 'CASES' }) };
const caseCreated: EntityEvent = { type: 'RepositoryCaseCreated', data: { caseId: 100, ...caseValues, createdAt: T0 } };

describe('the generic entity decider', () => {
  describe('create', () => {
    it('records every value', () =>
      given(cases).when({ type: 'Create', id: 100, values: caseValues, facts: caseFacts, now: T0 }).then([caseCreated]));

    it('refuses a second create of the same id', () =>
      given(cases, [caseCreated]).when({ type: 'Create', id: 100, values: caseValues, facts: caseFacts, now: T1 }).thenFailsWith('repository-case-exists'));

    it('refuses a reference that does not exist, or is deleted', () => {
      given(cases).when({ type: 'Create', id: 100, values: caseValues, facts: { ...caseFacts, folder: fact('repositoryFolder', 11, 7, {}, { exists: false }) }, now: T0 })
        .thenFailsWith('repository-folder-not-found');
      given(cases).when({ type: 'Create', id: 100, values: caseValues, facts: { ...caseFacts, project: fact('project', 7, 7, {}, { isDeleted: true }) }, now: T0 })
        .thenFailsWith('project-not-found');
    });

    it('refuses a reference into another project', () =>
      given(cases).when({ type: 'Create', id: 100, values: caseValues, facts: { ...caseFacts, folder: fact('repositoryFolder', 11, 8) }, now: T0 })
        .thenFailsWith('repository-folder-in-other-project'));

    it('refuses a workflow state of another scope', () =>
      given(cases).when({ type: 'Create', id: 100, values: caseValues, facts: { ...caseFacts, state: fact('workflow', 3, null, { scope: 'RUNS' }) }, now: T0 })
        .thenFailsWith('workflow-scope-mismatch'));

    it('refuses an empty required text', () =>
      given(cases).when({ type: 'Create', id: 100, values: { ...caseValues, title: '  ' }, facts: caseFacts, now: T0 }).thenFailsWith('invalid-value'));

    it('derives the project along the project path: a run case\'s case must be in its run\'s project', () => {
      const runCases = entityDecider(ENTITIES.testRunCase);
      const values = { testRunId: 5, repositoryCaseId: 100 };
      given(runCases).when({ type: 'Create', id: 9, values, facts: { testRun: fact('testRun', 5, 7), repositoryCase: fact('repositoryCase', 100, 8) }, now: T0 })
        .thenFailsWith('repository-case-in-other-project');
      given(runCases).when({ type: 'Create', id: 9, values, facts: { testRun: fact('testRun', 5, 7), repositoryCase: fact('repositoryCase', 100, 7) }, now: T0 })
        .then([{ type: 'TestRunCaseCreated', data: { testRunCaseId: 9, ...values, createdAt: T0 } }]);
    });

    it('a result\'s run case must be part of its run', () => {
      const results = entityDecider(ENTITIES.testRunResult);
      given(results).when({
        type: 'Create', id: 1, values: { testRunId: 5, testRunCaseId: 9, statusId: 2 },
        facts: { testRun: fact('testRun', 5, 7), testRunCase: fact('testRunCase', 9, 7, { testRunId: 6 }), status: fact('status', 2, null) }, now: T0,
      }).thenFailsWith('test-run-case-not-in-run');
    });

    it('a field option belongs to exactly one field', () =>
      given(entityDecider(ENTITIES.fieldOption)).when({ type: 'Create', id: 1, values: { name: 'High', caseFieldId: null, resultFieldId: null }, facts: {}, now: T0 })
        .thenFailsWith('invalid-value'));

    it('an attachment\'s url is an http(s) address or a stored file (its key, or /api/files/<key>)', () => {
      const attachments = entityDecider(ENTITIES.attachment);
      const create = (url: string) => given(attachments).when({
        type: 'Create', id: 1, values: { name: 'a', url, size: 1, mimeType: 'text/plain', note: null, projectId: 7 }, facts: { project: fact('project', 7, 7) }, now: T0,
      });
      for (const url of ['https://example.com/a.pdf', 'http://example.com:8080/x?y=1#z', `/api/files/${'ab'.repeat(32)}`, 'ab'.repeat(32)]) {
        create(url).then([{ type: 'AttachmentCreated', data: { attachmentId: 1, name: 'a', url, size: 1, mimeType: 'text/plain', note: null, projectId: 7, createdAt: T0 } }]);
      }
      for (const url of ['javascript:alert(1)', 'data:text/html,x', '../x', '/api/files/../x', '//evil.example', 'x.pdf', 'https:///x', 'https://a\tb.example', 'ftp://example.com/x']) {
        create(url).thenFailsWith('invalid-value');
      }
    });
  });

  describe('update', () => {
    it('records only what changed', () =>
      given(cases, [caseCreated]).when({ type: 'Update', id: 100, values: { title: 'Pay by credit card', description: null }, facts: {}, now: T1 })
        .then([{ type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { title: 'Pay by credit card' }, updatedAt: T1 } }]));

    it('changes nothing when nothing differs', () =>
      given(cases, [caseCreated]).when({ type: 'Update', id: 100, values: { title: 'Pay by card' }, facts: {}, now: T1 }).thenNothing());

    it('refuses an unknown or deleted row', () => {
      given(cases).when({ type: 'Update', id: 100, values: { title: 'x' }, facts: {}, now: T1 }).thenFailsWith('repository-case-not-found');
      given(cases, [caseCreated, { type: 'RepositoryCaseDeleted', data: { caseId: 100, deletedAt: T1 } }])
        .when({ type: 'Update', id: 100, values: { title: 'x' }, facts: {}, now: T1 }).thenFailsWith('repository-case-not-found');
    });

    describe('a row stays in its project, along every relation (cross-project-move)', () => {
      const results = entityDecider(ENTITIES.testRunResult);
      const resultCreated: EntityEvent = { type: 'TestRunResultCreated', data: { testRunResultId: 1, testRunId: 5, testRunCaseId: 9, statusId: 2, createdAt: T0 } };
      const runCase9 = fact('testRunCase', 9, 7, { testRunId: 5 });

      it('refuses a result moved to a run of another project', () =>
        given(results, [resultCreated]).when({
          type: 'Update', id: 1, values: { testRunId: 50, testRunCaseId: 90 }, projectBefore: 7, now: T1,
          facts: { testRun: fact('testRun', 50, 8), testRunCase: fact('testRunCase', 90, 8, { testRunId: 50 }) },
        }).thenFailsWith('cross-project-move'));

      it('checks the references an update keeps against the row\'s project: a run case left in the old run', () => {
        given(results, [resultCreated]).when({
          type: 'Update', id: 1, values: { testRunId: 6 }, projectBefore: 7, now: T1, facts: { testRun: fact('testRun', 6, 7) }, kept: { testRunCase: runCase9 },
        }).thenFailsWith('test-run-case-not-in-run');
        given(results, [resultCreated]).when({
          type: 'Update', id: 1, values: { testRunCaseId: 10 }, projectBefore: 7, now: T1,
          facts: { testRun: fact('testRun', 5, 7), testRunCase: fact('testRunCase', 10, 7, { testRunId: 5 }) },
        }).then([{ type: 'TestRunResultUpdated', data: { testRunResultId: 1, changes: { testRunCaseId: 10 }, updatedAt: T1 } }]);
      });

      it('a kept reference is checked for its project, not for existence again', () => {
        const runs = entityDecider(ENTITIES.testRun);
        const runCreated: EntityEvent = { type: 'TestRunCreated', data: { testRunId: 5, name: 'Nightly', projectId: 7, milestoneId: 3, createdAt: T0 } };
        given(runs, [runCreated]).when({
          type: 'Update', id: 5, values: { name: 'Weekly' }, projectBefore: 7, now: T1, facts: { project: fact('project', 7, 7) },
          kept: { milestone: fact('milestone', 3, 7, {}, { isDeleted: true }) },
        }).then([{ type: 'TestRunUpdated', data: { testRunId: 5, changes: { name: 'Weekly' }, updatedAt: T1 } }]);
        given(runs, [runCreated]).when({
          type: 'Update', id: 5, values: { name: 'Weekly' }, projectBefore: 7, now: T1, facts: { project: fact('project', 7, 7) },
          kept: { milestone: fact('milestone', 3, 8) },
        }).thenFailsWith('milestone-in-other-project');
        given(runs, [runCreated]).when({ type: 'Update', id: 5, values: { projectId: 8 }, projectBefore: 7, now: T1, facts: { project: fact('project', 8, 8) } })
          .thenFailsWith('cross-project-move');
      });

      it('a session result does not move to another project\'s session', () => {
        const sessionResults = entityDecider(ENTITIES.sessionResult);
        const created: EntityEvent = { type: 'SessionResultCreated', data: { sessionResultId: 4, sessionId: 5, statusId: 2, createdAt: T0 } };
        given(sessionResults, [created]).when({ type: 'Update', id: 4, values: { sessionId: 6 }, projectBefore: 7, now: T1, facts: { session: fact('session', 6, 8) } })
          .thenFailsWith('cross-project-move');
        given(sessionResults, [created]).when({ type: 'Update', id: 4, values: { sessionId: 6 }, projectBefore: 7, now: T1, facts: { session: fact('session', 6, 7) } })
          .then([{ type: 'SessionResultUpdated', data: { sessionResultId: 4, changes: { sessionId: 6 }, updatedAt: T1 } }]);
      });
    });

    it('restores a deleted project (its isDeleted is writable)', () => {
      const projects = entityDecider(ENTITIES.project);
      const created: EntityEvent = { type: 'ProjectCreated', data: { projectId: 7, name: 'Checkout', createdAt: T0 } };
      const deleted: EntityEvent = { type: 'ProjectDeleted', data: { projectId: 7, deletedAt: T1 } };
      given(projects, [created, deleted]).when({ type: 'Update', id: 7, values: { isDeleted: false }, facts: {}, now: T1 })
        .then([{ type: 'ProjectUpdated', data: { projectId: 7, changes: { isDeleted: false }, updatedAt: T1 } }]);
    });
  });

  describe('delete', () => {
    it('deletes once; deleting again changes nothing', () => {
      const deleted: EntityEvent = { type: 'RepositoryCaseDeleted', data: { caseId: 100, deletedAt: T1 } };
      given(cases, [caseCreated]).when({ type: 'Delete', id: 100, now: T1 }).then([deleted]);
      given(cases, [caseCreated, deleted]).when({ type: 'Delete', id: 100, now: T1 }).thenNothing();
    });

    it('refuses an unknown row', () => given(cases).when({ type: 'Delete', id: 100, now: T1 }).thenFailsWith('repository-case-not-found'));
  });
});
