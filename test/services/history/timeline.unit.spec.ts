import { expect } from 'chai';
import { ENTITIES } from '../../../contracts/entities';
import type { EventEnvelope } from '../../../contracts/envelope';
import { diffStates, foldTimeline, stateAfter, visibleFields } from '../../../services/history/timeline';

let position = 0;
const event = (streamId: string, type: string, data: unknown): EventEnvelope => ({
  id: `e${++position}`, type, schemaVersion: 1, streamId, revision: String(position), position: String(position),
  recordedAt: '2026-11-27T10:00:00.000Z', data, metadata: { actor: { userId: 1, via: 'api' }, correlationId: 'c', causationId: null },
});

/** The fold behind GET /api/history: what each event changed, never a credential. */
describe('history: an entity\'s events folded into field changes', () => {
  it('lists a creation\'s fields (before null), an update\'s changed fields only, a deletion\'s soft-delete flag', () => {
    const steps = foldTimeline('milestone', [
      event('milestone-1', 'MilestoneCreated', { milestoneId: 1, name: 'M1', projectId: 4, note: null, createdAt: '2026-11-27T10:00:00.000Z' }),
      event('milestone-1', 'MilestoneUpdated', { milestoneId: 1, changes: { name: 'M2', note: null }, updatedAt: '2026-11-27T10:01:00.000Z' }),
      event('milestone-1', 'MilestoneDeleted', { milestoneId: 1, deletedAt: '2026-11-27T10:02:00.000Z' }),
    ]);
    expect(steps.map((s) => s.kind)).to.deep.equal(['created', 'updated', 'deleted']);
    expect(steps[0].changes).to.deep.include({ field: 'name', before: null, after: 'M1' });
    expect(steps[0].changes.find((c) => c.field === 'note'), 'a null set on create is no change').to.equal(undefined);
    expect(steps[1].changes).to.deep.equal([{ field: 'name', before: 'M1', after: 'M2' }]);
    expect(steps[2].changes).to.deep.equal([{ field: 'isDeleted', before: false, after: true }]);
  });

  it('shows a user\'s deactivation and reactivation, and a password change as an event that changes nothing visible', () => {
    const steps = foldTimeline('user', [
      event('user-2', 'UserRegistered', { userId: 2, email: 'a@example.com', name: 'A', passwordHash: 'scrypt$secret', access: 'USER', roleId: null, createdAt: 'x' }),
      event('user-2', 'UserPasswordChanged', { userId: 2, passwordHash: 'scrypt$other', at: 'x' }),
      event('user-2', 'UserDeactivated', { userId: 2, at: 'x' }),
      event('user-2', 'UserReactivated', { userId: 2, at: 'x' }),
    ]);
    expect(JSON.stringify(steps.map((s) => s.changes))).to.not.include('scrypt');
    expect(steps[0].changes.map((c) => c.field)).to.include.members(['email', 'name', 'access']);
    expect(steps[1].changes).to.deep.equal([]);
    expect(steps[2].changes).to.deep.equal([{ field: 'isActive', before: true, after: false }]);
    expect(steps[3].changes).to.deep.equal([{ field: 'isActive', before: false, after: true }]);
  });

  it('leaves out keys naming credentials inside JSON values, at any depth', () => {
    const steps = foldTimeline('integration', [
      event('integration-3', 'IntegrationCreated', { integrationId: 3, name: 'Jira', provider: 'JIRA', url: null, isEnabled: true, settings: { project: 'WEB', apiToken: 't0ken', auth: { password: 'pw', user: 'bot', clientSecret: 's' } }, createdAt: 'x' }),
      event('integration-3', 'IntegrationUpdated', { integrationId: 3, changes: { settings: { project: 'WEB', apiToken: 'new-t0ken', auth: { password: 'pw2', user: 'bot' } } }, updatedAt: 'x' }),
    ]);
    expect(steps[0].changes.find((c) => c.field === 'settings')).to.deep.equal({ field: 'settings', before: null, after: { project: 'WEB', auth: { user: 'bot' } } });
    expect(steps[1].changes, 'only secrets changed: nothing visible did').to.deep.equal([]);
    expect(JSON.stringify(steps.map((s) => s.changes))).to.not.match(/t0ken|pw/);
  });

  it('starts a row whose stream begins with a change from the state it is given (an imported row)', () => {
    const steps = foldTimeline('testRun', [event('testRun-5', 'TestRunUpdated', { testRunId: 5, changes: { name: 'Nightly 2' }, updatedAt: 'x' })], { name: 'Nightly' });
    expect(steps[0].changes).to.deep.equal([{ field: 'name', before: 'Nightly', after: 'Nightly 2' }]);
  });

  it('shows no field that names a credential', () => {
    for (const name of ['user', 'integration', 'repositoryCase'] as const) {
      for (const field of visibleFields(ENTITIES[name])) {
        expect(field).to.not.match(/password|secret|hash$|token$/i);
      }
    }
  });

  it('diffs two states: fields, and owned children added, removed and changed item by item', () => {
    const events = [
      event('repositoryCase-9', 'RepositoryCaseCreated', { caseId: 9, title: 'T', projectId: 1, steps: [{ id: 1, step: 'a' }, { id: 2, step: 'b' }], createdAt: 'x' }),
      event('repositoryCase-9', 'RepositoryCaseUpdated', { caseId: 9, changes: { title: 'U', steps: [{ id: 2, step: 'b2' }, { id: 3, step: 'c' }] }, updatedAt: 'x' }),
      event('repositoryCase-9', 'RepositoryCaseDeleted', { caseId: 9, deletedAt: 'x' }),
    ];
    const first = stateAfter('repositoryCase', events.slice(0, 1), null);
    const second = stateAfter('repositoryCase', events.slice(0, 2), null);
    const last = stateAfter('repositoryCase', events, null);
    expect([stateAfter('repositoryCase', [], null).exists, first.exists, last.exists]).to.deep.equal([false, true, false]);
    const { changes, children } = diffStates('repositoryCase', first.values, second.values);
    expect(changes).to.deep.equal([{ field: 'title', before: 'T', after: 'U' }]);
    expect(children.steps).to.deep.equal({
      added: [{ id: 3, step: 'c' }], removed: [{ id: 1, step: 'a' }], changed: [{ id: 2, changes: [{ field: 'step', before: 'b', after: 'b2' }] }],
    });
    expect(diffStates('repositoryCase', second.values, last.values).changes).to.deep.equal([{ field: 'isDeleted', before: false, after: true }]);
  });
});
