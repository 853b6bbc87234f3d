import { expect } from 'chai';
import type { RepositoryCaseCreated, RepositoryCaseDeleted, RepositoryCaseUpdated } from '../../../contracts/events';
import {
  type RepositoryCaseCommand, caseStream, evolve, initialState, repositoryCaseDecider,
} from '../../../services/repository/repositoryCase.decider';
import type { FolderFact, ProjectFact } from '../../../services/repository/repositoryFolder.decider';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const T1 = '2024-03-02T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';

// Case 100 lives in project 1, in folder 11; folder 10 is another folder of project 1.
const project: ProjectFact = { id: 1, exists: true, isDeleted: false };
const missingProject: ProjectFact = { id: 1, exists: false, isDeleted: false };
const deletedProject: ProjectFact = { id: 1, exists: true, isDeleted: true };
const folder11: FolderFact = { id: 11, exists: true, isDeleted: false, projectId: 1 };
const folder10: FolderFact = { id: 10, exists: true, isDeleted: false, projectId: 1 };
const missingFolder: FolderFact = { id: 10, exists: false, isDeleted: false, projectId: null };
const deletedFolder: FolderFact = { ...folder10, isDeleted: true };
const foreignFolder: FolderFact = { id: 20, exists: true, isDeleted: false, projectId: 2 };

type CaseEvent = RepositoryCaseCreated | RepositoryCaseUpdated | RepositoryCaseDeleted;
const created: RepositoryCaseCreated = {
  type: 'RepositoryCaseCreated',
  data: { caseId: 100, projectId: 1, folderId: 11, title: 'Pay by card', description: 'Happy path', createdAt: T0 },
};
const retitled: RepositoryCaseUpdated = { type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { title: 'Pay by credit card' }, updatedAt: T1 } };
const movedTo10: RepositoryCaseUpdated = { type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { folderId: 10 }, updatedAt: T1 } };
const describedNull: RepositoryCaseUpdated = { type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { description: null }, updatedAt: T1 } };
const deleted: RepositoryCaseDeleted = { type: 'RepositoryCaseDeleted', data: { caseId: 100, deletedAt: T1 } };

const create = (opts: { project?: ProjectFact; folder?: FolderFact | null; description?: string | null } = {}): RepositoryCaseCommand => ({
  type: 'CreateRepositoryCase', caseId: 100, title: 'Pay by card',
  description: opts.description === undefined ? 'Happy path' : opts.description,
  project: opts.project ?? project, folder: opts.folder === undefined ? folder11 : opts.folder, now: NOW,
});
const update = (changes: { title?: string; description?: string | null }, folder?: FolderFact | null): RepositoryCaseCommand =>
  ({ type: 'UpdateRepositoryCase', caseId: 100, changes, ...(folder !== undefined && { folder }), now: NOW });
const remove: RepositoryCaseCommand = { type: 'DeleteRepositoryCase', caseId: 100, now: NOW };

const updatedWith = (changes: RepositoryCaseUpdated['data']['changes']): RepositoryCaseUpdated =>
  ({ type: 'RepositoryCaseUpdated', data: { caseId: 100, changes, updatedAt: NOW } });

const testCase = (...past: CaseEvent[]) => given(repositoryCaseDecider, past);

