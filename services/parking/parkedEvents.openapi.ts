import type { OpenAPIV3 } from 'openapi-types';
import { MAX_RETRY_IDS, PARKED_EVENTS_PATH, PARKED_PAGE } from './parkedEvents.routes';

const error = (description: string): OpenAPIV3.ResponseObject =>
  ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
const json = (schema: OpenAPIV3.SchemaObject) => ({ 'application/json': { schema } });
const nullable = (schema: OpenAPIV3.SchemaObject): OpenAPIV3.SchemaObject => ({ ...schema, nullable: true });

/** /api/admin/parked-events in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function parkedEventsPaths(): OpenAPIV3.PathsObject {
  const date = nullable({ type: 'string', format: 'date-time' });
  const parked: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false,
    required: ['id', 'projection', 'kind', 'position', 'eventId', 'eventType', 'streamId', 'revision', 'kafkaPartition', 'kafkaOffset', 'error', 'attempts', 'firstAttemptAt', 'lastAttemptAt', 'parkedAt', 'resolvedAt', 'resolution'],
    properties: {
      id: { type: 'integer' },
      projection: { type: 'string' },
      kind: { type: 'string', enum: ['failed', 'held', 'invalid'], description: 'failed: the projection threw on it (tried `attempts` times); held: a later event of a stream with a parked event (applied out of order it would corrupt the stream\'s rows); invalid: a Kafka message that is not a valid event' },
      position: nullable({ type: 'string', description: 'the event\'s position in the log (64-bit, as a string)' }),
      eventId: nullable({ type: 'string', format: 'uuid' }), eventType: nullable({ type: 'string' }), streamId: nullable({ type: 'string' }), revision: nullable({ type: 'string' }),
      kafkaPartition: nullable({ type: 'integer' }), kafkaOffset: nullable({ type: 'string' }),
      error: { type: 'string', description: 'why it is parked (for held: behind which event)' },
      attempts: { type: 'integer' },
      firstAttemptAt: date, lastAttemptAt: date, parkedAt: date, resolvedAt: date,
      resolution: nullable({ type: 'string', enum: ['retried', 'rebuilt'] }),
    },
  };
  const summary: OpenAPIV3.SchemaObject = {
    type: 'array', description: 'what each projection holds parked now',
    items: { type: 'object', properties: { projection: { type: 'string' }, failed: { type: 'integer' }, held: { type: 'integer' }, invalid: { type: 'integer' } } },
  };
  const query = (name: string, schema: OpenAPIV3.SchemaObject, description: string): OpenAPIV3.ParameterObject => ({ name, in: 'query', required: false, schema, description });
  const common = { 401: error('not authenticated'), 403: error('forbidden: the caller is not an administrator (access ADMIN); or csrf-rejected') };
  return {
    [PARKED_EVENTS_PATH]: {
      get: {
        operationId: 'adminListParkedEvents', tags: ['admin'],
        summary: 'the events the projections parked: they could not apply them, and went on (administrators)',
        description: 'Newest first. A projection that cannot apply an event (an error that is not transient, tried 3 times) parks it with the later events of its stream, '
          + 'moves past them and says `degraded` in /readyz; administrators are notified. What the events changed is in the log but not in that projection\'s rows until a retry '
          + '(POST ' + PARKED_EVENTS_PATH + '/retry, after a fix) or a rebuild (`npm run rebuild -- <projection>`) resolves them. Next page: the same query with `cursor` = `nextCursor`.',
        parameters: [
          query('projection', { type: 'string' }, 'one projection\'s only'),
          query('state', { type: 'string', enum: ['parked', 'resolved', 'all'], default: 'parked' }, 'parked: not resolved yet'),
          query('kind', { type: 'string', enum: ['failed', 'held', 'invalid'] }, 'one kind only'),
          query('take', { type: 'integer', minimum: 1, maximum: PARKED_PAGE.max, default: PARKED_PAGE.default }, 'page size'),
          query('cursor', { type: 'string' }, 'the nextCursor of the previous page'),
        ],
        responses: {
          200: { description: 'a page', content: json({ type: 'object', required: ['data', 'nextCursor', 'parked'], properties: { data: { type: 'array', items: parked }, nextCursor: nullable({ type: 'string' }), parked: summary } }) },
          400: error('invalid-argument: an unknown or repeated parameter, an unknown projection, kind or state (details.path, details.allowed)'),
          ...common,
        },
      },
    },
    [`${PARKED_EVENTS_PATH}/retry`]: {
      post: {
        operationId: 'adminRetryParkedEvents', tags: ['admin'],
        summary: 'apply parked events again, after a fix (administrators)',
        description: 'For each stream with a chosen parked event (all unresolved ones when nothing is chosen; `projection`: that projection\'s; `ids`: those and the events of their streams), '
          + 'the stream\'s parked events are read again from the log and applied in their order; those that apply are resolved, the first that fails stays parked with its new error '
          + '(the ones behind it stay held). The events are applied after later events of other streams: where a projection\'s rows depend on several streams, a rebuild is exact. '
          + 'Recorded as ParkedEventsRetried (stream `projectionAdministration`) with the actor and the outcome; `X-Event-Position` names it.',
        requestBody: {
          required: false,
          content: json({
            type: 'object', additionalProperties: false,
            properties: { projection: { type: 'string' }, ids: { type: 'array', minItems: 1, maxItems: MAX_RETRY_IDS, items: { type: 'integer', minimum: 1 } } },
          }),
        },
        responses: {
          200: {
            description: 'what the retry resolved and what is still parked',
            content: json({
              type: 'object', required: ['resolved', 'stillParked', 'parked'],
              properties: {
                resolved: { type: 'integer' },
                stillParked: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' }, projection: { type: 'string' }, position: nullable({ type: 'string' }), streamId: nullable({ type: 'string' }), error: { type: 'string' } } } },
                parked: summary,
              },
            }),
          },
          400: error('invalid-argument: an unknown field, an unknown projection, ids that are not 1 to ' + MAX_RETRY_IDS + ' positive integers (details.path)'),
          ...common,
          503: error('service-unavailable: the database or the event store does not answer: nothing that did not apply was resolved; retry later'),
        },
      },
    },
  };
}
