import { expect } from 'chai';
import type { Knex } from 'knex';
import type { TestamentEvent } from '../../contracts/events';
import { createKnex } from '../../infra/postgres/database';
import { filesProjection } from '../../projections/files';
import { migrateReadModel } from '../../projections/migrations';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { at, envelopes, twice } from './envelopes';

const KEY = (c: string) => c.repeat(64);
const stored = (key: string, importJobId: number | null, size: number, n: number): TestamentEvent => ({
  type: 'FileStored',
  data: { key, projectId: 7, importJobId, name: `f${n}.txt`, mimeType: 'text/plain', size, sha256: 'ab'.repeat(32), uploadedById: 1, storedAt: at(n) },
});

/** Stored files from their streams: what owns each, who stored it through what, and its deletion; every event delivered twice. */
describe('files projection (stored_files, PostgreSQL)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  before(async () => {
    db = await createMigratedDatabase('files_projection');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('records each file with its owner, attaches and deletes it, and a repeated or older event changes nothing', async () => {
    const events = envelopes([
      [`file-${KEY('a')}`, stored(KEY('a'), null, 10, 1)],
      [`file-${KEY('b')}`, stored(KEY('b'), 9, 20, 2)],
      [`file-${KEY('c')}`, stored(KEY('c'), null, 5_000_000_000, 3)],
      [`file-${KEY('a')}`, { type: 'FileAttached', data: { key: KEY('a'), projectId: 7, attachmentId: 12, attachedAt: at(4) } }],
      [`file-${KEY('b')}`, { type: 'FileDeleted', data: { key: KEY('b'), projectId: 7, reason: 'import-failed', deletedAt: at(5) } }],
    ]);
    await applyBatch(knex, filesProjection, twice(events));
    for (const e of events) await applyBatch(knex, filesProjection, [e]);
    const rows = await knex('stored_files').orderBy('key').select('key', 'owner', 'import_job_id', 'attachment_id', 'size', 'uploaded_by_id', 'via', 'deleted_at', 'delete_reason', 'revision');
    expect(rows.map((r) => [r.key[0], r.owner, r.import_job_id, r.attachment_id, r.size, r.uploaded_by_id, r.via, r.deleted_at?.toISOString() ?? null, r.delete_reason, r.revision])).to.deep.equal([
      ['a', 'attachment', null, 12, '10', 1, 'api', null, null, '1'],
      ['b', 'importJob', 9, null, '20', 1, 'api', at(5), 'import-failed', '1'],
      ['c', 'project', null, null, '5000000000', 1, 'api', null, null, '0'],
    ]);
    // The attachment's event delivered once more, after the deletion of another file: still revision 1, nothing changes.
    await applyBatch(knex, filesProjection, [events[3]]);
    expect(await knex('stored_files').where({ key: KEY('a') }).first('attachment_id', 'revision')).to.deep.equal({ attachment_id: 12, revision: '1' });
  });
});
