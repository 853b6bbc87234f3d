import type { Knex } from 'knex';
import type { EventEnvelope } from '../contracts/envelope';
import type { DataOf, NotificationEvent } from '../contracts/events';
import type { Projection } from './runtime/projection';

/**
 * Users' notifications as GET /api/notifications lists them: one row per notification stream. The
 * creation inserts the row (a repeat is ignored); marking it read changes the row only when the
 * event is newer than the revision the row holds, so a redelivery changes nothing.
 */
const NOTIFICATION_EVENTS: ReadonlySet<string> = new Set<NotificationEvent['type']>(['NotificationCreated', 'NotificationRead']);

export const notificationsProjection: Projection = {
  name: 'notifications',
  types: NOTIFICATION_EVENTS,
  // An import chunk's columns are the read model's business: on the direct transport this projection reads their top level only.
  shallow: ['TestResultsImported', 'ExternalImportRowsWritten', 'ExternalImportChunkPlanned'],
  tables: ['notifications'],

  async apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void> {
    for (const e of events) {
      if (!NOTIFICATION_EVENTS.has(e.type)) continue;
      const revision = e.revision.toString();
      switch (e.type as NotificationEvent['type']) {
        case 'NotificationCreated': {
          const d = e.data as DataOf<'NotificationCreated'>;
          await trx('notifications').insert({
            id: d.notificationId, user_id: d.userId, kind: d.kind, title: d.title, body: d.body, link: d.link,
            subject_type: d.subject?.type ?? null, subject_id: d.subject?.id ?? null, created_at: d.createdAt, read_at: null, revision,
          }).onConflict('id').ignore();
          break;
        }
        case 'NotificationRead': {
          const d = e.data as DataOf<'NotificationRead'>;
          await trx('notifications').where({ id: d.notificationId }).andWhere('revision', '<', revision).update({ read_at: d.readAt, revision });
          break;
        }
      }
    }
  },
};
