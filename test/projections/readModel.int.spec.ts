import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { readModelProjection } from '../../projections/readModel';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { createMigratedDatabase, emptyTables, type TestDatabase } from '../support/database';
import { at, checkpoints, dateAt, envelope, envelopes, twice } from './envelopes';

// Project 1 is renamed; project 2 is deleted; project 3 is deleted and restored. Folder 11 is
// renamed and moved to the root; case 100 is edited and moved; case 101 and folder 12 are deleted.
// Events of other models (id blocks, a user) are interleaved, and the last event is one of them.
const EVENTS = envelopes([
  ['project-1', { type: 'ProjectCreated', data: { projectId: 1, name: 'Checkout', createdAt: at(1) } }],
  ['ids-project', { type: 'IdBlockReserved', data: { category: 'project', from: 1, to: 50 } }],
  ['project-1', { type: 'ProjectUpdated', data: { projectId: 1, changes: { name: 'Checkout v2' }, updatedAt: at(2) } }],
  ['project-2', { type: 'ProjectCreated', data: { projectId: 2, name: 'Legacy', createdAt: at(3) } }],
  ['repositoryFolder-10', { type: 'RepositoryFolderCreated', data: { folderId: 10, projectId: 1, parentId: null, name: 'Payments', createdAt: at(4) } }],
  ['repositoryFolder-11', { type: 'RepositoryFolderCreated', data: { folderId: 11, projectId: 1, parentId: 10, name: 'Cards', createdAt: at(5) } }],
  ['repositoryFolder-11', { type: 'RepositoryFolderUpdated', data: { folderId: 11, changes: { name: 'Credit cards' }, updatedAt: at(6) } }],
  ['repositoryFolder-12', { type: 'RepositoryFolderCreated', data: { folderId: 12, projectId: 2, parentId: null, name: 'Old', createdAt: at(7) } }],
  ['repositoryCase-100', {
    type: 'RepositoryCaseCreated', data: { caseId: 100, projectId: 1, folderId: 11, title: 'Pay by card', description: null, createdAt: at(8) },
  }],
  ['user-1', {
    type: 'UserRegistered',
    data: { userId: 1, email: 'ada@example.com', name: 'Ada', passwordHash: '$argon2id$x', access: 'ADMIN', createdAt: at(8) },
  }],
  ['repositoryCase-100', {
    type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { title: 'Pay by credit card', description: 'Happy path' }, updatedAt: at(9) },
  }],
  ['repositoryCase-101', {
    type: 'RepositoryCaseCreated', data: { caseId: 101, projectId: 1, folderId: null, title: 'Refund', description: 'Money back', createdAt: at(10) },
  }],
  ['repositoryCase-100', { type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { folderId: 10 }, updatedAt: at(11) } }],
  ['repositoryFolder-11', { type: 'RepositoryFolderUpdated', data: { folderId: 11, changes: { parentId: null }, updatedAt: at(12) } }],
  ['repositoryCase-101', { type: 'RepositoryCaseDeleted', data: { caseId: 101, deletedAt: at(13) } }],
  ['repositoryFolder-12', { type: 'RepositoryFolderDeleted', data: { folderId: 12, deletedAt: at(14) } }],
  ['project-2', { type: 'ProjectDeleted', data: { projectId: 2, deletedAt: at(15) } }],
  ['project-3', { type: 'ProjectCreated', data: { projectId: 3, name: 'Mobile', createdAt: at(16) } }],
  ['project-3', { type: 'ProjectUpdated', data: { projectId: 3, changes: { isDeleted: true }, updatedAt: at(17) } }],
  ['project-3', { type: 'ProjectUpdated', data: { projectId: 3, changes: { name: 'Mobile app', isDeleted: false }, updatedAt: at(18) } }],
  ['repositoryCase-102', {
    type: 'RepositoryCaseCreated', data: { caseId: 102, projectId: 3, folderId: null, title: 'Login', description: null, createdAt: at(19) },
  }],
  ['ids-repositoryCase', { type: 'IdBlockReserved', data: { category: 'repositoryCase', from: 101, to: 150 } }],
]);
const LAST = EVENTS[EVENTS.length - 1].position;

