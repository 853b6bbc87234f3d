import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { expectError } from '../../support/errors';

const ADMIN = { email: 'root@example.com', password: 'root-password-1' };
const ANN = { email: 'ann@example.com', password: 'ann-password-1' };

describe('GET /api/admin/integrity: the hash chain of the log, checked through the API', function () {
  this.timeout(60_000);
  let app: TestApp;
  let admin: HttpClient;
  let ann: HttpClient;

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { ...ADMIN, name: 'Root', access: 'ADMIN' }, systemMetadata('test'));
    await registerUser(app.deps, { ...ANN, name: 'Ann', access: 'USER' }, systemMetadata('test'));
    admin = new HttpClient(app.url);
    ann = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', ADMIN)).status).to.equal(200);
    expect((await ann.post('/api/auth/login', ANN)).status).to.equal(200);
    // Some real writes: a project and a tag, through the model API.
    const project = await admin.post('/api/model/project/create', { data: { name: 'Evidence' } });
    expect(project.status, JSON.stringify(project.body)).to.equal(201);
    expect((await admin.post('/api/model/tag/create', { data: { name: 'Nightly' } })).status).to.equal(201);
  });
  after(() => app?.stop());

  it('answers an administrator: every event checked, intact, the head and its hash', async () => {
    const head = await app.deps.store.headPosition();
    const res = await admin.get('/api/admin/integrity');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ from: '1', to: head, checked: Number(head), intact: true, firstBreak: null });
    expect(res.body.head.position).to.equal(head);
    expect(res.body.head.hash).to.match(/^[0-9a-f]{64}$/);
    expect(res.headers.get('cache-control')).to.equal('no-store');
  });

  it('names the event a database change altered, with the hashes that differ', async () => {
    const { rows: [target] } = await app.deps.knex.raw(`SELECT position, data FROM es_events WHERE type = 'ProjectCreated' ORDER BY position LIMIT 1`);
    await app.deps.knex.raw(`UPDATE es_events SET data = jsonb_set(data, '{name}', '"Evidencf"') WHERE position = ?`, [target.position]);
    try {
      const res = await admin.get('/api/admin/integrity');
      expect(res.status).to.equal(200);
      expect(res.body.intact).to.equal(false);
      expect(res.body.firstBreak).to.include({ position: String(target.position), problem: 'altered' });
      expect(res.body.firstBreak.detail).to.include('ProjectCreated');
      expect(res.body.firstBreak.recordedHash).to.match(/^[0-9a-f]{64}$/);
      expect(res.body.firstBreak.computedHash).to.match(/^[0-9a-f]{64}$/).and.not.equal(res.body.firstBreak.recordedHash);
      // A range that ends before it holds.
      if (Number(target.position) > 1) expect((await admin.get(`/api/admin/integrity?to=${Number(target.position) - 1}`)).body.intact).to.equal(true);
    } finally {
      await app.deps.knex.raw('UPDATE es_events SET data = ? WHERE position = ?', [JSON.stringify(target.data), target.position]);
    }
    expect((await admin.get('/api/admin/integrity')).body.intact).to.equal(true);
  });

  it('refuses others (401, 403) and bad ranges (400 naming the parameter), appending nothing', async () => {
    const head = await app.deps.store.headPosition();
    expectError(await new HttpClient(app.url).get('/api/admin/integrity'), 401, 'unauthenticated');
    expectError(await ann.get('/api/admin/integrity'), 403, 'forbidden');
    for (const [query, path] of [
      ['from=0', 'from'], ['from=abc', 'from'], ['to=-1', 'to'], ['to=1.5', 'to'], ['from=3&to=2', 'from'], ['from=1&from=2', 'from'],
      ['at=1', 'at'], [`to=${Number(head) + 1}`, 'to'], [`from=${Number(head) + 5}`, 'from'], ['to=99999999999999999999', 'to'],
    ]) {
      expectError(await admin.get(`/api/admin/integrity?${query}`), 400, 'invalid-argument', path);
    }
    expect(await app.deps.store.headPosition(), 'nothing appended').to.equal(head);
  });
});
