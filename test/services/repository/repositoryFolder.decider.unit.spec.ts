import { expect } from 'chai';
import type { RepositoryFolderCreated, RepositoryFolderDeleted, RepositoryFolderUpdated } from '../../../contracts/events';
import {
  type FolderFact, type ProjectFact, type RepositoryFolderCommand,
  evolve, folderStream, initialState, repositoryFolderDecider,
} from '../../../services/repository/repositoryFolder.decider';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const T1 = '2024-03-02T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';

// Folder 11 ("Cards") lives in project 1; folder 10 is a sibling it can move under.
const project: ProjectFact = { id: 1, exists: true, isDeleted: false };
const missingProject: ProjectFact = { id: 1, exists: false, isDeleted: false };
const deletedProject: ProjectFact = { id: 1, exists: true, isDeleted: true };
const folder10: FolderFact = { id: 10, exists: true, isDeleted: false, projectId: 1 };
const folder12: FolderFact = { id: 12, exists: true, isDeleted: false, projectId: 1 };
const missingFolder: FolderFact = { id: 10, exists: false, isDeleted: false, projectId: null };
const deletedFolder: FolderFact = { ...folder10, isDeleted: true };
const foreignFolder: FolderFact = { id: 20, exists: true, isDeleted: false, projectId: 2 };
const itself: FolderFact = { id: 11, exists: true, isDeleted: false, projectId: 1 };

type FolderEvent = RepositoryFolderCreated | RepositoryFolderUpdated | RepositoryFolderDeleted;
const created: RepositoryFolderCreated = {
  type: 'RepositoryFolderCreated', data: { folderId: 11, projectId: 1, parentId: null, name: 'Cards', createdAt: T0 },
};
const createdUnder10: RepositoryFolderCreated = { type: 'RepositoryFolderCreated', data: { ...created.data, parentId: 10 } };
const renamed: RepositoryFolderUpdated = { type: 'RepositoryFolderUpdated', data: { folderId: 11, changes: { name: 'Credit cards' }, updatedAt: T1 } };
const movedUnder10: RepositoryFolderUpdated = { type: 'RepositoryFolderUpdated', data: { folderId: 11, changes: { parentId: 10 }, updatedAt: T1 } };
const deleted: RepositoryFolderDeleted = { type: 'RepositoryFolderDeleted', data: { folderId: 11, deletedAt: T1 } };

const create = (opts: { project?: ProjectFact; parent?: FolderFact | null } = {}): RepositoryFolderCommand => ({
  type: 'CreateRepositoryFolder', folderId: 11, name: 'Cards', project: opts.project ?? project, parent: opts.parent ?? null, now: NOW,
});
const update = (changes: { name?: string }, parent?: FolderFact | null): RepositoryFolderCommand =>
  ({ type: 'UpdateRepositoryFolder', folderId: 11, changes, ...(parent !== undefined && { parent }), now: NOW });
const remove: RepositoryFolderCommand = { type: 'DeleteRepositoryFolder', folderId: 11, now: NOW };

const updatedWith = (changes: RepositoryFolderUpdated['data']['changes']): RepositoryFolderUpdated =>
  ({ type: 'RepositoryFolderUpdated', data: { folderId: 11, changes, updatedAt: NOW } });

const folder = (...past: FolderEvent[]) => given(repositoryFolderDecider, past);

