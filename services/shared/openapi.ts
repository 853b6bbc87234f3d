import type { OpenAPIV3 } from 'openapi-types';

/** Pieces the hand-written OpenAPI paths share (audit, history). */

/** A response with the error body ({error, code, details}). */
export const errorResponse = (description: string): OpenAPIV3.ResponseObject =>
  ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

/** A 200 answer of one page: `{ data: [items], nextCursor }`, the cursor null on the last page. */
export const cursorPageResponse = (items: OpenAPIV3.SchemaObject): OpenAPIV3.ResponseObject => ({
  description: 'one page',
  content: {
    'application/json': {
      schema: {
        type: 'object', additionalProperties: false, required: ['data', 'nextCursor'],
        properties: { data: { type: 'array', items }, nextCursor: { type: 'string', nullable: true, description: 'null on the last page' } },
      },
    },
  },
});

/** A 200 answer `{ data }` with this schema. */
export const dataResponse = (description: string, data: OpenAPIV3.SchemaObject): OpenAPIV3.ResponseObject => ({
  description,
  content: { 'application/json': { schema: { type: 'object', additionalProperties: false, required: ['data'], properties: { data } } } },
});
