import { expect } from 'chai';
import type { UniqueValueClaimed } from '../../../contracts/events';
import { bootstrapAdministrator } from '../../../services/identity/identity.handlers';
import { emailReservationStream } from '../../../services/identity/user.decider';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const ADMIN = { email: 'root@example.com', password: 'bootstrap-pass-1', name: 'Root' };

describe('administrator bootstrap', function () {
  this.timeout(60_000);
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp();
  });
  afterEach(() => app.stop());

  it('creates the administrator once, as events, and not again on the next start', async () => {
    const id = await bootstrapAdministrator(app.deps, ADMIN, systemMetadata('boot'));
    expect(id).to.be.a('number');
    expect(await bootstrapAdministrator(app.deps, ADMIN, systemMetadata('boot'))).to.equal(null);
    const events = await app.deps.store.readAll({ maxCount: 100 });
    expect(events.filter((e) => e.type === 'UserRegistered')).to.have.length(1);
    expect(events.find((e) => e.type === 'UserRegistered')!.metadata.actor).to.deep.equal({ userId: null, via: 'system' });
    const login = await new HttpClient(app.url).post('/api/auth/login', { email: ADMIN.email, password: ADMIN.password });
    expect(login.status).to.equal(200);
    expect(login.body.user.access).to.equal('ADMIN');
  });

  it('completes a start that was killed between claiming the e-mail and registering the user', async () => {
    const claim: UniqueValueClaimed = { type: 'UniqueValueClaimed', data: { scope: 'user.email', value: ADMIN.email, ownerId: 77 } };
    await app.deps.store.append(emailReservationStream(ADMIN.email), [claim], { expectedRevision: 'no-stream', metadata: systemMetadata('crashed') });
    expect(await bootstrapAdministrator(app.deps, ADMIN, systemMetadata('boot'))).to.equal(77);
    const login = await new HttpClient(app.url).post('/api/auth/login', { email: ADMIN.email, password: ADMIN.password });
    expect(login.status).to.equal(200);
    expect(login.body.user.id).to.equal(77);
  });
});
