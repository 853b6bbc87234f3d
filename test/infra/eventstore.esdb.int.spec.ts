import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { chainHash } from '../../contracts/chain';
import { ChainLedger, LedgerChainedStore, startChainFollower } from '../../infra/eventstore/chainLedger';
import { connectEventStoreDb } from '../../infra/eventstore/esdb';
import { createTestDatabase } from '../support/database';
import { eventStoreContract, meta } from './eventStoreContract';

/*
 * The event store contract against a real EventStoreDB: the server at EVENTSTORE_URL
 * (e.g. esdb://127.0.0.1:2113?tls=false), else a container started through testcontainers when a
 * Docker engine answers, else the suite is skipped with one line saying so. EventStoreDB cannot be
 * obtained on CI machines, so it skips even with REQUIRE_SERVICES=1.
 *
 * An EventStoreDB database cannot be emptied between tests. The contract needs no empty store
 * (unique stream names; the global-log tests start from headPosition()), but its two subscription
 * tests count every event written after their start: nothing else may write to the server while
 * the suite runs.
 */

const IMAGE = 'eventstore/eventstore:24.10';
const PORT = 2113;
const DOCKER_PROBE_MS = 5000;

interface Server {
  url: string;
  stop(): Promise<void>;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0].slice(0, 160);
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The server to test against, or the reason there is none. */
async function provideServer(): Promise<Server | { skip: string }> {
  if (process.env.EVENTSTORE_URL) return { url: process.env.EVENTSTORE_URL, stop: async () => undefined };
  const skip = (why: string) => ({ skip: `EVENTSTORE_URL is not set and no Docker engine is available (${why})` });
  let testcontainers: typeof import('testcontainers');
  try {
    // Loaded here, not at the top, so that a package that cannot load only skips this suite.
    testcontainers = await import('testcontainers');
  } catch (error) {
    return skip(`testcontainers does not load on Node ${process.version}: ${firstLine(error)}`);
  }
  try {
    await within(testcontainers.getContainerRuntimeClient(), DOCKER_PROBE_MS);
  } catch (error) {
    return skip(firstLine(error));
  }
  const { GenericContainer, Wait } = testcontainers;
  const container = await new GenericContainer(IMAGE)
    .withEnvironment({
      EVENTSTORE_INSECURE: 'true',
      EVENTSTORE_RUN_PROJECTIONS: 'None',
      EVENTSTORE_MEM_DB: 'true',
    })
    .withExposedPorts(PORT)
    .withWaitStrategy(Wait.forHttp('/health/live', PORT).forStatusCode(204))
    .withStartupTimeout(120_000)
    .start();
  return {
    url: `esdb://${container.getHost()}:${container.getMappedPort(PORT)}?tls=false`,
    stop: async () => {
      await container.stop();
    },
  };
}

describe('EventStoreDB event store', function () {
  let server: Server | null = null;

  before(async function () {
    this.timeout(300_000); // a first run pulls the image
    const provided = await provideServer();
    if ('skip' in provided) {
      console.log(`  SKIPPED EventStoreDB contract: ${provided.skip}`);
      this.skip();
      return;
    }
    server = provided;
  });

  after(async function () {
    this.timeout(60_000);
    await server?.stop();
  });

  describe('contract', () => {
    eventStoreContract(async () => {
      if (!server) throw new Error('no EventStoreDB server');
      // The database cannot be dropped: each test gets its own client, and nothing to dispose.
      return { store: await connectEventStoreDb(server.url), dispose: async () => undefined };
    });
  });

  // The chain kept by a projection into PostgreSQL (infra/eventstore/chainLedger.ts; its tampering
  // cases are in test/infra/chainLedger.int.spec.ts): over the server's real positions and times.
  it('a chain follower chains the log, and verification recomputes it from the events read back', async function () {
    this.timeout(120_000);
    if (!server) throw new Error('no EventStoreDB server');
    const db = await createTestDatabase('esdbchain');
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    const base = await connectEventStoreDb(server.url);
    try {
      const ledger = new ChainLedger(pool);
      await ledger.setup();
      const store = new LedgerChainedStore(base, ledger);
      const stream = `chained-${randomUUID()}`;
      await base.append(stream, [{ type: 'Made', data: { title: 'ü 漢字', n: 1.5 } }, { type: 'Changed', data: { nested: { list: [1, null] } } }], { expectedRevision: 'no-stream', metadata: meta });
      const follower = startChainFollower({ store: base, ledger, logger: pino({ level: 'silent' }), pollMs: 50 });
      try {
        expect(await follower.catchUp()).to.equal(await base.headPosition());
      } finally {
        await follower.stop();
      }
      const report = await store.verifyChain();
      expect(report).to.include({ intact: true });
      expect(report.checked).to.be.greaterThan(1);
      const events = await store.readChained({ streams: [stream] });
      expect(events).to.have.length(2);
      for (const e of events) expect(chainHash(e.previousHash, e)).to.equal(e.hash);
      expect(events[1].previousHash).to.equal(events[0].hash);
    } finally {
      await base.close();
      await pool.end();
      await db.drop();
    }
  });
});