describe('RepositoryFolder decider', () => {
  it('names its stream repositoryFolder-<id>', () => expect(folderStream(11)).to.equal('repositoryFolder-11'));

  describe('CreateRepositoryFolder', () => {
    it('creates a root folder in the project', () =>
      folder().when(create()).then([{
        type: 'RepositoryFolderCreated', data: { folderId: 11, projectId: 1, parentId: null, name: 'Cards', createdAt: NOW },
      }]));
    it('creates a folder under a parent of the same project', () =>
      folder().when(create({ parent: folder10 })).then([{
        type: 'RepositoryFolderCreated', data: { folderId: 11, projectId: 1, parentId: 10, name: 'Cards', createdAt: NOW },
      }]));
    it('refuses to create it twice', () => folder(created).when(create()).thenFailsWith('folder-exists'));
    it('refuses to create a deleted folder again', () => folder(created, deleted).when(create()).thenFailsWith('folder-exists'));
    it('refuses a project that does not exist', () => folder().when(create({ project: missingProject })).thenFailsWith('project-not-found'));
    it('refuses a deleted project', () => folder().when(create({ project: deletedProject })).thenFailsWith('project-deleted'));
    it('refuses a parent that does not exist', () => folder().when(create({ parent: missingFolder })).thenFailsWith('folder-not-found'));
    it('refuses a deleted parent', () => folder().when(create({ parent: deletedFolder })).thenFailsWith('folder-not-found'));
    it('refuses a parent in another project', () => folder().when(create({ parent: foreignFolder })).thenFailsWith('folder-in-other-project'));
  });

  describe('UpdateRepositoryFolder', () => {
    it('renames', () => folder(created).when(update({ name: 'Credit cards' })).then([updatedWith({ name: 'Credit cards' })]));
    it('the same name again changes nothing', () => folder(created).when(update({ name: 'Cards' })).thenNothing());
    it('after a rename, the new name is the current one', () => folder(created, renamed).when(update({ name: 'Credit cards' })).thenNothing());
    it('moves under a parent of the same project', () => folder(created).when(update({}, folder10)).then([updatedWith({ parentId: 10 })]));
    it('moves to the root', () => folder(createdUnder10).when(update({}, null)).then([updatedWith({ parentId: null })]));
    it('renames and moves in one event', () =>
      folder(created).when(update({ name: 'Credit cards' }, folder10)).then([updatedWith({ name: 'Credit cards', parentId: 10 })]));
    it('the current parent again changes nothing', () => folder(createdUnder10).when(update({}, folder10)).thenNothing());
    it('the root again changes nothing', () => folder(created).when(update({}, null)).thenNothing());
    it('after a move, the new parent is the current one', () => folder(created, movedUnder10).when(update({}, folder10)).thenNothing());
    it('after a move, another parent is a change', () =>
      folder(created, movedUnder10).when(update({}, folder12)).then([updatedWith({ parentId: 12 })]));
    it('without a parent, the parent is left alone', () => folder(createdUnder10).when(update({})).thenNothing());
    it('refuses the folder as its own parent', () => folder(created).when(update({}, itself)).thenFailsWith('folder-cycle'));
    it('refuses a parent in another project', () => folder(created).when(update({}, foreignFolder)).thenFailsWith('folder-in-other-project'));
    it('refuses a move to another project; its own project again changes nothing', () => {
      folder(created).when({ type: 'UpdateRepositoryFolder', folderId: 11, changes: {}, projectId: 2, now: NOW }).thenFailsWith('cross-project-move');
      folder(created).when({ type: 'UpdateRepositoryFolder', folderId: 11, changes: {}, projectId: 1, now: NOW }).thenNothing();
    });
    it('refuses a parent that does not exist', () => folder(created).when(update({}, missingFolder)).thenFailsWith('folder-not-found'));
    it('refuses a deleted parent', () => folder(created).when(update({}, deletedFolder)).thenFailsWith('folder-not-found'));
    it('refuses an unknown folder', () => folder().when(update({ name: 'X' })).thenFailsWith('folder-not-found'));
    it('refuses a deleted folder', () => folder(created, deleted).when(update({ name: 'X' })).thenFailsWith('folder-not-found'));
  });

  describe('DeleteRepositoryFolder', () => {
    it('deletes', () => folder(created).when(remove).then([{ type: 'RepositoryFolderDeleted', data: { folderId: 11, deletedAt: NOW } }]));
    it('deleting twice changes nothing', () => folder(created, deleted).when(remove).thenNothing());
    it('refuses an unknown folder', () => folder().when(remove).thenFailsWith('folder-not-found'));
  });

  describe('evolve', () => {
    it('folds every event into the state', () => {
      const states = [created, renamed, movedUnder10, deleted].reduce(
        (acc, e) => [...acc, evolve(acc[acc.length - 1], e)], [initialState]);
      expect(states).to.deep.equal([
        { exists: false, projectId: null, parentId: null, name: '', isDeleted: false },
        { exists: true, projectId: 1, parentId: null, name: 'Cards', isDeleted: false },
        { exists: true, projectId: 1, parentId: null, name: 'Credit cards', isDeleted: false },
        { exists: true, projectId: 1, parentId: 10, name: 'Credit cards', isDeleted: false },
        { exists: true, projectId: 1, parentId: 10, name: 'Credit cards', isDeleted: true },
      ]);
    });
  });
});

describe('RepositoryFolder decider: moving into its own subtree', () => {
  it('refuses to move a folder under its own child', () =>
    given(repositoryFolderDecider, [
      { type: 'RepositoryFolderCreated', data: { folderId: 10, projectId: 1, parentId: null, name: 'Payments', createdAt: '2024-03-01T10:00:00.000Z' } },
    ]).when({
      type: 'UpdateRepositoryFolder', folderId: 10, changes: {},
      parent: { id: 11, exists: true, isDeleted: false, projectId: 1, ancestorIds: [10] }, now: '2024-03-03T10:00:00.000Z',
    }).thenFailsWith('folder-cycle'));

  it('refuses a grandchild as the new parent too', () =>
    given(repositoryFolderDecider, [
      { type: 'RepositoryFolderCreated', data: { folderId: 10, projectId: 1, parentId: null, name: 'Payments', createdAt: '2024-03-01T10:00:00.000Z' } },
    ]).when({
      type: 'UpdateRepositoryFolder', folderId: 10, changes: {},
      parent: { id: 12, exists: true, isDeleted: false, projectId: 1, ancestorIds: [11, 10] }, now: '2024-03-03T10:00:00.000Z',
    }).thenFailsWith('folder-cycle'));
});
