import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { TOKEN_PAGE } from './tokens';

const error = (description: string): OpenAPIV3.ResponseObject =>
  ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** /api/admin/tokens in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function adminPaths(): OpenAPIV3.PathsObject {
  const query = (name: string, schema: OpenAPIV3.SchemaObject, description: string): OpenAPIV3.ParameterObject =>
    ({ name, in: 'query', required: false, schema, description });
  const date = (nullable: boolean): OpenAPIV3.SchemaObject => ({ type: 'string', format: 'date-time', ...(nullable && { nullable: true }) });
  const token: OpenAPIV3.SchemaObject = {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'owner', 'name', 'prefix', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'],
    description: 'a token without its value or hash',
    properties: {
      id: { type: 'integer' },
      owner: {
        type: 'object', additionalProperties: false, required: ['id', 'email', 'name'],
        properties: { id: { type: 'integer' }, email: { type: 'string' }, name: { type: 'string' } },
      },
      name: { type: 'string' },
      prefix: { type: 'string', description: 'the first characters of the value, to recognise it' },
      createdAt: date(false), expiresAt: date(true), lastUsedAt: date(true), revokedAt: date(true),
    },
  };
  const forbidden = error('forbidden: the caller is not an administrator (access ADMIN)');
  const unauthenticated = error('not authenticated; or session-expired (see the session security scheme)');
  return {
    '/api/admin/tokens': {
      get: {
        operationId: 'adminListTokens',
        tags: ['admin'],
        summary: 'every user\'s API tokens, newest first (administrators)',
        description: 'Ordered by creation time, then id, newest first. Next page: repeat the request (same filters) with '
          + '`cursor` = this answer\'s `nextCursor`; `nextCursor` is null on the last page. `skip` is the alternative for jumping to a page.',
        parameters: [
          query('take', { type: 'integer', minimum: 1, maximum: TOKEN_PAGE.max, default: TOKEN_PAGE.default }, 'page size'),
          query('cursor', { type: 'string' }, 'the nextCursor of the previous page; not together with skip'),
          query('skip', { type: 'integer', minimum: 0, default: 0 }, 'tokens to skip; not together with cursor'),
          query('userId', idSchema(), 'tokens of this owner only'),
          query('active', { type: 'boolean' }, 'true: neither revoked nor expired; false: revoked or expired'),
        ],
        responses: {
          200: {
            description: 'a page of tokens',
            content: {
              'application/json': {
                schema: {
                  type: 'object', additionalProperties: false, required: ['data', 'nextCursor'],
                  properties: { data: { type: 'array', items: token }, nextCursor: { type: 'string', nullable: true } },
                },
              },
            },
          },
          400: error('invalid-argument: a bad or unknown query parameter (details.path names it)'),
          401: unauthenticated,
          403: forbidden,
        },
      },
    },
    '/api/admin/tokens/{id}': {
      delete: {
        operationId: 'adminRevokeToken',
        tags: ['admin'],
        summary: 'revoke any user\'s API token (administrators)',
        description: 'Recorded as ApiTokenRevoked with the administrator as actor; the token is refused from the next request on. '
          + 'Revoking a revoked token changes nothing and answers 204 too.',
        parameters: [{ name: 'id', in: 'path', required: true, schema: idSchema() }],
        responses: {
          204: { description: 'revoked' },
          400: error('invalid-argument: the id is not a positive integer'),
          401: unauthenticated,
          403: error('forbidden: the caller is not an administrator; or csrf-rejected (see the session security scheme)'),
          404: error('api-token-not-found'),
          503: error('read-model-lagging: recorded, not yet visible'),
        },
      },
    },
  };
}
