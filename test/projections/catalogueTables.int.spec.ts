import { expect } from 'chai';
import type { Knex } from 'knex';
import { ENTITIES, historyTableOf } from '../../contracts/entities';
import { createKnex } from '../../infra/postgres/database';
import { syncCatalogueTables, syncHistoryTables } from '../../projections/migrations/catalogueTables';
import { createMigratedDatabase, type TestDatabase } from '../support/database';

const columns = async (knex: Knex, table: string): Promise<string[]> =>
  (await knex('information_schema.columns').where({ table_schema: knex.raw('current_schema()'), table_name: table }).pluck('column_name')).sort();

describe('catalogue tables: a migration after a catalogue change adds what is missing', function () {
  this.timeout(120_000);
  let db: TestDatabase;
  let knex: Knex;
  before(async () => {
    db = await createMigratedDatabase('catalogue');
    knex = createKnex(db.url, 2);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it('adds a field column missing from a table and its history table, and valid_from where missing; changes nothing else', async () => {
    const table = ENTITIES.repositoryCase.table;
    const history = historyTableOf(table);
    const [tableBefore, historyBefore] = [await columns(knex, table), await columns(knex, history)];
    await knex.schema.alterTable(table, (t) => t.dropColumn('estimate'));
    await knex.schema.alterTable(history, (t) => t.dropColumn('estimate'));
    await knex.schema.alterTable(ENTITIES.tag.table, (t) => t.dropColumn('valid_from'));
    const otherTables = await columns(knex, ENTITIES.testRun.table);

    await syncCatalogueTables(knex);
    await syncHistoryTables(knex);

    expect(await columns(knex, table)).to.deep.equal(tableBefore);
    expect(await columns(knex, history)).to.deep.equal(historyBefore);
    expect(await columns(knex, ENTITIES.tag.table)).to.include('valid_from');
    expect(await columns(knex, ENTITIES.testRun.table)).to.deep.equal(otherTables);
  });

  it('creates a table that is missing, with every field of its entity', async () => {
    const entity = ENTITIES.milestoneType;
    await knex.raw(`DROP TABLE "${entity.table}" CASCADE`);
    await syncCatalogueTables(knex);
    expect(await columns(knex, entity.table)).to.include.members(Object.values(entity.fields).map((f) => f.column));
  });
});
