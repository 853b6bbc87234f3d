import type { NotificationCreated, NotificationEvent, NotificationRead } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';

export type { NotificationEvent };

/** Limits of the contract (contracts/events/NotificationCreated.v1.schema.json), checked here first so a caller gets a code, not a contract violation. */
export const NOTIFICATION_LIMITS = { kind: 100, title: 200, body: 2000, link: 2048, subjectType: 100 } as const;
/** `external-import-completed`: lower-case words joined by hyphens. */
const KIND = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
/** A path inside this API (`/api/...`): never another site, so a link cannot send a reader elsewhere (`//host`, `http:`). */
const LINK = /^\/(?:[^/\\\s]\S*)?$/;
const SUBJECT_TYPE = /^[a-zA-Z][a-zA-Z0-9]*$/;

export interface NotificationContent {
  userId: number;
  kind: string;
  title: string;
  body: string;
  link: string | null;
  subject: { type: string; id: number } | null;
}

export type NotificationCommand =
  | ({ type: 'CreateNotification'; notificationId: number; now: string } & NotificationContent)
  /** `requestedBy`: only the recipient may; anyone else is told it does not exist. */
  | { type: 'MarkNotificationRead'; notificationId: number; requestedBy: number; now: string };

export interface NotificationState {
  exists: boolean;
  userId: number | null;
  kind: string | null;
  read: boolean;
}

export const initialState: NotificationState = { exists: false, userId: null, kind: null, read: false };
export const notificationStream = (notificationId: number) => `notification-${notificationId}`;
/** The id allocator's category (`ids-notification`). */
export const NOTIFICATION_ID_CATEGORY = 'notification';

const isPositiveInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;

/** What is wrong with a notification's content, as `{path, message}`; null when nothing. */
export function contentProblem(c: NotificationContent): { path: string; message: string } | null {
  if (!isPositiveInteger(c.userId)) return { path: 'userId', message: 'userId must be a positive integer' };
  if (typeof c.kind !== 'string' || c.kind.length > NOTIFICATION_LIMITS.kind || !KIND.test(c.kind))
    return { path: 'kind', message: `kind must be lower-case words joined by hyphens, at most ${NOTIFICATION_LIMITS.kind} characters` };
  if (typeof c.title !== 'string' || c.title.trim() === '' || c.title.length > NOTIFICATION_LIMITS.title)
    return { path: 'title', message: `title must be 1 to ${NOTIFICATION_LIMITS.title} characters` };
  if (typeof c.body !== 'string' || c.body.length > NOTIFICATION_LIMITS.body) return { path: 'body', message: `body must be at most ${NOTIFICATION_LIMITS.body} characters` };
  if (c.link !== null && (typeof c.link !== 'string' || c.link.length > NOTIFICATION_LIMITS.link || !LINK.test(c.link)))
    return { path: 'link', message: 'link must be a path inside this API, starting with a single /' };
  if (c.subject !== null) {
    if (typeof c.subject !== 'object' || typeof c.subject.type !== 'string' || c.subject.type.length > NOTIFICATION_LIMITS.subjectType || !SUBJECT_TYPE.test(c.subject.type))
      return { path: 'subject.type', message: 'subject.type must be a name of letters and digits' };
    if (!isPositiveInteger(c.subject.id)) return { path: 'subject.id', message: 'subject.id must be a positive integer' };
  }
  return null;
}

export function decide(cmd: NotificationCommand, s: NotificationState): NotificationEvent[] {
  switch (cmd.type) {
    case 'CreateNotification': {
      // The recipient and kind go along so that a caller repeating its own notification can tell it from a clash of ids.
      if (s.exists) throw new DomainError('notification-exists', `Notification ${cmd.notificationId} exists`, { notificationId: cmd.notificationId, userId: s.userId, kind: s.kind });
      const problem = contentProblem(cmd);
      if (problem) throw new DomainError('invalid-argument', problem.message, { path: problem.path });
      const event: NotificationCreated = {
        type: 'NotificationCreated',
        data: {
          notificationId: cmd.notificationId, userId: cmd.userId, kind: cmd.kind, title: cmd.title, body: cmd.body, link: cmd.link,
          subject: cmd.subject && { type: cmd.subject.type, id: cmd.subject.id }, createdAt: cmd.now,
        },
      };
      return [event];
    }
    case 'MarkNotificationRead': {
      // Someone else's notification is reported as missing: ids do not tell whether others have one.
      if (!s.exists || s.userId !== cmd.requestedBy) throw new DomainError('notification-not-found', `Notification ${cmd.notificationId} does not exist`, { id: cmd.notificationId });
      if (s.read) return [];
      const event: NotificationRead = { type: 'NotificationRead', data: { notificationId: cmd.notificationId, userId: s.userId, readAt: cmd.now } };
      return [event];
    }
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: NotificationState, e: NotificationEvent): NotificationState {
  switch (e.type) {
    case 'NotificationCreated':
      return { exists: true, userId: e.data.userId, kind: e.data.kind, read: false };
    case 'NotificationRead':
      return { ...s, read: true };
    default:
      return assertNever(e);
  }
}

export const notificationDecider = { initialState, decide, evolve };
