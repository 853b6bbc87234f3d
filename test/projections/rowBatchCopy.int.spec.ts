import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { createKnex } from '../../infra/postgres/database';
import { RowBatch } from '../../projections/runtime/rowBatch';
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
});
