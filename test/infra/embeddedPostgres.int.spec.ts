import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import pino from 'pino';
import { errorFields } from '../../infra/logger';
import { type EmbeddedServer, startEmbeddedPostgres } from '../../infra/postgres/embedded';

const PASSWORD = 'embedded-test-password';

/** A logger whose lines the test reads. */
function recordingLogger() {
  const lines: { level: number; msg: string; [key: string]: unknown }[] = [];
  return { lines, logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) }) };
}

/** Something else listening on 127.0.0.1 (as another program would), on `port` or a port of the system's choice. */
function occupy(port = 0): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}
const portOf = (server: net.Server) => (server.address() as net.AddressInfo).port;
const closed = (server: net.Server) => new Promise((resolve) => server.close(resolve));

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

const ORDER = "SELECT x FROM (VALUES ('Zeta'), ('alpha'), ('Beta'), ('beta'), ('Äpfel'), ('apple')) v(x) ORDER BY x";

describe('embedded PostgreSQL', function () {
  this.timeout(180_000);
  const dataDirs: string[] = [];
  const running: EmbeddedServer[] = [];
  // Under /tmp: as root, the embedded server runs as `postgres`, who must reach the directory.
  const newDataDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-embedded-pg-'));
    dataDirs.push(dir);
    return dir;
  };
  const start = async (dataDir: string, port: number | null, logger = pino({ level: 'silent' })) => {
    const server = await startEmbeddedPostgres({ dataDir, port, password: PASSWORD, logger });
    running.push(server);
    return server;
  };
  const stop = async (server: EmbeddedServer) => {
    await server.stop();
    running.splice(running.indexOf(server), 1);
  };

  after(async () => {
    for (const server of running) await server.stop().catch(() => undefined);
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('two instances with no port configured run at once, each on a port of its own that it keeps across a restart', async () => {
    const [a, b] = [newDataDir(), newDataDir()];
    const [first, second] = await Promise.all([start(a, null), start(b, null)]);
    expect(first.port).to.not.equal(second.port);
    expect(fs.readFileSync(path.join(a, 'postgres.port'), 'utf8')).to.equal(String(first.port));
    expect(fs.readFileSync(path.join(b, 'postgres.port'), 'utf8')).to.equal(String(second.port));
    await query(first.url, 'CREATE TABLE kept (x int); INSERT INTO kept VALUES (1)');
    expect(await query(second.url, "SELECT to_regclass('kept') AS t")).to.deep.equal([{ t: null }]);

    await stop(first);
    const again = await start(a, null);
    expect(again.port).to.equal(first.port);
    expect(await query(again.url, 'SELECT x FROM kept')).to.deep.equal([{ x: 1 }]);
  });

  it('a remembered port something else took meanwhile is replaced by a free one, and that one is remembered', async () => {
    const dir = newDataDir();
    const first = await start(dir, null);
    await stop(first);
    const squatter = await occupy(first.port);
    try {
      const { lines, logger } = recordingLogger();
      const moved = await start(dir, null, logger);
      expect(moved.port).to.not.equal(first.port);
      expect(fs.readFileSync(path.join(dir, 'postgres.port'), 'utf8')).to.equal(String(moved.port));
      expect(lines.some((l) => l.msg.includes('port is taken') && l.port === first.port)).to.equal(true);
      expect(await query(moved.url, 'SELECT 1 AS one')).to.deep.equal([{ one: 1 }]);
    } finally {
      await closed(squatter);
    }
  });

  it('a configured port that is taken fails the start with PostgreSQL\'s own reason, and leaves the data directory free', async () => {
    const squatter = await occupy();
    const port = portOf(squatter);
    const dir = newDataDir();
    try {
      const error = await start(dir, port).then(() => null, (err: unknown) => err);
      expect(error).to.be.instanceOf(Error);
      const fields = errorFields(error);
      expect(fields.code).to.equal('EADDRINUSE');
      expect(fields.port).to.equal(port);
      expect(fields.message).to.match(/exited before it was ready \(port \d+\): .*could not bind IPv4 address "127\.0\.0\.1": Address already in use/);
      expect(fs.existsSync(path.join(dir, 'postgres.owner')), 'ownership released').to.equal(false);
    } finally {
      await closed(squatter);
    }
    // Nothing was left running: the same directory starts once the port is free.
    const server = await start(dir, port);
    expect(server.port).to.equal(port);
  });

  it('orders text naturally (ICU root collation), not by byte value', async () => {
    const server = await start(newDataDir(), null);
    const rows = await query<{ x: string }>(server.url, ORDER);
    expect(rows.map((r) => r.x)).to.deep.equal(['alpha', 'Äpfel', 'apple', 'beta', 'Beta', 'Zeta']);
    const [db] = await query(server.url, "SELECT datlocprovider, daticulocale FROM pg_database WHERE datname = 'testament'");
    expect(db).to.deep.equal({ datlocprovider: 'i', daticulocale: 'und' });
  });

  it('a data directory whose database was created with the C collation (before) keeps it, and says so at start', async () => {
    const dir = newDataDir();
    const server = await start(dir, null);
    // What a cluster initialised before ICU holds: the database with libc's C collation.
    const admin = server.url.replace(/\/testament$/, '/postgres');
    await query(admin, 'DROP DATABASE testament');
    await query(admin, "CREATE DATABASE testament TEMPLATE template0 LOCALE_PROVIDER libc LOCALE 'C'");
    await stop(server);

    const { lines, logger } = recordingLogger();
    const old = await start(dir, null, logger);
    expect((await query<{ x: string }>(old.url, ORDER)).map((r) => r.x)).to.deep.equal(['Beta', 'Zeta', 'alpha', 'apple', 'beta', 'Äpfel']);
    const warning = lines.find((l) => l.msg.includes('C collation'));
    expect(warning, JSON.stringify(lines)).to.include({ level: 40, collation: 'C' });
  });
});
