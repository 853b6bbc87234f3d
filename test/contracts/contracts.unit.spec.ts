import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ADOPTED_KEYS, CASE_KEYS, CASE_V2_KEYS, columns, FOLDER_KEYS, RESULT_KEYS, RESULT_V2_KEYS, RUN_CASE_KEYS, SHOWN_KEYS, SUITE_OUTPUT_KEYS, SUITE_PROPERTY_KEYS } from '../support/columns';
import type { EventMetadata } from '../../contracts/envelope';
import { type DataOf, EVENT_TYPES, type ExternalMappingKey, HAND_WRITTEN_EVENT_TYPES } from '../../contracts/events';
import { EVENTS_SCHEMA_DIR, loadContracts } from '../../contracts/validator';
import { ContractViolation } from '../../services/shared/errors';
import { withContracts } from '../../services/shared/validatingEventStore';
import { MemoryEventStore } from '../support/memoryEventStore';

const AT = '2024-03-01T10:00:00.000Z';
/** Every mapping list of the external import, empty. */
const EMPTY_MAPPINGS = Object.fromEntries(['states', 'statuses', 'users', 'roles', 'templates', 'templateFields', 'milestoneTypes', 'groups', 'issueTrackers', 'configurations', 'tags'].map((k) => [k, []])) as Record<ExternalMappingKey, never[]>;
const META: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: 'req-1', causationId: null };

type HandWritten = 'IdBlockReserved' | 'UniqueValueClaimed' | 'UniqueValueReleased' | 'DefaultsPlanned' | 'UserRegistered' | 'ApiTokenCreated' | 'ApiTokenRevoked' | 'LoginFailed'
  | 'UserUpdated' | 'UserDeactivated' | 'UserReactivated' | 'UserPasswordChanged' | 'UserDeleted'
  | 'RepositoryFolderCreated' | 'RepositoryFolderUpdated' | 'RepositoryFolderDeleted' | 'RepositoryCaseAliasAdded'
  | 'CaseQuarantined' | 'CaseReleased' | 'RecordSigned' | 'SignatureRevoked' | 'IntegrityAnchored'
  | 'ImportRequested' | 'ImportFileStored' | 'ImportParsed' | 'ImportTestRunPlanned' | 'TestResultsImported' | 'ImportCompleted' | 'ImportFailed'
  | 'FileStored' | 'FileAttached' | 'FileDeleted'
  | 'SearchOperationPerformed' | 'SearchConnectionChanged' | 'SearchReindexRequested' | 'SearchReindexStarted' | 'SearchReindexProgressed'
  | 'SearchReindexPaused' | 'SearchReindexResumed' | 'SearchReindexCancelled' | 'SearchReindexCompleted' | 'SearchReindexFailed'
  | 'NotificationCreated' | 'NotificationRead'
  | 'ExternalImportUploaded' | 'ExternalImportAnalysisStarted' | 'ExternalImportAnalysed' | 'ExternalImportConfigured' | 'ExternalImportQueued'
  | 'ExternalImportStarted' | 'ExternalImportChunkPlanned' | 'ExternalImportRowsWritten' | 'ExternalImportChunkImported' | 'ExternalImportCompleted' | 'ExternalImportFailed'
  | 'ExternalImportCancelRequested' | 'ExternalImportCancelled' | 'ExternalImportRollbackRequested' | 'ExternalImportRollbackProgressed'
  | 'ExternalImportRolledBack' | 'ExternalImportClosed';

