/**
 * The entity catalogue: what the model API exposes, how each entity maps onto its read-model
 * table, and which fields a client may write. The model API and (later) OpenAPI are generated from it.
 */
import { LIMITS } from './limits';

export type ScalarType = 'int' | 'float' | 'string' | 'boolean' | 'datetime' | 'json';

export interface FieldDef {
  column: string;
  type: ScalarType;
  nullable: boolean;
  /** May be given in create/update `data`. */
  writable: boolean;
  /** Must be given on create (unless it is set through a relation). */
  requiredOnCreate?: boolean;
  /** A scalar list (PostgreSQL array column): filters has, hasSome, hasEvery, isEmpty, equals. */
  list?: true;
  /** The only values a string field (or each item of a string list) may take. */
  enum?: readonly string[];
  /** Value written on create when the client gives none. */
  default?: string | number | boolean | readonly string[];
  /**
   * Unique across the entity (among rows not deleted), enforced on the command side by a claim
   * stream; 'forever': deleted rows keep their value too (a user's e-mail is claimed for good).
   * A unique field names a row in a model API unique where (`findUnique({ where: { name } })`).
   */
  unique?: true | 'forever';
  /** Set by the server from the actor of the command (createdById, executedById, ...), never by the client. */
  fromActor?: true;
  /** A string field's (or each item's of a string list) most characters; absent: LIMITS.text (contracts/limits.ts). */
  maxLength?: number;
  /**
   * A test run's CI context field: its values have their own checks (services/shared/ciContext.ts),
   * and a written value past `maxLength` is refused with their code, `invalid-ci-context`, not `invalid-argument`.
   */
  ciContext?: true;
  /** An int kept in a bigint column: a sum that outgrows PostgreSQL's integer (a day's durations). Read as a number. */
  wide?: true;
  /**
   * A JSON value whose keys named like credentials hold secrets (contracts/secrets.ts): sealed
   * before they enter an event, shown by reference only.
   */
  holdsSecrets?: true;
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
  /**
   * Many-to-many (kind 'many'): rows of `table` link `sourceKey` (this entity's id) to `targetKey`
   * (the target's id); `foreignKey` is then unused. Written with connect / disconnect / set; the
   * events carry the whole list of linked ids as `<relation name minus s>Ids` (see `linkField`).
   */
  through?: { table: string; sourceKey: string; targetKey: string };
  /**
   * Owned children (kind 'many'): rows that exist only as part of this entity (case steps, field
   * values). Written with nested `create` / `deleteMany` on the parent; the parent's events carry
   * the whole list.
   */
  owned?: true;
}

export interface EntityDef {
  name: EntityName;
  table: string;
  category: string;
  fields: Record<string, FieldDef>;
  relations: Record<string, RelationDef>;
  /** Soft delete: `delete` sets this field to true instead of removing the row. */
  softDeleteField?: string;
  /**
   * How its rows are written: 'aggregate' (its own event stream, the default), 'owned' (only as
   * children inside the parent's events) or 'projected' (derived by a projection, read-only, e.g.
   * case versions).
   */
  writtenAs?: 'aggregate' | 'owned' | 'projected';
  /**
   * false: its rows are kept as they are now only, without a history table, and a read `asOf` a
   * point is refused (statistics recomputed per batch of events; their days are their history).
   */
  keepsHistory?: false;
  /**
   * true: counted after the batches that touched it (the statistics: projections/statisticsQueue.ts);
   * a read waits until what was waiting when it arrived has been counted.
   */
  countedAfterBatches?: true;
  /**
   * The path of to-one relations from this entity to its project, for the policy module
   * (`['project']`, `['testRun', 'project']`); absent: the entity is global configuration.
   */
  projectPath?: readonly string[];
  /**
   * Fields unique together (among rows not deleted), enforced like `unique`; in a unique where as
   * Prisma names them, joined with `_` (`userId_projectId: { userId, projectId }`).
   */
  uniqueTogether?: readonly string[];
}

export type EntityName =
  | 'project' | 'repositoryFolder' | 'repositoryCase' | 'repositoryCaseVersion' | 'step' | 'caseFieldValue'
  | 'template' | 'caseField' | 'resultField' | 'fieldOption'
  | 'testRun' | 'testRunCase' | 'testRunResult' | 'testRunStepResult' | 'resultFieldValue' | 'session' | 'sessionResult'
  | 'milestone' | 'milestoneType' | 'configuration' | 'configCategory' | 'configVariant' | 'tag' | 'workflow' | 'status'
  | 'user' | 'projectAssignment' | 'role' | 'rolePermission' | 'signatureMeaning'
  | 'group' | 'groupAssignment' | 'userProjectPermission' | 'groupProjectPermission'
  | 'integration' | 'attachment' | 'comment'
  | 'caseStatistic' | 'caseDailyStatistic' | 'testRunStatistic' | 'projectDailyStatistic';

// ---------------------------------------------------------------------------------------------
// Field and relation builders: the catalogue below reads as a schema.

type FieldOptions = Partial<Omit<FieldDef, 'column' | 'type'>>;
const field = (type: ScalarType, column: string, options: FieldOptions = {}): FieldDef =>
  ({ column, type, nullable: false, writable: true, ...options });
