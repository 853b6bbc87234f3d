import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import { createKnex } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';
import { readModelProjection } from '../../projections/readModel';
import type { Projection } from '../../projections/runtime/projection';
import { rebuildProjection } from '../../projections/runtime/rebuild';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { MemoryEventStore } from '../support/memoryEventStore';
import { at } from './envelopes';

const META: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: 'c', causationId: null };

describe('rebuildProjection (PostgreSQL)', () => {
  let db: TestDatabase;
  let knex: Knex;
  const store = new MemoryEventStore();
  const indexes = async () => (await knex.raw(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY(?) ORDER BY indexname`, [readModelProjection.tables])).rows;
  const cases = () => knex('repository_cases').orderBy('id').select('id', 'title', 'current_version');

  before(async () => {
    db = await createMigratedDatabase('rebuild');
    knex = createKnex(db.url, 2);
    await migrateReadModel(knex);
    await store.append('project-1', [{ type: 'ProjectCreated', data: { projectId: 1, name: 'Shop', createdAt: at(1) } }], { expectedRevision: 'no-stream', metadata: META });
    for (let id = 1; id <= 30; id++) {
      await store.append(`repositoryCase-${id}`, [
        { type: 'RepositoryCaseCreated', data: { caseId: id, projectId: 1, folderId: null, title: `Case ${id}`, description: null, createdAt: at(2) } },
        { type: 'RepositoryCaseUpdated', data: { caseId: id, changes: { title: `Case ${id}b` }, updatedAt: at(3) } },
      ], { expectedRevision: 'no-stream', metadata: META });
    }
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('fills the tables again and builds every secondary index again', async () => {
    const before = await indexes();
    expect(before.map((i: { indexname: string }) => i.indexname)).to.include('repository_case_versions_case_version');
    const result = await rebuildProjection(readModelProjection, { store, knex, pageSize: 7 });
    expect(result.events).to.equal(61);
    expect(await indexes()).to.deep.equal(before);
    expect(await cases()).to.have.length(30);
    expect((await cases())[0]).to.deep.equal({ id: 1, title: 'Case 1b', current_version: 2 });
    expect(Number((await knex('repository_case_versions').count({ n: '*' }))[0].n)).to.equal(60);
    // Twice gives the same: the version history is not doubled, the identity restarts.
    await rebuildProjection(readModelProjection, { store, knex, pageSize: 50 });
    expect(Number((await knex('repository_case_versions').count({ n: '*' }))[0].n)).to.equal(60);
    expect((await knex('repository_case_versions').min({ id: 'id' }))[0].id).to.equal(1);
  });

  it('a rebuild that fails half-way (the database out of disk: not an event\'s fault, nothing parked) leaves the rows and the indexes as they were', async () => {
    const before = { indexes: await indexes(), cases: await cases() };
    // Through the read model's rebuild session (Projection.rebuilding), as a real rebuild applies its pages.
    const failing: Projection = { ...readModelProjection, rebuilding: () => {
      const session = readModelProjection.rebuilding!();
      return { ...session, apply: async (trx: Knex.Transaction, events: EventEnvelope[]) => {
        await session.apply(trx, events);
        if (events.some((e) => e.streamId === 'repositoryCase-20')) throw Object.assign(new Error('disk full'), { code: '53100' });
      } };
    } };
    const error = await rebuildProjection(failing, { store, knex, pageSize: 5 }).catch((e: Error) => e);
    expect((error as Error).message).to.equal('disk full');
    expect(await indexes()).to.deep.equal(before.indexes);
    expect(await cases()).to.deep.equal(before.cases);
    expect(await knex('parked_events').count({ n: '*' }).first()).to.deep.equal({ n: '0' });
  });
});
