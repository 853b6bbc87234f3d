import type { OpenAPIV3 } from 'openapi-types';
import { ID_RANGE, idSchema } from '../shared/validate';
import { DATE_FIELDS, KEYWORD_FIELDS, MAX_RESULT_WINDOW, SEARCH_TYPES, TEXT_FIELDS } from '../shared/search';
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CLAUSES, MAX_QUERY_DEPTH } from './query';
import { FACET_SIZE, FACET_TYPES } from './search.service';

type Schema = OpenAPIV3.SchemaObject;

/** GET and POST /api/search, GET /api/search/facets in the `custom` category (services/api/openapi.ts). */
export function searchPaths(): OpenAPIV3.PathsObject {
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const error = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json({ $ref: '#/components/schemas/Error' } as Schema) });
  const query = (name: string, schema: Schema, description: string, required = false): OpenAPIV3.ParameterObject =>
    ({ name, in: 'query', required, schema, description });
  const nullable = (schema: Schema): Schema => ({ ...schema, nullable: true });

  const typeList = `one of ${SEARCH_TYPES.join(', ')}`;
  const after = query('after', { type: 'string', pattern: '^[0-9]{1,19}$' },
    'an event position (the X-Event-Position of a write): answer once the search index has applied it (waits at most WRITE_TIMEOUT_MS, then 503 search-lagging); past the log\'s head: 400 invalid-argument with details.head');
  const eventPosition: OpenAPIV3.ParameterObject = {
    name: 'X-Event-Position', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9]{1,19}$' }, description: 'as `after`',
  };
  const project = query('project', idSchema(),
    'a project id: documents of that project only (a project the caller cannot read: an empty answer)');
  const type = query('type', { type: 'string' }, `entity types, separated by commas (${typeList}); default: every type`);

  const document: Schema = {
    type: 'object',
    description: 'the document as indexed; what a type does not have is null or empty',
    required: ['type', 'id', 'projectId', 'project', 'title', 'tags', 'customFields', 'createdAt'],
    properties: {
      type: { type: 'string', enum: [...SEARCH_TYPES] },
      id: { type: 'string' },
      projectId: { type: 'string' },
      project: { type: 'string', description: 'the project\'s name' },
      title: { type: 'string' },
      description: nullable({ type: 'string' }),
      content: nullable({ type: 'string', description: 'a case\'s steps and expected results, a session\'s mission, a comment\'s text, the start of a failure\'s stack trace' }),
      tags: { type: 'array', items: { type: 'string' } },
      folder: nullable({ type: 'string', description: 'folder path, names joined with " / "' }),
      template: nullable({ type: 'string' }),
      state: nullable({ type: 'string' }),
      status: nullable({ type: 'string' }),
      creator: nullable({ type: 'string' }),
      configuration: nullable({ type: 'string' }),
      branch: nullable({ type: 'string' }),
      failureType: nullable({ type: 'string' }),
      runId: nullable({ type: 'string' }),
      caseId: nullable({ type: 'string' }),
      customFields: {
        type: 'array',
        items: { type: 'object', required: ['name', 'value'], properties: { name: { type: 'string' }, value: { type: 'string' } } },
      },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: nullable({ type: 'string', format: 'date-time' }),
      executedAt: nullable({ type: 'string', format: 'date-time' }),
    },
  };
  const answer: Schema = {
    type: 'object',
    required: ['total', 'took', 'hits'],
    properties: {
      total: { type: 'integer', description: 'how many documents match (exact), of projects the caller may read' },
      took: { type: 'integer', description: 'the engine\'s time for the query, ms' },
      hits: {
        type: 'array',
        items: {
          type: 'object',
          required: ['type', 'id', 'projectId', 'score', 'title', 'highlight', 'source'],
          properties: {
            type: { type: 'string', enum: [...SEARCH_TYPES] },
            id: { type: 'string' },
            projectId: { type: 'string' },
            score: nullable({ type: 'number', description: 'relevance (null when sorted by something else and the engine did not score)' }),
            title: { type: 'string' },
            highlight: {
              type: 'object',
              description: 'per highlighted text field, fragments as HTML: the words found in <mark>…</mark>, everything else escaped',
              additionalProperties: { type: 'array', items: { type: 'string' } },
            },
            source: document,
          },
        },
      },
    },
  };
  const clause: Schema = {
    type: 'object',
    description: `one clause of the subset (docs/search.md): multi_match {query, fields: ["title^3", ...], type: best_fields|phrase, operator: or|and}, `
      + 'match {<field>: text | {query, operator}}, match_phrase {<field>: text | {query}}, term {<field>: value | {value}}, terms {<field>: [values]}, '
      + 'range {<date field>: {gte, gt, lte, lt}}, prefix {<field>: text | {value}}, bool {must, should, filter, must_not, minimum_should_match}, match_all {}. '
      + `Text fields: ${TEXT_FIELDS.join(', ')}; exact-value fields: ${KEYWORD_FIELDS.join(', ')}; date fields: ${DATE_FIELDS.join(', ')}. `
      + `At most ${MAX_QUERY_CLAUSES} clauses nested at most ${MAX_QUERY_DEPTH} deep. Anything else (scripts, query_string, wildcard, regexp, `
      + 'other fields) is refused with 400 invalid-search-query naming its path.',
    minProperties: 1,
    maxProperties: 1,
    additionalProperties: true,
  };
  const body: Schema = {
    type: 'object',
    additionalProperties: false,
    properties: {
      query: clause,
      filters: {
        type: 'object',
        additionalProperties: false,
        properties: {
          type: { type: 'array', items: { type: 'string', enum: [...SEARCH_TYPES] }, description: 'entity types; default every type' },
          tags: { type: 'array', items: { type: 'string' }, maxItems: 50, description: 'tag names: a hit carries every one' },
          projectId: { anyOf: [idSchema(), { type: 'string', pattern: '^[1-9][0-9]{0,9}$' }], description: `a project id, as a number or its digits (at most ${ID_RANGE.max}; a project the caller cannot read: an empty answer)` },
          dateRange: {
            type: 'object',
            additionalProperties: false,
            required: ['field'],
            properties: {
              field: { type: 'string', enum: [...DATE_FIELDS] },
              from: { type: 'string', description: 'ISO 8601 date or date-time, included (a time without zone is UTC)' },
              to: { type: 'string', description: 'ISO 8601 date or date-time, included' },
            },
          },
        },
      },
      sort: {
        type: 'array',
        maxItems: 5,
        description: `[{<field>: {order: asc|desc}}], _score included (the default: by score). Fields: _score, ${KEYWORD_FIELDS.join(', ')}, ${DATE_FIELDS.join(', ')}`,
        items: {
          type: 'object',
          minProperties: 1,
          maxProperties: 1,
          additionalProperties: {
            type: 'object', additionalProperties: false, properties: { order: { type: 'string', enum: ['asc', 'desc'] } },
          },
        },
      },
      highlight: {
        type: 'object',
        additionalProperties: false,
        required: ['fields'],
        description: `text fields to highlight ({fields: {title: {}}}); absent: every text field (${TEXT_FIELDS.join(', ')})`,
        properties: { fields: { type: 'object', additionalProperties: { type: 'object', additionalProperties: false } } },
      },
      limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
      offset: { type: 'integer', minimum: 0, default: 0, description: `offset + limit at most ${MAX_RESULT_WINDOW}` },
    },
  };
  const failures = {
    401: error('not authenticated'),
    503: error('search-unavailable: the search engine does not answer (details.engine); search-lagging: the index had not applied the awaited position in time'),
  };
  const facetMap: Schema = { type: 'object', additionalProperties: { type: 'integer' }, description: 'label → how many documents carry it' };
  const facetDescription = (name: keyof typeof FACET_TYPES) => `${name}: counted over ${FACET_TYPES[name].join(', ')} only`;

  return {
    '/api/search': {
      get: {
        operationId: 'search',
        tags: ['search'],
        summary: 'full-text search across entity types',
        description: 'The words of `q` in titles (boost 3), descriptions (2), contents and custom field values, best first. '
          + 'Only documents of projects the caller may read are counted, listed or highlighted.',
        parameters: [
          query('q', { type: 'string', minLength: 1, maxLength: 1000 }, 'the words to search for', true),
          type, project,
          query('limit', { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }, 'hits per page'),
          query('offset', { type: 'integer', minimum: 0, default: 0 }, `hits to skip; offset + limit at most ${MAX_RESULT_WINDOW}`),
          after, eventPosition,
        ],
        responses: {
          200: { description: 'one page of hits', content: json(answer) },
          400: error('invalid-argument (a parameter missing, unknown or malformed, an unknown type; details.path) or result-window-too-large'),
          ...failures,
        },
      },
      post: {
        operationId: 'searchQuery',
        tags: ['search'],
        summary: 'search with a query object, filters, sort and highlight',
        description: 'The query is a validated subset of the search engines\' query DSL, the same on every engine. '
          + 'Filters combine with AND and with the access filter: only documents of projects the caller may read.',
        parameters: [after, eventPosition],
        requestBody: { required: false, content: json(body) },
        responses: {
          200: { description: 'one page of hits', content: json(answer) },
          400: error('invalid-search-query (a part of query, sort or highlight outside the subset; details.path names it), invalid-argument (filters, paging) or result-window-too-large'),
          403: error('csrf-rejected: a session request not sent from the application'),
          ...failures,
        },
      },
    },
    '/api/search/facets': {
      get: {
        operationId: 'searchFacets',
        tags: ['search'],
        summary: 'label counts of tags, folders, templates and states',
        description: `Each facet counts documents of the requested types that have its field, at most ${FACET_SIZE} labels, the most frequent first: `
          + `${(Object.keys(FACET_TYPES) as (keyof typeof FACET_TYPES)[]).map(facetDescription).join('; ')}. A facet none of the requested types has is {}. `
          + 'Only documents of projects the caller may read are counted.',
        parameters: [type, project, query('q', { type: 'string', maxLength: 1000 }, 'count only documents with these words'), after, eventPosition],
        responses: {
          200: {
            description: 'the counts',
            content: json({
              type: 'object',
              required: ['facets'],
              properties: {
                facets: {
                  type: 'object',
                  required: ['tags', 'folders', 'templates', 'states'],
                  properties: { tags: facetMap, folders: facetMap, templates: facetMap, states: facetMap },
                },
              },
            }),
          },
          400: error('invalid-argument: a parameter unknown or malformed, an unknown type (details.path)'),
          ...failures,
        },
      },
    },
  };
}