const ARGON2_HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA';
/** UserRegistered as v1 wrote it, before roles: still valid at v1, not at v2 (roleId is required there, null for none). */
const V1_USER = { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: ARGON2_HASH, access: 'USER', createdAt: AT };
/** ImportRequested as v1 wrote it, before the CI context: still valid at v1, not at v2 (its fields are required there, null for none). */
const V1_IMPORT_REQUESTED = {
  jobId: 9, projectId: 7, endpoint: 'junit', format: 'junit', testRunName: 'Nightly', testRunId: null, stateId: null, parentFolderId: null,
  configId: null, milestoneId: null, tagIds: [], templateId: null, requestedAt: AT,
};
/** Hand-written types with a v2: their v1 example (valid at v1); the others' v1 is their only version. */
/** A TestResultsImported chunk as v1 wrote it: no identities, retries, shown statuses or suite output. */
const V1_CHUNK = {
  jobId: 9, chunk: 0, projectId: 7, testRunId: 42, caseSource: 'JUNIT', caseTemplateId: 1, caseStateId: 3,
  folders: columns(FOLDER_KEYS, []), cases: columns(CASE_KEYS, [{ caseId: 100, folderId: null, title: 'accepts a password', className: null }]),
  runCases: columns(RUN_CASE_KEYS, [{ testRunCaseId: 500, repositoryCaseId: 100, order: 0 }]),
  results: columns(RESULT_KEYS, [{
    resultId: 900, testRunCaseId: 500, statusId: 3, durationMs: null, executedAt: null, message: null, failureType: null,
    stackTrace: null, systemOut: null, systemErr: null, file: null, line: null, properties: [], attempt: 1,
  }]),
  processedCases: 1, importedAt: AT,
};
/** A rollback's progress as v1 and v2 wrote it: `deleted` only (the rows gone through). */
const V1_ROLLBACK_PROGRESS = { jobId: 5, dataset: 'repository_cases', deleted: 1, at: AT };
const V1_EXAMPLES: Partial<Record<string, Record<string, unknown>>> = {
  UserRegistered: V1_USER, ImportRequested: V1_IMPORT_REQUESTED, TestResultsImported: V1_CHUNK, ExternalImportRollbackProgressed: V1_ROLLBACK_PROGRESS,
};

