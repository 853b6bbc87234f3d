import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

/**
 * A token's value is shown once, in the answer that creates it, and nowhere else: not in any later
 * answer, not in the logs (at the most verbose level, including failed and refused requests), not
 * in the event store, not in the read model.
 */
describe('a token value never leaks', function () {
  this.timeout(120_000);
  let app: TestApp;
  const logged: string[] = [];

  before(async () => {
    const sink = new Writable({ write(chunk, _encoding, done) { logged.push(String(chunk)); done(); } });
    app = await startTestApp({ logger: pino({ level: 'trace' }, sink) });
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: 'secrecy-password-1', access: 'ADMIN' }, systemMetadata('test'));
  });
  after(() => app.stop());

  it('appears only in the answer that created it', async () => {
    const session = new HttpClient(app.url);
    expect((await session.post('/api/auth/login', { email: 'admin@example.com', password: 'secrecy-password-1' })).status).to.equal(200);
    const created = await session.post('/api/tokens', { name: 'secret' });
    expect(created.status).to.equal(201);
    const token = created.body.token as string;
    expect(token).to.be.a('string').with.length.above(20);

    const bearer = new HttpClient(app.url, token);
    const answers: string[] = [];
    const call = async (c: HttpClient, method: string, path: string, body?: unknown) => {
      const res = await c.request(method, path, body);
      answers.push(JSON.stringify(res.body), JSON.stringify([...res.headers.entries()]));
      return res;
    };
    await call(bearer, 'GET', '/api/auth/me');
    await call(bearer, 'GET', '/api/tokens');
    await call(bearer, 'GET', '/api/admin/tokens');
    await call(bearer, 'POST', '/api/model/project/create', { data: { name: 'With a token' } });
    await call(bearer, 'POST', '/api/model/project/findMany', { where: { name: { contains: token } } });
    await call(bearer, 'POST', '/api/model/nope/findMany', {});
    await call(bearer, 'GET', '/api/audit');
    await call(new HttpClient(app.url, `${token}x`), 'GET', '/api/auth/me'); // a wrong token, logged as a 401
    await call(session, 'DELETE', `/api/tokens/${created.body.id}`);
    await call(bearer, 'GET', '/api/auth/me'); // revoked now
    await new Promise((r) => setTimeout(r, 50));

    for (const answer of answers) expect(answer.includes(token), `an answer: ${answer.slice(0, 200)}`).to.equal(false);
    expect(logged.length, 'the logs were captured').to.be.above(5);
    for (const line of logged) expect(line.includes(token), `a log line: ${line.slice(0, 300)}`).to.equal(false);
    const { rows: events } = await app.deps.knex.raw('SELECT count(*)::int AS n FROM es_events WHERE data::text LIKE ? OR metadata::text LIKE ?', [`%${token}%`, `%${token}%`]);
    expect(events[0].n, 'events holding the value').to.equal(0);
    const { rows: tokens } = await app.deps.knex.raw("SELECT count(*)::int AS n FROM api_tokens WHERE row_to_json(api_tokens)::text LIKE ?", [`%${token}%`]);
    expect(tokens[0].n, 'read-model rows holding the value').to.equal(0);
  });
});
