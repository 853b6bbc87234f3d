import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { dataResponse, errorResponse as error } from '../shared/openapi';
import { SIGNED_ENTITIES } from './content';
import { BUILT_IN_MEANINGS, REAUTHENTICATION_WINDOW_MS } from './signatures';

/** Electronic signatures in the `custom` category (tag `evidence`). */
export function signaturePaths(): OpenAPIV3.PathsObject {
  const hex: OpenAPIV3.SchemaObject = { type: 'string', pattern: '^[0-9a-f]{64}$' };
  const position: OpenAPIV3.SchemaObject = { type: 'string', pattern: '^[0-9]+$' };
  const reauth: OpenAPIV3.SchemaObject = { type: 'string', enum: ['password', 'session-login'] };
  const signature: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false,
    required: ['id', 'entity', 'entityId', 'projectId', 'meaning', 'signer', 'comment', 'signedAt', 'position', 'reauthentication', 'content', 'appliesTo', 'revoked'],
    properties: {
      id: { type: 'string', format: 'uuid' }, entity: { type: 'string', enum: [...SIGNED_ENTITIES] }, entityId: { type: 'integer' }, projectId: { type: 'integer' },
      meaning: { type: 'string' },
      signer: { type: 'object', additionalProperties: false, required: ['userId', 'name', 'email'], properties: { userId: { type: 'integer' }, name: { type: 'string' }, email: { type: 'string' } } },
      comment: { type: 'string', nullable: true }, signedAt: { type: 'string', format: 'date-time' },
      position: { ...position, description: 'the RecordSigned event\'s position' },
      reauthentication: reauth,
      content: {
        type: 'object', additionalProperties: false, required: ['position', 'hash', 'events'], description: 'what was signed: the last position of the record\'s events then, SHA-256 of their `<position>:<chain hash>\\n` lines, their number',
        properties: { position, hash: hex, events: { type: 'integer' } },
      },
      appliesTo: { type: 'string', enum: ['current', 'earlier-version'], description: 'earlier-version: the record changed after it was signed' },
      revoked: {
        type: 'object', nullable: true, additionalProperties: false, required: ['at', 'reason', 'by', 'position', 'reauthentication'],
        properties: {
          at: { type: 'string', format: 'date-time' }, reason: { type: 'string' }, position, reauthentication: reauth,
          by: { type: 'object', additionalProperties: false, required: ['userId', 'name'], properties: { userId: { type: 'integer' }, name: { type: 'string' } } },
        },
      },
    },
  };
  const target: Record<string, OpenAPIV3.SchemaObject> = {
    entity: { type: 'string', enum: [...SIGNED_ENTITIES] }, id: idSchema(),
    password: { type: 'string', minLength: 1, maxLength: 1024, description: `the signer's password: needed unless the session signed in within the last ${REAUTHENTICATION_WINDOW_MS / 60_000} minutes (an API token alone never signs)` },
  };
  const common = {
    401: error('not authenticated; or the re-authentication failed (reauthentication-failed: a wrong password, counted as a failed login) or is missing (reauthentication-required)'),
    404: error('no such record (or signature), or one the caller cannot see (not-found)'),
    501: error('the event store keeps no hash chain (integrity-not-kept)'),
    503: error('EventStoreDB: the chain has not reached the record\'s events yet (chain-behind); try again shortly'),
  };
  return {
    '/api/signatures': {
      post: {
        operationId: 'signRecord', tags: ['evidence'], summary: 'sign a test run, milestone or repository case with a meaning',
        description: `The signature is an event (RecordSigned on signatures-<entity>-<id>) with the signer, the meaning, the time and the hash of the record's content as of its position. Meanings: ${BUILT_IN_MEANINGS.join(', ')} and those administrators define (signatureMeaning, with the roles that may sign with each); administrators and the project's admins may sign with any.`,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object', additionalProperties: false, required: ['entity', 'id', 'meaning'],
                properties: { ...target, meaning: { type: 'string', minLength: 1, maxLength: 100 }, comment: { type: 'string', maxLength: 2000, nullable: true } },
              },
            },
          },
        },
        responses: {
          201: dataResponse('signed', signature),
          400: error('a malformed body (invalid-argument), or a meaning nobody defined (unknown-meaning, with the known ones)'),
          ...common,
          403: error('the caller\'s role in the record\'s project may not sign with the meaning (forbidden)'),
          409: error('the record has no events (nothing-to-sign)'),
        },
      },
      get: {
        operationId: 'listSignatures', tags: ['evidence'], summary: 'a record\'s signatures, oldest first, revoked ones included, and its content now',
        parameters: [
          { name: 'entity', in: 'query', required: true, schema: { type: 'string', enum: [...SIGNED_ENTITIES] } },
          { name: 'id', in: 'query', required: true, schema: idSchema() },
        ],
        responses: {
          200: {
            description: 'the signatures',
            content: {
              'application/json': {
                schema: {
                  type: 'object', additionalProperties: false, required: ['data', 'content'],
                  properties: {
                    data: { type: 'array', items: signature },
                    content: { type: 'object', additionalProperties: false, required: ['position', 'hash', 'events'], properties: { position, hash: hex, events: { type: 'integer' } } },
                  },
                },
              },
            },
          },
          400: error('entity or id missing or malformed (invalid-argument)'),
          ...common,
        },
      },
    },
    '/api/signatures/{signatureId}/revoke': {
      post: {
        operationId: 'revokeSignature', tags: ['evidence'], summary: 'revoke a signature (a signed act itself: re-authentication and a reason)',
        description: 'By its signer, the project\'s admins or an administrator. The signature stays, marked revoked (SignatureRevoked).',
        parameters: [{ name: 'signatureId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', additionalProperties: false, required: ['entity', 'id', 'reason'], properties: { ...target, reason: { type: 'string', minLength: 1, maxLength: 2000 } } } } },
        },
        responses: {
          200: dataResponse('revoked', signature),
          400: error('a malformed id or body (invalid-argument)'),
          ...common,
          403: error('neither the signer nor an admin of the project (forbidden)'),
          409: error('revoked already (signature-revoked)'),
        },
      },
    },
  };
}
