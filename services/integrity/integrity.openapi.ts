import type { OpenAPIV3 } from 'openapi-types';

const error = (description: string): OpenAPIV3.ResponseObject =>
  ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** GET /api/admin/integrity in the `custom` category (services/api/openapi.ts). */
export function integrityPaths(): OpenAPIV3.PathsObject {
  const position: OpenAPIV3.SchemaObject = { type: 'string', pattern: '^[1-9][0-9]*$', description: 'an event position (decimal)' };
  const hash: OpenAPIV3.SchemaObject = { type: 'string', pattern: '^[0-9a-f]{64}$', nullable: true, description: 'SHA-256, hex' };
  const report: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false, required: ['from', 'to', 'checked', 'intact', 'firstBreak', 'head', 'seconds', 'anchors'],
    properties: {
      from: position, to: position,
      checked: { type: 'integer', description: 'events checked (up to and including the break, when there is one)' },
      intact: { type: 'boolean' },
      firstBreak: {
        type: 'object', nullable: true, additionalProperties: false, required: ['position', 'problem', 'detail', 'recordedHash', 'computedHash'],
        properties: {
          position,
          problem: {
            type: 'string', enum: ['altered', 'hash-altered', 'missing', 'unhashed', 'head', 'anchor'],
            description: 'altered: the event no longer gives the hash recorded when it was appended; hash-altered: its recorded hash was changed; '
              + 'missing: events are gone before this position; unhashed: the event has no hash; head: the head does not match the last event; '
              + 'anchor: an anchor recorded another hash at this position (the chain was recomputed after a change)',
          },
          detail: { type: 'string' },
          recordedHash: hash, computedHash: hash,
        },
      },
      head: { type: 'object', additionalProperties: false, required: ['position', 'hash'], properties: { position: { type: 'string' }, hash } },
      seconds: { type: 'number' },
      anchors: {
        type: 'object', additionalProperties: false, required: ['checked', 'firstMismatch'],
        description: 'the anchors the log recorded (IntegrityAnchored) for positions in the range, checked once the chain holds',
        properties: {
          checked: { type: 'integer' },
          firstMismatch: {
            type: 'object', nullable: true, additionalProperties: false, required: ['position', 'hash', 'anchoredAt', 'recordedHash'],
            properties: { position, hash, anchoredAt: { type: 'string', format: 'date-time' }, recordedHash: hash },
          },
        },
      },
    },
  };
  return {
    '/api/admin/integrity': {
      get: {
        operationId: 'adminVerifyIntegrity',
        tags: ['admin'],
        summary: 'the hash chain of the event log recomputed, its first break reported (administrators)',
        description: 'Every event carries a SHA-256 hash of its content chained to the hash of the event before it (docs/compliance.md). '
          + 'This recomputes the chain over `from`..`to` from the events themselves (never from a read model) and reports the first break. '
          + '`npm run verify` does the same from the command line.',
        parameters: [
          { name: 'from', in: 'query', required: false, schema: { ...position, default: '1' }, description: 'the first position checked' },
          { name: 'to', in: 'query', required: false, schema: position, description: 'the last position checked (default: the head)' },
        ],
        responses: {
          200: { description: 'the report: intact, or the first break', content: { 'application/json': { schema: report } } },
          400: error('invalid-argument: from or to not a position, from after to, or past the head (details.path names it)'),
          401: error('not authenticated'),
          403: error('forbidden: the caller is not an administrator (access ADMIN)'),
          501: error('integrity-not-kept: the event store keeps no hash chain'),
          503: error('EventStoreDB: `from` is past the chain\'s head and its follower has not reached it yet (chain-behind); try again shortly'),
        },
      },
    },
  };
}
