/**
 * TypeScript shapes of the hand-written events' `data`, one per schema in contracts/events/;
 * the catalogue entities' events are `EntityEvent`.
 * test/contracts/contracts.unit.spec.ts checks that this list and the schema files agree.
 */
import type { DomainEvent } from './envelope';
import { ENTITIES } from './entities';
import { GENERIC_ENTITIES, eventTypesOf } from './entityEvents';

type Iso = string;

/**
 * Events of the generic entity aggregate (contracts/entityEvents.ts): `<Entity>Created`, `Updated`,
 * `Deleted`, their data shaped by the catalogue and checked by their generated JSON Schemas.
 */
export type EntityEvent = DomainEvent<string, Record<string, unknown>>;
export type AccessLevel = 'ADMIN' | 'PROJECTADMIN' | 'USER' | 'NONE';

export type IdBlockReserved = DomainEvent<'IdBlockReserved', { category: string; from: number; to: number }>;
export type UniqueValueClaimed = DomainEvent<'UniqueValueClaimed', { scope: string; value: string; ownerId: number }>;
/** Appended at the claim's revision (contracts/claims.ts): the value may be claimed again. */
export type UniqueValueReleased = DomainEvent<'UniqueValueReleased', {
  scope: string; value: string; ownerId: number; reason: 'owner-write-failed' | 'owner-never-appeared' | 'owner-rolled-back';
}>;
export type DefaultsPlanned = DomainEvent<'DefaultsPlanned', { items: { key: string; entity: string; id: number }[] }>;

/** v2 added roleId (the user's global role, null for none); v1 events have none. */
export type UserRegistered = DomainEvent<'UserRegistered', {
  userId: number; email: string; name: string; passwordHash: string; access: AccessLevel; roleId?: number | null; createdAt: Iso;
}>;
/** Only the changed fields are present. The e-mail never changes. */
export type UserUpdated = DomainEvent<'UserUpdated', {
  userId: number; changes: { name?: string; access?: AccessLevel; roleId?: number | null }; updatedAt: Iso;
}>;
export type UserDeactivated = DomainEvent<'UserDeactivated', { userId: number; at: Iso }>;
export type UserReactivated = DomainEvent<'UserReactivated', { userId: number; at: Iso }>;
/** The new argon2id hash; the password itself is never recorded. */
export type UserPasswordChanged = DomainEvent<'UserPasswordChanged', { userId: number; passwordHash: string; at: Iso }>;
/** Soft delete: the row stays, marked deleted and inactive, and the user can no longer be changed. */
export type UserDeleted = DomainEvent<'UserDeleted', { userId: number; at: Iso }>;
export type ApiTokenCreated = DomainEvent<'ApiTokenCreated', {
  tokenId: number; userId: number; name: string; prefix: string; tokenHash: string; expiresAt: Iso | null; createdAt: Iso;
}>;
export type ApiTokenRevoked = DomainEvent<'ApiTokenRevoked', { tokenId: number; userId: number; revokedAt: Iso }>;
/** A refused login, on `loginAttempts-<digest of the e-mail>` (services/identity/loginAttempts.ts); never the password. */
export type LoginFailed = DomainEvent<'LoginFailed', {
  email: string; userId: number | null; reason: 'unknown-user' | 'wrong-password' | 'inactive-user' | 'rate-limited'; ip: string | null; attemptedAt: Iso;
}>;

