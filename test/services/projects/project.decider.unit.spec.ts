import { expect } from 'chai';
import type { ProjectCreated, ProjectDeleted, ProjectUpdated } from '../../../contracts/events';
import { type ProjectCommand, evolve, initialState, projectDecider, projectStream } from '../../../services/projects/project.decider';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const T1 = '2024-03-02T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';

const created: ProjectCreated = { type: 'ProjectCreated', data: { projectId: 7, name: 'Checkout', createdAt: T0 } };
const renamed: ProjectUpdated = { type: 'ProjectUpdated', data: { projectId: 7, changes: { name: 'Checkout v2' }, updatedAt: T1 } };
const deleted: ProjectDeleted = { type: 'ProjectDeleted', data: { projectId: 7, deletedAt: T1 } };
const markedDeleted: ProjectUpdated = { type: 'ProjectUpdated', data: { projectId: 7, changes: { isDeleted: true }, updatedAt: T1 } };
const restored: ProjectUpdated = { type: 'ProjectUpdated', data: { projectId: 7, changes: { isDeleted: false }, updatedAt: T1 } };

const create = (name = 'Checkout'): ProjectCommand => ({ type: 'CreateProject', projectId: 7, name, now: NOW });
const update = (changes: { name?: string; isDeleted?: boolean }): ProjectCommand => ({ type: 'UpdateProject', projectId: 7, changes, now: NOW });
const remove: ProjectCommand = { type: 'DeleteProject', projectId: 7, now: NOW };

const project = (...past: (ProjectCreated | ProjectUpdated | ProjectDeleted)[]) => given(projectDecider, past);

describe('Project decider', () => {
  it('names its stream project-<id>', () => expect(projectStream(7)).to.equal('project-7'));

  describe('CreateProject', () => {
    it('creates a project with the time of the command', () =>
      project().when(create()).then([{ type: 'ProjectCreated', data: { projectId: 7, name: 'Checkout', createdAt: NOW } }]));
    it('refuses to create it twice', () => project(created).when(create('Other')).thenFailsWith('project-exists'));
    it('refuses to create a deleted one again', () => project(created, deleted).when(create()).thenFailsWith('project-exists'));
  });

  describe('UpdateProject', () => {
    it('renames, recording only the changed field', () =>
      project(created).when(update({ name: 'Checkout v2' }))
        .then([{ type: 'ProjectUpdated', data: { projectId: 7, changes: { name: 'Checkout v2' }, updatedAt: NOW } }]));
    it('leaves out a field given with its current value', () =>
      project(created).when(update({ name: 'Checkout', isDeleted: true }))
        .then([{ type: 'ProjectUpdated', data: { projectId: 7, changes: { isDeleted: true }, updatedAt: NOW } }]));
    it('changing nothing records nothing', () => project(created).when(update({})).thenNothing());
    it('the same values again change nothing', () => project(created).when(update({ name: 'Checkout', isDeleted: false })).thenNothing());
    it('after a rename, the new name is the current one', () => project(created, renamed).when(update({ name: 'Checkout v2' })).thenNothing());
    it('after a rename, the old name is a change again', () =>
      project(created, renamed).when(update({ name: 'Checkout' }))
        .then([{ type: 'ProjectUpdated', data: { projectId: 7, changes: { name: 'Checkout' }, updatedAt: NOW } }]));
    it('refuses an unknown project', () => project().when(update({ name: 'X' })).thenFailsWith('project-not-found'));
    it('restores a deleted project', () =>
      project(created, deleted).when(update({ isDeleted: false }))
        .then([{ type: 'ProjectUpdated', data: { projectId: 7, changes: { isDeleted: false }, updatedAt: NOW } }]));
    it('marking a deleted project deleted changes nothing', () => project(created, deleted).when(update({ isDeleted: true })).thenNothing());
  });

  describe('DeleteProject', () => {
    it('deletes', () => project(created).when(remove).then([{ type: 'ProjectDeleted', data: { projectId: 7, deletedAt: NOW } }]));
    it('deleting twice changes nothing', () => project(created, deleted).when(remove).thenNothing());
    it('a project marked deleted by an update is already deleted', () => project(created, markedDeleted).when(remove).thenNothing());
    it('a restored project can be deleted again', () =>
      project(created, deleted, restored).when(remove).then([{ type: 'ProjectDeleted', data: { projectId: 7, deletedAt: NOW } }]));
    it('refuses an unknown project', () => project().when(remove).thenFailsWith('project-not-found'));
  });

  describe('evolve', () => {
    it('folds every event into the state', () => {
      const states = [created, renamed, deleted, restored].reduce(
        (acc, e) => [...acc, evolve(acc[acc.length - 1], e)], [initialState]);
      expect(states).to.deep.equal([
        { exists: false, id: null, name: '', isDeleted: false },
        { exists: true, id: 7, name: 'Checkout', isDeleted: false },
        { exists: true, id: 7, name: 'Checkout v2', isDeleted: false },
        { exists: true, id: 7, name: 'Checkout v2', isDeleted: true },
        { exists: true, id: 7, name: 'Checkout v2', isDeleted: false },
      ]);
    });
  });
});
