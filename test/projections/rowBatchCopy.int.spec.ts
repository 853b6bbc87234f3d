import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { createKnex } from '../../infra/postgres/database';
import { COPY_FROM_ROWS, RowBatch, insertRecords } from '../../projections/runtime/rowBatch';
import { createTestDatabase, type TestDatabase } from '../support/database';

/** Values COPY's text format and array literals must escape: tabs, newlines, backslashes, quotes, braces, commas, NULL inside arrays, non-ASCII. */
const HOSTILE = ['tab\there', 'line\nbreak\r\nwindows', 'back\\slash \\N not null', 'quote " and \'single\'', '{braces}, commas, "quoted, item"', 'NULL', '', 'ünïcödé — 日本語 🙂'];

function event(revision: number, position: number): EventEnvelope {
  return { id: '00000000-0000-4000-8000-000000000000', type: 'Test', schemaVersion: 1, streamId: 's', revision: String(revision), position: String(position), recordedAt: new Date(0).toISOString(), data: {}, metadata: { actor: { userId: null, via: 'system' }, correlationId: 'c', causationId: null } };
}

/**
 * RowBatch writes the same rows through COPY (a rebuild) as through its JSON parameter (live):
 * text, text arrays (with NULL elements) and JSON holding every character COPY and array
 * literals treat specially.
 */
describe('RowBatch: COPY writes hostile values exactly as the JSON path does', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  const types = { id: 'integer', revision: 'bigint', valid_from: 'bigint', title: 'text', tags: 'text[]', doc: 'jsonb' };

  before(async () => {
    db = await createTestDatabase('rowbatch_copy');
    knex = createKnex(db.url, 2);
    for (const table of ['via_copy', 'via_json']) {
      await knex.raw(`CREATE TABLE ${table} (id integer PRIMARY KEY, revision bigint, valid_from bigint, title text, tags text[], doc jsonb)`);
    }
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('round-trips every value through both paths', async () => {
    const rows = HOSTILE.map((title, i) => ({ id: i + 1, title, tags: [title, null, HOSTILE[(i + 1) % HOSTILE.length]], doc: { title, list: HOSTILE, nested: { [title]: title } } }));
    for (const [table, copy] of [['via_copy', true], ['via_json', false]] as const) {
      await knex.transaction(async (trx) => {
        const batch = new RowBatch(table, types, undefined, { copy });
        for (const row of rows) {
          batch.want(row.id);
          batch.apply(row.id, event(0, row.id), () => ({ ...row }));
        }
        await batch.flush(trx);
      });
    }
    const read = async (table: string) => (await knex(table).orderBy('id').select('id', 'title', 'tags', 'doc')) as unknown[];
    const [viaCopy, viaJson] = [await read('via_copy'), await read('via_json')];
    expect(viaCopy).to.deep.equal(viaJson);
    expect(viaCopy).to.deep.equal(rows.map(({ id, title, tags, doc }) => ({ id, title, tags, doc })));
  });

  it('a live batch of COPY_FROM_ROWS rows or more goes through COPY as an upsert: rows already there replaced, the rest inserted, as the JSON path does', async () => {
    const many = COPY_FROM_ROWS + 50;
    const rowsOf = (revision: number) => Array.from({ length: many }, (_, i) => ({
      id: 1000 + i, title: `${HOSTILE[i % HOSTILE.length]} r${revision}`, tags: [HOSTILE[(i + 3) % HOSTILE.length], null], doc: { i, revision, text: HOSTILE[i % HOSTILE.length] },
    }));
    for (const [table, viaCopy] of [['via_copy', true], ['via_json', false]] as const) {
      // Half the rows first, then all of them at a later revision: the first half updated, the second inserted.
      for (const [revision, rows] of [[1, rowsOf(1).slice(0, many / 2)], [2, rowsOf(2)]] as const) {
        await knex.transaction(async (trx) => {
          const batch = new RowBatch(table, types);
          // The JSON path: the same rows in batches below the threshold.
          const parts = viaCopy ? [rows] : Array.from({ length: Math.ceil(rows.length / (COPY_FROM_ROWS - 1)) }, (_, p) => rows.slice(p * (COPY_FROM_ROWS - 1), (p + 1) * (COPY_FROM_ROWS - 1)));
          for (const part of parts) {
            const b = viaCopy ? batch : new RowBatch(table, types);
            for (const row of part) b.apply(row.id, event(revision, revision), () => ({ ...row }));
            await b.flush(trx);
          }
          const staging = (await trx.raw(`SELECT to_regclass('pg_temp.copy_${table}') AS t`)).rows[0].t;
          if (viaCopy && rows.length >= COPY_FROM_ROWS) expect(staging, 'the COPY path taken').to.not.equal(null);
          if (!viaCopy) expect(staging, 'the JSON path taken').to.equal(null);
        });
      }
    }
    const read = async (table: string) => (await knex(table).where('id', '>=', 1000).orderBy('id').select('id', 'revision', 'title', 'tags', 'doc')) as unknown[];
    const [viaCopy, viaJson] = [await read('via_copy'), await read('via_json')];
    expect(viaCopy).to.have.length(many);
    expect(viaCopy).to.deep.equal(viaJson);
    expect(viaCopy).to.deep.equal(rowsOf(2).map(({ id, title, tags, doc }) => ({ id, revision: '2', title, tags, doc })));
  });

  it('insertRecords writes COPY_FROM_ROWS rows or more with COPY, fewer with a JSON parameter: the same rows either way', async () => {
    await knex.raw('CREATE TABLE plain_copy (id integer, title text, tags text[], doc jsonb, n integer[])');
    const plainTypes = { id: 'integer', title: 'text', tags: 'text[]', doc: 'jsonb', n: 'integer[]' };
    const rows = Array.from({ length: COPY_FROM_ROWS }, (_, i) => ({ id: i, title: HOSTILE[i % HOSTILE.length], tags: [HOSTILE[(i + 1) % HOSTILE.length], null], doc: { list: HOSTILE }, n: [i, i + 1] }));
    await knex.transaction((trx) => insertRecords(trx, 'plain_copy', plainTypes, rows));
    await knex.transaction((trx) => insertRecords(trx, 'plain_copy', plainTypes, rows.map((r) => ({ ...r, id: r.id + 10_000 })), Infinity));
    const copied = await knex('plain_copy').where('id', '<', 10_000).orderBy('id').select('*');
    const viaJson = (await knex('plain_copy').where('id', '>=', 10_000).orderBy('id').select('*')).map((r) => ({ ...r, id: r.id - 10_000 }));
    expect(copied).to.deep.equal(viaJson);
    expect(copied).to.deep.equal(rows);
  });
});
