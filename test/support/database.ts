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
