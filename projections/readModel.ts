import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf, EventType } from '../contracts/events';
import type { Projection } from './runtime/projection';
import { type ColumnTypes, RowBatch } from './runtime/rowBatch';

/** The read model behind the model API: projects, repository folders, repository cases. */
const PROJECT_COLUMNS: ColumnTypes = {
  id: 'integer', name: 'text', is_deleted: 'boolean', created_at: 'timestamptz', updated_at: 'timestamptz', revision: 'bigint',
};
const FOLDER_COLUMNS: ColumnTypes = {
  id: 'integer', project_id: 'integer', parent_id: 'integer', name: 'text', is_deleted: 'boolean',
  created_at: 'timestamptz', updated_at: 'timestamptz', revision: 'bigint',
};
const CASE_COLUMNS: ColumnTypes = {
  id: 'integer', project_id: 'integer', folder_id: 'integer', title: 'text', description: 'text', is_deleted: 'boolean',
  created_at: 'timestamptz', updated_at: 'timestamptz', revision: 'bigint',
};

const data = <T extends EventType>(e: EventEnvelope, _type: T) => e.data as DataOf<T>;

function rowIdOf(e: EventEnvelope): { table: 'projects' | 'folders' | 'cases'; id: number } | null {
  switch (e.type) {
    case 'ProjectCreated': case 'ProjectUpdated': case 'ProjectDeleted':
      return { table: 'projects', id: (e.data as { projectId: number }).projectId };
    case 'RepositoryFolderCreated': case 'RepositoryFolderUpdated': case 'RepositoryFolderDeleted':
      return { table: 'folders', id: (e.data as { folderId: number }).folderId };
    case 'RepositoryCaseCreated': case 'RepositoryCaseUpdated': case 'RepositoryCaseDeleted':
      return { table: 'cases', id: (e.data as { caseId: number }).caseId };
    default:
      return null;
  }
}

export const readModelProjection: Projection = {
  name: 'readModel',
  tables: ['projects', 'repository_folders', 'repository_cases'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    const batches = {
      projects: new RowBatch('projects', PROJECT_COLUMNS),
      folders: new RowBatch('repository_folders', FOLDER_COLUMNS),
      cases: new RowBatch('repository_cases', CASE_COLUMNS),
    };
    const relevant: { event: EventEnvelope; table: keyof typeof batches; id: number }[] = [];
    for (const event of events) {
      const key = rowIdOf(event);
      if (!key) continue;
      batches[key.table].want(key.id);
      relevant.push({ event, ...key });
    }
    if (relevant.length === 0) return;
    for (const b of Object.values(batches)) await b.load(trx);

    for (const { event, table, id } of relevant) {
      const rows = batches[table];
      switch (event.type) {
        case 'ProjectCreated': {
          const d = data(event, 'ProjectCreated');
          rows.apply(id, event, () => ({ id, name: d.name, is_deleted: false, created_at: d.createdAt, updated_at: d.createdAt }));
          break;
        }
        case 'ProjectUpdated': {
          const d = data(event, 'ProjectUpdated');
          rows.apply(id, event, (row) => row && {
            ...row,
            ...(d.changes.name !== undefined && { name: d.changes.name }),
            ...(d.changes.isDeleted !== undefined && { is_deleted: d.changes.isDeleted }),
            updated_at: d.updatedAt,
          });
          break;
        }
        case 'ProjectDeleted': {
          const d = data(event, 'ProjectDeleted');
          rows.apply(id, event, (row) => row && { ...row, is_deleted: true, updated_at: d.deletedAt });
          break;
        }
        case 'RepositoryFolderCreated': {
          const d = data(event, 'RepositoryFolderCreated');
          rows.apply(id, event, () => ({
            id, project_id: d.projectId, parent_id: d.parentId, name: d.name, is_deleted: false, created_at: d.createdAt, updated_at: d.createdAt,
          }));
          break;
        }
        case 'RepositoryFolderUpdated': {
          const d = data(event, 'RepositoryFolderUpdated');
          rows.apply(id, event, (row) => row && {
            ...row,
            ...(d.changes.name !== undefined && { name: d.changes.name }),
            ...(d.changes.parentId !== undefined && { parent_id: d.changes.parentId }),
            updated_at: d.updatedAt,
          });
          break;
        }
        case 'RepositoryFolderDeleted': {
          const d = data(event, 'RepositoryFolderDeleted');
          rows.apply(id, event, (row) => row && { ...row, is_deleted: true, updated_at: d.deletedAt });
          break;
        }
        case 'RepositoryCaseCreated': {
          const d = data(event, 'RepositoryCaseCreated');
          rows.apply(id, event, () => ({
            id, project_id: d.projectId, folder_id: d.folderId, title: d.title, description: d.description,
            is_deleted: false, created_at: d.createdAt, updated_at: d.createdAt,
          }));
          break;
        }
        case 'RepositoryCaseUpdated': {
          const d = data(event, 'RepositoryCaseUpdated');
          rows.apply(id, event, (row) => row && {
            ...row,
            ...(d.changes.title !== undefined && { title: d.changes.title }),
            ...(d.changes.description !== undefined && { description: d.changes.description }),
            ...(d.changes.folderId !== undefined && { folder_id: d.changes.folderId }),
            updated_at: d.updatedAt,
          });
          break;
        }
        case 'RepositoryCaseDeleted': {
          const d = data(event, 'RepositoryCaseDeleted');
          rows.apply(id, event, (row) => row && { ...row, is_deleted: true, updated_at: d.deletedAt });
          break;
        }
      }
    }
    for (const b of Object.values(batches)) await b.flush(trx);
  },
};
