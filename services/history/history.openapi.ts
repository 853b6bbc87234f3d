import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { ENTITIES, writtenAs } from '../../contracts/entities';
import { DEFAULT_LIMIT, MAX_LIMIT } from './eventLog';
import { DEFAULT_TAKE, MAX_TAKE } from './history.query';
import { cursorPageResponse, dataResponse, errorResponse as error } from '../shared/openapi';

/** GET /api/history/{entity}/{id}, GET /api/history/diff and GET /api/events in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function historyPaths(): OpenAPIV3.PathsObject {
  const nullable = (schema: OpenAPIV3.SchemaObject): OpenAPIV3.SchemaObject => ({ ...schema, nullable: true });
  const entities = Object.values(ENTITIES).filter((e) => writtenAs(e) === 'aggregate').map((e) => e.name);
  const change: OpenAPIV3.SchemaObject = { type: 'object', additionalProperties: false, required: ['field', 'before', 'after'], properties: { field: { type: 'string' }, before: {}, after: {} } };
  const point: OpenAPIV3.SchemaObject = {
    type: 'object', required: ['exists', 'events'],
    properties: {
      position: nullable({ type: 'string' }), time: { type: 'string', format: 'date-time' },
      exists: { type: 'boolean', description: 'the entity existed at this point (created, not deleted)' },
      events: { type: 'integer', description: 'its events up to this point' },
    },
  };
  const entry: OpenAPIV3.SchemaObject = {
    type: 'object',
    additionalProperties: false,
    required: ['position', 'type', 'recordedAt', 'actor', 'correlationId', 'import', 'changes'],
    properties: {
      position: { type: 'string', pattern: '^[1-9][0-9]*$', description: 'global position of the event in the log (64-bit, as a decimal string)' },
      type: { type: 'string', description: 'event type, e.g. TestRunUpdated; for a row an import wrote in bulk, its first entry is the chunk event (TestResultsImported, ExternalImportRowsWritten)' },
      recordedAt: { type: 'string', format: 'date-time' },
      actor: {
        type: 'object', additionalProperties: false, required: ['userId', 'name', 'tokenId', 'via'],
        properties: {
          userId: nullable({ type: 'integer', description: 'null for the system (bootstrap, seeding)' }),
          name: nullable({ type: 'string' }),
          tokenId: nullable({ type: 'integer', description: 'the API token used, if any' }),
          via: { type: 'string', enum: ['api', 'session', 'cli', 'import', 'system'] },
        },
      },
      correlationId: { type: 'string', description: 'the X-Correlation-Id of the request that caused the event (an import job\'s own for its chunks)' },
      import: nullable({
        type: 'object', additionalProperties: false, required: ['kind', 'jobId', 'chunk'],
        description: 'set on the entry of the import chunk that created the row',
        properties: { kind: { type: 'string', enum: ['results', 'external'], description: 'a result import (/api/imports/jobs) or the external-tool migration' }, jobId: { type: 'integer' }, chunk: { type: 'integer' } },
      }),
      changes: {
        type: 'array',
        description: 'what the event changed, in catalogue order: for a creation every field it set (before null); for a deletion the soft-delete flag. '
          + 'Link lists (tagIds) and owned children (steps) are compared whole. Credentials never appear, not even by name.',
        items: change,
      },
    },
  };
  return {
    '/api/history/{entity}/{id}': {
      get: {
        operationId: 'entityHistory',
        tags: ['history'],
        summary: 'an entity\'s timeline: its events, oldest first, each with the fields it changed from what to what',
        description: 'Whoever may read the row now through the model API may read its history (its rights now decide, not its rights when each event happened); '
          + 'anyone else gets 404, as for a row that does not exist. Owned children (a case\'s steps) change with their parent: read the parent\'s history. '
          + 'Page with `cursor` = the previous answer\'s `nextCursor`.',
        parameters: [
          { name: 'entity', in: 'path', required: true, schema: { type: 'string', enum: entities } },
          { name: 'id', in: 'path', required: true, schema: idSchema() },
          { name: 'take', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_TAKE, default: DEFAULT_TAKE }, description: 'page size' },
          { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'opaque: the nextCursor of the previous page' },
        ],
        responses: {
          200: cursorPageResponse(entry),
          400: error('an entity that is not in the catalogue or has no history of its own (code not-an-aggregate), a malformed id, take or cursor (code invalid-argument; details.path names it)'),
          401: error('not authenticated'),
          404: error('no such row, or one the caller may not read'),
        },
      },
    },
    '/api/events': {
      get: {
        operationId: 'eventLog',
        tags: ['history'],
        summary: 'the event log as NDJSON, paged by position: one envelope per line, as the Kafka topic carries it (docs/events.md)',
        description: 'Administrators read all of it; project administrators the events of the projects they administer (never events without a project); anyone else gets 403. '
          + 'The next page\'s `after` is in the X-Next-After header, the log\'s last position in X-Head-Position. passwordHash and tokenHash read "redacted".',
        parameters: [
          { name: 'after', in: 'query', required: false, schema: { type: 'string', pattern: '^(0|[1-9][0-9]{0,18})$', default: '0' }, description: 'events strictly after this position' },
          { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }, description: 'the most events of the page (it also ends at 16 MB, or after 50,000 events read)' },
          { name: 'types', in: 'query', required: false, schema: { type: 'string' }, description: 'comma-separated event types' },
          { name: 'project', in: 'query', required: false, schema: idSchema(), description: 'only this project\'s events' },
        ],
        responses: {
          200: {
            description: 'one page: an envelope (contracts/envelope.schema.json) per line',
            headers: {
              'X-Next-After': { schema: { type: 'string' }, description: 'the after of the next page' },
              'X-Head-Position': { schema: { type: 'string' }, description: 'the log\'s last position when the page was read' },
            },
            content: { 'application/x-ndjson': { schema: { type: 'string' } } },
          },
          400: error('a parameter that is unknown, repeated or malformed, or an event type that does not exist (code invalid-argument; details.path names it)'),
          401: error('not authenticated'),
          403: error('neither an administrator nor a project administrator (code forbidden)'),
        },
      },
    },
    '/api/history/diff': {
      get: {
        operationId: 'entityDiff',
        tags: ['history'],
        summary: 'what changed in an entity between two points of the log: its fields, and its owned children item by item',
        description: 'A point is a position or a time (the events recorded at or before it); `to` absent: now. Before its creation an entity\'s fields were all null '
          + '(`exists` false). Owned children (a case\'s steps, a result\'s step results and field values) are listed added, removed and changed by id; '
          + 'for a run also its run cases and results (`testRunCases`, `results`), as the read model held them at both points (asOf). '
          + 'Whoever may read the row now may diff it (404 otherwise). Credentials never appear.',
        parameters: [
          { name: 'entity', in: 'query', required: true, schema: { type: 'string', enum: entities } },
          { name: 'id', in: 'query', required: true, schema: idSchema() },
          { name: 'from', in: 'query', required: true, schema: { type: 'string' }, description: 'a position (decimal) or an ISO 8601 date-time with a zone' },
          { name: 'to', in: 'query', required: false, schema: { type: 'string' }, description: 'the same; absent: now' },
        ],
        responses: {
          200: dataResponse('the differences', {
                      type: 'object', additionalProperties: false, required: ['entity', 'id', 'from', 'to', 'changes', 'children'],
                      properties: {
                        entity: { type: 'string' }, id: { type: 'integer' },
                        from: point, to: point,
                        changes: { type: 'array', items: change },
                        children: {
                          type: 'object', description: 'per owned relation (steps, fieldValues, stepResults)',
                          additionalProperties: {
                            type: 'object', additionalProperties: false, required: ['added', 'removed', 'changed'],
                            properties: {
                              added: { type: 'array', items: { type: 'object' } },
                              removed: { type: 'array', items: { type: 'object' } },
                              changed: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['id', 'changes'], properties: { id: {}, changes: { type: 'array', items: change } } } },
                            },
                          },
                        },
                      },
                    }),
          400: error('an entity, id, from or to missing or malformed (invalid-argument; details.path), or an entity without a history of its own (not-an-aggregate)'),
          401: error('not authenticated'),
          404: error('no such row, or one the caller may not read'),
        },
      },
    },
  };
}
