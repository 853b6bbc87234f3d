import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { NOTIFICATION_LIMITS } from './notification.decider';
import { NOTIFICATION_PAGE, NOTIFICATIONS_PATH } from './notifications.routes';

/** /api/notifications in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function notificationPaths(): OpenAPIV3.PathsObject {
  const error = (description: string): OpenAPIV3.ResponseObject =>
    ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const query = (name: string, schema: OpenAPIV3.SchemaObject, description: string): OpenAPIV3.ParameterObject =>
    ({ name, in: 'query', required: false, schema, description });
  const date = (nullable: boolean): OpenAPIV3.SchemaObject => ({ type: 'string', format: 'date-time', ...(nullable && { nullable: true }) });
  const notification: OpenAPIV3.SchemaObject = {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'kind', 'title', 'body', 'link', 'subject', 'createdAt', 'readAt'],
    properties: {
      id: { type: 'integer' },
      kind: { type: 'string', maxLength: NOTIFICATION_LIMITS.kind, description: 'what happened, e.g. external-import-completed, external-import-failed' },
      title: { type: 'string', maxLength: NOTIFICATION_LIMITS.title },
      body: { type: 'string', maxLength: NOTIFICATION_LIMITS.body },
      link: { type: 'string', nullable: true, description: 'a path inside this API with more, e.g. /api/admin/imports/external/jobs/5' },
      subject: {
        type: 'object', nullable: true, additionalProperties: false, required: ['type', 'id'], description: 'what it is about',
        properties: { type: { type: 'string' }, id: { type: 'integer' } },
      },
      createdAt: date(false),
      readAt: date(true),
    },
  };
  const unauthenticated = error('not authenticated; or session-expired (see the session security scheme)');
  return {
    [NOTIFICATIONS_PATH]: {
      get: {
        operationId: 'listNotifications',
        tags: ['notifications'],
        summary: 'the caller\'s own notifications, unread first, then newest first',
        description: 'Only the caller\'s own. `unread` counts the caller\'s unread notifications whatever the filter. Next page: repeat the request '
          + '(same filter) with `cursor` = this answer\'s `nextCursor`; `nextCursor` is null on the last page. A notification marked read between '
          + 'two pages moves behind the unread ones, so a later page may show it again.',
        parameters: [
          query('take', { type: 'integer', minimum: 1, maximum: NOTIFICATION_PAGE.max, default: NOTIFICATION_PAGE.default }, 'page size'),
          query('cursor', { type: 'string' }, 'the nextCursor of the previous page'),
          query('unread', { type: 'boolean' }, 'true: unread ones only; false: read ones only'),
        ],
        responses: {
          200: {
            description: 'a page of notifications',
            content: {
              'application/json': {
                schema: {
                  type: 'object', additionalProperties: false, required: ['data', 'unread', 'nextCursor'],
                  properties: {
                    data: { type: 'array', items: notification },
                    unread: { type: 'integer', minimum: 0, description: 'how many of the caller\'s notifications are unread' },
                    nextCursor: { type: 'string', nullable: true },
                  },
                },
              },
            },
          },
          400: error('invalid-argument: a bad, unknown or repeated query parameter (details.path names it)'),
          401: unauthenticated,
        },
      },
    },
    [`${NOTIFICATIONS_PATH}/{id}/read`]: {
      post: {
        operationId: 'markNotificationRead',
        tags: ['notifications'],
        summary: 'mark one of the caller\'s notifications read',
        description: 'Recorded as NotificationRead; marking a read notification again records nothing and answers the same. '
          + 'Answers once the read model shows it read (X-Event-Position: the write\'s position).',
        parameters: [{ name: 'id', in: 'path', required: true, schema: idSchema() }],
        responses: {
          200: {
            description: 'the notification, read',
            headers: { 'X-Event-Position': { schema: { type: 'string' }, description: 'the position of the notification\'s last event' } },
            content: { 'application/json': { schema: { type: 'object', additionalProperties: false, required: ['data'], properties: { data: notification } } } },
          },
          400: error('invalid-argument: the id is not a positive integer, or a body was sent'),
          401: unauthenticated,
          403: error('csrf-rejected (see the session security scheme)'),
          404: error('notification-not-found: no such notification, or someone else\'s'),
          503: error('read-model-lagging: recorded, not yet visible'),
        },
      },
    },
  };
}