const EXPECTED = {
  projects: [
    { id: 1, name: 'Checkout v2', is_deleted: false, created_at: dateAt(1), updated_at: dateAt(2), revision: '1' },
    { id: 2, name: 'Legacy', is_deleted: true, created_at: dateAt(3), updated_at: dateAt(15), revision: '1' },
    { id: 3, name: 'Mobile app', is_deleted: false, created_at: dateAt(16), updated_at: dateAt(18), revision: '2' },
  ],
  folders: [
    { id: 10, project_id: 1, parent_id: null, name: 'Payments', is_deleted: false, created_at: dateAt(4), updated_at: dateAt(4), revision: '0' },
    { id: 11, project_id: 1, parent_id: null, name: 'Credit cards', is_deleted: false, created_at: dateAt(5), updated_at: dateAt(12), revision: '2' },
    { id: 12, project_id: 2, parent_id: null, name: 'Old', is_deleted: true, created_at: dateAt(7), updated_at: dateAt(14), revision: '1' },
  ],
  cases: [
    {
      id: 100, project_id: 1, folder_id: 10, title: 'Pay by credit card', description: 'Happy path', is_deleted: false,
      created_at: dateAt(8), updated_at: dateAt(11), revision: '2',
    },
    {
      id: 101, project_id: 1, folder_id: null, title: 'Refund', description: 'Money back', is_deleted: true,
      created_at: dateAt(10), updated_at: dateAt(13), revision: '1',
    },
    {
      id: 102, project_id: 3, folder_id: null, title: 'Login', description: null, is_deleted: false,
      created_at: dateAt(19), updated_at: dateAt(19), revision: '0',
    },
  ],
};