/** One valid `data` per hand-written event type: the compiler keeps each shape right. */
const HAND_VALID: { [T in HandWritten]: DataOf<T> } = {
  IdBlockReserved: { category: 'project', from: 1, to: 50 },
  UniqueValueClaimed: { scope: 'user.email', value: 'ada@example.com', ownerId: 3 },
  UniqueValueReleased: { scope: 'user.email', value: 'ada@example.com', ownerId: 3, reason: 'owner-write-failed' },
  DefaultsPlanned: { items: [{ key: 'status:passed', entity: 'status', id: 2 }] },
  UserRegistered: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: ARGON2_HASH, access: 'USER', roleId: 4, createdAt: AT },
  UserUpdated: { userId: 3, changes: { name: 'Ada L.', access: 'ADMIN', roleId: null }, updatedAt: AT },
  UserDeactivated: { userId: 3, at: AT },
  UserReactivated: { userId: 3, at: AT },
  UserPasswordChanged: { userId: 3, passwordHash: ARGON2_HASH, at: AT },
  UserDeleted: { userId: 3, at: AT },
  ApiTokenCreated: { tokenId: 5, userId: 3, name: 'CI', prefix: 'tst_ab12', tokenHash: 'ab'.repeat(32), expiresAt: null, createdAt: AT },
  ApiTokenRevoked: { tokenId: 5, userId: 3, revokedAt: AT },
  LoginFailed: { email: 'ada@example.com', userId: 3, reason: 'wrong-password', ip: '203.0.113.9', attemptedAt: AT },
  RepositoryFolderCreated: { folderId: 11, projectId: 7, parentId: null, name: 'Cards', createdAt: AT },
  RepositoryFolderUpdated: { folderId: 11, changes: { name: 'Credit cards', parentId: 10 }, updatedAt: AT },
  RepositoryFolderDeleted: { folderId: 11, deletedAt: AT },
  RepositoryCaseAliasAdded: { caseId: 100, projectId: 7, source: 'JUNIT', alias: 'cd'.repeat(11), aliasTitle: 'accepts a password', identityKey: 'ef'.repeat(11), addedAt: AT },
  CaseQuarantined: { caseId: 100, projectId: 7, reason: 'flaky on Fridays: timing in the payment mock', at: AT },
  CaseReleased: { caseId: 100, projectId: 7, reason: 'mock fixed in #4711', at: AT },
  RecordSigned: {
    signatureId: '3f0c6c1e-8a3b-4b57-9a55-0c2f1d7e9b10', entity: 'testRun', entityId: 42, projectId: 7, meaning: 'approved',
    signerId: 3, signerName: 'Quinn QA', signerEmail: 'quinn@example.com', comment: 'release 4.2 verified',
    contentPosition: '1200', contentHash: 'a'.repeat(64), contentEvents: 31, reauthentication: 'password', signedAt: AT,
  },
  SignatureRevoked: {
    signatureId: '3f0c6c1e-8a3b-4b57-9a55-0c2f1d7e9b10', entity: 'testRun', entityId: 42, projectId: 7, reason: 'signed the wrong run',
    revokerId: 3, revokerName: 'Quinn QA', reauthentication: 'session-login', revokedAt: AT,
  },
  IntegrityAnchored: { position: '1200', hash: 'b'.repeat(64), anchoredAt: AT, copies: ['file'] },
  ImportRequested: {
    jobId: 9, projectId: 7, endpoint: 'test-results', format: 'junit', testRunName: 'Nightly', testRunId: null, stateId: 4, parentFolderId: null,
    configId: null, milestoneId: 2, tagIds: [1, 3], templateId: null, requestedAt: AT,
    branch: 'main', commit: 'abc1234', buildUrl: 'https://ci.example.com/builds/12', ciJobId: '12', attempt: 1, newAttempt: false,
  },
  ImportFileStored: { jobId: 9, index: 0, fileName: 'TEST-login.xml', storedAs: 'ab'.repeat(32), sizeBytes: 1234, sha256: 'ab'.repeat(32) },
  ImportParsed: { jobId: 9, format: 'junit', cases: 120, suites: 4, warnings: [{ file: 'TEST-login.xml', message: 'a testcase without a name was left out' }], warningCount: 1, parsedAt: AT },
  ImportTestRunPlanned: { jobId: 9, testRunId: 42, created: true },
  TestResultsImported: {
    jobId: 9, chunk: 0, projectId: 7, testRunId: 42, caseSource: 'JUNIT', caseTemplateId: 1, caseStateId: 3,
    folders: columns(FOLDER_KEYS, [{ folderId: 11, parentId: null, name: 'com.acme.LoginTest' }]),
    cases: columns(CASE_V2_KEYS, [{ caseId: 100, folderId: 11, title: 'accepts a password', className: 'com.acme.LoginTest', identityKey: 'cd'.repeat(11), scope: 0 }]),
    scopes: ['ef'.repeat(11)],
    runCases: columns(RUN_CASE_KEYS, [{ testRunCaseId: 500, repositoryCaseId: 100, order: 0 }]),
    results: columns(RESULT_V2_KEYS, [{
      resultId: 900, testRunCaseId: 500, statusId: 3, durationMs: 1250, executedAt: AT, message: 'expected 401', failureType: 'AssertionError',
      stackTrace: 'at LoginTest.java:42', systemOut: null, systemErr: null, file: 'LoginTest.java', line: 42, properties: [{ name: 'owner', value: 'a' }], attempt: 1, retried: false,
    }]),
    processedCases: 1, importedAt: AT,
    adopted: columns(ADOPTED_KEYS, [{ caseId: 7, identityKey: '12'.repeat(11), identityScope: null }]),
    shown: columns(SHOWN_KEYS, [{ testRunCaseId: 500, statusId: 3 }]),
    suiteOutputs: columns(SUITE_OUTPUT_KEYS, [{ folderId: 11, suite: 'com.acme.LoginTest', systemOut: 'started', systemErr: null }]),
    suiteProperties: columns(SUITE_PROPERTY_KEYS, [{ name: 'java.version', value: '21' }]),
  },
  ImportCompleted: { jobId: 9, testRunId: 42, counts: { results: 1, newCases: 1, newFolders: 1, newRunCases: 1, passed: 0, failed: 1, error: 0, skipped: 0 }, completedAt: AT },
  ImportFailed: { jobId: 9, code: 'doctype-refused', error: 'A DOCTYPE is not accepted', details: { file: 'evil.xml' }, failedAt: AT },
  FileStored: {
    key: '0f'.repeat(32), projectId: 7, importJobId: 9, name: 'TEST-login.xml', mimeType: 'application/xml', size: 1234, sha256: 'ab'.repeat(32), uploadedById: 3, storedAt: AT,
  },
  FileAttached: { key: '0f'.repeat(32), projectId: 7, attachmentId: 12, attachedAt: AT },
  FileDeleted: { key: '0f'.repeat(32), projectId: 7, reason: 'retention', deletedAt: AT },
  SearchOperationPerformed: {
    operation: 'delete-index', engine: 'opensearch', targets: ['testament_comments_v2'], outcome: 'succeeded', error: null, details: { live: false }, performedAt: AT,
  },
  SearchConnectionChanged: {
    settingsId: 1, source: 'administrator', engine: 'auto', url: 'https://search.example.com:9200', username: 'testament', hasPassword: true, hasApiKey: false,
    sslVerify: true, sslCaPath: null, hasSslCa: true, changed: ['url', 'password', 'sslCa'], changedAt: AT,
  },
  SearchReindexRequested: {
    jobId: 4, mode: 'partial', projectIds: [7], types: ['repository_cases', 'failures'], batchSize: 500, runAt: null, repeatEveryMinutes: null, repeatOf: null, requestedAt: AT,
  },
  SearchReindexStarted: {
    jobId: 4, engine: 'postgres', target: 'testament_', version: 3, replacesVersion: 2, checkpoints: { search: '1200' },
    totals: { repository_cases: 1200, failures: 30 }, startedAt: AT,
  },
  SearchReindexProgressed: { jobId: 4, type: 'repository_cases', afterId: 500, documents: 500, typeDone: false, at: AT },
  SearchReindexPaused: { jobId: 4, pausedAt: AT },
  SearchReindexResumed: { jobId: 4, resumedAt: AT },
  SearchReindexCancelled: { jobId: 4, documents: 500, cancelledAt: AT },
  SearchReindexCompleted: { jobId: 4, documents: { repository_cases: 1200, failures: 30 }, switched: true, droppedVersions: [2], completedAt: AT },
  SearchReindexFailed: { jobId: 4, code: 'search-unavailable', error: 'the search engine does not answer', details: {}, failedAt: AT },
  NotificationCreated: {
    notificationId: 6, userId: 3, kind: 'external-import-completed', title: 'Import 5 completed', body: '120 cases imported',
    link: '/api/admin/imports/external/jobs/5', subject: { type: 'externalImport', id: 5 }, createdAt: AT,
  },
  NotificationRead: { notificationId: 6, userId: 3, readAt: AT },
  ExternalImportUploaded: { jobId: 5, fileName: 'export.zip', fileSize: 1024, sha256: 'a'.repeat(64), storedAs: 'b'.repeat(64), container: 'zip', uploadedAt: AT },
  ExternalImportAnalysisStarted: { jobId: 5, startedAt: AT },
  ExternalImportAnalysed: {
    jobId: 5,
    datasets: [{ name: 'tags', entries: ['tags.json'], disposition: 'import', skipReason: null, rowCount: 1, sampleRows: [{ id: 1, name: 'smoke' }], samplesTruncated: false, warnings: [], errors: [] }],
    ignored: [], warnings: [], errors: [], totals: { datasets: 1, rows: 1, warnings: 0, errors: 0 },
    sources: { ...EMPTY_MAPPINGS, tags: [{ sourceId: '1', name: 'smoke' }] }, suggestions: { ...EMPTY_MAPPINGS, tags: [{ sourceId: '1', action: 'create' }] }, analysedAt: AT,
  },
  ExternalImportConfigured: { jobId: 5, mappings: { ...EMPTY_MAPPINGS, tags: [{ sourceId: '1', action: 'map', targetId: 4 }] }, durationUnit: 'us', reset: false, configuredAt: AT },
  ExternalImportQueued: { jobId: 5, queuedAt: AT },
  ExternalImportStarted: { jobId: 5, plan: [{ dataset: 'tags', rows: 1 }], startedAt: AT },
  ExternalImportChunkPlanned: {
    jobId: 5, dataset: 'repository_cases', entity: 'repositoryCase', chunk: 0, lastRow: 2,
    rows: { sourceId: ['1001', '1002'], id: [40, null], key: ['C1001', null], createdBy: ['11', null], createdAt: [AT, null], skipReason: [null, 'its project is not imported'], mapped: [false, false] },
  },
  ExternalImportRowsWritten: {
    // Each row the data of a RepositoryCaseCreated (the validator checks it against that contract).
    jobId: 5, dataset: 'repository_cases', chunk: 0, entity: 'repositoryCase',
    fields: ['caseId', 'title', 'description', 'className', 'source', 'estimate', 'automated', 'isArchived', 'order', 'projectId', 'folderId', 'templateId',
      'stateId', 'createdById', 'tagIds', 'steps', 'fieldValues', 'createdAt'],
    rows: [[101, 'Log in', null, null, 'MANUAL', null, false, false, 0, 7, null, null, null, 3, [], [{ id: 7, step: 'Open the page', expectedResult: null, order: 0 }], [], AT]],
  },
  ExternalImportChunkImported: { jobId: 5, dataset: 'repository_cases', chunk: 0, lastRow: 2, created: 1, skipped: 1, at: AT },
  ExternalImportCompleted: { jobId: 5, counts: { repository_cases: { created: 1, mapped: 0, skipped: 1 } }, notificationId: 8, completedAt: AT },
  ExternalImportFailed: { jobId: 5, phase: 'importing', code: 'external-import-row-refused', error: 'Row 1 was refused', details: {}, notificationId: null, failedAt: AT },
  ExternalImportCancelRequested: { jobId: 5, requestedAt: AT },
  ExternalImportCancelled: { jobId: 5, cancelledAt: AT },
  ExternalImportRollbackRequested: { jobId: 5, requestedAt: AT },
  ExternalImportRollbackProgressed: { jobId: 5, dataset: 'repository_cases', processed: 2, deleted: 1, at: AT },
  ExternalImportRolledBack: { jobId: 5, deleted: { repository_cases: 1 }, rolledBackAt: AT },
  ExternalImportClosed: { jobId: 5, fileDeleted: true, closedAt: AT },
};

