import { Router, type Request } from 'express';
import type { Knex } from 'knex';
import { type CommandDeps, readYourWrites, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { handleCommand } from '../shared/decider';
import { badRequest, HttpError } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import { notificationDecider, notificationStream } from './notification.decider';
import { idOf, parseId } from '../shared/validate';

/**
 * The caller's own notifications (any authenticated user; the app mounts this after
 * authentication): GET /api/notifications lists them, unread first, then newest first, with the
 * count of unread ones; POST /api/notifications/{id}/read marks one read (again: no change).
 * Someone else's notification is 404 `notification-not-found`, as a missing one is.
 */

export const NOTIFICATIONS_PATH = '/api/notifications';
export const NOTIFICATION_PAGE = { default: 50, max: 100 } as const;
const LIST_PARAMETERS = ['take', 'cursor', 'unread'];

const invalid = (path: string, message: string) => badRequest('invalid-argument', message, { path });

/** A notification as the routes answer it. */
export interface NotificationView {
  id: number; kind: string; title: string; body: string; link: string | null; subject: { type: string; id: number } | null;
  createdAt: string; readAt: string | null;
}

/** Where a page starts: after this row in the list's order (unread first, then creation time and id, newest first). */
interface NotificationCursor { unread: boolean; createdAt: string; id: number }

const encodeCursor = (c: NotificationCursor): string => Buffer.from(JSON.stringify([c.unread ? 1 : 0, c.createdAt, c.id])).toString('base64url');

function decodeCursor(value: string): NotificationCursor | null {
  try {
    const [unread, createdAt, id] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as unknown[];
    if ((unread !== 0 && unread !== 1) || typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt)) || idOf(id, 'json') === null) return null;
    return { unread: unread === 1, createdAt: new Date(createdAt).toISOString(), id: id as number };
  } catch {
    return null;
  }
}

interface ListQuery { take: number; after: NotificationCursor | null; unread: boolean | null }

/** The list's query string, strictly: unknown or repeated parameters are refused. */
function parseListQuery(query: Request['query']): ListQuery {
  for (const [name, value] of Object.entries(query)) {
    if (!LIST_PARAMETERS.includes(name)) throw invalid(name, `Unknown parameter ${name}; the parameters are ${LIST_PARAMETERS.join(', ')}`);
    if (typeof value !== 'string') throw invalid(name, `${name} must be given once, as a plain value`);
  }
  const q = query as Partial<Record<string, string>>;
  let take: number = NOTIFICATION_PAGE.default;
  if (q.take !== undefined) {
    take = Number(q.take);
    if (!/^\d{1,4}$/.test(q.take) || take < 1 || take > NOTIFICATION_PAGE.max) throw invalid('take', `take must be an integer from 1 to ${NOTIFICATION_PAGE.max}`);
  }
  const after = q.cursor === undefined ? null : decodeCursor(q.cursor);
  if (q.cursor !== undefined && after === null) throw invalid('cursor', 'cursor must be the nextCursor of a previous page');
  if (q.unread !== undefined && q.unread !== 'true' && q.unread !== 'false') throw invalid('unread', 'unread must be true (unread ones only) or false (read ones only)');
  return { take, after, unread: q.unread === undefined ? null : q.unread === 'true' };
}

const notificationIdOf = (value: string): number => parseId('id', value);

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a knex row
function viewOf(row: Record<string, any>): NotificationView {
  return {
    id: row.id, kind: row.kind, title: row.title, body: row.body, link: row.link,
    subject: row.subject_type === null || row.subject_id === null ? null : { type: row.subject_type, id: row.subject_id },
    createdAt: new Date(row.created_at).toISOString(), readAt: row.read_at === null ? null : new Date(row.read_at).toISOString(),
  };
}

/** One page of a user's notifications and how many of theirs are unread (whatever the filter). */
export async function listNotifications(knex: Knex, userId: number, query: ListQuery): Promise<{ data: NotificationView[]; unread: number; nextCursor: string | null }> {
  const q = knex('notifications').where({ user_id: userId })
    .orderByRaw('(read_at IS NULL) DESC, created_at DESC, id DESC')
    .limit(query.take + 1);
  if (query.unread === true) q.whereNull('read_at');
  if (query.unread === false) q.whereNotNull('read_at');
  // Keyset: rows after the cursor's in the same order (PostgreSQL compares the rows field by field; false < true).
  if (query.after) q.whereRaw('((read_at IS NULL), created_at, id) < (?::boolean, ?::timestamptz, ?::integer)', [query.after.unread, query.after.createdAt, query.after.id]);
  const [rows, count] = await Promise.all([
    q.select('*'),
    knex('notifications').where({ user_id: userId }).whereNull('read_at').count<{ count: string }[]>({ count: '*' }),
  ]);
  const page = rows.slice(0, query.take);
  const last = page[page.length - 1];
  return {
    data: page.map(viewOf),
    unread: Number(count[0].count),
    nextCursor: rows.length > query.take ? encodeCursor({ unread: last.read_at === null, createdAt: new Date(last.created_at).toISOString(), id: last.id }) : null,
  };
}

export function notificationRoutes(deps: CommandDeps): Router {
  const router = Router();

  router.get(NOTIFICATIONS_PATH, asyncHandler(async (req, res) => {
    const query = parseListQuery(req.query);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await listNotifications(deps.knex, req.auth!.user.id, query));
  }));

  router.post(`${NOTIFICATIONS_PATH}/:id/read`, asyncHandler(async (req, res) => {
    const notificationId = notificationIdOf(req.params.id);
    if (req.body !== undefined && req.body !== null && Object.keys(req.body).length > 0) throw invalid(Object.keys(req.body)[0], 'This request takes no body');
    const streamId = notificationStream(notificationId);
    const outcome = await handleCommand(deps.store, streamId, notificationDecider, {
      type: 'MarkNotificationRead', notificationId, requestedBy: req.auth!.user.id, now: deps.clock().toISOString(),
    }, metadataFor(req.auth!, req));
    // Read already: nothing appended, but the row answered must hold the stream as it is (its creation may be that recent too).
    const write = outcome.position !== null ? outcome : { streamId, position: (await deps.store.readStream(streamId, { direction: 'backwards', maxCount: 1 }))[0].position };
    await readYourWrites(withPositionHeader(deps, res), write);
    const row = await deps.knex('notifications').where({ id: notificationId, user_id: req.auth!.user.id }).first();
    if (!row) throw new HttpError(404, 'notification-not-found', `Notification ${notificationId} does not exist`, { id: notificationId });
    res.json({ data: viewOf(row) });
  }));
  return router;
}
