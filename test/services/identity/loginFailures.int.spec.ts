import { expect } from 'chai';
import { registerUser, updateUser } from '../../../services/identity/identity.handlers';
import type { EventEnvelope } from '../../../contracts/envelope';
import type { DataOf } from '../../../contracts/events';
import { emailDigest, loginAttemptsStream } from '../../../services/identity/loginAttempts';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';

const PASSWORDS = ['ann-password-1', 'Not-Anns-Password-7', 'dan-password-1', 'guessed-for-nobody-9'];

describe('failed logins are recorded as LoginFailed events', function () {
  this.timeout(60_000);
  let app: TestApp;
  let annId: number;
  let danId: number;

  const login = async (email: string, password: string, correlationId: string) => {
    const res = await fetch(`${app.url}/api/auth/login`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-correlation-id': correlationId }, body: JSON.stringify({ email, password }),
    });
    return { status: res.status, body: await res.json() };
  };
  const attemptsOf = async (email: string) =>
    (await app.deps.store.readStream(loginAttemptsStream(email))) as EventEnvelope<'LoginFailed', DataOf<'LoginFailed'>>[];

  before(async () => {
    app = await startTestApp();
    annId = await registerUser(app.deps, { email: 'ann@example.com', name: 'Ann', password: PASSWORDS[0], access: 'USER' }, systemMetadata('test'));
    danId = await registerUser(app.deps, { email: 'dan@example.com', name: 'Dan', password: PASSWORDS[2], access: 'USER' }, systemMetadata('test'));
  });
  after(() => app?.stop());

  it('a wrong password: 401 invalid-credentials, and LoginFailed wrong-password on the stream of the address', async () => {
    const res = await login('ann@example.com', PASSWORDS[1], 'login-wrong-password');
    expect(res).to.deep.equal({ status: 401, body: { error: 'E-mail or password is wrong', code: 'invalid-credentials', details: {} } });
    const events = await attemptsOf('ann@example.com');
    expect(events).to.have.length(1);
    const [e] = events;
    expect(e.streamId).to.equal(`loginAttempts-${emailDigest('ann@example.com')}`);
    expect(e.type).to.equal('LoginFailed');
    expect(e.schemaVersion).to.equal(2); // v2: its limits (contracts/limits.ts)
    expect(e.data).to.deep.equal({ email: 'ann@example.com', userId: annId, reason: 'wrong-password', ip: '127.0.0.1', attemptedAt: app.clock.now.toISOString() });
    expect(e.metadata).to.deep.equal({ actor: { userId: null, via: 'session' }, ip: '127.0.0.1', correlationId: 'login-wrong-password', causationId: null });
  });

  it('an unknown address: the same answer, and LoginFailed unknown-user with the address as typed, normalised', async () => {
    const res = await login('  Nobody@Example.COM ', PASSWORDS[3], 'login-unknown-user');
    expect(res).to.deep.equal({ status: 401, body: { error: 'E-mail or password is wrong', code: 'invalid-credentials', details: {} } });
    const events = await attemptsOf('nobody@example.com');
    expect(events.map((e) => e.data)).to.deep.equal([
      { email: 'nobody@example.com', userId: null, reason: 'unknown-user', ip: '127.0.0.1', attemptedAt: app.clock.now.toISOString() },
    ]);
    expect(events[0].metadata).to.deep.equal({ actor: { userId: null, via: 'session' }, ip: '127.0.0.1', correlationId: 'login-unknown-user', causationId: null });
  });

  it('an address typed differently is the same stream', async () => {
    app.clock.advance(1000);
    expect((await login('ANN@example.com', 'wrong-again', 'login-case')).status).to.equal(401);
    const events = await attemptsOf('ann@example.com');
    expect(events.map((e) => [e.data.email, e.data.attemptedAt])).to.deep.equal([
      ['ann@example.com', new Date(app.clock.now.getTime() - 1000).toISOString()],
      ['ann@example.com', app.clock.now.toISOString()],
    ]);
  });

  it('a deactivated user, even with the right password: 401 invalid-credentials and LoginFailed inactive-user', async () => {
    expect((await login('dan@example.com', PASSWORDS[2], 'login-dan-active')).status).to.equal(200);
    await updateUser(app.deps, { userId: danId, isActive: false }, systemMetadata('test'));
    const res = await login('dan@example.com', PASSWORDS[2], 'login-dan-inactive');
    expect(res).to.deep.equal({ status: 401, body: { error: 'E-mail or password is wrong', code: 'invalid-credentials', details: {} } });
    expect((await attemptsOf('dan@example.com')).map((e) => [e.data.reason, e.data.userId])).to.deep.equal([['inactive-user', danId]]);
  });

  it('a successful login records no failure; a blank address is a 400 and records nothing', async () => {
    const before = (await attemptsOf('ann@example.com')).length;
    expect((await login('ann@example.com', PASSWORDS[0], 'login-ok')).status).to.equal(200);
    expect(await attemptsOf('ann@example.com')).to.have.length(before);
    const blank = await login('   ', 'whatever-1', 'login-blank');
    expect(blank.status).to.equal(400);
    expect(blank.body).to.deep.include({ code: 'invalid-argument', details: { path: 'email' } });
    expect(await attemptsOf('')).to.deep.equal([]);
  });

  it('no password tried, right or wrong, appears anywhere in the event store', async () => {
    const everything = JSON.stringify(await app.deps.store.readAll());
    expect(everything).to.include('LoginFailed');
    for (const password of [...PASSWORDS, 'wrong-again']) expect(everything).to.not.include(password);
  });

  it('the projections pass over LoginFailed without failing', async () => {
    const head = await app.deps.store.headPosition();
    await app.deps.watcher.waitFor({ position: head, streamId: loginAttemptsStream('ann@example.com') }, 10_000);
    expect(await app.deps.knex('parked_events').count({ n: '*' }).first()).to.deep.equal({ n: '0' });
    const users = await app.deps.knex('users').orderBy('id').pluck('email');
    expect(users).to.deep.equal(['ann@example.com', 'dan@example.com']);
  });
});
