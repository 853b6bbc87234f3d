import { expect } from 'chai';
import { MAX_ORDER_BY_KEYS, MAX_RELATION_FILTERS } from '../../services/model/args';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';

/** Request shapes that used to keep the server and PostgreSQL busy, over HTTP: refused before any query. */
describe('model API: bounded query shapes over HTTP', function () {
  this.timeout(120_000);
  let app: TestApp;
  let c: HttpClient;

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'bounds@example.com', name: 'Bounds', password: 'bounds-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email: 'bounds@example.com', password: 'bounds-password-1' })).status).to.equal(200);
    await c.post('/api/model/project/create', { data: { name: 'Bounded' } });
  });
  after(() => app?.stop());

  it('an orderBy of 5,000 keys is a 400 naming the limit, with or without a cursor (was a 500, and a stack overflow with a cursor)', async () => {
    const orderBy = Array.from({ length: 5000 }, (_, i) => (i % 2 ? { name: 'asc' } : { createdBy: { name: 'desc' } }));
    for (const body of [{ orderBy }, { orderBy, cursor: { id: 1 } }]) {
      const refused = await expectRefused(app, () => c.post('/api/model/project/findMany', body), 400);
      expect(refused.code).to.equal('query-too-large');
      expect(refused.details).to.deep.equal({ path: 'orderBy', limit: MAX_ORDER_BY_KEYS });
    }
    const allowed = await c.post('/api/model/project/findMany', { orderBy: orderBy.slice(0, MAX_ORDER_BY_KEYS).map((key, i) => (i < 16 ? key : { id: 'asc' })), cursor: { id: 1 } });
    expect(allowed.status).to.equal(200);
  });

  it('a where of thousands of relation filters is a 400 naming the limit (was minutes of planning)', async () => {
    const where = { OR: Array.from({ length: 3000 }, () => ({ parent: { parent: { name: 'x' } } })) };
    const refused = await expectRefused(app, () => c.post('/api/model/repositoryFolder/findMany', { where }), 400);
    expect(refused).to.deep.include({ code: 'query-too-large', details: { path: 'where', limit: MAX_RELATION_FILTERS } });
  });
});
