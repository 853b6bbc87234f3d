import type { EventMetadata } from '../../contracts/envelope';
import type { CommandDeps } from '../shared/commandBus';
import { handleCommand } from '../shared/decider';
import { DomainError } from '../shared/errors';
import { NOTIFICATION_ID_CATEGORY, notificationDecider, notificationStream } from './notification.decider';

export interface NotifyInput {
  /** The recipient. */
  userId: number;
  /** What happened, e.g. `external-import-completed`: lower-case words joined by hyphens. */
  kind: string;
  /** At most 200 characters. */
  title: string;
  /** At most 2,000 characters. */
  body: string;
  /** A path inside this API, e.g. `/api/admin/imports/external/jobs/5`. */
  link?: string | null;
  /** What the notification is about, e.g. `{type: 'externalImport', id: 5}`. */
  subject?: { type: string; id: number } | null;
  /**
   * An id the caller planned ahead (planNotificationId) and recorded on its own stream, so that
   * telling the same outcome again (a job resumed after a crash) appends nothing: when
   * `notification-<id>` exists already for the same recipient and kind, notify answers the id.
   * Without it every call is a new notification.
   */
  notificationId?: number;
}

/**
 * An id for a notification not sent yet. A job that must notify once per outcome takes one,
 * records it with the outcome on its own stream, then calls notify with it (again after a crash).
 */
export function planNotificationId(deps: Pick<CommandDeps, 'ids'>, metadata: EventMetadata): Promise<number> {
  return deps.ids.next(NOTIFICATION_ID_CATEGORY, metadata);
}

/**
 * Tells a user something (NotificationCreated on `notification-<id>`) and answers the
 * notification's id. Content that breaks the rules is a DomainError `invalid-argument` (details.path),
 * appending nothing. It does not wait for the read model: a job's outcome is recorded either way,
 * and the recipient's GET /api/notifications shows it once the `notifications` projection applied
 * it (deps.onWrite hears the position). A planned id held by another recipient or kind is
 * `notification-exists`: a caller's mistake, not a repeat.
 */
export async function notify(deps: Pick<CommandDeps, 'store' | 'ids' | 'clock' | 'onWrite'>, input: NotifyInput, metadata: EventMetadata): Promise<number> {
  const content = {
    userId: input.userId, kind: input.kind, title: input.title, body: input.body, link: input.link ?? null, subject: input.subject ?? null,
  };
  // Refused (by the rules, then the contract) before an id is taken from the allocator: a block reservation is an append of its own.
  deps.store.validate?.(notificationDecider.decide({ type: 'CreateNotification', notificationId: 1, now: deps.clock().toISOString(), ...content }, notificationDecider.initialState));
  if (input.notificationId !== undefined && !(Number.isSafeInteger(input.notificationId) && input.notificationId >= 1))
    throw new DomainError('invalid-argument', 'notificationId must be a positive integer', { path: 'notificationId' });
  const notificationId = input.notificationId ?? (await planNotificationId(deps, metadata));
  try {
    const outcome = await handleCommand(deps.store, notificationStream(notificationId), notificationDecider, {
      type: 'CreateNotification', notificationId, now: deps.clock().toISOString(), ...content,
    }, metadata);
    if (outcome.position !== null) deps.onWrite?.(outcome.position);
  } catch (error) {
    const repeated = input.notificationId !== undefined && error instanceof DomainError && error.code === 'notification-exists'
      && error.details.userId === content.userId && error.details.kind === content.kind;
    if (!repeated) throw error;
  }
  return notificationId;
}
