import { randomBytes } from 'node:crypto';
import pg from 'pg';

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

export async function createTestDatabase(label = 't'): Promise<TestDatabase> {
  const name = `testament_${label}_${randomBytes(4).toString('hex')}`.toLowerCase();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
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
