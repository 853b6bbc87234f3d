import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import express from 'express';
import type { Knex } from 'knex';
import { ERROR_TEXT_LOGGED_CHARS, SQL_LOGGED_CHARS, createLogger } from '../../infra/logger';
import { createKnex } from '../../infra/postgres/database';
import { errorHandler } from '../../services/shared/http';
import { createTestDatabase, type TestDatabase } from '../support/database';

/** Log lines written by createLogger, parsed. */
function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({ write(chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter(Boolean)); done(); } });
  return { logger: createLogger('info', sink), lines };
}

describe('a failed query in the log: never its whole SQL text, nor its values', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;
  // About a megabyte of SQL, as a large model API read produces, with a value that must not reach the log.
  const hugeSql = `select "t0"."id" from (select 1 as id) as "t0" where ${Array.from({ length: 20_000 }, (_, i) => `"t0"."missing_${i}" = ?`).join(' or ')}`;
  const values = Array.from({ length: 20_000 }, (_, i) => `secret-value-${i}`);

  before(async () => {
    db = await createTestDatabase('query_error_log');
    knex = createKnex(db.url);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  it("the error's message is the driver's; the SQL is on err.sql, with placeholders, no values", async () => {
    const error = await knex.raw(hugeSql, values).then(() => null, (e: Error & { sql?: string }) => e);
    expect(error, 'the query fails').to.be.instanceOf(Error);
    expect(error!.message).to.equal('column t0.missing_0 does not exist');
    expect(error!.sql).to.have.length.above(500_000);
    expect(error!.sql).to.contain('"t0"."missing_0" = $1');
    expect(`${error!.message} ${error!.stack} ${error!.sql}`).to.not.contain('secret-value');
  });

  it('a 500 logs the first characters of the SQL, its length and hash, and nothing of the values', async () => {
    const { logger, lines } = capturedLogger();
    const app = express();
    app.get('/fails', (_req, _res, next) => void knex.raw(hugeSql, values).then(() => next(), next));
    app.get('/fails-too', (_req, _res, next) => void knex.raw(hugeSql, values).then(() => next(), next));
    app.use(errorHandler(logger));
    const server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect((await fetch(`${url}/fails`)).status).to.equal(500);
      expect((await fetch(`${url}/fails-too`)).status).to.equal(500);
    } finally {
      await new Promise((r) => server.close(r));
    }
    const failures = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request failed');
    expect(failures).to.have.length(2);
    for (const line of lines) {
      expect(line.length, 'a log line stays small').to.be.below(4 * ERROR_TEXT_LOGGED_CHARS);
      expect(line).to.not.contain('secret-value');
    }
    const [first, second] = failures.map((entry) => entry.err);
    expect(first.message).to.equal('column t0.missing_0 does not exist');
    let n = 0;
    const positioned = hugeSql.replace(/\?/g, () => `$${++n}`);
    expect(first.sql).to.equal(`${positioned.slice(0, SQL_LOGGED_CHARS)}…`);
    expect(first.sqlLength).to.equal(positioned.length);
    expect(first.sqlHash).to.match(/^[0-9a-f]{16}$/);
    expect(second.sqlHash, 'the same statement has the same hash').to.equal(first.sqlHash);
  });

  it('any other long text of an error is cut too, with its length and hash', () => {
    const { logger, lines } = capturedLogger();
    const message = 'x'.repeat(100_000);
    logger.error({ err: Object.assign(new Error(message), { bindings: ['secret-value'], detail: 'short' }) }, 'failed');
    const [entry] = lines.map((line) => JSON.parse(line));
    expect(entry.err.message).to.have.length.below(ERROR_TEXT_LOGGED_CHARS + 100);
    expect(entry.err.message).to.match(/… \(100000 characters, sha256 [0-9a-f]{16}\)$/);
    expect(entry.err).to.include({ bindingCount: 1, detail: 'short', type: 'Error' });
    expect(lines[0]).to.not.contain('secret-value');
  });
});