type JsonSchema = { type?: string | string[]; enum?: unknown[]; format?: string; minimum?: number; items?: JsonSchema; properties?: Record<string, JsonSchema> };

/** A valid value for a generated schema (the generic entity events): the first non-null choice of each property. */
function sampleOf(schema: JsonSchema): unknown {
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'integer': return schema.minimum ?? 3;
    case 'number': return 1.5;
    case 'boolean': return true;
    case 'string': return schema.format === 'date-time' ? AT : 'text';
    case 'array': return schema.items ? [sampleOf(schema.items)] : [];
    case 'object': return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sampleOf(v)]));
    default: return { any: 'json value' };
  }
}

interface SchemaFile {
  file: string;
  type: string;
  version: number;
  schema: { $id?: string; title?: string; type?: string; additionalProperties?: unknown; required?: string[]; properties?: Record<string, unknown> };
}

const FILES: SchemaFile[] = fs.readdirSync(EVENTS_SCHEMA_DIR).sort().map((file) => {
  const m = /^([A-Z][A-Za-z]*)\.v([1-9]\d*)\.schema\.json$/.exec(file);
  return {
    file,
    type: m?.[1] ?? '',
    version: m ? Number(m[2]) : 0,
    schema: JSON.parse(fs.readFileSync(path.join(EVENTS_SCHEMA_DIR, file), 'utf8')),
  };
});