const text = (column: string, options: FieldOptions = {}) => field('string', column, options);
const optionalText = (column: string, options: FieldOptions = {}) => field('string', column, { nullable: true, ...options });
const flag = (column: string, fallback = false, options: FieldOptions = {}) => field('boolean', column, { default: fallback, ...options });
const integer = (column: string, options: FieldOptions = {}) => field('int', column, options);
const optionalInt = (column: string, options: FieldOptions = {}) => field('int', column, { nullable: true, ...options });
const optionalTime = (column: string, options: FieldOptions = {}) => field('datetime', column, { nullable: true, ...options });
const oneOf = (column: string, values: readonly string[], fallback: string, options: FieldOptions = {}) =>
  field('string', column, { enum: values, default: fallback, ...options });
/** A foreign key: set through its relation (`connect`), not written directly. */
const reference = (column: string, nullable = true): FieldDef => ({ column, type: 'int', nullable, writable: false });
const actor = (column: string): FieldDef => ({ column, type: 'int', nullable: true, writable: false, fromActor: true });

const id: FieldDef = { column: 'id', type: 'int', nullable: false, writable: false };
/** What every statistics entity is: computed by the read model's projection, read-only, kept as it is now, in a project. */
const statistics = (name: EntityName, table: string, category: string) =>
  ({ name, table, category, writtenAs: 'projected', keepsHistory: false, countedAfterBatches: true, projectPath: ['project'] }) as const;
/** A statistic a projection computes (read-only). */
const stat = (type: ScalarType, column: string, nullable = false): FieldDef => ({ column, type, nullable, writable: false });
/** A statistic summed over many executions (durations): a bigint column. */
const sum = (column: string): FieldDef => ({ ...stat('int', column), wide: true });
const createdAt: FieldDef = { column: 'created_at', type: 'datetime', nullable: false, writable: false };
const updatedAt: FieldDef = { column: 'updated_at', type: 'datetime', nullable: false, writable: false };
/** The external-tool migration job that wrote the row in bulk (services/migration); null for rows written one by one. */
const externalImportJob: FieldDef = { column: 'external_import_job_id', type: 'int', nullable: true, writable: false };
const isDeleted: FieldDef = { column: 'is_deleted', type: 'boolean', nullable: false, writable: false, default: false };

/** The trailing fields of most entities: soft delete and the two timestamps. */
const softDeleteAndTimes = { isDeleted, createdAt, updatedAt };

const one = (target: EntityName, foreignKey: string, scalar: string, requiredOnCreate = false): RelationDef =>
  ({ kind: 'one', target, foreignKey, scalar, ...(requiredOnCreate && { requiredOnCreate }) });
const many = (target: EntityName, foreignKey: string): RelationDef => ({ kind: 'many', target, foreignKey });
const owned = (target: EntityName, foreignKey: string): RelationDef => ({ kind: 'many', target, foreignKey, owned: true });
const linked = (target: EntityName, table: string, sourceKey: string, targetKey: string): RelationDef =>
  ({ kind: 'many', target, foreignKey: sourceKey, through: { table, sourceKey, targetKey } });

export const FIELD_TYPES = ['CHECKBOX', 'DATE', 'DROPDOWN', 'MULTI_SELECT', 'NUMBER', 'INTEGER', 'TEXT_STRING', 'TEXT_LONG', 'LINK', 'STEPS'] as const;
export const WORKFLOW_SCOPES = ['RUNS', 'CASES', 'SESSIONS'] as const;
export const WORKFLOW_TYPES = ['NOT_STARTED', 'IN_PROGRESS', 'DONE'] as const;
export const STATUS_SCOPES = ['RUNS', 'SESSIONS', 'AUTOMATION'] as const;
export const CASE_SOURCES = ['MANUAL', 'API', 'JUNIT', 'TESTNG', 'XUNIT', 'NUNIT', 'MSTEST', 'MOCHA', 'CUCUMBER'] as const;
export const TEST_RUN_TYPES = ['REGULAR', 'JUNIT', 'TESTNG', 'XUNIT', 'NUNIT', 'MSTEST', 'MOCHA', 'CUCUMBER'] as const;
export const ACCESS_LEVELS = ['ADMIN', 'PROJECTADMIN', 'USER', 'NONE'] as const;
export const APPLICATION_AREAS = [
  'Documentation', 'Milestones', 'TestCaseRepository', 'TestCaseRestrictedFields', 'TestRuns', 'ClosedTestRuns', 'TestRunResults',
  'TestRunResultRestrictedFields', 'Sessions', 'SessionsRestrictedFields', 'ClosedSessions', 'SessionResults', 'Tags', 'SharedSteps',
  'Issues', 'IssueIntegration', 'Forecasting', 'Reporting', 'Settings',
] as const;
/**
 * How a user or a group reaches a project (TestPlanIt's ProjectAccessType): DEFAULT follows the
 * next rule, NO_ACCESS shuts out, GLOBAL_ROLE grants the user's own role, SPECIFIC_ROLE the role named.
 */
export const PROJECT_ACCESS_TYPES = ['DEFAULT', 'NO_ACCESS', 'GLOBAL_ROLE', 'SPECIFIC_ROLE'] as const;
export const INTEGRATION_PROVIDERS = ['JIRA', 'GITHUB', 'AZURE_DEVOPS', 'GITLAB', 'SIMPLE_URL'] as const;