export type RepositoryFolderCreated = DomainEvent<'RepositoryFolderCreated', {
  folderId: number; projectId: number; parentId: number | null; name: string; createdAt: Iso;
}>;
export type RepositoryFolderUpdated = DomainEvent<'RepositoryFolderUpdated', {
  folderId: number; changes: { name?: string; parentId?: number | null }; updatedAt: Iso;
}>;
export type RepositoryFolderDeleted = DomainEvent<'RepositoryFolderDeleted', { folderId: number; deletedAt: Iso }>;
/** A renamed case with an import identity keeps its old key as an alias (stream `caseIdentity-<caseId>`; services/repository/caseIdentity.ts). */
export type RepositoryCaseAliasAdded = DomainEvent<'RepositoryCaseAliasAdded', {
  caseId: number; projectId: number; source: string; alias: string; aliasTitle: string; identityKey: string; addedAt: Iso;
}>;
/** A case quarantined and released again (stream `caseQuarantine-<caseId>`; services/quarantine/): who is the actor, why the reason. */
export type CaseQuarantined = DomainEvent<'CaseQuarantined', { caseId: number; projectId: number; reason: string; at: Iso }>;
export type CaseReleased = DomainEvent<'CaseReleased', { caseId: number; projectId: number; reason: string; at: Iso }>;

// ------------------------------------------------------------------------------- evidence
/** The records an electronic signature applies to (services/signatures/). */
export type SignedEntity = 'testRun' | 'milestone' | 'repositoryCase';
export type Reauthentication = 'password' | 'session-login';
/** An electronic signature (stream `signatures-<entity>-<id>`; docs/compliance.md). */
export type RecordSigned = DomainEvent<'RecordSigned', {
  signatureId: string; entity: SignedEntity; entityId: number; projectId: number; meaning: string;
  signerId: number; signerName: string; signerEmail: string; comment: string | null;
  contentPosition: string; contentHash: string; contentEvents: number; reauthentication: Reauthentication; signedAt: Iso;
}>;
export type SignatureRevoked = DomainEvent<'SignatureRevoked', {
  signatureId: string; entity: SignedEntity; entityId: number; projectId: number; reason: string;
  revokerId: number; revokerName: string; reauthentication: Reauthentication; revokedAt: Iso;
}>;
/** The log's head hash recorded (stream `integrityAnchors`; services/integrity/anchors.ts). */
export type IntegrityAnchored = DomainEvent<'IntegrityAnchored', { position: string; hash: string; anchoredAt: Iso; copies: ('file' | 'url')[] }>;
/** An administrator's retry of parked events (stream `projectionAdministration`; services/parking/). */
export type ParkedEventsRetried = DomainEvent<'ParkedEventsRetried', { projection: string | null; ids: number[] | null; resolved: number; stillParked: number; retriedAt: Iso }>;

// ------------------------------------------------------------------------------- result import
// An import job's stream is `importJob-<jobId>` (services/imports/importJob.decider.ts).

export type ImportFormatName = 'junit' | 'testng' | 'nunit' | 'xunit' | 'mstest' | 'mocha' | 'cucumber';
export type ImportWarning = { file: string; message: string; case?: string };
/**
 * v2 adds the CI context (`branch`, `commit`, `buildUrl`, `ciJobId`, `attempt`: null when not given)
 * and `newAttempt` (the caller asked for a new import of an upload already made); v1 events lack
 * them: readers take null and false.
 */
export type ImportRequested = DomainEvent<'ImportRequested', {
  jobId: number; projectId: number; endpoint: 'junit' | 'test-results'; format: 'auto' | ImportFormatName;
  testRunName: string | null; testRunId: number | null; stateId: number | null; parentFolderId: number | null;
  configId: number | null; milestoneId: number | null; tagIds: number[]; templateId: number | null; requestedAt: Iso;
  branch?: string | null; commit?: string | null; buildUrl?: string | null; ciJobId?: string | null; attempt?: number | null; newAttempt?: boolean;
}>;
/**
 * `storedAs` is the file's key in the file store: a stored file of its own (`FileStored` on
 * `file-<storedAs>`), or for jobs from before per-upload keys, the content's SHA-256.
 */