const contracts = loadContracts();

const latestSchemaOf = (type: string) => FILES.filter((f) => f.type === type).sort((a, b) => b.version - a.version)[0].schema;
const VALID: Record<string, unknown> = {
  ...Object.fromEntries(EVENT_TYPES.map((type) => [type, sampleOf(latestSchemaOf(type) as JsonSchema)])),
  ...HAND_VALID,
  ProjectCreated: { projectId: 7, name: 'Checkout', createdAt: AT },
};
const V1_PROJECT = { projectId: 7, name: 'Checkout', createdAt: AT };

/** The ContractViolation that `check` throws (fails the test when it throws none). */
function violation(event: { type: string; schemaVersion?: number; data: unknown }): ContractViolation {
  try {
    contracts.check(event);
  } catch (error) {
    expect(error).to.be.instanceOf(ContractViolation);
    return error as ContractViolation;
  }
  return expect.fail(`expected ${event.type} ${JSON.stringify(event.data)} to be refused`);
}
/** What `append` fails with, whether it rejects or throws before returning a promise. */
async function appendError(append: () => Promise<unknown>): Promise<unknown> {
  try {
    await append();
  } catch (error) {
    return error;
  }
  return expect.fail('expected the append to fail');
}
const ajvErrors = (v: ContractViolation) => v.errors as { instancePath: string; keyword: string; params: Record<string, unknown> }[];