describe('readModel projection (PostgreSQL)', () => {
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createMigratedDatabase('readmodel');
    knex = createKnex(db.url, 4);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });
  beforeEach(() => emptyTables(knex, [...readModelProjection.tables, 'users', 'api_tokens', 'projection_checkpoints']));

  const apply = (events: EventEnvelope[]) => applyBatch(knex, readModelProjection, events);
  const rows = async () => ({
    // The columns of the first slice; later columns are checked by their own tests.
    projects: await knex('projects').select(Object.keys(EXPECTED.projects[0])).orderBy('id'),
    folders: await knex('repository_folders').select(Object.keys(EXPECTED.folders[0])).orderBy('id'),
    cases: await knex('repository_cases').select(Object.keys(EXPECTED.cases[0])).orderBy('id'),
  });
  const checkpointIs = async (position: string) =>
    expect(await checkpoints(knex)).to.deep.equal([{ name: 'readModel', position }]);

  it('applies the story: exact rows, and the checkpoint at the last event', async () => {
    expect(await apply(EVENTS)).to.equal(BigInt(LAST));
    expect(await rows()).to.deep.equal(EXPECTED);
    await checkpointIs(LAST);
  });

  it('applies the story one event at a time to the same rows', async () => {
    for (const e of EVENTS) await apply([e]);
    expect(await rows()).to.deep.equal(EXPECTED);
    await checkpointIs(LAST);
  });

  it('gives every change of a case a version: the row counts them, the history keeps each one', async () => {
    await apply(EVENTS);
    expect(await knex('repository_cases').select('id', 'current_version').orderBy('id'))
      .to.deep.equal([{ id: 100, current_version: 3 }, { id: 101, current_version: 2 }, { id: 102, current_version: 1 }]);
    const versions = await knex('repository_case_versions').select('repository_case_id', 'version', 'title', 'snapshot').orderBy(['repository_case_id', 'version']);
    expect(versions.map((v) => [v.repository_case_id, v.version, v.title])).to.deep.equal([
      [100, 1, 'Pay by card'], [100, 2, 'Pay by credit card'], [100, 3, 'Pay by credit card'],
      [101, 1, 'Refund'], [101, 2, 'Refund'], [102, 1, 'Login'],
    ]);
    expect(versions[2].snapshot).to.include({ title: 'Pay by credit card', description: 'Happy path', folderId: 10, projectId: 1 });
    expect(versions[4].snapshot).to.include({ isDeleted: true });
    // Earlier versions of a batch are built here, the latest by PostgreSQL: the same snapshot either way.
    await knex.raw(`TRUNCATE ${[...readModelProjection.tables, 'projection_checkpoints'].join(', ')} RESTART IDENTITY`);
    for (const e of EVENTS) await apply([e]);
    const oneByOne = await knex('repository_case_versions').select('repository_case_id', 'version', 'title', 'snapshot').orderBy(['repository_case_id', 'version']);
    expect(oneByOne).to.deep.equal(versions);
  });

  it('touches no other model’s tables', async () => {
    await apply(EVENTS);
    expect(await knex('users').select('*')).to.deep.equal([]);
    expect(await knex('api_tokens').select('*')).to.deep.equal([]);
  });

  describe('a redelivered event changes nothing', () => {
    it('every event twice in the same batch', async () => {
      expect(await apply(twice(EVENTS))).to.equal(BigInt(LAST));
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(LAST);
    });

    it('every event twice, one batch each', async () => {
      for (const e of twice(EVENTS)) await apply([e]);
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(LAST);
    });

    it('the whole story again in a second batch', async () => {
      await apply(EVENTS);
      expect(await apply(EVENTS)).to.equal(BigInt(LAST));
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs(LAST);
    });

    it('a batch, then a batch that overlaps it (every split point)', async () => {
      for (let split = 1; split < EVENTS.length; split++) {
        await emptyTables(knex, [...readModelProjection.tables, 'projection_checkpoints']);
        await apply(EVENTS.slice(0, split));
        await checkpointIs(EVENTS[split - 1].position);
        await apply(EVENTS.slice(Math.max(0, split - 3)));
        expect(await rows(), `split at ${split}`).to.deep.equal(EXPECTED);
        await checkpointIs(LAST);
      }
    });
  });

  describe('an event older than the row (same stream, lower revision, new position) changes nothing', () => {
    const NEXT = BigInt(LAST) + 2n;

    it('an update at a revision the row already has, or an older one', async () => {
      await apply(EVENTS);
      await apply([
        envelope('project-1', 0n, NEXT, { type: 'ProjectUpdated', data: { projectId: 1, changes: { name: 'Stale' }, updatedAt: at(30) } }),
        envelope('project-3', 2n, NEXT + 2n, { type: 'ProjectUpdated', data: { projectId: 3, changes: { isDeleted: true }, updatedAt: at(31) } }),
        envelope('repositoryFolder-11', 1n, NEXT + 4n, {
          type: 'RepositoryFolderUpdated', data: { folderId: 11, changes: { parentId: 10 }, updatedAt: at(32) },
        }),
        envelope('repositoryCase-100', 0n, NEXT + 6n, {
          type: 'RepositoryCaseUpdated', data: { caseId: 100, changes: { title: 'Stale' }, updatedAt: at(33) },
        }),
      ]);
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs((NEXT + 6n).toString());
    });

    it('a creation replayed under a new position does not reset the row', async () => {
      await apply(EVENTS);
      await apply([
        envelope('project-2', 0n, NEXT, { type: 'ProjectCreated', data: { projectId: 2, name: 'Legacy', createdAt: at(3) } }),
        envelope('repositoryCase-101', 0n, NEXT + 2n, {
          type: 'RepositoryCaseCreated', data: { caseId: 101, projectId: 1, folderId: null, title: 'Refund', description: 'Money back', createdAt: at(10) },
        }),
      ]);
      expect(await rows()).to.deep.equal(EXPECTED);
      await checkpointIs((NEXT + 2n).toString());
    });
  });

  it('an update of a row that does not exist creates nothing', async () => {
    const [updated] = envelopes([['project-9', { type: 'ProjectUpdated', data: { projectId: 9, changes: { name: 'Ghost' }, updatedAt: at(1) } }]]);
    await apply([updated]);
    expect(await rows()).to.deep.equal({ projects: [], folders: [], cases: [] });
    await checkpointIs(updated.position);
  });

  it('a batch with no event of this model still moves the checkpoint', async () => {
    const [reserved] = envelopes([['ids-project', { type: 'IdBlockReserved', data: { category: 'project', from: 1, to: 50 } }]]);
    expect(await apply([reserved])).to.equal(BigInt(reserved.position));
    expect(await rows()).to.deep.equal({ projects: [], folders: [], cases: [] });
    await checkpointIs(reserved.position);
  });
});
