import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { dataResponse, errorResponse as error } from '../shared/openapi';
import { CATEGORIES, DEFAULTS } from './runCompare';

/** GET /api/runs/compare in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function analyticsPaths(): OpenAPIV3.PathsObject {
  const nullable = (schema: OpenAPIV3.SchemaObject): OpenAPIV3.SchemaObject => ({ ...schema, nullable: true });
  const query = (name: string, schema: OpenAPIV3.SchemaObject, description: string, required = false): OpenAPIV3.ParameterObject =>
    ({ name, in: 'query', required, schema, description });
  const run: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false, required: ['id', 'name', 'branch', 'commit', 'completedAt'],
    properties: { id: { type: 'integer' }, name: { type: 'string' }, branch: nullable({ type: 'string' }), commit: nullable({ type: 'string' }), completedAt: nullable({ type: 'string', format: 'date-time' }) },
  };
  const side: OpenAPIV3.SchemaObject = nullable({
    type: 'object', additionalProperties: false, required: ['testRunCaseId', 'status', 'durationMs'],
    description: 'the case in this run; null when the run does not have it',
    properties: {
      testRunCaseId: { type: 'integer' },
      status: nullable({ type: 'object', additionalProperties: false, required: ['id', 'name', 'systemName'], properties: { id: { type: 'integer' }, name: { type: 'string' }, systemName: { type: 'string' } } }),
      durationMs: nullable({ type: 'integer', description: 'the sum of its results\' durations, retried results left out' }),
    },
  });
  const compared: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false, required: ['repositoryCaseId', 'title', 'className', 'base', 'head', 'quarantine'],
    properties: {
      repositoryCaseId: { type: 'integer' }, title: { type: 'string' }, className: nullable({ type: 'string' }), base: side, head: side,
      quarantine: nullable({
        type: 'object', additionalProperties: false, required: ['reason', 'since'], description: 'set while the case is quarantined',
        properties: { reason: { type: 'string' }, since: { type: 'string', format: 'date-time' } },
      }),
    },
  };
  const category: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false, required: ['count', 'truncated', 'cases'],
    properties: { count: { type: 'integer' }, truncated: { type: 'boolean', description: 'more cases than `limit`: the first by case id are listed' }, cases: { type: 'array', items: compared } },
  };
  const comparison: OpenAPIV3.SchemaObject = {
    type: 'object', additionalProperties: false, required: ['base', 'head', 'thresholds', 'summary', 'categories'],
    properties: {
      base: run, head: run,
      thresholds: { type: 'object', additionalProperties: false, required: ['durationPercent', 'durationMinMs'], properties: { durationPercent: { type: 'integer' }, durationMinMs: { type: 'integer' } } },
      summary: { type: 'object', additionalProperties: false, required: [...CATEGORIES, 'unchanged'], properties: Object.fromEntries([...CATEGORIES, 'unchanged'].map((c) => [c, { type: 'integer' }])) },
      categories: { type: 'object', additionalProperties: false, required: [...CATEGORIES], properties: Object.fromEntries(CATEGORIES.map((c) => [c, category])) },
    },
  };
  return {
    '/api/runs/compare': {
      get: {
        operationId: 'compareRuns',
        tags: ['history'],
        summary: 'two runs of a project case by case: new failures, fixed, still failing, new and removed tests, other status changes, duration changes',
        description: 'A case fails when its status is a failure (isFailure), passes when a success (isSuccess). A case is in exactly one of newFailures, fixed, stillFailing, '
          + 'newTests, removedTests, otherChanges (any other change of status, e.g. passed → skipped), quarantined (a case quarantined now, whatever its statuses: reported apart) or unchanged; durationChanges lists, besides, every case in both runs '
          + 'whose duration moved by at least durationPercent of the base\'s and at least durationMinMs. Both runs must be readable by the caller (404 otherwise) and of one project.',
        parameters: [
          query('head', idSchema(), 'the run to look at', true),
          query('base', idSchema(), 'the run to compare it with (or baseBranch)'),
          query('baseBranch', { type: 'string', maxLength: 255 }, 'instead of base: the latest finished run of the head\'s project on this branch, not the head itself (finished: completed, or filled by result imports none of which is still queued or running)'),
          query('durationPercent', { type: 'integer', minimum: 1, maximum: 100000, default: DEFAULTS.durationPercent }, 'a duration change counts from this percent of the base\'s duration…'),
          query('durationMinMs', { type: 'integer', minimum: 0, maximum: 86400000, default: DEFAULTS.durationMinMs }, '…and from this many milliseconds'),
          query('limit', { type: 'integer', minimum: 1, maximum: DEFAULTS.maxLimit, default: DEFAULTS.limit }, 'the most cases listed per category (counts stay whole)'),
        ],
        responses: {
          200: dataResponse('the comparison', comparison),
          400: error('a parameter missing, unknown, repeated or malformed (invalid-argument; details.path), or runs of two projects (runs-in-different-projects)'),
          401: error('not authenticated'),
          404: error('a run the caller cannot read or that does not exist, or no finished run on baseBranch (details.path names which)'),
        },
      },
    },
  };
}
