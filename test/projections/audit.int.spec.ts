import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import type { TestamentEvent } from '../../contracts/events';
import { createKnex } from '../../infra/postgres/database';
import { auditProjection, changedFieldsOf } from '../../projections/audit';
import { migrateReadModel } from '../../projections/migrations';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { rebuildProjection } from '../../projections/runtime/rebuild';
import { createMigratedDatabase, emptyTables, type TestDatabase } from '../support/database';
import { MemoryEventStore } from '../support/memoryEventStore';
import { at, checkpoints, dateAt, envelopes, twice } from './envelopes';

const SYSTEM: EventMetadata = { actor: { userId: null, via: 'system' }, correlationId: 'bootstrap', causationId: null };
const ADA_SESSION: EventMetadata = { actor: { userId: 1, sessionRef: '0123456789abcdef', via: 'session' }, ip: '10.0.0.5', correlationId: 'req-session', causationId: null };
const GRACE_API: EventMetadata = { actor: { userId: 2, tokenId: 7, via: 'api' }, ip: '10.0.0.6', correlationId: 'req-api', causationId: null };
const GRACE_CLI: EventMetadata = { actor: { userId: 2, tokenId: 7, via: 'cli' }, ip: '203.0.113.9', correlationId: 'req-cli', causationId: null };

const PASSWORD_HASH = '$argon2id$v=19$m=19456,t=2,p=1$YWRh$YWRhYWRh';
const TOKEN_HASH = 'd4'.repeat(32);

const step = (id: number, text: string) => ({ id, step: text, expectedResult: null, order: 0 });

// Ada (an administrator, by session) sets up two projects; Grace (token 7) writes a case with a
// step, a run, a run case and a result through the API and the CLI. The run case's later events
// and the result name no project: theirs is found along testRunCase → testRun → project.
const STORY: [streamId: string, event: TestamentEvent, metadata: EventMetadata][] = [
  ['ids-user', { type: 'IdBlockReserved', data: { category: 'user', from: 1, to: 50 } }, SYSTEM],
  ['user-1', { type: 'UserRegistered', data: { userId: 1, email: 'ada@example.com', name: 'Ada', passwordHash: PASSWORD_HASH, access: 'ADMIN', createdAt: at(1) } }, SYSTEM],
  ['apiToken-7', { type: 'ApiTokenCreated', data: { tokenId: 7, userId: 2, name: 'CI', prefix: 'tst_d4d4d4', tokenHash: TOKEN_HASH, expiresAt: null, createdAt: at(2) } }, ADA_SESSION],
  ['project-1', { type: 'ProjectCreated', data: { projectId: 1, name: 'Checkout', createdAt: at(3) } }, ADA_SESSION],
  ['project-2', { type: 'ProjectCreated', data: { projectId: 2, name: 'Mobile', createdAt: at(4) } }, ADA_SESSION],
  ['repositoryCase-10', {
    type: 'RepositoryCaseCreated',
    data: { caseId: 10, projectId: 1, folderId: null, title: 'Pay', description: null, steps: [step(100, 'Open the cart')], createdAt: at(5) },
  } as TestamentEvent, GRACE_API],
  ['testRun-20', { type: 'TestRunCreated', data: { testRunId: 20, name: 'Nightly', projectId: 1, createdAt: at(6) } } as TestamentEvent, GRACE_API],
  ['testRunCase-30', { type: 'TestRunCaseCreated', data: { testRunCaseId: 30, testRunId: 20, repositoryCaseId: 10, createdAt: at(7) } } as TestamentEvent, GRACE_CLI],
  ['testRun-21', { type: 'TestRunCreated', data: { testRunId: 21, name: 'Smoke', projectId: 2, createdAt: at(8) } } as TestamentEvent, GRACE_API],
  ['testRunCase-30', { type: 'TestRunCaseUpdated', data: { testRunCaseId: 30, changes: { statusId: 3, isCompleted: true }, updatedAt: at(9) } } as TestamentEvent, GRACE_CLI],
  ['testRunResult-40', {
    type: 'TestRunResultCreated',
    data: { testRunResultId: 40, testRunId: 20, testRunCaseId: 30, statusId: 3, stepResults: [{ id: 101, stepId: 100, statusId: 3, notes: null, durationMs: 5 }], createdAt: at(10) },
  } as TestamentEvent, GRACE_CLI],
  ['repositoryCase-10', { type: 'RepositoryCaseUpdated', data: { caseId: 10, changes: { steps: [step(100, 'Open the cart'), step(102, 'Pay')] }, updatedAt: at(11) } } as TestamentEvent, ADA_SESSION],
  ['tag-5', { type: 'TagCreated', data: { tagId: 5, name: 'smoke', createdAt: at(12) } } as TestamentEvent, ADA_SESSION],
  ['testRunCase-30', { type: 'TestRunCaseDeleted', data: { testRunCaseId: 30, deletedAt: at(13) } } as TestamentEvent, ADA_SESSION],
];