export type ImportFileStored = DomainEvent<'ImportFileStored', {
  jobId: number; index: number; fileName: string; storedAs: string; sizeBytes: number; sha256: string;
}>;
export type ImportParsed = DomainEvent<'ImportParsed', {
  jobId: number; format: ImportFormatName; cases: number; suites: number; warnings: ImportWarning[]; warningCount: number; parsedAt: Iso;
}>;
export type ImportTestRunPlanned = DomainEvent<'ImportTestRunPlanned', { jobId: number; testRunId: number; created: boolean }>;
export type CaseSource = 'JUNIT' | 'TESTNG' | 'XUNIT' | 'NUNIT' | 'MSTEST' | 'MOCHA' | 'CUCUMBER';
/**
 * A chunk's rows as columns (one array per field, all of the same length): a few hundred results
 * are some 100 KB instead of 250 KB as objects, which the log, every projection and the read
 * model's statements carry. `ImportedColumns<T>` turns a row shape into its columns.
 */
export type ImportedColumns<T> = { [K in keyof T]: T[K][] };
export interface ImportedFolder { folderId: number; parentId: number | null; name: string }
/**
 * `identityKey`: what finds the case again at the next import; `scope`: its identity scope, as an
 * index into the chunk's `scopes` (cases of a chunk mostly share a few), null for an explicit id
 * (services/repository/caseIdentity.ts). Absent in v1.
 */
export interface ImportedCase {
  caseId: number; folderId: number | null; title: string; className: string | null; identityKey: string | null; scope: number | null;
}
/** A case made before identities existed, now owned by a test of the chunk (v2). */
export interface AdoptedCase { caseId: number; identityKey: string; identityScope: string | null }
/** The status a run case shows after the chunk, where it is not its last result's in the chunk (v2). */
export interface ShownStatus { testRunCaseId: number; statusId: number }
/** A suite's own output, by the suite's folder (v2). */
export interface ImportedSuiteOutput { folderId: number | null; suite: string; systemOut: string | null; systemErr: string | null }
/** A suite's own property (JUnit `<testsuite><properties>`), kept on the run: each distinct pair once per import (v4). */
export interface ImportedSuiteProperty { name: string; value: string }
export interface ImportedRunCase { testRunCaseId: number; repositoryCaseId: number; order: number }
export interface ImportedResult {
  resultId: number; testRunCaseId: number; statusId: number; durationMs: number | null; executedAt: Iso | null;
  message: string | null; failureType: string | null; stackTrace: string | null; systemOut: string | null; systemErr: string | null;
  file: string | null; line: number | null; properties: { name: string; value: string }[]; attempt: number;
  /** The file says a later attempt replaces this one (v2; false in v1). */
  retried: boolean;
}
/**
 * One chunk of results; new cases take `caseSource`, `caseTemplateId` and `caseStateId`;
 * `processedCases` counts the files' cases consumed so far (resume starts after them). A chunk may
 * hold folders only (a suite nested deeper than one event's 5,000 folders): it moves no case on.
 * v1 events lack the v2 fields (`identityKey`, `scope`, `scopes`, `retried`, `adopted`, `shown`,
 * `suiteOutputs`), events before v4 `suiteProperties`: readers default them.
 */
export type TestResultsImported = DomainEvent<'TestResultsImported', {
  jobId: number; chunk: number; projectId: number; testRunId: number; caseSource: CaseSource; caseTemplateId: number | null; caseStateId: number | null;
  folders: ImportedColumns<ImportedFolder>; cases: ImportedColumns<ImportedCase>; runCases: ImportedColumns<ImportedRunCase>;
  results: ImportedColumns<ImportedResult>; processedCases: number; importedAt: Iso;
  scopes: string[]; adopted: ImportedColumns<AdoptedCase>; shown: ImportedColumns<ShownStatus>; suiteOutputs: ImportedColumns<ImportedSuiteOutput>;
  suiteProperties: ImportedColumns<ImportedSuiteProperty>;
}>;
export interface ImportCounts { results: number; newCases: number; newFolders: number; newRunCases: number; passed: number; failed: number; error: number; skipped: number }
export type ImportCompleted = DomainEvent<'ImportCompleted', { jobId: number; testRunId: number; counts: ImportCounts; completedAt: Iso }>;
export type ImportFailed = DomainEvent<'ImportFailed', { jobId: number; code: string; error: string; details: Record<string, unknown>; failedAt: Iso }>;
export type ImportJobEvent = ImportRequested | ImportFileStored | ImportParsed | ImportTestRunPlanned | TestResultsImported | ImportCompleted | ImportFailed;

