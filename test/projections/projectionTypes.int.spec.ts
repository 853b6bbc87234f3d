// A projection that declares the event types it acts on (Projection.types) is given only those:
// a batch of other types moves its checkpoint with one statement, no transaction
// (projections/runtime/applyBatch.ts). That is safe only if the declaration is true: every type
// it names exists, and `apply` changes nothing for any other type (even the first event of a
// stream, which the claims projection acts on whatever its type, and so declares none).
import { expect } from 'chai';
import type { Knex } from 'knex';
import type pg from 'pg';
import type { EventEnvelope } from '../../contracts/envelope';
import { loadContracts } from '../../contracts/validator';
import { createKnex } from '../../infra/postgres/database';
import { listenOn } from '../../infra/postgres/listen';
import { ALL_PROJECTIONS } from '../../projections';
import { filesProjection } from '../../projections/files';
import { migrateReadModel } from '../../projections/migrations';
import { applyBatch } from '../../projections/runtime/applyBatch';
import { CHECKPOINT_CHANNEL, passCheckpoint } from '../../projections/runtime/checkpoints';
import { ParkedStreams } from '../../projections/runtime/parking';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { at, envelopes } from './envelopes';

const EVENT_TYPES = loadContracts().knownTypes();

const KEY = 'f'.repeat(64);
const fileStored = (n: number) => ({
  type: 'FileStored' as const,
  data: { key: KEY, projectId: 7, importJobId: null, name: `f${n}.txt`, mimeType: 'text/plain', size: 10, sha256: 'ab'.repeat(32), uploadedById: 1, storedAt: at(n) },
});
const folderCreated = (id: number) => ({ type: 'RepositoryFolderCreated' as const, data: { folderId: id, projectId: 7, parentId: null, name: `F${id}`, createdAt: at(1) } });

