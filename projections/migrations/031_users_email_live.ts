import type { Knex } from 'knex';

/**
 * A user's e-mail is unique among the users not deleted, not among all of them: a rollback of an
 * external import deletes the placeholder users it created and gives their e-mails back
 * (UniqueValueReleased, owner-rolled-back), so the same export imports again and a new user holds
 * the address a deleted one held. The command side decides uniqueness (the claim stream); this
 * index only keeps two live rows from sharing one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE users DROP CONSTRAINT IF EXISTS users_email_unique');
  await knex.raw('CREATE UNIQUE INDEX IF NOT EXISTS users_email_live ON users (email) WHERE NOT is_deleted');
  await knex.raw('CREATE INDEX IF NOT EXISTS users_email ON users (email)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS users_email');
  await knex.raw('DROP INDEX IF EXISTS users_email_live');
  await knex.raw('ALTER TABLE users ADD CONSTRAINT users_email_unique UNIQUE (email)');
}
