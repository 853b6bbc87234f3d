import { expect } from 'chai';
import type { EventMetadata } from '../../../contracts/envelope';
import { notificationsProjection } from '../../../projections/notifications';
import { registerUser } from '../../../services/identity/identity.handlers';
import { notificationStream } from '../../../services/notifications/notification.decider';
import { notify, type NotifyInput, planNotificationId } from '../../../services/notifications/notify';
import { systemMetadata } from '../../../services/shared/context';
import { DomainError } from '../../../services/shared/errors';
import { expectRefused, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const PASSWORD = 'notify-password-1';

interface Row { id: number; kind: string; title: string; body: string; link: string | null; subject: { type: string; id: number } | null; createdAt: string; readAt: string | null }

/**
 * The notifications module end to end: notify() as a job calls it, the `notifications` projection,
 * and GET /api/notifications, POST /api/notifications/{id}/read over HTTP against the real app on
 * a throw-away database.
 */
describe('notifications (notify, the read model, GET /api/notifications, POST …/{id}/read)', function () {
  this.timeout(120_000);
  let app: TestApp;
  let ada: HttpClient;
  let bob: HttpClient;
  let adaId: number;
  let bobId: number;
  let meta: EventMetadata;
  /** Ada's notifications, by title. */
  const ids: Record<string, number> = {};

  /** notify(), then wait until every read model holds it (notify itself does not wait). */
  const notifyApplied = async (input: NotifyInput): Promise<number> => {
    let position: string | null = null;
    const id = await notify({ ...app.deps, onWrite: (p) => (position = p) }, input, meta);
    if (position !== null) await app.deps.watcher.waitFor({ position, streamId: notificationStream(id) }, 10_000);
    return id;
  };
  const list = async (client: HttpClient, query = '') => {
    const res = await client.get(`/api/notifications${query}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body as { data: Row[]; unread: number; nextCursor: string | null };
  };
  const eventsOf = async (id: number) => (await app.deps.store.readStream(notificationStream(id))).map((e) => e.type);

  before(async () => {
    app = await startTestApp();
    meta = systemMetadata('notifications-test');
    adaId = await registerUser(app.deps, { email: 'ada@example.com', name: 'Ada', password: PASSWORD, access: 'ADMIN' }, meta);
    bobId = await registerUser(app.deps, { email: 'bob@example.com', name: 'Bob', password: PASSWORD, access: 'USER' }, meta);
    ada = new HttpClient(app.url);
    bob = new HttpClient(app.url);
    expect((await ada.post('/api/auth/login', { email: 'ada@example.com', password: PASSWORD })).status).to.equal(200);
    expect((await bob.post('/api/auth/login', { email: 'bob@example.com', password: PASSWORD })).status).to.equal(200);
    // Five for Ada a minute apart (the first with a link and subject), one for Bob in between.
    for (const n of [1, 2, 3, 4, 5]) {
      ids[`a${n}`] = await notifyApplied({
        userId: adaId, kind: n % 2 === 0 ? 'external-import-failed' : 'external-import-completed', title: `Import ${n}`, body: `body ${n}`,
        ...(n === 1 && { link: '/api/admin/imports/external/jobs/1', subject: { type: 'externalImport', id: 1 } }),
      });
      app.clock.advance(60_000);
      if (n === 2) ids.b1 = await notifyApplied({ userId: bobId, kind: 'external-import-completed', title: 'Bob\'s import', body: '' });
    }
  });
  after(() => app?.stop());

  it('each user sees only their own, newest first, with the unread count', async () => {
    const mine = await list(ada);
    expect(mine.data.map((n) => n.title)).to.deep.equal(['Import 5', 'Import 4', 'Import 3', 'Import 2', 'Import 1']);
    expect(mine.unread).to.equal(5);
    expect(mine.nextCursor).to.equal(null);
    expect(mine.data[4]).to.deep.equal({
      id: ids.a1, kind: 'external-import-completed', title: 'Import 1', body: 'body 1', link: '/api/admin/imports/external/jobs/1',
      subject: { type: 'externalImport', id: 1 }, createdAt: '2026-06-01T12:00:00.000Z', readAt: null,
    });
    expect(mine.data[0]).to.include({ link: null, subject: null, createdAt: '2026-06-01T12:04:00.000Z' });
    const bobs = await list(bob);
    expect(bobs.data.map((n) => [n.id, n.title])).to.deep.equal([[ids.b1, 'Bob\'s import']]);
    expect(bobs.unread).to.equal(1);
  });

  it('marks one read: 200 with the row, the position header; unread ones come first after it; marking again changes nothing', async () => {
    const res = await ada.post(`/api/notifications/${ids.a5}/read`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.data).to.include({ id: ids.a5, title: 'Import 5', readAt: app.clock.now.toISOString() });
    expect(res.headers.get('x-event-position')).to.match(/^\d+$/);
    // The answer came after the read model applied it: the next list shows it read, behind the unread ones.
    const after = await list(ada);
    expect(after.data.map((n) => [n.title, n.readAt !== null])).to.deep.equal([
      ['Import 4', false], ['Import 3', false], ['Import 2', false], ['Import 1', false], ['Import 5', true],
    ]);
    expect(after.unread).to.equal(4);

    const head = (await app.deps.store.headPosition()).toString();
    app.clock.advance(1000);
    const again = await ada.post(`/api/notifications/${ids.a5}/read`);
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal(res.body);
    expect((await app.deps.store.headPosition()).toString(), 'marking it again appends nothing').to.equal(head);
    expect(await eventsOf(ids.a5)).to.deep.equal(['NotificationCreated', 'NotificationRead']);
  });

  it('someone else\'s notification is 404 notification-not-found, as a missing one is, and stays unread', async () => {
    const theirs = await expectRefused(app, () => bob.post(`/api/notifications/${ids.a4}/read`), 404);
    const missing = await expectRefused(app, () => bob.post('/api/notifications/2000000000/read'), 404);
    expect(theirs.code).to.equal('notification-not-found');
    expect(missing.code).to.equal('notification-not-found');
    expect(Object.keys(theirs.details)).to.deep.equal(Object.keys(missing.details));
    expect((await list(ada)).data.find((n) => n.id === ids.a4)!.readAt).to.equal(null);
    expect(await eventsOf(ids.a4)).to.deep.equal(['NotificationCreated']);
  });

  it('a bad id or a body is 400 invalid-argument naming it, appending nothing', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '1e3', '99999999999999999999']) {
      const body = await expectRefused(app, () => ada.post(`/api/notifications/${id}/read`), 400);
      expect(body, id).to.deep.include({ code: 'invalid-argument', details: { path: 'id', min: 1, max: 2147483647 } });
    }
    const withBody = await expectRefused(app, () => ada.post(`/api/notifications/${ids.a4}/read`, { readAt: '2020-01-01T00:00:00Z' }), 400);
    expect(withBody).to.deep.include({ code: 'invalid-argument', details: { path: 'readAt' } });
  });

  it('401 without authentication on both routes, appending nothing', async () => {
    const anonymous = new HttpClient(app.url);
    for (const call of [() => anonymous.get('/api/notifications'), () => anonymous.post(`/api/notifications/${ids.a4}/read`)]) {
      const body = await expectRefused(app, call, 401);
      expect(body.code).to.equal('unauthenticated');
    }
  });

  it('pages with take and cursor in the list\'s order, and filters unread or read ones', async () => {
    const whole = (await list(ada)).data.map((n) => n.id);
    const seen: number[] = [];
    let query = '?take=2';
    let pages = 0;
    for (;;) {
      const page = await list(ada, query);
      pages++;
      expect(page.data.length).to.be.at.most(2);
      expect(page.unread, 'the count does not depend on the page').to.equal(4);
      seen.push(...page.data.map((n) => n.id));
      if (page.nextCursor === null) break;
      query = `?take=2&cursor=${encodeURIComponent(page.nextCursor)}`;
    }
    expect(pages).to.equal(3);
    expect(seen).to.deep.equal(whole);

    const unread = await list(ada, '?unread=true');
    expect(unread.data.map((n) => n.title)).to.deep.equal(['Import 4', 'Import 3', 'Import 2', 'Import 1']);
    const firstUnread = await list(ada, '?unread=true&take=3');
    expect(firstUnread.nextCursor).to.be.a('string');
    const restUnread = await list(ada, `?unread=true&take=3&cursor=${encodeURIComponent(firstUnread.nextCursor!)}`);
    expect(restUnread.data.map((n) => n.title)).to.deep.equal(['Import 1']);
    expect((await list(ada, '?unread=false')).data.map((n) => n.title)).to.deep.equal(['Import 5']);
  });

  it('refuses bad, unknown and repeated query parameters with 400 invalid-argument naming them', async () => {
    for (const [query, path] of [
      ['?take=0', 'take'], ['?take=101', 'take'], ['?take=x', 'take'], ['?take=1&take=2', 'take'], ['?cursor=nope', 'cursor'],
      [`?cursor=${Buffer.from('[1,"2026-01-01T00:00:00Z",0]').toString('base64url')}`, 'cursor'], ['?unread=yes', 'unread'], ['?skip=1', 'skip'],
    ]) {
      const body = await expectRefused(app, () => ada.get(`/api/notifications${query}`), 400);
      expect(body, query).to.deep.include({ code: 'invalid-argument', details: { path } });
    }
    expect((await list(ada, '?take=100')).data).to.have.length(5);
  });

  it('notify with a planned id tells an outcome once, however often it is called; the same id for another recipient or kind is refused', async () => {
    const planned = await planNotificationId(app.deps, meta);
    const input: NotifyInput = { userId: bobId, kind: 'external-import-failed', title: 'Import 9 failed', body: 'the export is not readable', notificationId: planned };
    expect(await notifyApplied(input)).to.equal(planned);
    const head = (await app.deps.store.headPosition()).toString();
    expect(await notify(app.deps, input, meta)).to.equal(planned);
    expect((await app.deps.store.headPosition()).toString(), 'a repeat appends nothing').to.equal(head);
    expect(await eventsOf(planned)).to.deep.equal(['NotificationCreated']);
    for (const clash of [{ userId: adaId }, { kind: 'external-import-completed' }]) {
      const refusal = await notify(app.deps, { ...input, ...clash }, meta).then(() => null, (error: unknown) => error);
      expect(refusal).to.be.instanceOf(DomainError);
      expect((refusal as DomainError).code).to.equal('notification-exists');
    }
    expect((await list(bob)).data.map((n) => n.title)).to.deep.equal(['Import 9 failed', 'Bob\'s import']);
  });

  it('notify refuses content that breaks the rules with invalid-argument (details.path), appending nothing, not even an id block', async () => {
    const head = (await app.deps.store.headPosition()).toString();
    for (const [input, path] of [
      [{ title: '' }, 'title'], [{ title: 't'.repeat(201) }, 'title'], [{ body: 'b'.repeat(2001) }, 'body'], [{ kind: 'Done!' }, 'kind'],
      [{ link: 'https://elsewhere.example.com/' }, 'link'], [{ subject: { type: 'externalImport', id: -1 } }, 'subject.id'], [{ notificationId: 0 }, 'notificationId'],
    ] as const) {
      const refusal = await notify(app.deps, { userId: bobId, kind: 'external-import-completed', title: 'ok', body: '', ...input }, meta)
        .then(() => null, (error: unknown) => error);
      expect(refusal, JSON.stringify(input)).to.be.instanceOf(DomainError);
      expect(refusal).to.deep.include({ code: 'invalid-argument', details: { path } });
    }
    expect((await app.deps.store.headPosition()).toString()).to.equal(head);
  });

  it('the projection applies every notification event again without changing a row (redelivery)', async () => {
    const rows = async () => app.deps.knex('notifications').orderBy('id').select('*');
    const before = await rows();
    expect(before.length).to.equal(7);
    const events = (await app.deps.store.readAll({})).filter((e) => e.streamId.startsWith('notification-'));
    expect(events.map((e) => e.type)).to.include.members(['NotificationCreated', 'NotificationRead']);
    await app.deps.knex.transaction((trx) => notificationsProjection.apply(trx, [...events, ...events]));
    expect(await rows()).to.deep.equal(before);
  });
});