/** Case fields and result fields share their shape (TestPlanIt's CaseFields / ResultFields). */
const customField = (name: 'caseField' | 'resultField', table: string, valueEntity: EntityName, valueKey: string, templateTable: string, templateKey: string): EntityDef => ({
  name,
  table,
  category: 'testCases',
  softDeleteField: 'isDeleted',
  fields: {
    id,
    displayName: text('display_name', { requiredOnCreate: true, maxLength: LIMITS.name }),
    systemName: text('system_name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
    hint: optionalText('hint'),
    type: field('string', 'type', { enum: FIELD_TYPES, requiredOnCreate: true }),
    isEnabled: flag('is_enabled', true),
    isRequired: flag('is_required'),
    isRestricted: flag('is_restricted'),
    defaultValue: optionalText('default_value'),
    isChecked: field('boolean', 'is_checked', { nullable: true }),
    minValue: field('float', 'min_value', { nullable: true }),
    maxValue: field('float', 'max_value', { nullable: true }),
    initialHeight: optionalInt('initial_height'),
    ...softDeleteAndTimes,
  },
  relations: {
    options: many('fieldOption', `${name === 'caseField' ? 'case' : 'result'}_field_id`),
    values: many(valueEntity, valueKey),
    templates: linked('template', templateTable, templateKey, 'template_id'),
  },
});

/** How a user or a group reaches a project (TestPlanIt's UserProjectPermission / GroupProjectPermission). */
const projectPermission = (name: EntityName, table: string, holder: 'user' | 'group'): EntityDef => ({
  name,
  table,
  category: 'users',
  projectPath: ['project'],
  uniqueTogether: [`${holder}Id`, 'projectId'],
  fields: {
    id,
    accessType: field('string', 'access_type', { enum: PROJECT_ACCESS_TYPES, requiredOnCreate: true }),
    [`${holder}Id`]: reference(`${holder}_id`, false),
    projectId: reference('project_id', false),
    roleId: reference('role_id'),
    createdAt,
    updatedAt,
  },
  relations: {
    [holder]: one(holder, `${holder}_id`, `${holder}Id`, true),
    project: one('project', 'project_id', 'projectId', true),
    role: one('role', 'role_id', 'roleId'),
  },
});

export const ENTITIES: Record<EntityName, EntityDef> = {
  // ------------------------------------------------------------------------------- projects
  project: {
    name: 'project',
    table: 'projects',
    category: 'projects',
    softDeleteField: 'isDeleted',
    projectPath: [],
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      note: optionalText('note'),
      iconUrl: optionalText('icon_url', { maxLength: LIMITS.url }),
      isCompleted: flag('is_completed'),
      completedAt: optionalTime('completed_at'),
      defaultAccessType: oneOf('default_access_type', PROJECT_ACCESS_TYPES, 'GLOBAL_ROLE'),
      defaultRoleId: reference('default_role_id'),
      createdById: actor('created_by_id'),
      isDeleted: { ...isDeleted, writable: true },
      createdAt,
      updatedAt,
    },
    relations: {
      createdBy: one('user', 'created_by_id', 'createdById'),
      defaultRole: one('role', 'default_role_id', 'defaultRoleId'),
      folders: many('repositoryFolder', 'project_id'),
      repositoryCases: many('repositoryCase', 'project_id'),
      testRuns: many('testRun', 'project_id'),
      sessions: many('session', 'project_id'),
      milestones: many('milestone', 'project_id'),
      assignments: many('projectAssignment', 'project_id'),
      userPermissions: many('userProjectPermission', 'project_id'),
      groupPermissions: many('groupProjectPermission', 'project_id'),
      attachments: many('attachment', 'project_id'),
      comments: many('comment', 'project_id'),
    },
  },
  repositoryFolder: {
    name: 'repositoryFolder',
    table: 'repository_folders',
    category: 'projects',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      projectId: reference('project_id', false),
      parentId: reference('parent_id'),
      importJobId: { column: 'import_job_id', type: 'int', nullable: true, writable: false },
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      parent: one('repositoryFolder', 'parent_id', 'parentId'),
      children: many('repositoryFolder', 'parent_id'),
      repositoryCases: many('repositoryCase', 'folder_id'),
    },
  },
  projectAssignment: {
    name: 'projectAssignment',
    table: 'project_assignments',
    category: 'users',
    projectPath: ['project'],
    uniqueTogether: ['userId', 'projectId'],
    fields: {
      id,
      userId: reference('user_id', false),
      projectId: reference('project_id', false),
      createdAt,
      updatedAt,
    },
    relations: {
      user: one('user', 'user_id', 'userId', true),
      project: one('project', 'project_id', 'projectId', true),
    },
  },

  // ------------------------------------------------------------------------------- test cases
  repositoryCase: {
    name: 'repositoryCase',
    table: 'repository_cases',
    category: 'testCases',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      title: text('title', { requiredOnCreate: true, maxLength: LIMITS.caseTitle }),
      description: optionalText('description'),
      className: optionalText('class_name', { maxLength: LIMITS.caseTitle }),
      source: oneOf('source', CASE_SOURCES, 'MANUAL'),
      estimate: optionalInt('estimate'),
      automated: flag('automated'),
      isArchived: flag('is_archived'),
      order: integer('sort_order', { default: 0 }),
      currentVersion: { column: 'current_version', type: 'int', nullable: false, writable: false, default: 1 },
      projectId: reference('project_id', false),
      folderId: reference('folder_id'),
      templateId: reference('template_id'),
      stateId: reference('state_id'),
      createdById: actor('created_by_id'),
      importJobId: { column: 'import_job_id', type: 'int', nullable: true, writable: false },
      externalImportJobId: externalImportJob,
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      folder: one('repositoryFolder', 'folder_id', 'folderId'),
      template: one('template', 'template_id', 'templateId'),
      state: one('workflow', 'state_id', 'stateId'),
      createdBy: one('user', 'created_by_id', 'createdById'),
      tags: linked('tag', 'repository_case_tags', 'repository_case_id', 'tag_id'),
      steps: owned('step', 'repository_case_id'),
      fieldValues: owned('caseFieldValue', 'repository_case_id'),
      versions: many('repositoryCaseVersion', 'repository_case_id'),
      testRunCases: many('testRunCase', 'repository_case_id'),
      attachments: many('attachment', 'repository_case_id'),
      comments: many('comment', 'repository_case_id'),
    },
  },
  repositoryCaseVersion: {
    name: 'repositoryCaseVersion',
    table: 'repository_case_versions',
    category: 'testCases',
    writtenAs: 'projected',
    projectPath: ['repositoryCase', 'project'],
    fields: {
      id,
      repositoryCaseId: reference('repository_case_id', false),
      version: integer('version', { writable: false }),
      title: text('title', { writable: false, maxLength: LIMITS.caseTitle }),
      snapshot: field('json', 'snapshot', { writable: false }),
      changedById: reference('changed_by_id'),
      createdAt,
    },
    relations: {
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      changedBy: one('user', 'changed_by_id', 'changedById'),
    },
  },
  step: {
    name: 'step',
    table: 'steps',
    category: 'testCases',
    writtenAs: 'owned',
    projectPath: ['repositoryCase', 'project'],
    fields: {
      id,
      repositoryCaseId: reference('repository_case_id', false),
      step: text('step', { requiredOnCreate: true }),
      expectedResult: optionalText('expected_result'),
      order: integer('sort_order', { default: 0 }),
    },
    relations: {
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      stepResults: many('testRunStepResult', 'step_id'),
    },
  },
  caseFieldValue: {
    name: 'caseFieldValue',
    table: 'case_field_values',
    category: 'testCases',
    writtenAs: 'owned',
    projectPath: ['repositoryCase', 'project'],
    fields: {
      id,
      repositoryCaseId: reference('repository_case_id', false),
      fieldId: reference('field_id', false),
      value: field('json', 'value', { nullable: true }),
    },
    relations: {
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      field: one('caseField', 'field_id', 'fieldId', true),
    },
  },
  template: {
    name: 'template',
    table: 'templates',
    category: 'testCases',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      isEnabled: flag('is_enabled', true),
      isDefault: flag('is_default'),
      ...softDeleteAndTimes,
    },
    relations: {
      caseFields: linked('caseField', 'template_case_fields', 'template_id', 'case_field_id'),
      resultFields: linked('resultField', 'template_result_fields', 'template_id', 'result_field_id'),
      repositoryCases: many('repositoryCase', 'template_id'),
    },
  },
  caseField: customField('caseField', 'case_fields', 'caseFieldValue', 'field_id', 'template_case_fields', 'case_field_id'),
  resultField: customField('resultField', 'result_fields', 'resultFieldValue', 'field_id', 'template_result_fields', 'result_field_id'),
  fieldOption: {
    name: 'fieldOption',
    table: 'field_options',
    category: 'testCases',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      isDefault: flag('is_default'),
      order: integer('sort_order', { default: 0 }),
      caseFieldId: reference('case_field_id'),
      resultFieldId: reference('result_field_id'),
      ...softDeleteAndTimes,
    },
    relations: {
      caseField: one('caseField', 'case_field_id', 'caseFieldId'),
      resultField: one('resultField', 'result_field_id', 'resultFieldId'),
    },
  },

  // ------------------------------------------------------------------------------- test runs
  testRun: {
    name: 'testRun',
    table: 'test_runs',
    category: 'testRuns',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      note: optionalText('note'),
      testRunType: oneOf('test_run_type', TEST_RUN_TYPES, 'REGULAR'),
      isCompleted: flag('is_completed'),
      completedAt: optionalTime('completed_at'),
      elapsedMs: optionalInt('elapsed_ms'),
      // Where the run came from (a result import's CI context; writable, checked by services/shared/ciContext.ts).
      branch: optionalText('branch', { maxLength: LIMITS.name, ciContext: true }),
      commit: optionalText('commit_sha', { maxLength: LIMITS.name, ciContext: true }),
      buildUrl: optionalText('build_url', { maxLength: LIMITS.url, ciContext: true }),
      ciJobId: optionalText('ci_job_id', { maxLength: LIMITS.name, ciContext: true }),
      ciAttempt: optionalInt('ci_attempt'),
      projectId: reference('project_id', false),
      configId: reference('config_id'),
      milestoneId: reference('milestone_id'),
      stateId: reference('state_id'),
      createdById: actor('created_by_id'),
      externalImportJobId: externalImportJob,
      /**
       * The suites' own properties its result imports read (JUnit `<testsuite><properties>`): each
       * name with its distinct values, `{"go.version": ["go1.22.1"]}`; null when none (docs/imports.md).
       */
      suiteProperties: field('json', 'suite_properties', { nullable: true, writable: false }),
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      configuration: one('configuration', 'config_id', 'configId'),
      milestone: one('milestone', 'milestone_id', 'milestoneId'),
      state: one('workflow', 'state_id', 'stateId'),
      createdBy: one('user', 'created_by_id', 'createdById'),
      tags: linked('tag', 'test_run_tags', 'test_run_id', 'tag_id'),
      testRunCases: many('testRunCase', 'test_run_id'),
      results: many('testRunResult', 'test_run_id'),
      attachments: many('attachment', 'test_run_id'),
      comments: many('comment', 'test_run_id'),
    },
  },
  testRunCase: {
    name: 'testRunCase',
    table: 'test_run_cases',
    category: 'testRuns',
    softDeleteField: 'isDeleted',
    projectPath: ['testRun', 'project'],
    uniqueTogether: ['testRunId', 'repositoryCaseId'],
    fields: {
      id,
      order: integer('sort_order', { default: 0 }),
      isCompleted: flag('is_completed'),
      notes: optionalText('notes'),
      startedAt: optionalTime('started_at'),
      completedAt: optionalTime('completed_at'),
      elapsedMs: optionalInt('elapsed_ms'),
      testRunId: reference('test_run_id', false),
      repositoryCaseId: reference('repository_case_id', false),
      statusId: reference('status_id'),
      assignedToId: reference('assigned_to_id'),
      importJobId: { column: 'import_job_id', type: 'int', nullable: true, writable: false },
      externalImportJobId: externalImportJob,
      ...softDeleteAndTimes,
    },
    relations: {
      testRun: one('testRun', 'test_run_id', 'testRunId', true),
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId', true),
      status: one('status', 'status_id', 'statusId'),
      assignedTo: one('user', 'assigned_to_id', 'assignedToId'),
      results: many('testRunResult', 'test_run_case_id'),
    },
  },
  testRunResult: {
    name: 'testRunResult',
    table: 'test_run_results',
    category: 'testRuns',
    softDeleteField: 'isDeleted',
    projectPath: ['testRun', 'project'],
    fields: {
      id,
      durationMs: optionalInt('duration_ms'),
      executedAt: optionalTime('executed_at'),
      notes: optionalText('notes'),
      attempt: integer('attempt', { default: 1 }),
      testRunCaseVersion: optionalInt('test_run_case_version'),
      // What an automated result file says about the execution (result import; writable for API clients too).
      message: optionalText('message'),
      failureType: optionalText('failure_type', { maxLength: LIMITS.name }),
      stackTrace: optionalText('stack_trace'),
      systemOut: optionalText('system_out'),
      systemErr: optionalText('system_err'),
      file: optionalText('file', { maxLength: LIMITS.name }),
      line: optionalInt('line'),
      properties: field('json', 'properties', { nullable: true }),
      testRunId: reference('test_run_id', false),
      testRunCaseId: reference('test_run_case_id', false),
      statusId: reference('status_id', false),
      executedById: actor('executed_by_id'),
      importJobId: { column: 'import_job_id', type: 'int', nullable: true, writable: false },
      // The result file says a later attempt of the same test replaces this one (docs/imports.md): its run case's status leaves it out.
      retried: { column: 'retried', type: 'boolean', nullable: false, writable: false, default: false },
      externalImportJobId: externalImportJob,
      ...softDeleteAndTimes,
    },
    relations: {
      testRun: one('testRun', 'test_run_id', 'testRunId', true),
      testRunCase: one('testRunCase', 'test_run_case_id', 'testRunCaseId', true),
      status: one('status', 'status_id', 'statusId', true),
      executedBy: one('user', 'executed_by_id', 'executedById'),
      stepResults: owned('testRunStepResult', 'test_run_result_id'),
      fieldValues: owned('resultFieldValue', 'test_run_result_id'),
      attachments: many('attachment', 'test_run_result_id'),
    },
  },
  testRunStepResult: {
    name: 'testRunStepResult',
    table: 'test_run_step_results',
    category: 'testRuns',
    writtenAs: 'owned',
    projectPath: ['testRunResult', 'testRun', 'project'],
    fields: {
      id,
      testRunResultId: reference('test_run_result_id', false),
      stepId: reference('step_id', false),
      statusId: reference('status_id', false),
      notes: optionalText('notes'),
      durationMs: optionalInt('duration_ms'),
    },
    relations: {
      testRunResult: one('testRunResult', 'test_run_result_id', 'testRunResultId'),
      step: one('step', 'step_id', 'stepId', true),
      status: one('status', 'status_id', 'statusId', true),
    },
  },
  resultFieldValue: {
    name: 'resultFieldValue',
    table: 'result_field_values',
    category: 'testRuns',
    writtenAs: 'owned',
    projectPath: ['testRunResult', 'testRun', 'project'],
    fields: {
      id,
      testRunResultId: reference('test_run_result_id', false),
      fieldId: reference('field_id', false),
      value: field('json', 'value', { nullable: true }),
    },
    relations: {
      testRunResult: one('testRunResult', 'test_run_result_id', 'testRunResultId'),
      field: one('resultField', 'field_id', 'fieldId', true),
    },
  },
  session: {
    name: 'session',
    table: 'sessions',
    category: 'testRuns',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      note: optionalText('note'),
      mission: optionalText('mission'),
      estimate: optionalInt('estimate'),
      elapsedMs: optionalInt('elapsed_ms'),
      isCompleted: flag('is_completed'),
      completedAt: optionalTime('completed_at'),
      projectId: reference('project_id', false),
      templateId: reference('template_id'),
      configId: reference('config_id'),
      milestoneId: reference('milestone_id'),
      stateId: reference('state_id'),
      assignedToId: reference('assigned_to_id'),
      createdById: actor('created_by_id'),
      externalImportJobId: externalImportJob,
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      template: one('template', 'template_id', 'templateId'),
      configuration: one('configuration', 'config_id', 'configId'),
      milestone: one('milestone', 'milestone_id', 'milestoneId'),
      state: one('workflow', 'state_id', 'stateId'),
      assignedTo: one('user', 'assigned_to_id', 'assignedToId'),
      createdBy: one('user', 'created_by_id', 'createdById'),
      tags: linked('tag', 'session_tags', 'session_id', 'tag_id'),
      results: many('sessionResult', 'session_id'),
      attachments: many('attachment', 'session_id'),
      comments: many('comment', 'session_id'),
    },
  },
  sessionResult: {
    name: 'sessionResult',
    table: 'session_results',
    category: 'testRuns',
    softDeleteField: 'isDeleted',
    projectPath: ['session', 'project'],
    fields: {
      id,
      resultData: optionalText('result_data'),
      durationMs: optionalInt('duration_ms'),
      sessionId: reference('session_id', false),
      statusId: reference('status_id', false),
      createdById: actor('created_by_id'),
      externalImportJobId: externalImportJob,
      ...softDeleteAndTimes,
    },
    relations: {
      session: one('session', 'session_id', 'sessionId', true),
      status: one('status', 'status_id', 'statusId', true),
      createdBy: one('user', 'created_by_id', 'createdById'),
    },
  },

  // ------------------------------------------------------------------------------- planning
  milestone: {
    name: 'milestone',
    table: 'milestones',
    category: 'planning',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      note: optionalText('note'),
      isStarted: flag('is_started'),
      isCompleted: flag('is_completed'),
      startedAt: optionalTime('started_at'),
      completedAt: optionalTime('completed_at'),
      dueAt: optionalTime('due_at'),
      projectId: reference('project_id', false),
      parentId: reference('parent_id'),
      milestoneTypeId: reference('milestone_type_id'),
      createdById: actor('created_by_id'),
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      parent: one('milestone', 'parent_id', 'parentId'),
      children: many('milestone', 'parent_id'),
      milestoneType: one('milestoneType', 'milestone_type_id', 'milestoneTypeId'),
      createdBy: one('user', 'created_by_id', 'createdById'),
      testRuns: many('testRun', 'milestone_id'),
      sessions: many('session', 'milestone_id'),
      comments: many('comment', 'milestone_id'),
    },
  },
  milestoneType: {
    name: 'milestoneType',
    table: 'milestone_types',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      isDefault: flag('is_default'),
      ...softDeleteAndTimes,
    },
    relations: {
      milestones: many('milestone', 'milestone_type_id'),
    },
  },
  configuration: {
    name: 'configuration',
    table: 'configurations',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      isEnabled: flag('is_enabled', true),
      ...softDeleteAndTimes,
    },
    relations: {
      variants: linked('configVariant', 'configuration_variants', 'configuration_id', 'variant_id'),
      testRuns: many('testRun', 'config_id'),
      sessions: many('session', 'config_id'),
    },
  },
  configCategory: {
    name: 'configCategory',
    table: 'config_categories',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      ...softDeleteAndTimes,
    },
    relations: {
      variants: many('configVariant', 'category_id'),
    },
  },
  configVariant: {
    name: 'configVariant',
    table: 'config_variants',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      isEnabled: flag('is_enabled', true),
      categoryId: reference('category_id', false),
      ...softDeleteAndTimes,
    },
    relations: {
      category: one('configCategory', 'category_id', 'categoryId', true),
      configurations: linked('configuration', 'configuration_variants', 'variant_id', 'configuration_id'),
    },
  },
  tag: {
    name: 'tag',
    table: 'tags',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      ...softDeleteAndTimes,
    },
    relations: {
      repositoryCases: linked('repositoryCase', 'repository_case_tags', 'tag_id', 'repository_case_id'),
      testRuns: linked('testRun', 'test_run_tags', 'tag_id', 'test_run_id'),
      sessions: linked('session', 'session_tags', 'tag_id', 'session_id'),
    },
  },
  workflow: {
    name: 'workflow',
    table: 'workflows',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      order: integer('sort_order', { default: 0 }),
      scope: field('string', 'scope', { enum: WORKFLOW_SCOPES, requiredOnCreate: true }),
      workflowType: field('string', 'workflow_type', { enum: WORKFLOW_TYPES, requiredOnCreate: true }),
      icon: optionalText('icon', { maxLength: LIMITS.name }),
      color: optionalText('color', { maxLength: LIMITS.name }),
      isEnabled: flag('is_enabled', true),
      isDefault: flag('is_default'),
      ...softDeleteAndTimes,
    },
    relations: {
      repositoryCases: many('repositoryCase', 'state_id'),
      testRuns: many('testRun', 'state_id'),
      sessions: many('session', 'state_id'),
    },
  },
  status: {
    name: 'status',
    table: 'statuses',
    category: 'planning',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      systemName: text('system_name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      aliases: field('string', 'aliases', { list: true, default: [], maxLength: LIMITS.name }),
      color: optionalText('color', { maxLength: LIMITS.name }),
      order: integer('sort_order', { default: 0 }),
      isEnabled: flag('is_enabled', true),
      isSuccess: flag('is_success'),
      isFailure: flag('is_failure'),
      isCompleted: flag('is_completed'),
      scopes: field('string', 'scopes', { list: true, enum: STATUS_SCOPES, default: [...STATUS_SCOPES] }),
      ...softDeleteAndTimes,
    },
    relations: {
      testRunCases: many('testRunCase', 'status_id'),
      testRunResults: many('testRunResult', 'status_id'),
      sessionResults: many('sessionResult', 'status_id'),
    },
  },

  // ------------------------------------------------------------------------------- users
  user: {
    name: 'user',
    table: 'users',
    category: 'users',
    // Its own aggregate (services/identity): the e-mail is claimed on a stream, the password is
    // hashed on the command side and never readable; the identity projection writes the rows.
    softDeleteField: 'isDeleted',
    fields: {
      id,
      email: text('email', { requiredOnCreate: true, unique: 'forever', maxLength: LIMITS.email }),
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      access: oneOf('access', ACCESS_LEVELS, 'USER'),
      isActive: flag('is_active', true),
      roleId: reference('role_id'),
      isDeleted,
      createdAt,
      updatedAt,
    },
    relations: {
      role: one('role', 'role_id', 'roleId'),
      projectAssignments: many('projectAssignment', 'user_id'),
      groupAssignments: many('groupAssignment', 'user_id'),
      projectPermissions: many('userProjectPermission', 'user_id'),
      createdRepositoryCases: many('repositoryCase', 'created_by_id'),
      createdTestRuns: many('testRun', 'created_by_id'),
      executedResults: many('testRunResult', 'executed_by_id'),
    },
  },
  role: {
    name: 'role',
    table: 'roles',
    category: 'users',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      isDefault: flag('is_default'),
      ...softDeleteAndTimes,
    },
    relations: {
      permissions: many('rolePermission', 'role_id'),
    },
  },
  /**
   * A meaning an electronic signature can carry (services/signatures/, docs/compliance.md), with
   * the roles that may sign with it: a caller whose role in the signed record's project is one of
   * them may; administrators and the project's admins always may. Administrators define them.
   */
  signatureMeaning: {
    name: 'signatureMeaning',
    table: 'signature_meanings',
    category: 'users',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      description: optionalText('description'),
      ...softDeleteAndTimes,
    },
    relations: {
      roles: linked('role', 'signature_meaning_roles', 'signature_meaning_id', 'role_id'),
    },
  },
  rolePermission: {
    name: 'rolePermission',
    table: 'role_permissions',
    category: 'users',
    fields: {
      id,
      area: field('string', 'area', { enum: APPLICATION_AREAS, requiredOnCreate: true }),
      canAddEdit: flag('can_add_edit'),
      canDelete: flag('can_delete'),
      canClose: flag('can_close'),
      roleId: reference('role_id', false),
      createdAt,
      updatedAt,
    },
    relations: {
      role: one('role', 'role_id', 'roleId', true),
    },
  },

  group: {
    name: 'group',
    table: 'groups',
    category: 'users',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      externalId: optionalText('external_id', { maxLength: LIMITS.name }),
      note: optionalText('note'),
      ...softDeleteAndTimes,
    },
    relations: {
      assignments: many('groupAssignment', 'group_id'),
      projectPermissions: many('groupProjectPermission', 'group_id'),
    },
  },
  groupAssignment: {
    name: 'groupAssignment',
    table: 'group_assignments',
    category: 'users',
    uniqueTogether: ['userId', 'groupId'],
    fields: {
      id,
      userId: reference('user_id', false),
      groupId: reference('group_id', false),
      createdAt,
      updatedAt,
    },
    relations: {
      user: one('user', 'user_id', 'userId', true),
      group: one('group', 'group_id', 'groupId', true),
    },
  },
  userProjectPermission: projectPermission('userProjectPermission', 'user_project_permissions', 'user'),
  groupProjectPermission: projectPermission('groupProjectPermission', 'group_project_permissions', 'group'),

  // ------------------------------------------------------------------------------- integrations
  integration: {
    name: 'integration',
    table: 'integrations',
    category: 'integrations',
    softDeleteField: 'isDeleted',
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, unique: true, maxLength: LIMITS.name }),
      provider: field('string', 'provider', { enum: INTEGRATION_PROVIDERS, requiredOnCreate: true }),
      url: optionalText('url', { maxLength: LIMITS.url }),
      isEnabled: flag('is_enabled', true),
      settings: field('json', 'settings', { nullable: true, holdsSecrets: true }),
      ...softDeleteAndTimes,
    },
    relations: {},
  },

  // ------------------------------------------------------------------------------- other
  attachment: {
    name: 'attachment',
    table: 'attachments',
    category: 'other',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      name: text('name', { requiredOnCreate: true, maxLength: LIMITS.name }),
      url: text('url', { requiredOnCreate: true, maxLength: LIMITS.url }),
      size: integer('size', { requiredOnCreate: true }),
      mimeType: text('mime_type', { default: 'application/octet-stream', maxLength: LIMITS.name }),
      note: optionalText('note'),
      projectId: reference('project_id', false),
      repositoryCaseId: reference('repository_case_id'),
      testRunId: reference('test_run_id'),
      testRunResultId: reference('test_run_result_id'),
      sessionId: reference('session_id'),
      createdById: actor('created_by_id'),
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      testRun: one('testRun', 'test_run_id', 'testRunId'),
      testRunResult: one('testRunResult', 'test_run_result_id', 'testRunResultId'),
      session: one('session', 'session_id', 'sessionId'),
      createdBy: one('user', 'created_by_id', 'createdById'),
    },
  },
  comment: {
    name: 'comment',
    table: 'comments',
    category: 'other',
    softDeleteField: 'isDeleted',
    projectPath: ['project'],
    fields: {
      id,
      content: text('content', { requiredOnCreate: true }),
      isEdited: flag('is_edited', false, { writable: false }),
      projectId: reference('project_id', false),
      repositoryCaseId: reference('repository_case_id'),
      testRunId: reference('test_run_id'),
      sessionId: reference('session_id'),
      milestoneId: reference('milestone_id'),
      createdById: actor('created_by_id'),
      ...softDeleteAndTimes,
    },
    relations: {
      project: one('project', 'project_id', 'projectId', true),
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      testRun: one('testRun', 'test_run_id', 'testRunId'),
      session: one('session', 'session_id', 'sessionId'),
      milestone: one('milestone', 'milestone_id', 'milestoneId'),
      createdBy: one('user', 'created_by_id', 'createdById'),
    },
  },

  // ------------------------------------------------------------------------------- analytics
  // Read-only statistics kept by the read model's projection from runs, run cases and results
  // (projections/statistics.ts; definitions in docs/analytics.md). Kept for now only: no `asOf`.
  caseStatistic: {
    ...statistics('caseStatistic', 'case_statistics', 'testCases'),
    fields: {
      id,
      repositoryCaseId: reference('repository_case_id', false),
      projectId: reference('project_id', false),
      /** null: over every configuration (and runs without one). */
      configId: reference('config_id'),
      allConfigurations: stat('boolean', 'all_configurations'),
      executions: stat('int', 'executions'),
      passed: stat('int', 'passed'),
      failed: stat('int', 'failed'),
      passRate: stat('float', 'pass_rate', true),
      firstSeenAt: stat('datetime', 'first_seen_at'),
      lastSeenAt: stat('datetime', 'last_seen_at'),
      meanDurationMs: stat('float', 'mean_duration_ms', true),
      p95DurationMs: stat('float', 'p95_duration_ms', true),
      lastStatusIds: { column: 'last_status_ids', type: 'int', list: true, nullable: false, writable: false },
      recentExecutions: stat('int', 'recent_executions'),
      flips: stat('int', 'flips'),
      flakiness: stat('float', 'flakiness'),
    },
    relations: {
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      project: one('project', 'project_id', 'projectId'),
      configuration: one('configuration', 'config_id', 'configId'),
    },
  },
  caseDailyStatistic: {
    ...statistics('caseDailyStatistic', 'case_daily_statistics', 'testCases'),
    fields: {
      id,
      repositoryCaseId: reference('repository_case_id', false),
      projectId: reference('project_id', false),
      day: stat('datetime', 'day'),
      configId: reference('config_id'),
      branch: stat('string', 'branch', true),
      executions: stat('int', 'executions'),
      passed: stat('int', 'passed'),
      failed: stat('int', 'failed'),
      other: stat('int', 'other'),
      flips: stat('int', 'flips'),
      retryFlips: stat('int', 'retry_flips'),
      durationMs: sum('duration_ms'),
    },
    relations: {
      repositoryCase: one('repositoryCase', 'repository_case_id', 'repositoryCaseId'),
      project: one('project', 'project_id', 'projectId'),
      configuration: one('configuration', 'config_id', 'configId'),
    },
  },
  testRunStatistic: {
    ...statistics('testRunStatistic', 'test_run_statistics', 'testRuns'),
    fields: {
      id,
      testRunId: reference('test_run_id', false),
      projectId: reference('project_id', false),
      milestoneId: reference('milestone_id'),
      configId: reference('config_id'),
      branch: stat('string', 'branch', true),
      day: stat('datetime', 'day'),
      isCompleted: stat('boolean', 'is_completed'),
      total: stat('int', 'total'),
      executed: stat('int', 'executed'),
      passed: stat('int', 'passed'),
      failed: stat('int', 'failed'),
      other: stat('int', 'other'),
      untested: stat('int', 'untested'),
      durationMs: sum('duration_ms'),
      passRate: stat('float', 'pass_rate', true),
    },
    relations: {
      testRun: one('testRun', 'test_run_id', 'testRunId'),
      project: one('project', 'project_id', 'projectId'),
      milestone: one('milestone', 'milestone_id', 'milestoneId'),
      configuration: one('configuration', 'config_id', 'configId'),
    },
  },
  projectDailyStatistic: {
    ...statistics('projectDailyStatistic', 'project_daily_statistics', 'projects'),
    fields: {
      id,
      projectId: reference('project_id', false),
      day: stat('datetime', 'day'),
      executions: stat('int', 'executions'),
      passed: stat('int', 'passed'),
      failed: stat('int', 'failed'),
      other: stat('int', 'other'),
      casesCreated: stat('int', 'cases_created'),
      casesChanged: stat('int', 'cases_changed'),
    },
    relations: {
      project: one('project', 'project_id', 'projectId'),
    },
  },
};

export function isEntityName(name: string): name is EntityName {
  return Object.prototype.hasOwnProperty.call(ENTITIES, name);
}

/**
 * The table holding the versions the rows of a read-model table (an entity's or a join table)
 * had before their last change, for reads as of a point (docs/history.md).
 */
export const historyTableOf = (table: string): string => `${table}_history`;

/** How an entity's rows are written (see EntityDef.writtenAs). */
export const writtenAs = (entity: EntityDef) => entity.writtenAs ?? 'aggregate';