describe('event contracts', () => {
  describe('the schema files', () => {
    it('are all named <Type>.v<N>.schema.json', () => {
      expect(FILES.length).to.be.greaterThan(0);
      expect(FILES.filter((f) => f.type === '').map((f) => f.file)).to.deep.equal([]);
    });

    it('describe exactly the event types of contracts/events.ts', () => {
      expect(new Set(EVENT_TYPES).size, 'EVENT_TYPES has no repeats').to.equal(EVENT_TYPES.length);
      expect([...new Set(FILES.map((f) => f.type))].sort()).to.deep.equal([...EVENT_TYPES].sort());
      expect(contracts.knownTypes()).to.deep.equal([...EVENT_TYPES].sort());
    });

    for (const f of FILES) {
      it(`${f.file}: an object without additional properties, titled ${f.type}, with $id ${f.type}.v${f.version}`, () => {
        expect(f.schema.type).to.equal('object');
        expect(f.schema.additionalProperties).to.equal(false);
        expect(f.schema.title).to.equal(f.type);
        expect(f.schema.$id).to.equal(`${f.type}.v${f.version}`);
        // Every property is required: optional data is written as null, never left out.
        expect([...(f.schema.required ?? [])].sort()).to.deep.equal(Object.keys(f.schema.properties ?? {}).sort());
      });
    }
  });

  describe('check', () => {
    for (const type of EVENT_TYPES) {
      describe(type, () => {
        const handWritten = (HAND_WRITTEN_EVENT_TYPES as string[]).includes(type);
        const valid = (type === 'ProjectCreated' ? sampleOf(latestSchemaOf(type) as JsonSchema) : VALID[type]) as Record<string, unknown>;

        it(handWritten ? 'accepts a valid example, at the latest version and at v1 named explicitly' : 'accepts a valid example at the latest version', () => {
          expect(() => contracts.check({ type, data: valid })).not.to.throw();
          if (handWritten) {
            expect(() => contracts.check({ type, schemaVersion: 1, data: V1_EXAMPLES[type] ?? valid })).not.to.throw();
            expect(contracts.latestVersion(type)).to.equal(Math.max(...FILES.filter((f) => f.type === type).map((f) => f.version)));
          }
        });

        for (const field of latestSchemaOf(type).required ?? []) {
          it(`refuses it without ${field}`, () => {
            const { [field]: _removed, ...data } = valid;
            const v = violation({ type, data });
            expect(v.eventType).to.equal(type);
            expect(v.code).to.equal('event-contract-violation');
            expect(ajvErrors(v).map((e) => [e.keyword, e.params.missingProperty])).to.deep.equal([['required', field]]);
          });
        }

        it('refuses an extra field', () => {
          const v = violation({ type, data: { ...valid, unexpected: 1 } });
          expect(ajvErrors(v).map((e) => [e.keyword, e.params.additionalProperty])).to.deep.equal([['additionalProperties', 'unexpected']]);
        });

        for (const [field, schema] of Object.entries(latestSchemaOf(type).properties ?? {})) {
          if (Object.keys(schema as object).length === 0 || '$ref' in (schema as object)) continue; // a JSON value: anything goes
          it(`refuses ${field} of the wrong type`, () => {
            const v = violation({ type, data: { ...valid, [field]: (schema as JsonSchema).type === 'array' ? [{ wrong: field }] : [field] } });
            expect(ajvErrors(v).map((e) => e.instancePath).some((p) => p.startsWith(`/${field}`))).to.equal(true);
            expect(ajvErrors(v).every((e) => e.instancePath.startsWith(`/${field}`))).to.equal(true);
          });
        }
      });
    }

    it('refuses ids that are strings, fractions or below 1', () => {
      for (const projectId of ['7', 7.5, 0]) {
        expect(ajvErrors(violation({ type: 'ProjectCreated', schemaVersion: 1, data: { ...V1_PROJECT, projectId } })).map((e) => e.instancePath))
          .to.deep.equal(['/projectId']);
      }
    });

    it('refuses a time that is not an ISO date-time', () => {
      const v = violation({ type: 'ApiTokenCreated', data: { ...HAND_VALID.ApiTokenCreated, expiresAt: 'next week' } });
      expect(ajvErrors(v).map((e) => [e.instancePath, e.keyword])).to.deep.include(['/expiresAt', 'format']);
    });

    it('ExternalImportRowsWritten: each row must be the data of its entity\'s Created event (a title past its limit refused at /rows/0/title)', () => {
      const valid = HAND_VALID.ExternalImportRowsWritten;
      const long = { ...valid, rows: [valid.rows[0].map((v, i) => (valid.fields[i] === 'title' ? 'x'.repeat(2001) : v))] };
      expect(ajvErrors(violation({ type: 'ExternalImportRowsWritten', data: long })).map((e) => [e.instancePath, e.keyword])).to.deep.include(['/rows/0/title', 'maxLength']);
      const partial = { ...valid, fields: ['caseId', 'title'], rows: [[101, 'Log in']] };
      expect(ajvErrors(violation({ type: 'ExternalImportRowsWritten', data: partial })).map((e) => e.keyword)).to.include('required');
    });

    it('refuses a time in the year 0000 (PostgreSQL reads years 0001 to 9999), takes 0001 and 9999', () => {
      const v = violation({ type: 'ApiTokenCreated', data: { ...HAND_VALID.ApiTokenCreated, expiresAt: '0000-06-01T00:00:00.000Z' } });
      expect(ajvErrors(v).map((e) => [e.instancePath, e.keyword])).to.deep.equal([['/expiresAt', 'pattern']]);
      for (const expiresAt of ['0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z']) {
        expect(() => contracts.check({ type: 'ApiTokenCreated', data: { ...HAND_VALID.ApiTokenCreated, expiresAt } })).not.to.throw();
      }
    });

    it('UserRegistered: v1 events (no roleId) stay valid at v1; v2 requires roleId and v1 refuses it', () => {
      expect(() => contracts.check({ type: 'UserRegistered', schemaVersion: 1, data: V1_USER })).not.to.throw();
      expect(ajvErrors(violation({ type: 'UserRegistered', schemaVersion: 2, data: V1_USER })).map((e) => [e.keyword, e.params.missingProperty]))
        .to.deep.equal([['required', 'roleId']]);
      expect(() => contracts.check({ type: 'UserRegistered', schemaVersion: 2, data: { ...V1_USER, roleId: null } })).not.to.throw();
      expect(ajvErrors(violation({ type: 'UserRegistered', schemaVersion: 1, data: { ...V1_USER, roleId: 4 } })).map((e) => [e.keyword, e.params.additionalProperty]))
        .to.deep.equal([['additionalProperties', 'roleId']]);
    });

    it('refuses a password hash that is not argon2id (a plain password never passes)', () => {
      for (const type of ['UserRegistered', 'UserPasswordChanged'] as const) {
        const v = violation({ type, data: { ...HAND_VALID[type], passwordHash: 'correct horse battery staple' } });
        expect(ajvErrors(v).map((e) => [e.instancePath, e.keyword])).to.deep.equal([['/passwordHash', 'pattern']]);
      }
    });

    it('refuses an access level outside the enum', () => {
      const v = violation({ type: 'UserRegistered', data: { ...HAND_VALID.UserRegistered, access: 'ROOT' } });
      expect(ajvErrors(v).map((e) => [e.instancePath, e.keyword])).to.deep.equal([['/access', 'enum']]);
    });

    for (const type of ['ProjectUpdated', 'RepositoryFolderUpdated', 'RepositoryCaseUpdated', 'TestRunUpdated', 'UserUpdated'] as const) {
      it(`${type}: refuses empty changes and an unknown changed field`, () => {
        const valid = VALID[type] as Record<string, unknown>;
        expect(ajvErrors(violation({ type, data: { ...valid, changes: {} } })).map((e) => [e.instancePath, e.keyword]))
          .to.deep.equal([['/changes', 'minProperties']]);
        expect(ajvErrors(violation({ type, data: { ...valid, changes: { isShiny: true } } })).map((e) => [e.instancePath, e.keyword]))
          .to.deep.equal([['/changes', 'additionalProperties']]);
      });
    }

    it('refuses an unknown event type', () => {
      const v = violation({ type: 'ProjectArchived', data: { projectId: 7 } });
      expect(v.eventType).to.equal('ProjectArchived');
      expect(() => contracts.latestVersion('ProjectArchived')).to.throw(ContractViolation);
    });

    it('refuses a version that has no schema', () => {
      expect(violation({ type: 'ProjectCreated', schemaVersion: 9, data: V1_PROJECT }).eventType).to.equal('ProjectCreated');
    });
  });

  describe('withContracts', () => {
    const project = { type: 'ProjectCreated', schemaVersion: 1, data: V1_PROJECT };
    const invalid = { type: 'ProjectCreated', schemaVersion: 1, data: { ...V1_PROJECT, name: '' } };

    it('refuses an invalid event with ContractViolation and appends nothing', async () => {
      const inner = new MemoryEventStore();
      const store = withContracts(inner, contracts);
      const error = await appendError(() => store.append('project-7', [invalid], { expectedRevision: 'any', metadata: META }));
      expect(error).to.be.instanceOf(ContractViolation);
      expect((error as ContractViolation).eventType).to.equal('ProjectCreated');
      expect(inner.callsOf('append')).to.deep.equal([]);
      expect(await inner.readAll()).to.deep.equal([]);
    });

    it('refuses the whole append when one of its events is invalid', async () => {
      const inner = new MemoryEventStore();
      const store = withContracts(inner, contracts);
      const renamed = { type: 'ProjectUpdated', data: VALID.ProjectUpdated };
      const error = await appendError(() => store.append('project-7', [project, renamed, invalid], { expectedRevision: 'any', metadata: META }));
      expect(error).to.be.instanceOf(ContractViolation);
      expect(inner.callsOf('append')).to.deep.equal([]);
      expect(await inner.readStream('project-7')).to.deep.equal([]);
    });

    it('refuses an event of an unknown type', async () => {
      const inner = new MemoryEventStore();
      const store = withContracts(inner, contracts);
      const error = await appendError(() => store.append('project-7', [{ type: 'ProjectArchived', data: { projectId: 7 } }], { expectedRevision: 'any', metadata: META }));
      expect(error).to.be.instanceOf(ContractViolation);
      expect(inner.calls).to.deep.equal([]);
    });

    it('passes a valid event on, stamped with its schema version', async () => {
      const inner = new MemoryEventStore();
      const result = await withContracts(inner, contracts).append('project-7', [project], { expectedRevision: 'no-stream', metadata: META });
      expect(result).to.deep.equal({ nextRevision: 0n, position: '1' });
      expect(inner.callsOf('append').map((c) => [c.streamId, c.events, c.expectedRevision])).to.deep.equal([
        ['project-7', [{ type: 'ProjectCreated', data: V1_PROJECT, schemaVersion: 1 }], 'no-stream'],
      ]);
    });
  });
});
