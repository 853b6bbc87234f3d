import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type Catalogue, prismaSchema } from './schema';

/**
 * Prisma Client 7 for the read model, generated on demand from the entity catalogue and loaded at
 * run time (the generated code is never imported statically, so the type check and lint do not
 * depend on it). See README.md beside this file for why this works without Prisma's engine
 * downloads.
 */

const ROOT = path.join(__dirname, '..', '..', '..');
/** Gitignored (under node_modules) and never type-checked or linted; one directory per schema hash. */
export const CLIENT_CACHE = path.join(ROOT, 'node_modules', '.cache', 'testament-prisma');

/**
 * `prisma generate` needs no engine (the client compiles queries in WebAssembly and runs them
 * through the driver adapter), but the CLI still resolves the schema engine first and would
 * download it; an existing executable in PRISMA_SCHEMA_ENGINE_BINARY stops that. It is never run
 * by `generate`. CHECKPOINT_DISABLE stops the CLI's update check (a request to Prisma's servers).
 */
export const GENERATE_ENV = {
  PRISMA_SCHEMA_ENGINE_BINARY: '/bin/true',
  CHECKPOINT_DISABLE: '1',
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
} as const;

/** The part of a generated model delegate the tests and benchmarks call (the generated types are not imported). */
export interface PrismaDelegate {
  findMany(args?: object): Promise<Record<string, unknown>[]>;
  findFirst(args?: object): Promise<Record<string, unknown> | null>;
  findUnique(args: object): Promise<Record<string, unknown> | null>;
  count(args?: object): Promise<number>;
  aggregate(args: object): Promise<Record<string, unknown>>;
  groupBy(args: object): Promise<Record<string, unknown>[]>;
}

export interface PrismaClientLike {
  $connect(): Promise<void>;
  $disconnect(): Promise<void>;
  $on(event: 'query', listener: (e: { query: string; params: string; duration: number }) => void): void;
  [delegate: string]: unknown;
}

export interface GeneratedClient {
  /** The generated schema.prisma (for failure messages and the README's inspection hint). */
  schemaPath: string;
  /** Whether this call ran `prisma generate` (false: taken from the cache). */
  generated: boolean;
  connect(databaseUrl: string, options?: { logQueries?: boolean; poolSize?: number }): PrismaClientLike;
  /** The generated `Prisma` namespace: `DbNull` for JSON null filters. */
  namespace(): { DbNull: unknown };
}

/** Generates the client for `catalogue` unless the cache already holds it, then loads it. */
export function prismaClientFor(catalogue: Catalogue): GeneratedClient {
  // The hash covers the schema and the Prisma version: a new Prisma regenerates.
  const probe = prismaSchema(catalogue, { output: '.' });
  const hash = createHash('sha256').update(probe).update(prismaVersion()).digest('hex').slice(0, 16);
  const dir = path.join(CLIENT_CACHE, hash);
  const entry = path.join(dir, 'client', 'client.ts');
  let generated = false;
  if (!fs.existsSync(entry)) {
    // Generated beside, then renamed: a concurrent run (a test and a benchmark) never sees half a client.
    const staging = `${dir}.${process.pid}.tmp`;
    fs.rmSync(staging, { recursive: true, force: true });
    fs.mkdirSync(staging, { recursive: true });
    fs.writeFileSync(path.join(staging, 'schema.prisma'), prismaSchema(catalogue, { output: './client' }));
    const cli = require.resolve('prisma/build/index.js', { paths: [ROOT] });
    try {
      execFileSync(process.execPath, [cli, 'generate', '--schema', 'schema.prisma'], {
        cwd: staging,
        env: { ...process.env, ...GENERATE_ENV },
        stdio: 'pipe',
      });
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
      throw new Error(`prisma generate failed for ${path.join(staging, 'schema.prisma')}:\n${stdout ?? ''}${stderr ?? ''}`, { cause: error });
    }
    try {
      fs.renameSync(staging, dir);
      generated = true;
    } catch {
      fs.rmSync(staging, { recursive: true, force: true }); // another process was first
    }
  }
  return {
    schemaPath: path.join(dir, 'schema.prisma'),
    generated,
    connect(databaseUrl, { logQueries = false, poolSize = 10 } = {}) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { PrismaClient } = require(entry) as { PrismaClient: new (options: object) => PrismaClientLike };
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { PrismaPg } = require('@prisma/adapter-pg') as typeof import('@prisma/adapter-pg');
      const adapter = new PrismaPg({ connectionString: databaseUrl, max: poolSize });
      return new PrismaClient({ adapter, ...(logQueries && { log: [{ emit: 'event', level: 'query' }] }) });
    },
    namespace() {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      return (require(entry) as { Prisma: { DbNull: unknown } }).Prisma;
    },
  };
}

export function prismaVersion(): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('@prisma/client/package.json') as { version: string }).version;
}
