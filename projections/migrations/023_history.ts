import type { Knex } from 'knex';
import { historyTableOf } from '../../contracts/entities';
import { historyTables, syncHistoryTables } from './catalogueTables';

/**
 * Point-in-time reads (`asOf`, docs/history.md): every catalogue table gets `valid_from` and a
 * history table of the versions its rows had. `history_kept` says from which position on the read
 * model holds them: rows written before this migration have no versions, so `asOf` a point before
 * it is refused until a rebuild of the read model (which empties the table: kept from 0).
 */
export async function up(knex: Knex): Promise<void> {
  await syncHistoryTables(knex);
  await knex.schema.createTable('history_kept', (t) => {
    t.bigInteger('since').notNullable();
  });
  const { rows } = await knex.raw(`SELECT max(position) AS p FROM projection_checkpoints WHERE name = 'readModel' OR name LIKE 'readModel#%'`);
  if (rows[0].p !== null && BigInt(rows[0].p) > 0n) await knex('history_kept').insert({ since: rows[0].p });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('history_kept');
  for (const { table } of historyTables()) {
    await knex.schema.dropTableIfExists(historyTableOf(table));
    if (await knex.schema.hasColumn(table, 'valid_from')) await knex.schema.alterTable(table, (t) => t.dropColumn('valid_from'));
  }
}