function storyEnvelopes(): EventEnvelope[] {
  return envelopes(STORY.map(([streamId, event]) => [streamId, event])).map((e, i) => ({ ...e, metadata: STORY[i][2] }));
}
const EVENTS = storyEnvelopes();
const LAST = EVENTS[EVENTS.length - 1].position;

/** Who, how and where for each kind of caller, as audit columns. */
const who = (m: EventMetadata) => ({
  actor_user_id: m.actor.userId, token_id: m.actor.tokenId ?? null, session_ref: m.actor.sessionRef ?? null, via: m.actor.via,
  ip: m.ip ?? null, correlation_id: m.correlationId,
});

/** [stream, type, entity, entity id, project, changed fields] of each event, in order. */
const EXPECTED: [string, string, string, string, number | null, string[]][] = [
  ['ids-user', 'IdBlockReserved', 'ids', 'user', null, ['category', 'from', 'to']],
  ['user-1', 'UserRegistered', 'user', '1', null, ['access', 'createdAt', 'email', 'name', 'userId']],
  ['apiToken-7', 'ApiTokenCreated', 'apiToken', '7', null, ['createdAt', 'expiresAt', 'name', 'prefix', 'tokenId', 'userId']],
  ['project-1', 'ProjectCreated', 'project', '1', 1, ['createdAt', 'name', 'projectId']],
  ['project-2', 'ProjectCreated', 'project', '2', 2, ['createdAt', 'name', 'projectId']],
  ['repositoryCase-10', 'RepositoryCaseCreated', 'repositoryCase', '10', 1, ['caseId', 'createdAt', 'description', 'folderId', 'projectId', 'steps', 'title']],
  ['testRun-20', 'TestRunCreated', 'testRun', '20', 1, ['createdAt', 'name', 'projectId', 'testRunId']],
  ['testRunCase-30', 'TestRunCaseCreated', 'testRunCase', '30', 1, ['createdAt', 'repositoryCaseId', 'testRunCaseId', 'testRunId']],
  ['testRun-21', 'TestRunCreated', 'testRun', '21', 2, ['createdAt', 'name', 'projectId', 'testRunId']],
  ['testRunCase-30', 'TestRunCaseUpdated', 'testRunCase', '30', 1, ['isCompleted', 'statusId']],
  ['testRunResult-40', 'TestRunResultCreated', 'testRunResult', '40', 1, ['createdAt', 'statusId', 'stepResults', 'testRunCaseId', 'testRunId', 'testRunResultId']],
  ['repositoryCase-10', 'RepositoryCaseUpdated', 'repositoryCase', '10', 1, ['steps']],
  ['tag-5', 'TagCreated', 'tag', '5', null, ['createdAt', 'name', 'tagId']],
  ['testRunCase-30', 'TestRunCaseDeleted', 'testRunCase', '30', 1, ['deletedAt', 'testRunCaseId']],
];

const expectedRows = (events: EventEnvelope[]) => events.map((e, i) => {
  const [streamId, type, entity, entityId, projectId, changed] = EXPECTED[i];
  return {
    position: e.position, event_id: e.id, stream_id: streamId, type, entity, entity_id: entityId, project_id: projectId,
    ...who(e.metadata), causation_id: null, recorded_at: dateAt(59), changed_fields: changed,
  };
});