// ------------------------------------------------------------------------------- stored files
// A stored file's stream is `file-<key>` (services/files/storedFile.decider.ts).

export type FileDeletionReason = 'import-failed' | 'import-not-started' | 'retention' | 'attachment-deleted' | 'requested' | 'upload-failed';
/** `importJobId` null: uploaded for the project (POST /api/files/upload); else a result file of that import job. */
export type FileStored = DomainEvent<'FileStored', {
  key: string; projectId: number; importJobId: number | null; name: string; mimeType: string; size: number; sha256: string;
  uploadedById: number | null; storedAt: Iso;
}>;
export type FileAttached = DomainEvent<'FileAttached', { key: string; projectId: number; attachmentId: number; attachedAt: Iso }>;
export type FileDeleted = DomainEvent<'FileDeleted', { key: string; projectId: number; reason: FileDeletionReason; deletedAt: Iso }>;
export type StoredFileEvent = FileStored | FileAttached | FileDeleted;

// ------------------------------------------------------------------------------- search administration
// An administrator's operations on the search engine are on the stream `searchAdministration`;
// a reindex job's stream is `searchReindex-<jobId>` (services/searchAdmin/).

export type SearchEngineName = 'postgres' | 'opensearch' | 'elasticsearch';
export type SearchTypeName = 'repository_cases' | 'shared_steps' | 'test_runs' | 'sessions' | 'projects' | 'issues' | 'milestones' | 'comments' | 'failures';
export type SearchOperation = 'connection-test' | 'create-indices' | 'delete-index' | 'force-merge' | 'cache-clear' | 'refresh' | 'mapping-update';
export type SearchOperationPerformed = DomainEvent<'SearchOperationPerformed', {
  operation: SearchOperation; engine: SearchEngineName | null; targets: string[]; outcome: 'succeeded' | 'failed'; error: string | null;
  details: Record<string, unknown>; performedAt: Iso;
}>;
export type SearchConnectionField = 'engine' | 'url' | 'username' | 'password' | 'apiKey' | 'sslVerify' | 'sslCaPath' | 'sslCa';
/** Never a credential: only whether there is one, and which fields changed. */
export type SearchConnectionChanged = DomainEvent<'SearchConnectionChanged', {
  settingsId: number; source: 'administrator' | 'environment'; engine: 'auto' | SearchEngineName; url: string | null; username: string | null;
  hasPassword: boolean; hasApiKey: boolean; sslVerify: boolean; sslCaPath: string | null; hasSslCa: boolean; changed: SearchConnectionField[]; changedAt: Iso;
}>;
export type SearchAdministrationEvent = SearchOperationPerformed | SearchConnectionChanged;

