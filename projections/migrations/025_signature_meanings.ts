import type { Knex } from 'knex';
import { syncCatalogueTables } from './catalogueTables';

/** Signature meanings (the catalogue's signatureMeaning, with the roles that may sign with each). */
export async function up(knex: Knex): Promise<void> {
  await syncCatalogueTables(knex);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('signature_meaning_roles');
  await knex.schema.dropTableIfExists('signature_meanings');
}
