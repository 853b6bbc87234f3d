import type { OpenAPIV3 } from 'openapi-types';
import { SEARCH_TYPES } from '../shared/search';
import { LAG_COUNT_LIMIT } from './indices';
import { INDICES_PATH, MAX_SEGMENTS, OPERATIONS_PATH } from './indices.routes';

type Schema = OpenAPIV3.SchemaObject;

/** The indices, maintenance operations, health and nodes of the search administration, in the `custom` category, tag `admin`. */
export function indicesPaths(): OpenAPIV3.PathsObject {
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const error = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json({ $ref: '#/components/schemas/Error' } as Schema) });
  const object = (properties: Record<string, Schema>, description?: string, optional: string[] = []): Schema => {
    // OpenAPI 3.0: `required` is absent rather than empty.
    const required = Object.keys(properties).filter((k) => !optional.includes(k));
    return { type: 'object', additionalProperties: false, ...(required.length && { required }), properties, ...(description && { description }) };
  };
  const nullable = (schema: Schema): Schema => ({ ...schema, nullable: true });
  const count = (description?: string): Schema => ({ type: 'integer', minimum: 0, ...(description && { description }) });
  const engine: Schema = { type: 'string', enum: ['postgres', 'opensearch', 'elasticsearch'] };
  const health: Schema = { type: 'string', enum: ['green', 'yellow', 'red'] };
  const refusals = {
    401: error('not authenticated'),
    403: error('forbidden: the caller is not an administrator (access ADMIN); or csrf-rejected (see the session security scheme)'),
  };
  const unavailable = { 503: error('search-unavailable: the engine does not answer (details.engine); an operation is still recorded, as failed') };
  const emptyBody = (description: string): OpenAPIV3.RequestBodyObject => ({ required: false, description, content: json(object({})) });
  const recorded = 'Recorded as SearchOperationPerformed on the stream `searchAdministration` (outcome succeeded or failed, the actor); '
    + 'the answer\'s `X-Event-Position` is that event\'s.';
  const positionHeader = { 'X-Event-Position': { description: 'the SearchOperationPerformed event recorded', schema: { type: 'string' } } } as const;

  const index = object({
    name: { type: 'string', description: 'the versioned index, `<prefix><type>_v<N>` (PostgreSQL: the rows of that type in the version\'s table)' },
    alias: { type: 'string', description: '`<prefix><type>`, what search reads' },
    type: { type: 'string', enum: [...SEARCH_TYPES] },
    version: { type: 'integer', minimum: 1 },
    live: { type: 'boolean', description: 'the alias points at this index' },
    documents: count('documents as search counts them'),
    sizeBytes: count('on disk (PostgreSQL: the version table\'s size shared out by document counts)'),
    health,
    checkpoint: object({
      position: nullable({ type: 'string', description: 'every event at or before this log position is applied to the version (direct: `search`; Kafka: the lowest `search@<partition>`); null: none' }),
      keys: { type: 'object', additionalProperties: { type: 'string' }, description: 'the indexer\'s checkpoints of the version as written (`search`, or `search#<partition>` offsets and `search@<partition>` positions)' },
    }, 'the indexer\'s checkpoint of this index\'s version'),
    lag: object({
      events: count('events of the log up to `head` not yet applied to this version'),
      exact: { type: 'boolean', description: `false: counting stopped after reading ${LAG_COUNT_LIMIT} events, \`events\` is a lower bound` },
    }),
  });
  const created = object({
    version: { type: 'integer' },
    created: { type: 'array', items: { type: 'string' }, description: 'indices created' },
    aliasesRepaired: { type: 'array', items: { type: 'string' }, description: 'aliases pointed back at the live version' },
  });
  const maintenance = (operation: string): Schema => object({
    operation: { type: 'string', enum: [operation] },
    engine,
    targets: { type: 'array', items: { type: 'string' }, description: 'the indices (PostgreSQL: tables) the engine worked on' },
    details: { type: 'object', description: 'the engine\'s account: shards total/successful/failed (OpenSearch, Elasticsearch), the statement run (PostgreSQL)' },
  });
  const operationPath = (operation: string, summary: string, description: string, body: OpenAPIV3.RequestBodyObject, extra: OpenAPIV3.ResponsesObject = {}) => ({
    post: {
      operationId: `adminSearch${operation.split('-').map((w) => w[0].toUpperCase() + w.slice(1)).join('')}`,
      tags: ['admin'],
      summary,
      description: `${description} ${recorded}`,
      requestBody: body,
      responses: {
        200: { description: 'done', headers: positionHeader, content: json(maintenance(operation)) },
        400: error(`invalid-argument (details.path names it)${operation === 'cache-clear' || operation === 'refresh' ? '; not-supported-by-engine: PostgreSQL has no such thing (details.engine, details.operation), nothing recorded' : ''}`),
        ...refusals,
        ...extra,
        ...unavailable,
      },
    },
  });

  return {
    [INDICES_PATH]: {
      get: {
        operationId: 'adminSearchListIndices',
        tags: ['admin'],
        summary: 'every search index of every version, with the indexer\'s checkpoint and lag (administrators)',
        description: 'Reading appends nothing. `lag.events`: the events of the log up to `head` that the indexer has not applied to the index\'s version '
          + '(PostgreSQL event store, direct transport: head − checkpoint; otherwise counted by reading the log).',
        responses: {
          200: {
            description: 'the indices',
            content: json(object({
              engine,
              liveVersion: nullable({ type: 'integer', description: 'the version search answers from; null before the first switch' }),
              head: { type: 'string', description: 'the event log\'s head position the lags are counted to' },
              indices: { type: 'array', items: index },
            })),
          },
          400: error('invalid-argument: a query parameter (there are none)'),
          ...refusals,
          ...unavailable,
        },
      },
      post: {
        operationId: 'adminSearchCreateMissingIndices',
        tags: ['admin'],
        summary: 'create the missing indices of the live version (version 1 when none is live) and repair its aliases (administrators)',
        description: 'With the spec\'s settings (shards, replicas, max_result_window, refresh_interval) and the custom analyzer. A version that is not live '
          + `gets no alias (it becomes live when a rebuild or reindex switches to it). ${recorded}`,
        requestBody: emptyBody('nothing, or {}'),
        responses: {
          201: { description: 'something was created or repaired', headers: positionHeader, content: json(created) },
          200: { description: 'nothing was missing (created and aliasesRepaired empty)', headers: positionHeader, content: json(created) },
          400: error('invalid-argument: a field in the body'),
          ...refusals,
          ...unavailable,
        },
      },
    },
    [`${INDICES_PATH}/{name}`]: {
      delete: {
        operationId: 'adminSearchDeleteIndex',
        tags: ['admin'],
        summary: 'delete one index, confirmed by its name (administrators)',
        description: 'Only a name GET /api/admin/search/indices lists. A live index is back at once, empty, behind its alias, with the right '
          + 'settings and mapping; its documents come back with a reindex (POST /api/admin/search/reindex, by type). An index of a version '
          + 'being built is deleted for good (PostgreSQL, whose types share a table per version: emptied). Without `confirm` equal to the '
          + `name: 400 confirmation-required, nothing asked, nothing recorded. ${recorded}`,
        parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string' }, description: 'the versioned index, e.g. testament_failures_v3' }],
        requestBody: { required: true, content: json(object({ confirm: { type: 'string', description: 'the index name again' } })) },
        responses: {
          200: { description: 'deleted', headers: positionHeader, content: json(object({
            index: { type: 'string' }, alias: { type: 'string' }, type: { type: 'string', enum: [...SEARCH_TYPES] }, version: { type: 'integer' },
            live: { type: 'boolean' }, documentsDeleted: count(), recreated: { type: 'boolean', description: 'a live index: back, empty, behind its alias' },
          })) },
          400: error('confirmation-required: `confirm` missing or not the name (details.path, details.expected); invalid-argument: another field'),
          ...refusals,
          404: error('search-index-not-found: no index has that name (details.index)'),
          ...unavailable,
        },
      },
    },
    [`${OPERATIONS_PATH}/force-merge`]: operationPath('force-merge', 'merge the segments of every index (administrators)',
      'OpenSearch/Elasticsearch: _forcemerge over this prefix\'s indices (the answer comes when the engine is done, within 5 minutes). '
        + 'PostgreSQL: VACUUM (ANALYZE) of the search tables (dead rows reclaimed, statistics updated; maxSegments does not apply).',
      { required: false, content: json(object({ maxSegments: { type: 'integer', minimum: 1, maximum: MAX_SEGMENTS, description: 'segments to leave per shard (default: the engine\'s)' } }, undefined, ['maxSegments'])) }),
    [`${OPERATIONS_PATH}/cache-clear`]: operationPath('cache-clear', 'clear the query, request and field data caches (administrators)',
      'OpenSearch/Elasticsearch only: PostgreSQL keeps no query cache (400 not-supported-by-engine).', emptyBody('nothing, or {}')),
    [`${OPERATIONS_PATH}/refresh`]: operationPath('refresh', 'refresh every index: what was written becomes searchable (administrators)',
      'OpenSearch/Elasticsearch only: on PostgreSQL a committed row is searchable at once (400 not-supported-by-engine).', emptyBody('nothing, or {}')),
    [`${OPERATIONS_PATH}/mapping-update`]: operationPath('mapping-update', 'put the current mapping on every index (administrators)',
      'Fields the indices lack are added in place. When the engine cannot apply it in place (a field of another type, another analyzer): '
        + '409 mapping-needs-reindex, nothing changed, pointing at a full reindex (which carries its own confirmation); so this call needs none. '
        + 'PostgreSQL: missing indexes created, then REINDEX TABLE CONCURRENTLY; a missing or retyped column is a 409.',
      emptyBody('nothing, or {}'),
      { 409: error('mapping-needs-reindex: nothing changed (details.conflicts; details.reindex: the full reindex request to make); recorded as failed') }),
    '/api/admin/search/health': {
      get: {
        operationId: 'adminSearchHealth',
        tags: ['admin'],
        summary: 'the engine\'s health: green, yellow or red with its reasons (administrators)',
        description: 'OpenSearch/Elasticsearch: the cluster\'s health, the shards not started and the engine\'s explanation of the first unassigned one. '
          + 'PostgreSQL: green when it answers, with the database size and the search tables\' live and dead rows. Reading appends nothing.',
        responses: {
          200: { description: 'the health', content: json(object({
            engine, status: health,
            reasons: { type: 'array', items: { type: 'string' } },
            clusterName: nullable({ type: 'string' }),
            nodes: count(),
            shards: nullable(object({ active: count(), initializing: count(), relocating: count(), unassigned: count() })),
            details: { type: 'object' },
          })) },
          400: error('invalid-argument: a query parameter (there are none)'),
          ...refusals,
          ...unavailable,
        },
      },
    },
    '/api/admin/search/nodes': {
      get: {
        operationId: 'adminSearchNodes',
        tags: ['admin'],
        summary: 'per node: heap, disk, documents, indexing and search totals (administrators)',
        description: 'PostgreSQL: the server as one node; heap, disk and search total null (it does not know them), documents counted, '
          + 'indexing total the rows written to the search tables since its statistics were reset. Reading appends nothing.',
        responses: {
          200: { description: 'the nodes', content: json(object({
            engine,
            nodes: {
              type: 'array',
              items: object({
                id: { type: 'string' }, name: { type: 'string' },
                heap: nullable(object({ usedBytes: count(), maxBytes: count() })),
                disk: nullable(object({ totalBytes: count(), freeBytes: count('what the node may still use') })),
                documents: nullable(count('Lucene documents on OpenSearch/Elasticsearch: nested custom fields count')),
                indexingTotal: nullable(count()),
                searchTotal: nullable(count('queries served since the node started')),
              }),
            },
          })) },
          400: error('invalid-argument: a query parameter (there are none)'),
          ...refusals,
          ...unavailable,
        },
      },
    },
  };
}
