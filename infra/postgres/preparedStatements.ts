import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/** The most statement names a pool hands out; every connection may come to hold each of them. */
export const DEFAULT_PREPARED_STATEMENTS = 200;
/** A statement gets a name on its second run: one-off texts stay unnamed. */
const PREPARE_ON_RUN = 2;
/** Texts seen once are remembered up to this many, then forgotten all at once. */
const SEEN_LIMIT = 5_000;

/**
 * Names for the statements a process runs again and again (the same SQL text, other values), so
 * that pg sends them as named prepared statements: PostgreSQL parses each once per connection and,
 * after a few runs, can keep a generic plan instead of planning it on every call (what PgJDBC's
 * prepareThreshold and Npgsql's auto-prepare do). Bounded: at most `max` names per process, each a
 * hash of its text (so the same text always has the same name, on every connection); texts beyond
 * that run unnamed, as before. `max` 0 names nothing (for a pooler that cannot keep prepared
 * statements, such as PgBouncer in transaction mode before 1.21).
 */
export class PreparedStatements {
  private readonly seen = new Map<string, number>();
  private readonly names = new Map<string, string>();

  constructor(readonly max: number = DEFAULT_PREPARED_STATEMENTS) {}

  /** The name to run `sql` under, or undefined to run it unnamed. */
  nameFor(sql: string): string | undefined {
    const known = this.names.get(sql);
    if (known !== undefined || this.names.size >= this.max) return known;
    const runs = (this.seen.get(sql) ?? 0) + 1;
    if (runs < PREPARE_ON_RUN) {
      if (this.seen.size >= SEEN_LIMIT) this.seen.clear();
      this.seen.set(sql, runs);
      return undefined;
    }
    this.seen.delete(sql);
    const name = `tq_${createHash('sha256').update(sql).digest('base64url').slice(0, 40)}`;
    this.names.set(sql, name);
    return name;
  }

  get size(): number {
    return this.names.size;
  }
}

const byClient = new WeakMap<object, PreparedStatements>();

/** Sets how many statement names queries on `knex` get (createKnex does, from PG_PREPARED_STATEMENTS). */
export function usePreparedStatements(knex: Knex, max: number): void {
  byClient.set(knex.client as object, new PreparedStatements(max));
}

/** The statement names of `knex`'s pool (the default limit unless usePreparedStatements set one). */
export function preparedStatementsOf(knex: Pick<Knex, 'client'>): PreparedStatements {
  let statements = byClient.get(knex.client as object);
  if (!statements) byClient.set(knex.client as object, (statements = new PreparedStatements()));
  return statements;
}
