import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { DEFAULT_TAKE, MAX_TAKE } from './audit.query';
import { cursorPageResponse, errorResponse as error } from '../shared/openapi';

/** GET /api/audit in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function auditPaths(): OpenAPIV3.PathsObject {
  const query = (name: string, schema: OpenAPIV3.SchemaObject, description: string): OpenAPIV3.ParameterObject =>
    ({ name, in: 'query', required: false, schema, description });
  const id: OpenAPIV3.SchemaObject = idSchema();
  const nullable = (schema: OpenAPIV3.SchemaObject): OpenAPIV3.SchemaObject => ({ ...schema, nullable: true });
  const entry: OpenAPIV3.SchemaObject = {
    type: 'object',
    additionalProperties: false,
    required: ['position', 'recordedAt', 'type', 'streamId', 'entity', 'entityId', 'projectId', 'actor', 'correlationId', 'changedFields'],
    properties: {
      position: { type: 'string', pattern: '^[1-9][0-9]*$', description: 'global position of the event in the log (64-bit, as a decimal string)' },
      recordedAt: { type: 'string', format: 'date-time' },
      type: { type: 'string', description: 'event type, e.g. TestRunCaseUpdated' },
      streamId: { type: 'string' },
      entity: { type: 'string', description: 'the stream category: the catalogue entity name for an entity stream (testRunCase), otherwise e.g. ids, unique' },
      entityId: { type: 'string', description: 'the stream id after the category ("42" of testRun-42)' },
      projectId: nullable({ type: 'integer', description: 'the project the event belongs to (its own projectId, or along the entity\'s project path)' }),
      actor: {
        type: 'object',
        additionalProperties: false,
        required: ['userId', 'email', 'name', 'tokenId', 'via', 'ip', 'sessionRef'],
        properties: {
          userId: nullable({ type: 'integer', description: 'null for the system (bootstrap, seeding)' }),
          email: nullable({ type: 'string' }),
          name: nullable({ type: 'string' }),
          tokenId: nullable({ type: 'integer', description: 'the API token used, if any' }),
          via: { type: 'string', enum: ['api', 'session', 'cli', 'import', 'system'], description: 'cli: a bearer token sent with User-Agent testament-cli/<version>' },
          ip: nullable({ type: 'string', description: 'the caller\'s address (behind TRUST_PROXY, the one X-Forwarded-For names)' }),
          sessionRef: nullable({ type: 'string', pattern: '^[0-9a-f]{16}$', description: 'for via session: the first 16 hex digits of SHA-256 of the session id' }),
        },
      },
      correlationId: { type: 'string', description: 'the X-Correlation-Id of the request that caused the event' },
      changedFields: { type: 'array', items: { type: 'string' }, description: 'names of the fields the event set (of `changes` for an update); never credentials, never values' },
    },
  };
  return {
    '/api/audit': {
      get: {
        operationId: 'auditTrail',
        tags: ['audit'],
        summary: 'the audit trail: one entry per event, newest first',
        description: 'Administrators see every event. Project administrators see the events of the projects they administer only: '
          + 'a projectId outside them answers an empty page, and events without a project (users, tokens, global configuration) are never shown to them. '
          + 'Anyone else gets 403. Filters combine with AND. Page with `cursor` = the previous answer\'s `nextCursor`: '
          + 'the pages stay the same while new events arrive (those appear on a new first page).',
        parameters: [
          query('entity', { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]*$', maxLength: 128 }, 'a catalogue entity name (testRun) or another stream category'),
          query('entityId', { type: 'string', minLength: 1, maxLength: 200 }, 'the id part of the stream id'),
          query('projectId', id, 'events of this project'),
          query('actor', id, 'events caused by this user id'),
          query('tokenId', id, 'events caused through this API token'),
          query('via', { type: 'string', enum: ['api', 'session', 'cli', 'import', 'system'] }, 'how the actor came in'),
          query('type', { type: 'string', pattern: '^[A-Z][A-Za-z0-9]*$', maxLength: 128 }, 'event type'),
          query('correlationId', { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' }, 'every event of one request'),
          query('from', { type: 'string', format: 'date-time' }, 'recordedAt at or after this time (with a time zone)'),
          query('to', { type: 'string', format: 'date-time' }, 'recordedAt before this time (not before from)'),
          query('take', { type: 'integer', minimum: 1, maximum: MAX_TAKE, default: DEFAULT_TAKE }, 'page size'),
          query('cursor', { type: 'string' }, 'opaque: the nextCursor of the previous page'),
        ],
        responses: {
          200: cursorPageResponse(entry),
          400: error('a parameter that is unknown, repeated or malformed (code invalid-argument; details.path names it)'),
          401: error('not authenticated'),
          403: error('neither an administrator nor a project administrator (code forbidden)'),
        },
      },
    },
  };
}
