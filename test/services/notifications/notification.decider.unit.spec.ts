import { expect } from 'chai';
import type { NotificationCreated, NotificationRead } from '../../../contracts/events';
import { type NotificationCommand, notificationDecider, notificationStream } from '../../../services/notifications/notification.decider';
import { given } from '../../support/given';

const T0 = '2026-06-01T10:00:00.000Z';
const NOW = '2026-06-01T11:00:00.000Z';

// Notification 6 is for user 3; user 4 is someone else.
const content = {
  userId: 3, kind: 'external-import-completed', title: 'Import 5 completed', body: '120 cases imported',
  link: '/api/admin/imports/external/jobs/5' as string | null, subject: { type: 'externalImport', id: 5 } as { type: string; id: number } | null,
};
const created: NotificationCreated = { type: 'NotificationCreated', data: { notificationId: 6, ...content, createdAt: T0 } };
const read: NotificationRead = { type: 'NotificationRead', data: { notificationId: 6, userId: 3, readAt: T0 } };

const create = (changes: Partial<typeof content> = {}): NotificationCommand => ({ type: 'CreateNotification', notificationId: 6, now: NOW, ...content, ...changes });
const markReadBy = (requestedBy: number): NotificationCommand => ({ type: 'MarkNotificationRead', notificationId: 6, requestedBy, now: NOW });

const notification = (...past: (NotificationCreated | NotificationRead)[]) => given(notificationDecider, past);

describe('Notification decider', () => {
  it('names its stream notification-<id>', () => expect(notificationStream(6)).to.equal('notification-6'));

  describe('CreateNotification', () => {
    it('creates it for the recipient, at the command\'s time', () =>
      notification().when(create()).then([{ type: 'NotificationCreated', data: { notificationId: 6, ...content, createdAt: NOW } }]));
    it('takes no link and no subject', () =>
      notification().when(create({ link: null, subject: null })).then([{
        type: 'NotificationCreated', data: { notificationId: 6, ...content, link: null, subject: null, createdAt: NOW },
      }]));
    it('refuses to create it twice', () => notification(created).when(create()).thenFailsWith('notification-exists'));
    it('refuses to create a read one again', () => notification(created, read).when(create()).thenFailsWith('notification-exists'));
    it('names the recipient and kind it has when it exists, so that a repeat can be told from a clash', () => {
      const refusal = (() => {
        try {
          notificationDecider.decide(create({ userId: 4 }), notificationDecider.evolve(notificationDecider.initialState, created));
        } catch (error) {
          return error as { code: string; details: unknown };
        }
        return null;
      })();
      expect(refusal?.code).to.equal('notification-exists');
      expect(refusal?.details).to.deep.equal({ notificationId: 6, userId: 3, kind: 'external-import-completed' });
    });

    for (const [label, changes] of [
      ['an empty title', { title: ' ' }],
      ['a title over 200 characters', { title: 'x'.repeat(201) }],
      ['a body over 2,000 characters', { body: 'x'.repeat(2001) }],
      ['a kind that is not lower-case words joined by hyphens', { kind: 'Import Completed' }],
      ['a link to another site', { link: 'https://example.com/x' }],
      ['a protocol-relative link', { link: '//example.com/x' }],
      ['a link with a space', { link: '/api/a b' }],
      ['a subject id below 1', { subject: { type: 'externalImport', id: 0 } }],
      ['a recipient that is not a user id', { userId: 0 }],
    ] as const) {
      it(`refuses ${label}`, () => notification().when(create(changes as Partial<typeof content>)).thenFailsWith('invalid-argument'));
    }
    it('takes a title of exactly 200 characters and a body of exactly 2,000', () =>
      expect(notificationDecider.decide(create({ title: 't'.repeat(200), body: 'b'.repeat(2000) }), notificationDecider.initialState)).to.have.length(1));
  });

  describe('MarkNotificationRead', () => {
    it('the recipient marks it read', () =>
      notification(created).when(markReadBy(3)).then([{ type: 'NotificationRead', data: { notificationId: 6, userId: 3, readAt: NOW } }]));
    it('marking it read again changes nothing', () => notification(created, read).when(markReadBy(3)).thenNothing());
    it('someone else\'s is not found, as a missing one is', () => notification(created).when(markReadBy(4)).thenFailsWith('notification-not-found'));
    it('someone else\'s is not found even when read', () => notification(created, read).when(markReadBy(4)).thenFailsWith('notification-not-found'));
    it('a missing one is not found', () => notification().when(markReadBy(3)).thenFailsWith('notification-not-found'));
  });
});
