import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { IMPORT_FORMATS } from './formats/parsedResult';
import { MAX_IMPORT_FILES } from './imports.routes';

/** The result import endpoints in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function importPaths(): OpenAPIV3.PathsObject {
  const error = (description: string): OpenAPIV3.ResponseObject =>
    ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const id = (description: string): OpenAPIV3.SchemaObject => idSchema(description);
  const nullable = (schema: OpenAPIV3.SchemaObject): OpenAPIV3.SchemaObject => ({ ...schema, nullable: true });
  const fields = (withFormat: boolean): OpenAPIV3.SchemaObject => ({
    type: 'object',
    required: ['projectId', 'files'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 255, description: 'name of the new test run; required unless testRunId is given' },
      projectId: id('the project (the caller needs add/edit on TestRunResults there, and on TestRuns for a new run)'),
      files: { type: 'array', minItems: 1, maxItems: MAX_IMPORT_FILES, items: { type: 'string', format: 'binary' }, description: 'the result files, each at most MAX_UPLOAD_BYTES' },
      stateId: id('workflow state of the new run; must be of scope RUNS (default: the default RUNS state)'),
      parentFolderId: id('folder under which the suites become nested folders (default: the project\'s top level)'),
      testRunId: id('an existing run of the project to add the results to (not completed)'),
      configId: id('configuration of the new run'),
      milestoneId: id('milestone of the new run (of the same project)'),
      tagIds: { type: 'array', items: id('a tag'), description: 'tags of the new run; repeat the field' },
      branch: { type: 'string', minLength: 1, maxLength: 255, description: 'CI context, kept on the new run and the job: the branch built' },
      commit: { type: 'string', pattern: '^[0-9a-fA-F]{7,64}$', description: 'CI context: the commit built (kept in lower case)' },
      buildUrl: { type: 'string', format: 'uri', maxLength: 2048, description: 'CI context: the build\'s page, an absolute http(s) URL without user name or password' },
      ciJobId: {
        type: 'string', minLength: 1, maxLength: 255,
        description: 'CI context: the CI job. The same files (by SHA-256) sent again for the same project, ciJobId and attempt are answered with the first job and its run (complete carries duplicateOf), nothing added twice; without ciJobId every upload imports',
      },
      attempt: { type: 'integer', minimum: 1, maximum: 2147483647, description: 'CI context: the attempt of the CI job (a re-run pipeline); a repeated upload is recognised within one attempt (none given: 1)' },
      newAttempt: { type: 'boolean', default: false, description: 'true: import the files again even when this CI job and attempt sent them before (later repeats answer with this job)' },
      ...(withFormat && {
        format: { type: 'string', enum: ['auto', ...IMPORT_FORMATS], default: 'auto', description: 'auto detects each file\'s format from its first bytes; files of different formats are refused' },
        templateId: id('template of the new repository cases (default: the default template)'),
      }),
    },
  });
  const stream: OpenAPIV3.ResponseObject = {
    description: 'A Server-Sent Events stream (`data: <json>` per event): `{progress: 0..100 (rising), status}`, `{warning: {file, message, case?}}` for a file or case that '
      + 'could not be used, then `{complete: true, testRunId, jobId}` once the read model holds the whole run, or `{error, code, details}` when the job failed '
      + '(nothing applied when it fails before its first chunk). A worker runs the job (services/process/worker), not the process that answers: the stream follows the job '
      + 'in the read model; while no worker has taken it, a status says it waits for one; if its progress cannot be read (the database away) the stream ends with '
      + '`{error, code: "import-interrupted"}` and the job goes on. The job goes on if the client leaves. Headers: X-Import-Job-Id, Location (/api/imports/{jobId}). '
      + 'A repeated CI upload (same project, ciJobId, attempt and files) stores and appends nothing: its stream follows the first job, and `complete` names that job and run with `duplicateOf` (header X-Import-Duplicate-Of).',
    headers: {
      'X-Import-Job-Id': { schema: { type: 'integer' }, description: 'the job, for GET /api/imports/{jobId}' },
      'X-Import-Duplicate-Of': { schema: { type: 'integer' }, description: 'only on a repeated upload: the job that has these files' },
    },
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  };
  const responses = (): OpenAPIV3.ResponsesObject => ({
    200: stream,
    400: error('invalid field, invalid-ci-context (a malformed branch, commit, buildUrl, ciJobId or attempt), no files, an empty file, an unknown format, mixed formats, a state not of scope RUNS, a completed run (nothing stored, nothing appended)'),
    401: error('not authenticated'),
    403: error('forbidden: no permission to add results (or runs) in the project; csrf-rejected for a cookie from another origin'),
    404: error('not-found: the project, run, state, folder, configuration, milestone, template or a tag does not exist or is not visible (details.path)'),
    413: error('payload-too-large: a file over MAX_UPLOAD_BYTES; too-many-files'),
    415: error('the body is not multipart/form-data'),
  });
  const job: OpenAPIV3.SchemaObject = {
    type: 'object',
    properties: {
      jobId: { type: 'integer' },
      state: {
        type: 'string', enum: ['queued', 'running', 'completed', 'failed'],
        description: 'completed (or failed) only once every read model applied the event that finished the job: a client that then reads the run finds every row',
      },
      finalizing: { type: 'boolean', description: 'true while the job is finished but not every read model has applied it yet (state is then running; X-Event-Position names the position to wait for)' },
      parked: nullable({
        type: 'object', required: ['projections', 'position'],
        description: 'a completed job whose events some read models parked (they cannot apply them: docs/architecture.md): its results are recorded but not shown by those read models until an administrator retries them (GET /api/admin/parked-events); the streamed answer ends with the error event-parked instead of complete',
        properties: { projections: { type: 'array', items: { type: 'string' } }, position: { type: 'string' } },
      }),
      projectId: { type: 'integer' },
      testRunId: nullable({ type: 'integer' }),
      testRunName: nullable({ type: 'string' }),
      endpoint: { type: 'string', enum: ['junit', 'test-results'] },
      format: { type: 'string', enum: [...IMPORT_FORMATS] },
      ci: nullable({
        type: 'object', description: 'the CI context the job was requested with (null: none)',
        properties: {
          branch: nullable({ type: 'string' }), commit: nullable({ type: 'string' }), buildUrl: nullable({ type: 'string' }), ciJobId: nullable({ type: 'string' }),
          attempt: nullable({ type: 'integer' }), newAttempt: { type: 'boolean' },
        },
      }),
      options: { type: 'object', description: 'stateId, parentFolderId, configId, milestoneId, tagIds, templateId as requested' },
      files: { type: 'array', items: { type: 'object', properties: { index: { type: 'integer' }, name: { type: 'string' }, sizeBytes: { type: 'integer' }, sha256: { type: 'string' } } } },
      totalCases: nullable({ type: 'integer', description: 'once the files were read through' }),
      processedCases: { type: 'integer' },
      chunks: { type: 'integer' },
      counts: nullable({
        type: 'object', description: 'once completed: `results` every result (retried attempts included); `passed`, `failed`, `error`, `skipped` the tests (run cases given a result) by the status they show, retried attempts apart',
        properties: Object.fromEntries(['results', 'newCases', 'newFolders', 'newRunCases', 'passed', 'failed', 'error', 'skipped'].map((k) => [k, { type: 'integer' }])),
      }),
      warnings: { type: 'array', items: { type: 'object', properties: { file: { type: 'string' }, message: { type: 'string' }, case: { type: 'string' } } }, description: 'the first 100' },
      warningCount: { type: 'integer' },
      error: nullable({ type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' }, details: { type: 'object' } } }),
      createdById: nullable({ type: 'integer' }),
      tokenId: nullable({ type: 'integer' }),
      via: { type: 'string' },
      createdAt: { type: 'string', format: 'date-time' },
      updatedAt: { type: 'string', format: 'date-time' },
      finishedAt: nullable({ type: 'string', format: 'date-time' }),
    },
  };
  return {
    '/api/junit/import': {
      post: {
        operationId: 'importJunit', tags: ['imports'], summary: 'import JUnit XML results into a new or an existing test run',
        requestBody: { required: true, content: { 'multipart/form-data': { schema: fields(false), encoding: { files: { contentType: '*/*' } } } } },
        responses: responses(),
      },
    },
    '/api/test-results/import': {
      post: {
        operationId: 'importTestResults', tags: ['imports'],
        summary: 'import results of JUnit, TestNG, NUnit, xUnit, MSTest (TRX), Mocha (JSON) or Cucumber (JSON)',
        requestBody: { required: true, content: { 'multipart/form-data': { schema: fields(true), encoding: { files: { contentType: '*/*' } } } } },
        responses: responses(),
      },
    },
    '/api/imports/{jobId}': {
      get: {
        operationId: 'importJob', tags: ['imports'], summary: 'an import job: state, counts, warnings, error',
        description: 'Visible to administrators, to whoever started it, and to users who can see its project.',
        parameters: [{ name: 'jobId', in: 'path', required: true, schema: idSchema() }],
        responses: {
          200: {
            description: 'the job',
            headers: { 'X-Event-Position': { schema: { type: 'string' }, description: 'once the job finished: the position of the event that finished it' } },
            content: { 'application/json': { schema: { type: 'object', properties: { data: job } } } },
          },
          400: error('jobId is not a positive integer'),
          401: error('not authenticated'),
          404: error('import-job-not-found'),
        },
      },
    },
    '/api/test-runs/{testRunId}/suite-output': {
      get: {
        operationId: 'testRunSuiteOutput', tags: ['imports'], summary: 'the suites\' own output that result imports kept for a run',
        description: 'system-out and system-err a result file has outside any test case (Gradle writes all output there; NUnit 3 suite output; TRX run output), per suite, '
          + 'in file order, each cut at IMPORT_MAX_OUTPUT_CHARS. Readable by whoever can see the run\'s project. Pages of `limit` (default 20, at most 100); `nextCursor` gives the next page.',
        parameters: [
          { name: 'testRunId', in: 'path', required: true, schema: idSchema() },
          { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
          { name: 'cursor', in: 'query', schema: idSchema(), description: 'nextCursor of the previous page' },
        ],
        responses: {
          200: {
            description: 'a page of suite outputs',
            content: {
              'application/json': {
                schema: {
                  type: 'object', required: ['data', 'nextCursor'],
                  properties: {
                    data: {
                      type: 'array',
                      items: {
                        type: 'object',
                        properties: {
                          id: { type: 'integer' }, suite: { type: 'string', description: 'the suite path, outermost first, joined with " › " (empty: the whole run)' },
                          folderId: nullable({ type: 'integer', description: 'the folder the suite became' }),
                          systemOut: nullable({ type: 'string' }), systemErr: nullable({ type: 'string' }), importJobId: { type: 'integer' }, createdAt: { type: 'string', format: 'date-time' },
                        },
                      },
                    },
                    nextCursor: nullable({ type: 'integer' }),
                  },
                },
              },
            },
          },
          400: error('testRunId, limit or cursor is not a positive integer, or limit is over 100'),
          401: error('not authenticated'),
          404: error('test-run-not-found: no such run, or not visible to the caller'),
        },
      },
    },
  };
}
