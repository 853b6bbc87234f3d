import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { setupPostgresEventStore } from '../../infra/eventstore/postgres';
import { createKnex, createPool } from '../../infra/postgres/database';
import { migrateReadModel } from '../../projections/migrations';

/**
 * Each integration suite gets its own throw-away database on the machine's PostgreSQL
 * (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres).
 */
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/**
 * The embedded server's database (infra/postgres/embedded.ts): ICU's root collation and LC_CTYPE C,
 * under which PostgreSQL's text search parser takes every non-ASCII character for a letter.
 */
export const EMBEDDED_LOCALE = "TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C' LOCALE_PROVIDER icu ICU_LOCALE 'und'";

/** An empty throw-away database (or a copy of `template`, or with the embedded server's locale). */
export async function createTestDatabase(label = 't', template?: string | typeof EMBEDDED_LOCALE): Promise<TestDatabase> {
  const name = `testament_${label}_${randomBytes(4).toString('hex')}`.toLowerCase();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const options = template === EMBEDDED_LOCALE ? ` ${EMBEDDED_LOCALE}` : template ? ` TEMPLATE ${template}` : '';
    await admin.query(`CREATE DATABASE ${name}${options}`);
  } finally {
    await admin.end();
  }
  return {
    url: databaseUrl(name),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        // A pool just ended has sent its clients' goodbyes, but PostgreSQL may not have read them yet:
        // terminated by FORCE then, such a client raises "terminating connection due to administrator
        // command" with nobody listening (an uncaught error in whichever test runs next). Up to 1 s for them to go.
        for (let i = 0; i < 20; i++) {
          const { rows } = await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
          if (rows[0].n === 0) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

const ROOT = path.resolve(__dirname, '..', '..');
/** What the schema of a migrated database is made of: a change to any of these builds a new template. */
const SCHEMA_SOURCES = ['projections/migrations', 'contracts', 'infra/eventstore/postgres.schema.sql'];

function schemaDigest(): string {
  const hash = createHash('sha256');
  const visit = (file: string) => {
    const full = path.join(ROOT, file);
    if (fs.statSync(full).isDirectory()) {
      for (const entry of fs.readdirSync(full).sort()) visit(path.join(file, entry));
      return;
    }
    hash.update(file).update('\0').update(fs.readFileSync(full)).update('\0');
  };
  SCHEMA_SOURCES.forEach(visit);
  return hash.digest('hex').slice(0, 16);
}

let template: Promise<string> | null = null;

/**
 * The template database of this schema: the read model migrated and the event store set up, built
 * once (under an advisory lock, so suites and runs side by side build it once) and kept for the
 * next runs; when a new one is built, templates of other schemas are dropped but the newest of
 * them (another checkout's run may be using it). Migrating takes
 * seconds per database; cloning a template a fraction of one.
 */
function migratedTemplate(): Promise<string> {
  template ??= withAdmin(async (admin) => {
    const name = `testament_template_${schemaDigest()}`;
    await admin.query('SELECT pg_advisory_lock(7362077)');
    try {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (rowCount) return name;
      const building = `${name}_${randomBytes(3).toString('hex')}`;
      await admin.query(`CREATE DATABASE ${building}`);
      const url = databaseUrl(building);
      const knex = createKnex(url);
      const pool = createPool(url);
      try {
        await migrateReadModel(knex);
        await setupPostgresEventStore(pool);
      } finally {
        await knex.destroy();
        await pool.end();
      }
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      // The five newest other templates stay: runs of other checkouts (CI's clean clone, worktrees
      // with migrations of their own) may be cloning them between two of their suites. Older ones go.
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname LIKE 'testament\\_template\\_%' AND datname <> $1 ORDER BY oid DESC OFFSET 5`, [name]);
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => undefined); // in use right now: kept
      return name;
    } finally {
      await admin.query('SELECT pg_advisory_unlock(7362077)');
    }
  });
  template.catch(() => {
    template = null;
  });
  return template;
}

function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A throw-away database with the read model migrated and the event store set up (what the
 * platform does at start), cloned from the schema's template. Suites that test the migrations or
 * the set-up themselves use createTestDatabase.
 */
export async function createMigratedDatabase(label = 't'): Promise<TestDatabase> {
  const source = await migratedTemplate();
  return createTestDatabase(label, source);
}

/**
 * Empties tables between the tests of a file that share one database: one DELETE per table, in one
 * round trip. TRUNCATE gives each table and index a new file, which under the whole suite's load
 * took about 1.5 s for the read model's 95 tables; deleting the few rows a test wrote takes
 * milliseconds. (No foreign keys join the projections' tables, so the order does not matter;
 * sequences go on counting, as they do after a TRUNCATE without RESTART IDENTITY.)
 */
export async function emptyTables(knex: { raw(sql: string): Promise<unknown> }, tables: readonly string[]): Promise<void> {
  await knex.raw(tables.map((table) => `DELETE FROM "${table}";`).join('\n'));
}

/** The same database, its sessions named `applicationName` in pg_stat_activity (so a test can cut just them). */
export function withApplicationName(url: string, applicationName: string): string {
  const u = new URL(url);
  u.searchParams.set('application_name', applicationName);
  return u.toString();
}

/**
 * A database outage as a client sees it: new connections to `db` are refused, and its open
 * sessions are ended — those named `applicationName` only, when given — except those waiting on
 * LISTEN when `keepListeners` (so a subscription's next read, not its listener, is what fails).
 * Answers how many sessions were ended; `restoreConnections` lets connections in again.
 */
export async function cutConnections(db: TestDatabase, applicationName: string | null, opts: { keepListeners?: boolean } = {}): Promise<number> {
  return withAdmin(async (admin) => {
    await admin.query(`ALTER DATABASE ${db.name} WITH ALLOW_CONNECTIONS false`);
    const { rows } = await admin.query(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE datname = $1 AND ($2::text IS NULL OR application_name = $2) AND NOT ($3 AND query ILIKE 'LISTEN %')`,
      [db.name, applicationName, opts.keepListeners ?? false],
    );
    return rows.filter((r) => r.ended).length;
  });
}

export async function restoreConnections(db: TestDatabase): Promise<void> {
  await withAdmin((admin) => admin.query(`ALTER DATABASE ${db.name} WITH ALLOW_CONNECTIONS true`));
}

async function withAdmin<T>(work: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.end();
  }
}
