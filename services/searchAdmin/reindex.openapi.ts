import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { SEARCH_TYPES } from '../shared/search';
import { MIN_REPEAT_MINUTES } from './reindex.decider';
import { MAX_BATCH_SIZE, MAX_PROJECT_IDS, MAX_REPEAT_MINUTES, REINDEX_PAGE, REINDEX_PATH } from './reindex.routes';

type Schema = OpenAPIV3.SchemaObject;

/** The reindex jobs' routes (reindex.routes.ts) in the `custom` category, tag `admin`. */
export function reindexPaths(): OpenAPIV3.PathsObject {
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const error = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json({ $ref: '#/components/schemas/Error' } as Schema) });
  const object = (properties: Record<string, Schema>, description?: string): Schema =>
    ({ type: 'object', additionalProperties: false, required: Object.keys(properties), properties, ...(description && { description }) });
  const nullable = (schema: Schema): Schema => ({ ...schema, nullable: true });
  const count: Schema = { type: 'integer', minimum: 0 };
  const date = (description?: string): Schema => ({ type: 'string', format: 'date-time', nullable: true, ...(description && { description }) });
  const type: Schema = { type: 'string', enum: [...SEARCH_TYPES] };
  const phases = ['scheduled', 'queued', 'running', 'paused', 'completed', 'cancelled', 'failed'];
  const percent: Schema = { type: 'integer', minimum: 0, maximum: 100, description: '100 only once completed (rows written meanwhile can take documents past the total counted at the start)' };

  const job = object({
    jobId: { type: 'integer' },
    mode: { type: 'string', enum: ['full', 'partial'] },
    phase: {
      type: 'string', enum: phases,
      description: 'scheduled: waiting for runAt; queued: due, waiting for the worker (or for another job or a rebuild to finish); running; paused; '
        + 'completed, cancelled, failed: for good',
    },
    projectIds: nullable({ type: 'array', items: { type: 'integer' }, description: 'partial: the projects whose documents are written (null: every project)' }),
    types: nullable({ type: 'array', items: type, description: 'partial: the types written (null: every type)' }),
    batchSize: { type: 'integer' },
    runAt: date('when it was to start (null: at once)'),
    repeatEveryMinutes: nullable({ type: 'integer' }),
    repeatOf: nullable({ type: 'integer', description: 'the job whose completion requested this one (a repeating schedule)' }),
    nextJobId: nullable({ type: 'integer', description: 'the next run of a repeating schedule, once requested' }),
    engine: nullable({ type: 'string', enum: ['postgres', 'opensearch', 'elasticsearch'] }),
    target: nullable({ type: 'string', description: 'the index name prefix the job writes under' }),
    version: nullable({ type: 'integer', description: 'the index version written: a new one (full) or the live one (partial)' }),
    replacesVersion: nullable({ type: 'integer', description: 'full: the version live when it started' }),
    progress: object({
      documents: count, total: { ...count, description: 'documents of the job\'s types (and projects) counted when it started' }, percent,
      types: {
        type: 'array',
        items: object({ type, documents: count, total: count, done: { type: 'boolean' }, afterId: { ...count, description: 'the last row id written: where it resumes' }, percent }),
      },
    }),
    switched: nullable({ type: 'boolean', description: 'completed: whether the aliases were switched to its version (full)' }),
    droppedVersions: nullable({ type: 'array', items: { type: 'integer' } }),
    error: nullable(object({ code: { type: 'string' }, error: { type: 'string' }, details: { type: 'object', additionalProperties: true } }, 'failed: why (docs/errors.md)')),
    createdBy: object({ userId: nullable({ type: 'integer' }), tokenId: nullable({ type: 'integer' }), via: { type: 'string' } }),
    createdAt: date(), startedAt: date(), pausedAt: date(), finishedAt: date(), updatedAt: date(),
  });
  const answer = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json(object({ data: job })) });
  const jobId: OpenAPIV3.ParameterObject = { name: 'jobId', in: 'path', required: true, schema: idSchema() };
  const refusals = { 401: error('not authenticated'), 403: error('forbidden: the caller is not an administrator (access ADMIN); or csrf-rejected') };
  const steer = (action: 'pause' | 'resume' | 'cancel', summary: string, description: string): OpenAPIV3.PathItemObject => ({
    post: {
      operationId: `adminSearchReindex${action[0].toUpperCase()}${action.slice(1)}`,
      tags: ['admin'],
      summary,
      description,
      parameters: [jobId],
      responses: {
        200: answer(`the job (${action === 'pause' ? 'SearchReindexPaused' : action === 'resume' ? 'SearchReindexResumed' : 'SearchReindexCancelled'} recorded; the same again changes nothing)`),
        400: error('invalid-argument: the jobId is not a positive integer, or a body was sent'),
        ...refusals,
        404: error('reindex-job-not-found'),
        409: error('reindex-job-finished: the job completed, failed or was cancelled'),
      },
    },
  });

  return {
    [REINDEX_PATH]: {
      post: {
        operationId: 'adminSearchReindex',
        tags: ['admin'],
        summary: 'request a reindex job: full or partial, now or scheduled (administrators)',
        description: 'Recorded as SearchReindexRequested on the stream `searchReindex-<jobId>` with the administrator as actor; the API\'s '
          + 'reindex worker runs it (docs/search.md, "Reindex"). **full**: a new index version built side by side from the read model, the '
          + 'aliases switched to it when it completes (search answers from the live version meanwhile); it replaces the live version, so it '
          + 'needs `confirm` = the index prefix (e.g. `testament_`). **partial**: the documents of `projectIds` and/or `types` written again '
          + 'into the live version (no switch). Progress: GET the job.',
        requestBody: {
          required: true,
          content: json({
            type: 'object', additionalProperties: false, required: ['mode'],
            properties: {
              mode: { type: 'string', enum: ['full', 'partial'] },
              projectIds: { type: 'array', minItems: 1, maxItems: MAX_PROJECT_IDS, items: idSchema(), description: 'partial only: existing projects' },
              types: { type: 'array', minItems: 1, items: type, description: 'partial only' },
              batchSize: { type: 'integer', minimum: 1, maximum: MAX_BATCH_SIZE, description: 'documents per batch (one progress event each); default SEARCH_BULK_SIZE' },
              runAt: { type: 'string', format: 'date-time', description: 'start then (in the future); absent: at once' },
              repeatEveryMinutes: { type: 'integer', minimum: MIN_REPEAT_MINUTES, maximum: MAX_REPEAT_MINUTES, description: 'request the next run this long after each completion' },
              confirm: { type: 'string', description: 'full only: the index prefix of the engine in use (SEARCH_INDEX_PREFIX, e.g. testament_)' },
            },
          }),
        },
        responses: {
          202: answer('the job, queued or scheduled (X-Event-Position: its request)'),
          400: error('invalid-argument (details.path names the field); confirmation-required: a full reindex without `confirm` = the index prefix (details.expected)'),
          ...refusals,
          404: error('not-found: a projectIds entry does not exist (details.path, details.id)'),
          409: error('reindex-running: a full reindex is queued, running or paused already (details.jobId)'),
          503: error('search-unavailable: a full reindex needs the engine to answer'),
        },
      },
      get: {
        operationId: 'adminSearchReindexJobs',
        tags: ['admin'],
        summary: 'reindex jobs, newest first (administrators)',
        description: 'Next page: the same request with `cursor` = this answer\'s `nextCursor` (null on the last page).',
        parameters: [
          { name: 'take', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: REINDEX_PAGE.max, default: REINDEX_PAGE.default } },
          { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'the nextCursor of the previous page' },
          { name: 'state', in: 'query', required: false, schema: { type: 'string', enum: phases }, description: 'jobs in this phase only' },
        ],
        responses: {
          200: { description: 'a page of jobs', content: json(object({ data: { type: 'array', items: job }, nextCursor: nullable({ type: 'string' }) })) },
          400: error('invalid-argument: an unknown, repeated or bad query parameter (details.path names it)'),
          ...refusals,
        },
      },
    },
    [`${REINDEX_PATH}/{jobId}`]: {
      get: {
        operationId: 'adminSearchReindexJob',
        tags: ['admin'],
        summary: 'a reindex job: phase, progress per type, who requested it, times, error (administrators)',
        parameters: [jobId],
        responses: { 200: answer('the job'), 400: error('invalid-argument: the jobId is not a positive integer'), ...refusals, 404: error('reindex-job-not-found') },
      },
    },
    [`${REINDEX_PATH}/{jobId}/pause`]: steer('pause', 'pause a reindex job (administrators)',
      'A running job stops after the batch in flight; a queued or scheduled one does not start. Resume goes on from its last recorded batch.'),
    [`${REINDEX_PATH}/{jobId}/resume`]: steer('resume', 'resume a paused reindex job (administrators)',
      'It goes on after its last recorded batch (a scheduled one waits for its time).'),
    [`${REINDEX_PATH}/{jobId}/cancel`]: steer('cancel', 'cancel a reindex job (administrators)',
      'It stops for good after the batch in flight. A full reindex\'s unfinished version is dropped (the live one stays); a partial one\'s documents written so far stay.'),
  };
}