describe('audit projection (PostgreSQL)', () => {
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createMigratedDatabase('audit');
    knex = createKnex(db.url, 4);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });
  beforeEach(() => emptyTables(knex, [...auditProjection.tables, 'projection_checkpoints']));

  const apply = (events: EventEnvelope[], key?: string) => applyBatch(knex, auditProjection, events, key);
  const rows = () => knex('audit_events').select('*').orderBy('position');
  const projectOf = async (position: string) => (await knex('audit_events').where({ position }).first('project_id')).project_id;

  it('one row per event: who, token, session, via, ip, correlation id, fields, and the project along the project path', async () => {
    expect(await apply(EVENTS)).to.equal(BigInt(LAST));
    expect(await rows()).to.deep.equal(expectedRows(EVENTS));
    expect(await checkpoints(knex)).to.deep.equal([{ name: 'audit', position: LAST }]);
    expect(await knex('audit_pending_projects').count({ n: '*' })).to.deep.equal([{ n: '0' }]);
  });

  it('keeps positions above 2^53 exactly, as decimal strings', async () => {
    await apply(EVENTS);
    const first = await knex('audit_events').orderBy('position').first('position');
    expect(first.position).to.equal('9007199254740993');
  });

  it('gives the same rows one event at a time, and when every event is delivered twice', async () => {
    for (const e of EVENTS) await apply([e]);
    expect(await rows()).to.deep.equal(expectedRows(EVENTS));
    await emptyTables(knex, [...auditProjection.tables, 'projection_checkpoints']);
    await apply(twice(EVENTS));
    await apply(EVENTS);
    expect(await rows()).to.deep.equal(expectedRows(EVENTS));
  });

  it('never lists a credential, not even by name', async () => {
    await apply(EVENTS);
    const all = JSON.stringify(await knex.raw('SELECT * FROM audit_events'));
    for (const secret of [PASSWORD_HASH, TOKEN_HASH, 'passwordHash', 'tokenHash']) expect(all).to.not.include(secret);
    expect(changedFieldsOf({ password: 'x', newPassword: 'y', secret: 1, clientSecret: 2, token: 't', accessToken: 'a', tokenId: 3, name: 'n', hashtags: [] }))
      .to.deep.equal(['hashtags', 'name', 'tokenId']);
    expect(changedFieldsOf({ userId: 1, changes: { passwordHash: 'h', name: 'n' }, updatedAt: at(1) })).to.deep.equal(['name']);
  });

  it('a child applied before its parent (Kafka partitions apart) gets its project once the parent is in', async () => {
    const [project, run, runCase, runCaseUpdated] = envelopes([
      ['project-1', { type: 'ProjectCreated', data: { projectId: 1, name: 'Checkout', createdAt: at(1) } }],
      ['testRun-20', { type: 'TestRunCreated', data: { testRunId: 20, name: 'Nightly', projectId: 1, createdAt: at(2) } } as TestamentEvent],
      ['testRunCase-30', { type: 'TestRunCaseCreated', data: { testRunCaseId: 30, testRunId: 20, repositoryCaseId: 10, createdAt: at(3) } } as TestamentEvent],
      ['testRunCase-30', { type: 'TestRunCaseUpdated', data: { testRunCaseId: 30, changes: { notes: 'flaky' }, updatedAt: at(4) } } as TestamentEvent],
    ]);
    // Partition 0 holds the project and the run case, partition 1 the run, which is behind.
    await apply([project, runCase, runCaseUpdated], 'audit#0');
    expect(await projectOf(runCase.position)).to.equal(null);
    expect(await projectOf(runCaseUpdated.position)).to.equal(null);
    expect(await knex('audit_pending_projects').orderBy('position').pluck('position')).to.deep.equal([runCase.position, runCaseUpdated.position]);

    await apply([run], 'audit#1');
    expect(await projectOf(run.position)).to.equal(1);
    expect(await projectOf(runCase.position)).to.equal(1);
    expect(await projectOf(runCaseUpdated.position)).to.equal(1);
    expect(await knex('audit_pending_projects').count({ n: '*' })).to.deep.equal([{ n: '0' }]);
    expect(await knex('audit_entity_projects').where({ entity: 'testRunCase', entity_id: 30 }).first('project_id', 'parent_entity', 'parent_id'))
      .to.deep.equal({ project_id: 1, parent_entity: 'testRun', parent_id: 20 });
  });

  it('a rebuild gives the same rows, indexes and project map', async () => {
    const store = new MemoryEventStore();
    for (const [streamId, event, metadata] of STORY) await store.append(streamId, [event], { expectedRevision: 'any', metadata });
    const logged = await store.readAll();
    await apply(logged);
    const indexes = async () => (await knex.raw(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY(?) ORDER BY indexname`, [auditProjection.tables])).rows;
    const map = () => knex('audit_entity_projects').select('*').orderBy(['entity', 'entity_id']);
    const before = { rows: await rows(), indexes: await indexes(), map: await map() };
    expect(before.rows.map((r) => r.project_id)).to.deep.equal(EXPECTED.map((e) => e[4]));
    expect(before.indexes.map((i: { indexname: string }) => i.indexname)).to.include.members(['audit_events_project', 'audit_events_entity_id']);

    const result = await rebuildProjection(auditProjection, { store, knex, pageSize: 4 });
    expect(result.events).to.equal(STORY.length);
    expect({ rows: await rows(), indexes: await indexes(), map: await map() }).to.deep.equal(before);
    expect(await checkpoints(knex)).to.deep.equal([{ name: 'audit', position: logged[logged.length - 1].position }]);
  });
});