export type SearchReindexRequested = DomainEvent<'SearchReindexRequested', {
  jobId: number; mode: 'full' | 'partial'; projectIds: number[] | null; types: SearchTypeName[] | null; batchSize: number;
  runAt: Iso | null; repeatEveryMinutes: number | null; repeatOf: number | null; requestedAt: Iso;
}>;
export type SearchReindexStarted = DomainEvent<'SearchReindexStarted', {
  jobId: number; engine: SearchEngineName; target: string; version: number; replacesVersion: number | null; checkpoints: Record<string, string>;
  totals: Partial<Record<SearchTypeName, number>>; startedAt: Iso;
}>;
export type SearchReindexProgressed = DomainEvent<'SearchReindexProgressed', {
  jobId: number; type: SearchTypeName; afterId: number; documents: number; typeDone: boolean; at: Iso;
}>;
export type SearchReindexPaused = DomainEvent<'SearchReindexPaused', { jobId: number; pausedAt: Iso }>;
export type SearchReindexResumed = DomainEvent<'SearchReindexResumed', { jobId: number; resumedAt: Iso }>;
export type SearchReindexCancelled = DomainEvent<'SearchReindexCancelled', { jobId: number; documents: number; cancelledAt: Iso }>;
export type SearchReindexCompleted = DomainEvent<'SearchReindexCompleted', {
  jobId: number; documents: Record<string, number>; switched: boolean; droppedVersions: number[]; completedAt: Iso;
}>;
export type SearchReindexFailed = DomainEvent<'SearchReindexFailed', { jobId: number; code: string; error: string; details: Record<string, unknown>; failedAt: Iso }>;
export type SearchReindexEvent = SearchReindexRequested | SearchReindexStarted | SearchReindexProgressed | SearchReindexPaused | SearchReindexResumed
  | SearchReindexCancelled | SearchReindexCompleted | SearchReindexFailed;

// ------------------------------------------------------------------------------- external-tool migration
/** An external import job's stream (services/migration/externalImport.decider.ts), and the correlation id of every event its job writes. */
export const externalImportStream = (jobId: number) => `externalImport-${jobId}`;

/** The mappable datasets of the configuration step, by their API names. */
export type ExternalMappingKey =
  | 'states' | 'statuses' | 'users' | 'roles' | 'templates' | 'templateFields' | 'milestoneTypes' | 'groups' | 'issueTrackers' | 'configurations' | 'tags';
/** One source row's choice: an existing entity (`targetId`), a new one, or none. `kind`: for templateFields, caseField or resultField. */
export interface ExternalMappingEntry { sourceId: string; action: 'map' | 'create' | 'skip'; targetId?: number; kind?: 'caseField' | 'resultField' }
export type ExternalMappings = Record<ExternalMappingKey, ExternalMappingEntry[]>;
/** A configuration row as the mapping step shows it: its source id, a name (e-mail for users) and the hints suggestions use. */
export interface ExternalSourceEntry { sourceId: string; name: string; hint?: Record<string, unknown> }
export interface ExternalIssue { code: string; message: string; details: Record<string, unknown> }
export interface ExternalDatasetSummary {
  name: string; entries: string[]; disposition: 'import' | 'skip'; skipReason: string | null; rowCount: number;
  sampleRows: unknown[]; samplesTruncated: boolean; warnings: ExternalIssue[]; errors: ExternalIssue[];
}
export type ExternalDurationUnit = 'ns' | 'us' | 'ms' | 's';

export type ExternalImportUploaded = DomainEvent<'ExternalImportUploaded', {
  jobId: number; fileName: string; fileSize: number; sha256: string; storedAs: string; container: 'zip' | 'json'; uploadedAt: Iso;
}>;
export type ExternalImportAnalysisStarted = DomainEvent<'ExternalImportAnalysisStarted', { jobId: number; startedAt: Iso }>;
export type ExternalImportAnalysed = DomainEvent<'ExternalImportAnalysed', {
  jobId: number; datasets: ExternalDatasetSummary[]; ignored: Array<{ entry: string; name: string; reason: string }>;
  warnings: ExternalIssue[]; errors: ExternalIssue[]; totals: { datasets: number; rows: number; warnings: number; errors: number };
  sources: Record<ExternalMappingKey, ExternalSourceEntry[]>;
  suggestions: ExternalMappings; analysedAt: Iso;
}>;
export type ExternalImportConfigured = DomainEvent<'ExternalImportConfigured', {
  jobId: number; mappings: ExternalMappings; durationUnit: ExternalDurationUnit; reset: boolean; configuredAt: Iso;
}>;
export type ExternalImportQueued = DomainEvent<'ExternalImportQueued', { jobId: number; queuedAt: Iso }>;
/** The rows of each dataset the job writes, in the order it writes them (counted when staged). */
export type ExternalImportStarted = DomainEvent<'ExternalImportStarted', { jobId: number; plan: Array<{ dataset: string; rows: number }>; startedAt: Iso }>;
/**
 * The ids a chunk's rows get, recorded before any is written (so a resumed job writes the same
 * rows under the same ids, never twice), with each row's provenance. Columnar: one array per field,
 * index i is row i. `id` null: the row is skipped, `skipReason[i]` says why; `mapped[i]`: an existing
 * entity (never written, never rolled back).
 */