describe('RepositoryCase decider', () => {
  it('names its stream repositoryCase-<id>', () => expect(caseStream(100)).to.equal('repositoryCase-100'));

  describe('CreateRepositoryCase', () => {
    it('creates a case in a folder of the project', () =>
      testCase().when(create()).then([{
        type: 'RepositoryCaseCreated',
        data: { caseId: 100, projectId: 1, folderId: 11, title: 'Pay by card', description: 'Happy path', createdAt: NOW },
      }]));
    it('creates a case outside any folder, without a description', () =>
      testCase().when(create({ folder: null, description: null })).then([{
        type: 'RepositoryCaseCreated',
        data: { caseId: 100, projectId: 1, folderId: null, title: 'Pay by card', description: null, createdAt: NOW },
      }]));
    it('refuses to create it twice', () => testCase(created).when(create()).thenFailsWith('case-exists'));
    it('refuses to create a deleted case again', () => testCase(created, deleted).when(create()).thenFailsWith('case-exists'));
    it('refuses a project that does not exist', () => testCase().when(create({ project: missingProject })).thenFailsWith('project-not-found'));
    it('refuses a deleted project', () => testCase().when(create({ project: deletedProject })).thenFailsWith('project-deleted'));
    it('refuses a folder that does not exist', () => testCase().when(create({ folder: missingFolder })).thenFailsWith('folder-not-found'));
    it('refuses a deleted folder', () => testCase().when(create({ folder: deletedFolder })).thenFailsWith('folder-not-found'));
    it('refuses a folder in another project', () => testCase().when(create({ folder: foreignFolder })).thenFailsWith('folder-in-other-project'));
  });

  describe('UpdateRepositoryCase', () => {
    it('changes the title', () => testCase(created).when(update({ title: 'Pay by credit card' })).then([updatedWith({ title: 'Pay by credit card' })]));
    it('clears the description', () => testCase(created).when(update({ description: null })).then([updatedWith({ description: null })]));
    it('sets a description again after it was cleared', () =>
      testCase(created, describedNull).when(update({ description: 'Happy path' })).then([updatedWith({ description: 'Happy path' })]));
    it('the same values again change nothing', () =>
      testCase(created).when(update({ title: 'Pay by card', description: 'Happy path' }, folder11)).thenNothing());
    it('changing nothing records nothing', () => testCase(created).when(update({})).thenNothing());
    it('after a change, the new title is the current one', () => testCase(created, retitled).when(update({ title: 'Pay by credit card' })).thenNothing());
    it('a cleared description cleared again changes nothing', () => testCase(created, describedNull).when(update({ description: null })).thenNothing());
    it('records only the fields that changed', () =>
      testCase(created).when(update({ title: 'Pay by card', description: 'Sad path' }, folder10)).then([updatedWith({ description: 'Sad path', folderId: 10 })]));
    it('moves to another folder of the project', () => testCase(created).when(update({}, folder10)).then([updatedWith({ folderId: 10 })]));
    it('moves out of any folder', () => testCase(created).when(update({}, null)).then([updatedWith({ folderId: null })]));
    it('after a move, the new folder is the current one', () => testCase(created, movedTo10).when(update({}, folder10)).thenNothing());
    it('refuses a folder in another project', () => testCase(created).when(update({}, foreignFolder)).thenFailsWith('folder-in-other-project'));
    it('refuses a folder that does not exist', () => testCase(created).when(update({}, missingFolder)).thenFailsWith('folder-not-found'));
    it('refuses a deleted folder', () => testCase(created).when(update({}, deletedFolder)).thenFailsWith('folder-not-found'));
    it('refuses an unknown case', () => testCase().when(update({ title: 'X' })).thenFailsWith('case-not-found'));
    it('refuses a deleted case', () => testCase(created, deleted).when(update({ title: 'X' })).thenFailsWith('case-not-found'));
  });

  describe('DeleteRepositoryCase', () => {
    it('deletes', () => testCase(created).when(remove).then([{ type: 'RepositoryCaseDeleted', data: { caseId: 100, deletedAt: NOW } }]));
    it('deleting twice changes nothing', () => testCase(created, deleted).when(remove).thenNothing());
    it('refuses an unknown case', () => testCase().when(remove).thenFailsWith('case-not-found'));
  });

  describe('evolve', () => {
    it('folds every event into the state', () => {
      const states = [created, retitled, movedTo10, describedNull, deleted].reduce(
        (acc, e) => [...acc, evolve(acc[acc.length - 1], e)], [initialState]);
      expect(states).to.deep.equal([
        { exists: false, projectId: null, folderId: null, title: '', description: null, isDeleted: false },
        { exists: true, projectId: 1, folderId: 11, title: 'Pay by card', description: 'Happy path', isDeleted: false },
        { exists: true, projectId: 1, folderId: 11, title: 'Pay by credit card', description: 'Happy path', isDeleted: false },
        { exists: true, projectId: 1, folderId: 10, title: 'Pay by credit card', description: 'Happy path', isDeleted: false },
        { exists: true, projectId: 1, folderId: 10, title: 'Pay by credit card', description: null, isDeleted: false },
        { exists: true, projectId: 1, folderId: 10, title: 'Pay by credit card', description: null, isDeleted: true },
      ]);
    });
  });
});
