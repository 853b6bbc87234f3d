import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { dataResponse, errorResponse as error } from '../shared/openapi';

/** Quarantine in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function quarantinePaths(): OpenAPIV3.PathsObject {
  const id: OpenAPIV3.ParameterObject = { name: 'id', in: 'path', required: true, schema: idSchema(), description: 'the repository case' };
  const body: OpenAPIV3.RequestBodyObject = {
    required: true,
    content: { 'application/json': { schema: { type: 'object', additionalProperties: false, required: ['reason'], properties: { reason: { type: 'string', minLength: 1, maxLength: 2000, description: 'why (kept in the event, trimmed)' } } } } },
  };
  const answer = dataResponse('done: the read model shows it (X-Event-Position names the event)', {
    type: 'object', additionalProperties: false, required: ['caseId', 'quarantined', 'reason', 'at'],
    properties: { caseId: { type: 'integer' }, quarantined: { type: 'boolean' }, reason: { type: 'string' }, at: { type: 'string', format: 'date-time' } },
  });
  const change = (operationId: string, summary: string, conflict: string): OpenAPIV3.PathItemObject => ({
    post: {
      operationId, tags: ['history'], summary, parameters: [id], requestBody: body,
      description: 'Whoever may change the case (add/edit on the test case repository in its project). The event (CaseQuarantined, CaseReleased on caseQuarantine-<caseId>) records who and why.',
      responses: {
        200: answer,
        400: error('a malformed id or body: reason missing, blank, over 2,000 characters, or another field (invalid-argument)'),
        401: error('not authenticated'),
        403: error('the caller may not change the case (forbidden)'),
        404: error('no such case, or one the caller cannot see (not-found)'),
        409: error(conflict),
      },
    },
  });
  return {
    '/api/cases/{id}/quarantine': change('quarantineCase', 'quarantine a case: its results stay recorded, run comparisons report it apart', 'quarantined already (case-quarantined)'),
    '/api/cases/{id}/release': change('releaseCase', 'release a quarantined case', 'not quarantined (case-not-quarantined)'),
    '/api/quarantine': {
      get: {
        operationId: 'quarantinedCases', tags: ['history'], summary: 'the quarantined cases of a project, longest quarantined first',
        parameters: [{ name: 'projectId', in: 'query', required: true, schema: idSchema() }],
        responses: {
          200: dataResponse('the cases', {
            type: 'array',
            items: {
              type: 'object', additionalProperties: false, required: ['caseId', 'title', 'reason', 'since', 'by'],
              properties: {
                caseId: { type: 'integer' }, title: { type: 'string' }, reason: { type: 'string' }, since: { type: 'string', format: 'date-time' },
                by: { type: 'object', additionalProperties: false, required: ['userId', 'name'], properties: { userId: { type: 'integer', nullable: true }, name: { type: 'string', nullable: true } } },
              },
            },
          }),
          400: error('projectId missing or malformed (invalid-argument)'),
          401: error('not authenticated'),
          404: error('a project the caller cannot see (not-found)'),
        },
      },
    },
  };
}