export type ExternalImportChunkPlanned = DomainEvent<'ExternalImportChunkPlanned', {
  jobId: number; dataset: string; entity: string; chunk: number; lastRow: number;
  rows: { sourceId: string[]; id: Array<number | null>; key: Array<string | null>; createdBy: Array<string | null>; createdAt: Array<string | null>; skipReason: Array<string | null>; mapped: boolean[] };
}>;
export type ExternalImportChunkImported = DomainEvent<'ExternalImportChunkImported', {
  jobId: number; dataset: string; chunk: number; lastRow: number; created: number; skipped: number; at: Iso;
}>;
/**
 * The rows of a planned chunk written in bulk (the large datasets: cases, runs, run tests,
 * results, sessions and their results), appended with the chunk's plan and its record in one
 * append. As a table: `fields` names the columns, each of `rows` is one row's values in that
 * order, and together they are exactly the data of the entity's own Created event (decided and
 * checked against that event's contract as a user's create is). The rows have no stream of their
 * own until they first change (services/entities/importedRows.ts).
 */
export type ExternalImportRowsWritten = DomainEvent<'ExternalImportRowsWritten', {
  jobId: number; dataset: string; chunk: number; entity: string; fields: string[]; rows: unknown[][];
}>;
export type ExternalImportCompleted = DomainEvent<'ExternalImportCompleted', {
  jobId: number; counts: Record<string, { created: number; mapped: number; skipped: number }>; notificationId: number | null; completedAt: Iso;
}>;
export type ExternalImportFailed = DomainEvent<'ExternalImportFailed', {
  jobId: number; phase: string; code: string; error: string; details: Record<string, unknown>; notificationId: number | null; failedAt: Iso;
}>;
export type ExternalImportCancelRequested = DomainEvent<'ExternalImportCancelRequested', { jobId: number; requestedAt: Iso }>;
export type ExternalImportCancelled = DomainEvent<'ExternalImportCancelled', { jobId: number; cancelledAt: Iso }>;
export type ExternalImportRollbackRequested = DomainEvent<'ExternalImportRollbackRequested', { jobId: number; requestedAt: Iso }>;
/** `processed`: rows of the dataset gone through; `deleted`: of them, those the rollback deleted (v1 and v2 have `deleted` only, which counted both). */
export type ExternalImportRollbackProgressed = DomainEvent<'ExternalImportRollbackProgressed', { jobId: number; dataset: string; processed: number; deleted: number; at: Iso }>;
export type ExternalImportRolledBack = DomainEvent<'ExternalImportRolledBack', { jobId: number; deleted: Record<string, number>; rolledBackAt: Iso }>;
export type ExternalImportClosed = DomainEvent<'ExternalImportClosed', { jobId: number; fileDeleted: boolean; closedAt: Iso }>;
export type ExternalImportEvent = ExternalImportUploaded | ExternalImportAnalysisStarted | ExternalImportAnalysed | ExternalImportConfigured
  | ExternalImportQueued | ExternalImportStarted | ExternalImportChunkPlanned | ExternalImportRowsWritten | ExternalImportChunkImported | ExternalImportCompleted
  | ExternalImportFailed | ExternalImportCancelRequested | ExternalImportCancelled | ExternalImportRollbackRequested
  | ExternalImportRollbackProgressed | ExternalImportRolledBack | ExternalImportClosed;

// ------------------------------------------------------------------------------- notifications
// A notification's stream is `notification-<notificationId>` (services/notifications/notification.decider.ts).

