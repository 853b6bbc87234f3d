import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { EXTERNAL_LOOKUP_TYPES } from '../migration/externalLookup';
import { LOOKUP_TYPES } from './lookup.routes';

/** POST /api/lookup in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function lookupPaths(): OpenAPIV3.PathsObject {
  const error = (description: string): OpenAPIV3.ResponseObject =>
    ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const found = (description: string): OpenAPIV3.ResponseObject => ({
    description,
    content: { 'application/json': { schema: { type: 'object', properties: { data: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' }, created: { type: 'boolean' } } } } } } },
  });
  return {
    '/api/lookup': {
      post: {
        operationId: 'lookup', tags: ['lookup'], summary: 'the id of a project, state, configuration, milestone, tag, folder, test run or template, by its exact name',
        description: 'Seen through the caller\'s permissions: a project the caller cannot see is not found. Milestones, folders and test runs are looked up in `projectId`; '
          + 'states are the enabled workflows of scope RUNS. Several rows of the name: 409 ambiguous-name (details.ids), except test runs: the newest. '
          + '`createIfMissing` (tags only) creates a missing tag when the caller may create tags (201).',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                oneOf: [
                  {
                    type: 'object', required: ['type', 'name'], additionalProperties: false,
                    properties: {
                      type: { type: 'string', enum: [...LOOKUP_TYPES] }, name: { type: 'string', minLength: 1, maxLength: 2000 },
                      projectId: idSchema(), createIfMissing: { type: 'boolean' },
                    },
                  },
                  {
                    type: 'object', required: ['type', 'externalId'], additionalProperties: false,
                    description: 'A row an external-tool migration imported, by its id (`1001`) or key (`C1001`) in the source tool: answers {id, type, externalId, source: {tool, jobId, sourceId, key, createdBy, createdAt, mapped}}; '
                      + 'rows of a rolled-back job (mapped ones too) are not found; 409 ambiguous-external-id when imports of several jobs, or into several projects, have it (details.ids, details.jobIds): '
                      + 'narrow it with `jobId` and/or `projectId` (the project the row is in; for type project, its own id; 400 for types that belong to no project).',
                    properties: {
                      type: { type: 'string', enum: Object.keys(EXTERNAL_LOOKUP_TYPES) }, externalId: { oneOf: [{ type: 'string', minLength: 1, maxLength: 200 }, { type: 'integer' }] },
                      jobId: { ...idSchema(), description: 'only rows this external import job imported' },
                      projectId: { ...idSchema(), description: 'only rows in this project' },
                    },
                  },
                ],
              },
            },
          },
        },
        responses: {
          200: found('found'), 201: found('a tag created (createIfMissing)'),
          400: error('invalid-argument (details.path)'), 401: error('not authenticated'), 403: error('forbidden: may not create tags'),
          404: error('not-found: no row of that name (or the project is not visible: details.path projectId)'),
          409: error('ambiguous-name: several rows of that name (details.ids); ambiguous-external-id'),
        },
      },
    },
  };
}
