/**
 * The entity catalogue: what the model API exposes, how each entity maps onto its read-model
 * table, and which fields a client may write. The model API and (later) OpenAPI are generated from it.
 */
export type ScalarType = 'int' | 'string' | 'boolean' | 'datetime';

export interface FieldDef {
  column: string;
  type: ScalarType;
  nullable: boolean;
  /** May be given in create/update `data`. */
  writable: boolean;
  /** Must be given on create (unless it is set through a relation). */
  requiredOnCreate?: boolean;
}

export interface RelationDef {
  kind: 'one' | 'many';
  target: EntityName;
  /** Column on this entity's table (kind 'one') or on the target's table (kind 'many'). */
  foreignKey: string;
  /** The scalar field this relation sets through `connect` (kind 'one'). */
  scalar?: string;
  /** Whether `connect` on create is required. */
  requiredOnCreate?: boolean;
}

export interface EntityDef {
  name: EntityName;
  table: string;
  category: string;
  fields: Record<string, FieldDef>;
  relations: Record<string, RelationDef>;
  /** Soft delete: `delete` sets this field to true instead of removing the row. */
  softDeleteField?: string;
}

export type EntityName = 'project' | 'repositoryFolder' | 'repositoryCase';

const id: FieldDef = { column: 'id', type: 'int', nullable: false, writable: false };
const createdAt: FieldDef = { column: 'created_at', type: 'datetime', nullable: false, writable: false };
const updatedAt: FieldDef = { column: 'updated_at', type: 'datetime', nullable: false, writable: false };
const isDeleted: FieldDef = { column: 'is_deleted', type: 'boolean', nullable: false, writable: true };

export const ENTITIES: Record<EntityName, EntityDef> = {
  project: {
    name: 'project',
    table: 'projects',
    category: 'projects',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: { column: 'name', type: 'string', nullable: false, writable: true, requiredOnCreate: true },
      isDeleted,
      createdAt,
      updatedAt,
    },
    relations: {
      folders: { kind: 'many', target: 'repositoryFolder', foreignKey: 'project_id' },
      repositoryCases: { kind: 'many', target: 'repositoryCase', foreignKey: 'project_id' },
    },
  },
  repositoryFolder: {
    name: 'repositoryFolder',
    table: 'repository_folders',
    category: 'projects',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: { column: 'name', type: 'string', nullable: false, writable: true, requiredOnCreate: true },
      projectId: { column: 'project_id', type: 'int', nullable: false, writable: false },
      parentId: { column: 'parent_id', type: 'int', nullable: true, writable: false },
      isDeleted,
      createdAt,
      updatedAt,
    },
    relations: {
      project: { kind: 'one', target: 'project', foreignKey: 'project_id', scalar: 'projectId', requiredOnCreate: true },
      parent: { kind: 'one', target: 'repositoryFolder', foreignKey: 'parent_id', scalar: 'parentId' },
      children: { kind: 'many', target: 'repositoryFolder', foreignKey: 'parent_id' },
      repositoryCases: { kind: 'many', target: 'repositoryCase', foreignKey: 'folder_id' },
    },
  },
  repositoryCase: {
    name: 'repositoryCase',
    table: 'repository_cases',
    category: 'testCases',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      title: { column: 'title', type: 'string', nullable: false, writable: true, requiredOnCreate: true },
      description: { column: 'description', type: 'string', nullable: true, writable: true },
      projectId: { column: 'project_id', type: 'int', nullable: false, writable: false },
      folderId: { column: 'folder_id', type: 'int', nullable: true, writable: false },
      isDeleted,
      createdAt,
      updatedAt,
    },
    relations: {
      project: { kind: 'one', target: 'project', foreignKey: 'project_id', scalar: 'projectId', requiredOnCreate: true },
      folder: { kind: 'one', target: 'repositoryFolder', foreignKey: 'folder_id', scalar: 'folderId' },
    },
  },
};

export function isEntityName(name: string): name is EntityName {
  return Object.prototype.hasOwnProperty.call(ENTITIES, name);
}