/** A message for one user; `link` is a path inside this API, `subject` what it is about (both null when none). */
export type NotificationCreated = DomainEvent<'NotificationCreated', {
  notificationId: number; userId: number; kind: string; title: string; body: string; link: string | null;
  subject: { type: string; id: number } | null; createdAt: Iso;
}>;
export type NotificationRead = DomainEvent<'NotificationRead', { notificationId: number; userId: number; readAt: Iso }>;
export type NotificationEvent = NotificationCreated | NotificationRead;

export type TestamentEvent =
  | IdBlockReserved | UniqueValueClaimed | UniqueValueReleased | DefaultsPlanned
  | UserRegistered | UserUpdated | UserDeactivated | UserReactivated | UserPasswordChanged | UserDeleted
  | ApiTokenCreated | ApiTokenRevoked | LoginFailed
  | RepositoryFolderCreated | RepositoryFolderUpdated | RepositoryFolderDeleted | RepositoryCaseAliasAdded
  | CaseQuarantined | CaseReleased
  | RecordSigned | SignatureRevoked | IntegrityAnchored | ParkedEventsRetried
  | ImportJobEvent
  | StoredFileEvent
  | SearchAdministrationEvent | SearchReindexEvent
  | NotificationEvent
  | ExternalImportEvent
  | EntityEvent;

export type EventType = TestamentEvent['type'];

/** Events with hand-written shapes (identity, ids, claims, folders, import jobs, stored files, search administration). */
export const HAND_WRITTEN_EVENT_TYPES: readonly EventType[] = [
  'IdBlockReserved', 'UniqueValueClaimed', 'UniqueValueReleased', 'DefaultsPlanned',
  'UserRegistered', 'UserUpdated', 'UserDeactivated', 'UserReactivated', 'UserPasswordChanged', 'UserDeleted',
  'ApiTokenCreated', 'ApiTokenRevoked', 'LoginFailed',
  'RepositoryFolderCreated', 'RepositoryFolderUpdated', 'RepositoryFolderDeleted', 'RepositoryCaseAliasAdded',
  'CaseQuarantined', 'CaseReleased',
  'RecordSigned', 'SignatureRevoked', 'IntegrityAnchored', 'ParkedEventsRetried',
  'ImportRequested', 'ImportFileStored', 'ImportParsed', 'ImportTestRunPlanned', 'TestResultsImported', 'ImportCompleted', 'ImportFailed',
  'FileStored', 'FileAttached', 'FileDeleted',
  'SearchOperationPerformed', 'SearchConnectionChanged',
  'SearchReindexRequested', 'SearchReindexStarted', 'SearchReindexProgressed', 'SearchReindexPaused', 'SearchReindexResumed',
  'SearchReindexCancelled', 'SearchReindexCompleted', 'SearchReindexFailed',
  'NotificationCreated', 'NotificationRead',
  'ExternalImportUploaded', 'ExternalImportAnalysisStarted', 'ExternalImportAnalysed', 'ExternalImportConfigured', 'ExternalImportQueued',
  'ExternalImportStarted', 'ExternalImportChunkPlanned', 'ExternalImportRowsWritten', 'ExternalImportChunkImported', 'ExternalImportCompleted', 'ExternalImportFailed',
  'ExternalImportCancelRequested', 'ExternalImportCancelled', 'ExternalImportRollbackRequested', 'ExternalImportRollbackProgressed',
  'ExternalImportRolledBack', 'ExternalImportClosed',
];

/** Every event type: the hand-written ones and those of each catalogue entity. */
export const EVENT_TYPES: readonly string[] = [
  ...HAND_WRITTEN_EVENT_TYPES,
  ...GENERIC_ENTITIES.flatMap((name) => Object.values(eventTypesOf(ENTITIES[name]))),
];

/** Narrow a stored envelope's data by its type. */
export type DataOf<T extends EventType> = Extract<TestamentEvent, { type: T }>['data'];