describe('projections: the event types a projection acts on', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  before(async () => {
    db = await createMigratedDatabase('projection_types');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const typed = ALL_PROJECTIONS.filter((p) => p.types);
  it('most projections declare them; the read model, the audit trail and the claims act on every event', () => {
    expect(EVENT_TYPES.length).to.be.greaterThan(100);
    expect(typed.map((p) => p.name).sort()).to.deep.equal(['externalImports', 'files', 'identity', 'imports', 'notifications', 'searchReindex']);
  });

  for (const projection of typed) {
    it(`${projection.name}: names only event types the contracts have`, () => {
      expect([...projection.types!].filter((t) => !EVENT_TYPES.includes(t)), 'unknown types').to.deep.equal([]);
    });

    it(`${projection.name}: changes nothing for an event of any other type, even a stream's first`, async () => {
      const others = EVENT_TYPES.filter((t) => !projection.types!.has(t));
      const events: EventEnvelope[] = others.map((type, i) => ({
        id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, type, schemaVersion: 1, streamId: `other-${i}`, revision: '0', position: String(1000 + i),
        recordedAt: at(1), data: {}, metadata: { actor: { userId: 1, via: 'api' }, correlationId: 'c', causationId: null },
      }));
      const counts = async (q: Knex | Knex.Transaction) => Promise.all(projection.tables.map(async (t) => Number((await q(t).count<{ count: string }[]>('* as count'))[0].count)));
      const before = await counts(knex);
      const statements: string[] = [];
      const count = (q: { sql: string }) => statements.push(q.sql);
      await knex.transaction(async (trx) => {
        knex.on('query', count);
        try {
          await projection.apply(trx, events);
        } finally {
          knex.off('query', count);
        }
        // Not a statement: a projection that ignores an event does not look at the database for it.
        expect(statements, 'statements').to.deep.equal([]);
        expect(await counts(trx), 'rows of its tables').to.deep.equal(before);
        await trx.rollback();
      }).catch((error) => {
        if (error !== undefined) throw error;
      });
    });
  }

  describe('applyBatch', () => {
    let listener: pg.Client;
    const notified: string[] = [];
    before(async () => {
      listener = await listenOn(db.url, CHECKPOINT_CHANNEL, { onNotification: (p) => notified.push(p), onLost: () => undefined });
    });
    after(async () => listener?.end());
    const checkpoint = async (name: string) => (await knex('projection_checkpoints').where({ name }).first('position'))?.position as string | undefined;

    it('passes a batch of other types with one statement: the checkpoint made, moved and told, never moved back', async () => {
      const key = 'files#types';
      const statements: string[] = [];
      const count = (q: { sql: string }) => statements.push(q.sql);
      knex.on('query', count);
      try {
        const others = envelopes([['folder-1', folderCreated(1)], ['folder-2', folderCreated(2)]], 100n);
        expect(await applyBatch(knex, filesProjection, others, key)).to.equal(102n);
        expect(statements, 'statements').to.have.length(1);
        expect(await checkpoint(key)).to.equal('102');
        expect(await applyBatch(knex, filesProjection, envelopes([['folder-3', folderCreated(3)]], 50n), key)).to.equal(50n);
        expect(await checkpoint(key), 'never backwards').to.equal('102');
      } finally {
        knex.off('query', count);
      }
      await waitFor(() => notified.includes(`${key}:102`));
      expect(notified.filter((n) => n.startsWith(`${key}:`))).to.deep.equal([`${key}:102`]);
    });

    it('passes asked for at once are written with one statement (a group commit), each told, none moved back; a write that fails fails its passes alone', async () => {
      const [a, b, c] = ['files#group', 'identity#group', 'imports#group'];
      expect(await passCheckpoint(knex, a, 500n)).to.equal(500n);
      const statements: string[] = [];
      const count = (q: { sql: string }) => statements.push(q.sql);
      knex.on('query', count);
      try {
        const passed = await Promise.all([passCheckpoint(knex, a, 400n), passCheckpoint(knex, b, 410n), passCheckpoint(knex, c, 420n), passCheckpoint(knex, c, 415n)]);
        expect(passed).to.deep.equal([400n, 410n, 420n, 415n]);
        expect(statements, 'statements').to.have.length(1);
      } finally {
        knex.off('query', count);
      }
      expect([await checkpoint(a), await checkpoint(b), await checkpoint(c)], 'never backwards').to.deep.equal(['500', '410', '420']);
      await waitFor(() => notified.includes(`${b}:410`) && notified.includes(`${c}:420`));
      expect(notified.filter((n) => [a, b, c].some((k) => n.startsWith(`${k}:`)))).to.have.members([`${a}:500`, `${b}:410`, `${c}:420`]);

      await knex.raw('ALTER TABLE projection_checkpoints RENAME TO projection_checkpoints_away');
      let failed: PromiseSettledResult<bigint>[];
      try {
        failed = await Promise.allSettled([passCheckpoint(knex, b, 600n), passCheckpoint(knex, c, 610n)]);
      } finally {
        await knex.raw('ALTER TABLE projection_checkpoints_away RENAME TO projection_checkpoints');
      }
      expect(failed.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
      expect(await passCheckpoint(knex, b, 620n), 'the next write goes on').to.equal(620n);
      expect([await checkpoint(b), await checkpoint(c)]).to.deep.equal(['620', '420']);
    });

    it('applies what it acts on in a mixed batch and moves the checkpoint past the others after it; never holds another type behind a parked event', async () => {
      const key = 'files#mixed';
      const events = envelopes([['folder-9', folderCreated(9)], [`file-${KEY}`, fileStored(1)], ['folder-10', folderCreated(10)]], 200n);
      const streams = new ParkedStreams(filesProjection.name);
      expect(await applyBatch(knex, filesProjection, events, key, { streams })).to.equal(204n);
      expect(await checkpoint(key)).to.equal('204');
      expect(await knex('stored_files').where({ key: KEY }).first('name')).to.deep.equal({ name: 'f1.txt' });

      // folder-11 is parked for this projection: its folder event is not the files projection's business, so not held.
      streams.add(key, 'folder-11', '1');
      const later = envelopes([['folder-11', folderCreated(11)]], 300n);
      expect(await applyBatch(knex, filesProjection, later, key, { streams })).to.equal(300n);
      expect(await knex('parked_events').where({ projection: 'files' }).count<{ count: string }[]>('* as count')).to.deep.equal([{ count: '0' }]);
      // One it acts on is held, as before.
      streams.add(key, `file-${KEY}`, '202');
      const attached = envelopes([[`file-${KEY}`, { type: 'FileAttached', data: { key: KEY, projectId: 7, attachmentId: 12, attachedAt: at(4) } }]], 400n);
      expect(await applyBatch(knex, filesProjection, attached, key, { streams })).to.equal(400n);
      expect(await knex('parked_events').where({ projection: 'files' }).select('kind', 'stream_id')).to.deep.equal([{ kind: 'held', stream_id: `file-${KEY}` }]);
    });
  });
});

async function waitFor(condition: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('not within 5 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}
