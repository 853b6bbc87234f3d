import type { OpenAPIV3 } from 'openapi-types';
import { SEARCH_TYPES } from '../shared/search';
import { METRICS_WINDOW_MINUTES } from '../search/metrics';
import { FAILURE_PAGE, RATE_MINUTES, STALE_AFTER_SECONDS } from './monitoring';

type Schema = OpenAPIV3.SchemaObject;

/** GET /api/admin/search/metrics, /indexing-rate and /errors (the panel's monitoring) in the `custom` category, tag `admin`. */
export function monitoringPaths(): OpenAPIV3.PathsObject {
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const error = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json({ $ref: '#/components/schemas/Error' } as Schema) });
  const query = (name: string, schema: Schema, description: string): OpenAPIV3.ParameterObject => ({ name, in: 'query', required: false, schema, description });
  const object = (properties: Record<string, Schema>, description?: string): Schema =>
    ({ type: 'object', additionalProperties: false, required: Object.keys(properties), properties, ...(description && { description }) });
  const nullable = (schema: Schema): Schema => ({ ...schema, nullable: true });
  const count = (description?: string): Schema => ({ type: 'integer', minimum: 0, ...(description && { description }) });
  const date: Schema = { type: 'string', format: 'date-time' };
  const refusals = {
    400: error('invalid-argument: an unknown, repeated or bad query parameter (details.path names it)'),
    401: error('not authenticated'),
    403: error('forbidden: the caller is not an administrator (access ADMIN)'),
  };
  const ok = (description: string, schema: Schema): OpenAPIV3.ResponseObject => ({ description, content: json(schema) });

  const counts = {
    queries: object({ search: count('GET and POST /api/search answered'), facets: count('GET /api/search/facets answered') }),
    errors: object({
      refused: count('answered 4xx (the request was refused: invalid query, result window too large)'),
      failed: count('answered 5xx (search-unavailable: the engine did not answer; search-lagging; internal-error)'),
      byCode: { type: 'object', additionalProperties: { type: 'integer' }, description: 'per error code' },
    }),
  };
  const metrics = object({
    process: object({ id: { type: 'string', description: '<host>/<pid>' }, host: { type: 'string' }, pid: { type: 'integer' } },
      'the API process whose counters these are: each replica counts its own requests'),
    since: { ...date, description: 'when this process began counting (its start)' },
    total: object(counts, 'since `since`'),
    window: object({
      minutes: { type: 'integer', description: `the window: the last ${METRICS_WINDOW_MINUTES} minutes, the current one included` },
      from: date,
      ...counts,
      latencyMs: object({
        samples: count('queries answered in the window'),
        p50: nullable({ type: 'number' }),
        p95: nullable({ type: 'number' }),
        max: nullable({ type: 'number' }),
      }, 'time to answer a served query (read-your-writes wait included), ms, at most 9% above the exact percentile; null without a sample'),
    }),
  });

  const rate = object({
    minutes: { type: 'integer' },
    from: { ...date, description: 'the first minute\'s start' },
    to: { ...date, description: 'now (the database\'s clock)' },
    documents: count('documents written by every indexer in the window'),
    documentsPerSecond: { type: 'number', description: 'average over the window, from `from` to `to`' },
    points: {
      type: 'array',
      description: 'every minute of the window, oldest first',
      items: object({
        minute: date, documents: count(), documentsPerSecond: { type: 'number', description: 'the current minute: over its seconds so far' },
      }),
    },
    indexers: {
      type: 'array',
      description: 'every indexer process seen in the last day, most recently heard of first',
      items: object({
        indexer: { type: 'string', description: '<host>/<pid>' }, host: { type: 'string' }, pid: { type: 'integer' },
        state: { type: 'string', description: 'starting, running, retrying, failed or stopped' },
        engine: nullable({ type: 'string' }), version: nullable({ type: 'integer', description: 'the index version it writes' }),
        position: { type: 'string', description: 'the last log position applied' },
        lastError: nullable({ type: 'string' }), documentsWritten: count('since it started'),
        startedAt: date, updatedAt: date,
        stale: { type: 'boolean', description: `not heard of for ${STALE_AFTER_SECONDS} s (it publishes every 10 s while it runs): stopped, or cut off from the database` },
      }),
    },
  });

  const failure = object({
    id: { type: 'integer' },
    engine: { type: 'string' },
    version: { type: 'integer', description: 'the index version the document was written to' },
    type: { type: 'string', enum: [...SEARCH_TYPES] },
    documentId: { type: 'string' },
    position: { type: 'string', description: 'the log position (or Kafka partition:offset) of the batch that wrote it' },
    reason: { type: 'string', description: 'the engine\'s refusal' },
    failedAt: date,
    resolvedAt: nullable({ ...date, description: 'when it was written at last, or replaced by a rebuild; null: still failing' }),
  });

  return {
    '/api/admin/search/metrics': {
      get: {
        operationId: 'adminSearchMetrics',
        tags: ['admin'],
        summary: 'search metrics: queries served, errors, latency (administrators)',
        description: 'The search API\'s own counters in the process that answers (each API replica counts its own requests, from its start): '
          + `searches and facet counts answered, errors by code, latency p50/p95 of the last ${METRICS_WINDOW_MINUTES} minutes. No parameter.`,
        responses: { 200: ok('the counters', metrics), ...refusals },
      },
    },
    '/api/admin/search/indexing-rate': {
      get: {
        operationId: 'adminSearchIndexingRate',
        tags: ['admin'],
        summary: 'documents indexed per second over the last minutes, and the indexers\' state (administrators)',
        description: 'What every indexer process published (wherever it runs): the documents it wrote after each acknowledged batch, per minute, '
          + 'and its state. Documents of a rebuild or reindex are not counted.',
        parameters: [query('minutes', { type: 'integer', minimum: 1, maximum: RATE_MINUTES.max, default: RATE_MINUTES.default }, 'the window, the current minute included')],
        responses: { 200: ok('the rate', rate), ...refusals },
      },
    },
    '/api/admin/search/errors': {
      get: {
        operationId: 'adminSearchErrors',
        tags: ['admin'],
        summary: 'the indexer\'s error log: documents the engine refused (administrators)',
        description: 'Documents the engine kept refusing after the indexer\'s retries, newest first (time, then id). Next page: repeat the request '
          + '(same filters) with `cursor` = this answer\'s `nextCursor`; null on the last page. `skip` is the alternative for jumping to a page.',
        parameters: [
          query('take', { type: 'integer', minimum: 1, maximum: FAILURE_PAGE.max, default: FAILURE_PAGE.default }, 'page size'),
          query('cursor', { type: 'string' }, 'the nextCursor of the previous page; not together with skip'),
          query('skip', { type: 'integer', minimum: 0, default: 0 }, 'failures to skip; not together with cursor'),
          query('resolved', { type: 'boolean' }, 'true: written at last (or replaced by a rebuild); false: still failing'),
          query('type', { type: 'string', enum: [...SEARCH_TYPES] }, 'failures of documents of this type only'),
        ],
        responses: {
          200: ok('a page of failures', object({ data: { type: 'array', items: failure }, nextCursor: nullable({ type: 'string' }) })),
          ...refusals,
        },
      },
    },
  };
}
