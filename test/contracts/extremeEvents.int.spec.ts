import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import pino from 'pino';
import type pg from 'pg';
import { chainHash } from '../../contracts/chain';
import { ENTITIES, type EntityDef, type EntityName } from '../../contracts/entities';
import { GENERIC_ENTITIES, eventTypesOf, idKeyOf, isForeignKey, linkField, ownedRelations, streamOf } from '../../contracts/entityEvents';
import type { EventEnvelope } from '../../contracts/envelope';
import { EVENT_TYPES, HAND_WRITTEN_EVENT_TYPES } from '../../contracts/events';
import { INT32_MAX, LIMITS } from '../../contracts/limits';
import { EVENTS_SCHEMA_DIR, loadContracts } from '../../contracts/validator';
import { PostgresEventStore, setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { PostgresSearchEngine } from '../../infra/search/postgres';
import { ALL_PROJECTIONS } from '../../projections';
import { indexEvents } from '../../projections/search/writer';
import type { EventStore } from '../../services/shared/eventStore';
import { DEFAULT_SEARCH_SETTINGS } from '../../services/shared/search';
import { withContracts } from '../../services/shared/validatingEventStore';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { MODES, type Mode, extreme, random } from './extremeEvents';

type Data = Record<string, any>;
const SEED = Number(process.env.EXTREME_SEED ?? 35);
const rng = random(SEED);

const schemaOf = (type: string, contracts: ReturnType<typeof loadContracts>): Data =>
  JSON.parse(fs.readFileSync(path.join(EVENTS_SCHEMA_DIR, `${type}.v${contracts.latestVersion(type)}.schema.json`), 'utf8'));

/**
 * Every valid event applies (issue 35): for every event type, events at the contracts' extremes
 * (extremeEvents.ts: longest strings of random non-ASCII text, longest and deepest lists and JSON
 * values, integers and times at their bounds, optional values absent and present), consistent
 * enough for real work (an update follows its create, references point at rows that exist), are
 * appended through the PostgreSQL event store with the contracts' validator and applied by every
 * projection (ALL_PROJECTIONS: the read model with statistics and history, identity, audit,
 * imports, files, claims, search reindex jobs, notifications, external imports), then indexed by
 * the search indexer into PostgreSQL search; the event store's hash chain holds them all.
 * Slow: appends every event type in 3 modes (~450 events: 200,000-character texts, 10,000-item lists, 16-deep JSON) one at a time, each applied by 9 projections and indexed into search
 */
describe('every valid event applies: events at the contracts\' extremes through every projection (issue 35)', function () {
  this.timeout(600_000);
  let db: TestDatabase;
  let pool: pg.Pool;
  let knex: Knex;
  let store: EventStore;
  let engine: PostgresSearchEngine;
  const contracts = loadContracts();
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const covered = new Set<string>();

  /** Appends, then applies what was appended through every projection and the search indexer. */
  async function apply(streamId: string, events: { type: string; data: Data }[]): Promise<EventEnvelope[]> {
    const after = await store.headPosition();
    await store.append(streamId, events, { expectedRevision: 'any', metadata: { actor: { userId: 1, via: 'api' }, correlationId: 'extreme-events', causationId: null } });
    const appended = await store.readAll({ after });
    for (const projection of ALL_PROJECTIONS) {
      try {
        await knex.transaction((trx) => projection.apply(trx, appended));
      } catch (error) {
        throw new Error(`${projection.name} cannot apply ${appended.map((e) => `${e.type} v${e.schemaVersion}`).join(', ')}: ${(error as Error).message.slice(0, 500)}`, { cause: error });
      }
    }
    const last = appended[appended.length - 1].position;
    try {
      await indexEvents({ engine, knex, logger, bulkSize: 500 }, 1, appended, last, { direct: last });
    } catch (error) {
      throw new Error(`the search indexer cannot index ${appended.map((e) => e.type).join(', ')}: ${(error as Error).message.slice(0, 500)}`, { cause: error });
    }
    const refused = await knex('search_failures').whereNull('resolved_at').select('type', 'doc_id', 'reason');
    expect(refused, 'documents the search engine refused').to.deep.equal([]);
    for (const e of appended) covered.add(e.type);
    return appended;
  }

  // --------------------------------------------------------------------------------- references

  /** The row of each entity every reference points at (id 1 of each table), made in `before`. */
  const WORLD = 1;
  let nextLow = 1000;
  let nextHigh = INT32_MAX;
  /** A new id: near the top of the range for `max`, small otherwise. */
  const freshId = (mode: Mode) => (mode === 'max' ? nextHigh-- : nextLow++);
  /** Ids each generated subject got, per entity (or family of hand-written events) and mode. */
  const subjects = new Map<string, number>();
  const subjectOf = (key: string, mode: Mode) => {
    const k = `${key}/${mode}`;
    if (!subjects.has(k)) subjects.set(k, freshId(mode));
    return subjects.get(k)!;
  };

  /** Points the foreign keys, links and children of a generic entity's values at rows that exist. */
  function fixValues(entity: EntityDef, values: Data, mode: Mode): void {
    for (const [name, relation] of Object.entries(entity.relations)) {
      if (relation.kind === 'one' && relation.scalar && values[relation.scalar] !== undefined && values[relation.scalar] !== null && relation.target !== entity.name) {
        values[relation.scalar] = WORLD;
      }
      if (relation.through && values[linkField(name)] !== undefined && mode !== 'lists') values[linkField(name)] = [WORLD];
    }
    for (const [field, f] of Object.entries(entity.fields)) if (f.fromActor && values[field] !== undefined) values[field] = WORLD;
    for (const [name, relation] of ownedRelations(entity)) {
      const children = values[name] as Data[] | undefined;
      if (!children) continue;
      const child = ENTITIES[relation.target];
      for (const c of children) {
        c.id = freshId(mode);
        fixValues(child, c, mode === 'lists' ? 'min' : mode);
      }
    }
  }

  function genericEvent(entity: EntityDef, kind: 'created' | 'updated' | 'deleted', mode: Mode, subject: number): { type: string; data: Data } {
    const type = eventTypesOf(entity)[kind];
    const schema = schemaOf(type, contracts);
    const data = extreme(schema, schema, mode, rng) as Data;
    data[idKeyOf(entity)] = subject;
    fixValues(entity, kind === 'updated' ? data.changes : data, mode);
    return { type, data };
  }

  /** The generic entities in an order in which each one's references exist before it. */
  function creationOrder(): EntityName[] {
    const order: EntityName[] = [];
    const visit = (name: EntityName, seen: Set<string>) => {
      if (order.includes(name) || seen.has(name)) return;
      seen.add(name);
      for (const relation of Object.values(ENTITIES[name].relations)) {
        if (relation.kind === 'one' && relation.scalar && isForeignKey(ENTITIES[name], relation.scalar) && GENERIC_ENTITIES.includes(relation.target)) visit(relation.target, seen);
      }
      if (GENERIC_ENTITIES.includes(name)) order.push(name);
    };
    for (const name of GENERIC_ENTITIES) visit(name, new Set());
    return order;
  }

  before(async () => {
    db = await createMigratedDatabase('extreme');
    pool = createPool(db.url);
    knex = createKnex(db.url, 4, logger);
    await setupPostgresEventStore(pool);
    store = withContracts(new PostgresEventStore(pool, db.url), contracts);
    engine = new PostgresSearchEngine(knex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: 'x_' });
    await engine.ensureVersion(1);
    await engine.switchAlias(1);
    // The world every reference points at: a user, then each entity's row 1 (a case with a step, a result with its step's result).
    const at = '2026-06-01T12:00:00.000Z';
    await apply('user-1', [{ type: 'UserRegistered', data: { userId: WORLD, email: 'world@example.com', name: 'World', passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA', access: 'ADMIN', roleId: null, createdAt: at } }]);
    for (const name of creationOrder()) {
      const entity = ENTITIES[name];
      const event = genericEvent(entity, 'created', 'min', WORLD);
      for (const [relation, r] of ownedRelations(entity)) {
        const child = ENTITIES[r.target];
        const schema = schemaOf(event.type, contracts).properties[relation].items;
        const item = extreme(schema, schema, 'min', rng) as Data;
        fixValues(child, item, 'min');
        event.data[relation] = [{ ...item, id: WORLD }];
      }
      await apply(streamOf(entity, WORLD), [event]);
      if (name === 'project') {
        await apply('repositoryFolder-1', [{ type: 'RepositoryFolderCreated', data: { folderId: WORLD, projectId: WORLD, parentId: null, name: 'World', createdAt: at } }]);
      }
    }
  });

  after(async () => {
    await knex?.destroy();
    await store?.close();
    await pool?.end();
    await db?.drop();
  });

  // --------------------------------------------------------------------------------- the generic entities

  for (const name of GENERIC_ENTITIES) {
    const entity = ENTITIES[name];
    for (const kind of ['created', 'updated', 'deleted'] as const) {
      it(`${eventTypesOf(entity)[kind]}: ${MODES.join(', ')}`, async () => {
        for (const mode of MODES) {
          const subject = subjectOf(name, mode);
          await apply(streamOf(entity, subject), [genericEvent(entity, kind, mode, subject)]);
        }
      });
    }
  }

  // --------------------------------------------------------------------------------- the hand-written events

  /** The subject of each family of hand-written events: the id its events share. */
  const FAMILY: Record<string, string> = {
    User: 'userId', ApiToken: 'tokenId', RepositoryFolder: 'folderId', Import: 'jobId', TestResultsImported: 'jobId', SearchReindex: 'jobId',
    Notification: 'notificationId', ExternalImport: 'jobId',
  };
  const familyOf = (type: string) => Object.keys(FAMILY).find((prefix) => type.startsWith(prefix)) ?? null;

  /** References by name: the entity whose row 1 a field names. */
  const REFERENCES: Record<string, string> = {
    projectId: 'project', userId: 'user', caseId: 'repositoryCase', repositoryCaseId: 'repositoryCase', testRunId: 'testRun', testRunCaseId: 'testRunCase',
    folderId: 'repositoryFolder', parentId: 'repositoryFolder', parentFolderId: 'repositoryFolder', roleId: 'role', configId: 'configuration',
    milestoneId: 'milestone', stateId: 'workflow', caseStateId: 'workflow', templateId: 'template', caseTemplateId: 'template', attachmentId: 'attachment',
    uploadedById: 'user', signerId: 'user', revokerId: 'user', statusId: 'status', entityId: 'testRun',
  };

  function handWritten(type: string, mode: Mode): { stream: string; data: Data } {
    const schema = schemaOf(type, contracts);
    const data = extreme(schema, schema, mode, rng) as Data;
    const family = familyOf(type);
    for (const key of Object.keys(data)) {
      if (family && key === FAMILY[family]) data[key] = subjectOf(family === 'TestResultsImported' ? 'Import' : family, mode);
      else if (REFERENCES[key] && typeof data[key] === 'number') data[key] = WORLD;
      else if (key === 'tagIds' && mode !== 'lists') data[key] = [WORLD];
    }
    if (type === 'FileStored' && data.importJobId !== null) data.importJobId = subjectOf('Import', mode);
    if (type.startsWith('File')) data.key = createHash('sha256').update(`file ${mode}`).digest('hex');
    if (type === 'RecordSigned' || type === 'SignatureRevoked') data.signatureId = `00000000-0000-4000-8000-${String(subjectOf('signature', mode)).padStart(12, '0')}`;
    if (type.startsWith('UniqueValue')) data.scope = 'tag.name';
    if (type === 'TestResultsImported') consistentChunk(data, mode);
    if (type === 'ExternalImportRowsWritten') consistentRows(data, mode);
    return { stream: streamOfHandWritten(type, data), data };
  }

  /** An import chunk whose columns agree: run cases of its cases, results of its run cases, scopes in range. */
  function consistentChunk(d: Data, mode: Mode): void {
    const fresh = (ids: number[]) => ids.map(() => freshId(mode));
    d.folders.folderId = fresh(d.folders.folderId);
    d.folders.parentId = d.folders.parentId.map((p: number | null, i: number) => (p === null || i === 0 ? null : d.folders.folderId[i - 1]));
    d.cases.caseId = fresh(d.cases.caseId);
    d.cases.folderId = d.cases.folderId.map((f: number | null, i: number) => (f === null ? null : d.folders.folderId[i] ?? WORLD));
    d.cases.scope = d.cases.scope.map((s: number | null, i: number) => (s === null || d.scopes.length === 0 ? null : i % d.scopes.length));
    d.runCases.testRunCaseId = fresh(d.runCases.testRunCaseId);
    d.runCases.repositoryCaseId = d.runCases.repositoryCaseId.map((_: number, i: number) => d.cases.caseId[i] ?? WORLD);
    d.results.resultId = fresh(d.results.resultId);
    d.results.testRunCaseId = d.results.testRunCaseId.map((_: number, i: number) => d.runCases.testRunCaseId[i] ?? WORLD);
    d.results.statusId = d.results.statusId.map(() => WORLD);
    d.results.attempt = d.results.attempt.map((a: number) => Math.max(1, a));
    d.adopted.caseId = d.adopted.caseId.map(() => WORLD);
    d.shown.testRunCaseId = d.shown.testRunCaseId.map((_: number, i: number) => d.runCases.testRunCaseId[i] ?? WORLD);
    d.shown.statusId = d.shown.statusId.map(() => WORLD);
    d.suiteOutputs.folderId = d.suiteOutputs.folderId.map((f: number | null, i: number) => (f === null ? null : d.folders.folderId[i] ?? WORLD));
  }

  /** An external import's bulk rows: repository cases, each row the values of a RepositoryCaseCreated at the mode's extreme. */
  function consistentRows(d: Data, mode: Mode): void {
    const entity = ENTITIES.repositoryCase;
    d.entity = 'repositoryCase';
    const count = mode === 'lists' ? LIMITS.items : mode === 'max' ? 1 : 0;
    const rows = Array.from({ length: count }, () => genericEvent(entity, 'created', mode === 'lists' ? 'min' : mode, freshId(mode)).data);
    d.fields = Object.keys(rows[0] ?? { caseId: 0 });
    d.rows = rows.map((row) => d.fields.map((f: string) => row[f]));
  }

  function streamOfHandWritten(type: string, d: Data): string {
    if (type.startsWith('User')) return `user-${d.userId}`;
    if (type.startsWith('ApiToken')) return `apiToken-${d.tokenId}`;
    if (type === 'LoginFailed') return `loginAttempts-${createHash('sha256').update(d.email).digest('hex').slice(0, 32)}`;
    if (type.startsWith('RepositoryFolder')) return `repositoryFolder-${d.folderId}`;
    if (type === 'RepositoryCaseAliasAdded') return `caseIdentity-${d.caseId}`;
    if (type.startsWith('Case')) return `caseQuarantine-${d.caseId}`;
    if (type === 'RecordSigned' || type === 'SignatureRevoked') return `signatures-${d.entity}-${d.entityId}`;
    if (type === 'IntegrityAnchored') return 'integrityAnchors';
    if (type.startsWith('Import') || type === 'TestResultsImported') return `importJob-${d.jobId}`;
    if (type.startsWith('File')) return `file-${d.key}`;
    if (type === 'SearchOperationPerformed' || type === 'SearchConnectionChanged') return 'searchAdministration';
    if (type === 'ParkedEventsRetried') return 'projectionAdministration';
    if (type.startsWith('SearchReindex')) return `searchReindex-${d.jobId}`;
    if (type.startsWith('Notification')) return `notification-${d.notificationId}`;
    if (type.startsWith('ExternalImport')) return `externalImport-${d.jobId}`;
    if (type === 'IdBlockReserved') return `ids-${createHash('sha256').update(d.category).digest('hex').slice(0, 16)}`;
    if (type.startsWith('UniqueValue')) return `unique-${d.scope}-${createHash('sha256').update(d.value).digest('hex')}`;
    if (type === 'DefaultsPlanned') return 'defaults-v1';
    throw new Error(`no stream for ${type}`);
  }

  for (const type of HAND_WRITTEN_EVENT_TYPES) {
    it(`${type}: ${MODES.join(', ')}`, async () => {
      for (const mode of MODES) {
        const { stream, data } = handWritten(type, mode);
        if (type === 'RecordSigned' || type === 'SignatureRevoked') data.entityId = WORLD;
        await apply(stream, [{ type, data }]);
      }
    });
  }

  // --------------------------------------------------------------------------------- coverage and the chain

  it('covered every event type, and the hash chain holds every event (hashed outside the database too)', async () => {
    expect(EVENT_TYPES.filter((t) => !covered.has(t))).to.deep.equal([]);
    const report = await store.verifyChain!();
    expect(report, JSON.stringify(report)).to.deep.include({ intact: true });
    const head = await store.headPosition();
    const positions = Array.from({ length: Number(head) }, (_, i) => String(i + 1));
    for (let i = 0; i < positions.length; i += 100) {
      for (const e of await store.readChained!({ positions: positions.slice(i, i + 100) })) {
        expect(chainHash(e.previousHash, e), `event ${e.position} (${e.type}) hashed outside the database`).to.equal(e.hash);
      }
    }
  });
});
