import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { EXTERNAL_IMPORT_PAGE, EXTERNAL_IMPORT_PATH } from './externalImport.routes';
import { MAPPING_KEYS } from './mappings';

type Schema = OpenAPIV3.SchemaObject;

/** The external-tool migration's routes (externalImport.routes.ts) in the `custom` category, tag `admin`. */
export function externalImportPaths(): OpenAPIV3.PathsObject {
  const json = (schema: Schema) => ({ 'application/json': { schema } });
  const error = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json({ $ref: '#/components/schemas/Error' } as Schema) });
  const date: Schema = { type: 'string', format: 'date-time', nullable: true };
  const phases = ['uploaded', 'analysing', 'analysed', 'configured', 'queued', 'importing', 'completed', 'failed', 'cancelled', 'rollingBack', 'rolledBack'];
  const issue: Schema = { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } } };
  const entry: Schema = {
    type: 'object', required: ['sourceId', 'action'], additionalProperties: false,
    properties: {
      sourceId: { type: 'string', description: 'the id of the row in the export (an integer is accepted too)' },
      action: { type: 'string', enum: ['map', 'create', 'skip'] },
      targetId: { ...idSchema(), description: 'map: the existing entity (a state maps to a workflow, a template field to a case or result field by `kind`)' },
      kind: { type: 'string', enum: ['caseField', 'resultField'], description: 'templateFields only' },
    },
  };
  const mappings: Schema = {
    type: 'object', additionalProperties: false,
    properties: Object.fromEntries(MAPPING_KEYS.map((k) => [k, { type: 'array', items: entry }])),
    description: 'One list per mappable dataset; the entries given replace those of the same source row, the others stay as saved (or as suggested).',
  };
  const job: Schema = {
    type: 'object',
    properties: {
      jobId: { type: 'integer' },
      phase: { type: 'string', enum: phases },
      cancelRequested: { type: 'boolean' },
      file: { type: 'object', properties: { name: { type: 'string' }, size: { type: 'integer' }, sha256: { type: 'string' }, container: { type: 'string', enum: ['zip', 'json'] }, deleted: { type: 'boolean' } } },
      createdBy: { type: 'object', nullable: true, properties: { id: { type: 'integer' }, name: { type: 'string' }, email: { type: 'string' } } },
      createdById: { type: 'integer', nullable: true }, tokenId: { type: 'integer', nullable: true }, via: { type: 'string' },
      datasets: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string' }, entries: { type: 'array', items: { type: 'string' } }, disposition: { type: 'string', enum: ['import', 'skip'] },
            skipReason: { type: 'string', nullable: true }, rowCount: { type: 'integer' },
            sampleRows: { type: 'array', items: {}, description: 'the first rows, cut to bounds (detail view only)' }, samplesTruncated: { type: 'boolean' },
            warnings: { type: 'array', items: issue }, errors: { type: 'array', items: issue },
            progress: {
              type: 'object', nullable: true, description: 'once importing: rows of the dataset, processed so far, created, skipped, percent',
              properties: { rows: { type: 'integer' }, processed: { type: 'integer' }, created: { type: 'integer' }, skipped: { type: 'integer' }, percent: { type: 'integer' } },
            },
          },
        },
      },
      ignored: { type: 'array', items: { type: 'object' } }, warnings: { type: 'array', items: issue }, errors: { type: 'array', items: issue },
      totals: { type: 'object', nullable: true },
      durationUnit: { type: 'string', enum: ['ns', 'us', 'ms', 's'], nullable: true },
      mappings: { ...mappings, nullable: true },
      sources: { type: 'object', nullable: true, description: 'detail view: the configuration rows of the export per mapping list ({sourceId, name, hint})' },
      suggestions: { ...mappings, nullable: true, description: 'detail view: the suggested mappings (what reset restores)' },
      progress: { type: 'object', properties: { currentDataset: { type: 'string', nullable: true }, rows: { type: 'integer' }, processed: { type: 'integer' }, percent: { type: 'integer' } } },
      counts: { type: 'object', nullable: true, description: 'completed: per dataset {created, mapped, skipped} (template_fields: the fields linked to their templates, and those left out)' },
      skipReasons: { type: 'object', description: 'one ended job (completed, failed, cancelled): per dataset, the rows skipped for each reason' },
      deleted: { type: 'object', nullable: true, description: 'rollback: rows deleted per dataset' },
      error: { type: 'object', nullable: true, description: 'failed: {code, error, details, phase}' },
      createdAt: date, analysedAt: date, configuredAt: date, queuedAt: date, startedAt: date, finishedAt: date, rolledBackAt: date, updatedAt: date,
    },
  };
  const one = (description: string): OpenAPIV3.ResponseObject => ({ description, content: json({ type: 'object', properties: { data: job } }) });
  const jobId: OpenAPIV3.ParameterObject = { name: 'jobId', in: 'path', required: true, schema: idSchema() };
  const common = { 400: error('invalid-argument (details.path)'), 401: error('not authenticated'), 403: error('forbidden: administrators only'), 404: error('external-import-not-found') };
  const conflict = error('external-import-<phase>: the job\'s phase does not allow it (details.phase)');
  const action = (operationId: string, summary: string, description: string) => ({
    post: {
      operationId, tags: ['admin'], summary, description, parameters: [jobId],
      responses: { 202: one('the job, with the request recorded'), ...common, 409: conflict },
    },
  });
  return {
    [EXTERNAL_IMPORT_PATH]: {
      post: {
        operationId: 'uploadExternalExport', tags: ['admin'], summary: 'start an external-tool migration: upload the export',
        description: 'A ZIP (each *.json entry a whole export or one dataset named by its file stem) or a bare JSON export, as the multipart field `file`, '
          + 'at most EXTERNAL_IMPORT_MAX_BYTES. Stored under a name the server chooses; a worker analyses it (phase analysing, then analysed or failed).',
        requestBody: { required: true, content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } } } },
        responses: {
          201: one('the job (phase uploaded)'), 400: error('file-required, empty-file, export-not-recognised, invalid-multipart'),
          401: error('not authenticated'), 403: error('forbidden: administrators only'), 413: error('payload-too-large (details.limit)'), 415: error('not multipart'),
        },
      },
      get: {
        operationId: 'listExternalImports', tags: ['admin'], summary: 'the external import jobs, newest first (without sample rows, sources and suggestions)',
        parameters: [
          { name: 'take', in: 'query', schema: { type: 'integer', minimum: 1, maximum: EXTERNAL_IMPORT_PAGE.max, default: EXTERNAL_IMPORT_PAGE.default } },
          { name: 'cursor', in: 'query', schema: idSchema(), description: 'nextCursor of the previous page' },
          { name: 'phase', in: 'query', schema: { type: 'string', enum: phases } },
        ],
        responses: {
          200: { description: 'a page of jobs', content: json({ type: 'object', properties: { data: { type: 'array', items: job }, nextCursor: { type: 'string', nullable: true } } }) },
          400: error('invalid-argument'), 401: error('not authenticated'), 403: error('forbidden: administrators only'),
        },
      },
    },
    [`${EXTERNAL_IMPORT_PATH}/{jobId}`]: {
      get: {
        operationId: 'getExternalImport', tags: ['admin'], summary: 'one external import job: phase, datasets with samples, warnings and errors, sources, mappings, progress',
        parameters: [jobId], responses: { 200: one('the job'), ...common },
      },
    },
    [`${EXTERNAL_IMPORT_PATH}/{jobId}/configuration`]: {
      put: {
        operationId: 'configureExternalImport', tags: ['admin'], summary: 'save the mappings (map to an existing entity, create, or skip each source row)',
        description: 'Allowed while the job is analysed or configured. Users are matched by e-mail; a user created is a placeholder (inactive, a password nobody knows). '
          + '`reset: true` restores the suggested mappings. `durationUnit`: the unit of the export\'s durations (default us, as Testmo writes them). '
          + 'A target that does not exist or is of the wrong kind, a source row the export lacks, a created name already taken: 400 naming the entry (details.path); nothing is saved.',
        parameters: [jobId],
        requestBody: {
          required: true,
          content: json({ type: 'object', additionalProperties: false, properties: { mappings, durationUnit: { type: 'string', enum: ['ns', 'us', 'ms', 's'] }, reset: { type: 'boolean' } } }),
        },
        responses: { 200: one('the job, configured'), ...common, 400: error('invalid-argument, invalid-mapping, mapping-name-taken (details.path)'), 409: error('external-import-<phase>, external-import-has-errors') },
      },
    },
    [`${EXTERNAL_IMPORT_PATH}/{jobId}/preview`]: {
      post: {
        operationId: 'previewExternalImport', tags: ['admin'], summary: 'a dry run: per dataset, rows created, mapped and skipped (with reasons) and the first rows; nothing written',
        parameters: [jobId],
        responses: {
          200: {
            description: 'the preview',
            content: json({
              type: 'object',
              properties: {
                data: {
                  type: 'object',
                  properties: {
                    datasets: { type: 'array', items: { type: 'object', properties: { dataset: { type: 'string' }, entity: { type: 'string' }, rows: { type: 'integer' }, create: { type: 'integer' }, map: { type: 'integer' }, skip: { type: 'integer' }, skipReasons: { type: 'object' }, readWith: { type: 'string', description: 'a dataset read with its owner: the owner dataset; create counts the rows kept with it' }, sample: { type: 'array', items: { type: 'object' } } } } },
                    skipped: { type: 'array', items: { type: 'object', properties: { dataset: { type: 'string' }, rows: { type: 'integer' }, reason: { type: 'string' } } } },
                    conflicts: {
                      type: 'array', description: 'rows execute would refuse (a placeholder user whose e-mail is claimed): map or skip them first',
                      items: { type: 'object', properties: { dataset: { type: 'string' }, sourceId: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } } },
                    },
                  },
                },
              },
            }),
          },
          ...common, 409: conflict,
        },
      },
    },
    [`${EXTERNAL_IMPORT_PATH}/{jobId}/execute`]: action('executeExternalImport', 'queue the import (202); a worker runs it', 'Refused unless the job is analysed and configured (409 external-import-not-configured, external-import-<phase>).'),
    [`${EXTERNAL_IMPORT_PATH}/{jobId}/cancel`]: action('cancelExternalImport', 'stop the job at its next chunk; what was imported stays and is listed', 'A job waiting for its mappings or for a worker ends at once.'),
    [`${EXTERNAL_IMPORT_PATH}/{jobId}/rollback`]: action('rollbackExternalImport', 'undo a completed, failed or cancelled import',
      'Every row the job created is deleted the way a user deletes it (events with the administrator as actor), in the reverse order of the import; entities it mapped to stay untouched.'),
  };
}
