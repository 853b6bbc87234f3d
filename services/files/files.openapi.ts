import type { OpenAPIV3 } from 'openapi-types';
import { idSchema } from '../shared/validate';
import { MAX_FILES_PER_UPLOAD } from './files.routes';

/** The files endpoints in the `custom` category of the OpenAPI documents (services/api/openapi.ts). */
export function filePaths(): OpenAPIV3.PathsObject {
  const error = (description: string): OpenAPIV3.ResponseObject =>
    ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  const key: OpenAPIV3.SchemaObject = { type: 'string', pattern: '^[a-f0-9]{64}$' };
  const keyParameter: OpenAPIV3.ParameterObject = { name: 'key', in: 'path', required: true, schema: key, description: 'the key the upload answered' };
  const nullableInt = (description: string): OpenAPIV3.SchemaObject => ({ type: 'integer', nullable: true, description });
  const storedFile: OpenAPIV3.SchemaObject = {
    type: 'object',
    required: ['key', 'url', 'name', 'size', 'mimeType', 'sha256', 'projectId', 'owner', 'importJobId', 'attachmentId', 'uploadedById', 'storedAt'],
    properties: {
      key: { ...key, description: 'this upload\'s own key (random, never the content\'s hash); GET /api/files/{key}' },
      url: { type: 'string', description: '/api/files/{key}: what an attachment\'s url names to take the file over' },
      name: { type: 'string', description: 'the original file name, sanitised: no path, no control characters, at most 255 bytes' },
      size: { type: 'integer', minimum: 0 },
      mimeType: { type: 'string', description: 'type/subtype as the client declared it (application/octet-stream when malformed)' },
      sha256: { ...key, description: 'the SHA-256 of the content' },
      projectId: { type: 'integer' },
      owner: { type: 'string', enum: ['project', 'attachment', 'importJob'], description: 'what the file belongs to, whose read permission it has' },
      importJobId: nullableInt('the import job whose result file it is'),
      attachmentId: nullableInt('the attachment that holds it'),
      uploadedById: nullableInt('who stored it (its size counts against their quota)'),
      storedAt: { type: 'string', format: 'date-time' },
    },
  };
  const quota = error('storage-quota-exceeded: the files would take the caller past USER_STORAGE_QUOTA_BYTES (details quota, used, requested); '
    + `payload-too-large: a file over MAX_UPLOAD_BYTES (details.limit); too-many-files: more than ${MAX_FILES_PER_UPLOAD}. Nothing stored`);
  const none = 'forbidden: the caller\'s access level is NONE';
  return {
    '/api/files/upload': {
      post: {
        operationId: 'uploadFiles', tags: ['files'], summary: 'store files for a project, each under a key of its own',
        description: `A \`projectId\` field and one or more (at most ${MAX_FILES_PER_UPLOAD}) \`file\` fields, each at most MAX_UPLOAD_BYTES (default 50 MiB). `
          + 'The caller needs add/edit on Documentation in the project. All files of a request are stored, or none. Every upload keeps its own key, name and type, '
          + 'is read by whoever reaches the project, and counts against the uploader\'s quota until deleted. An attachment created with its `url` takes it over.',
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object', required: ['projectId', 'file'],
                properties: {
                  projectId: idSchema('the project the files are for'),
                  file: { type: 'array', minItems: 1, maxItems: MAX_FILES_PER_UPLOAD, items: { type: 'string', format: 'binary' } },
                },
              },
              encoding: { file: { contentType: '*/*' } },
            },
          },
        },
        responses: {
          201: { description: 'stored, in the order of the request', content: { 'application/json': { schema: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: storedFile } } } } } },
          400: error('invalid-argument (projectId missing or malformed), file-required, invalid-file, unexpected-field, invalid-multipart; details.path names the field'),
          401: error('not authenticated'),
          403: error(`${none}; forbidden: no add/edit on Documentation in the project (details.projectId, area); csrf-rejected for a cookie from another origin`),
          404: error('not-found: the project does not exist or is not visible (details.path projectId)'),
          413: quota,
          415: error('the body is not multipart/form-data'),
        },
      },
    },
    '/api/files/usage': {
      get: {
        operationId: 'fileUsage', tags: ['files'], summary: 'the caller\'s storage in use and quota',
        responses: {
          200: {
            description: 'bytes the caller\'s files not deleted take (uploads and import files), and USER_STORAGE_QUOTA_BYTES (0: no limit)',
            content: { 'application/json': { schema: { type: 'object', properties: { data: { type: 'object', properties: { used: { type: 'integer' }, quota: { type: 'integer' } } } } } } },
          },
          401: error('not authenticated'),
          403: error(none),
        },
      },
    },
    '/api/files/{key}': {
      get: {
        operationId: 'downloadFile', tags: ['files'], summary: 'a stored file, as an attachment, to whoever may read its owner',
        description: 'An upload: whoever reaches its project. An attachment\'s file: whoever reads the attachment (not deleted). An import\'s file: whoever reads its run '
          + '(the job not failed, the run not deleted), until IMPORT_FILE_RETENTION_DAYS after the import completed. Anyone else: 404, as if there were no file.',
        parameters: [keyParameter],
        responses: {
          200: {
            description: 'the content, with this upload\'s type',
            headers: {
              'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; with this upload\'s file name' },
              'X-Content-Type-Options': { schema: { type: 'string', enum: ['nosniff'] } },
              ETag: { schema: { type: 'string' }, description: 'the SHA-256 of the content, in quotes' },
              'Cache-Control': { schema: { type: 'string', enum: ['private, no-cache'] }, description: 'a cached copy is checked again (If-None-Match) before each use' },
            },
            content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
          },
          304: { description: 'If-None-Match matched' },
          401: error('not authenticated'),
          403: error(none),
          404: error('file-not-found: no file under this key that the caller may read, or not a key at all'),
        },
      },
      delete: {
        operationId: 'deleteFile', tags: ['files'], summary: 'delete an upload no attachment holds',
        description: 'By its uploader, an administrator, or whoever may delete Documentation in its project. The file of an attachment goes with the attachment; '
          + 'an import\'s files with the import\'s retention.',
        parameters: [keyParameter],
        responses: {
          204: { description: 'deleted (FileDeleted, reason requested)' },
          400: error('file-in-use: the file belongs to an attachment or an import job'),
          401: error('not authenticated'),
          403: error(`${none}; forbidden: neither the uploader nor allowed to delete Documentation in the project`),
          404: error('file-not-found'),
        },
      },
    },
    '/api/test-runs/{testRunId}/import-files': {
      get: {
        operationId: 'testRunImportFiles', tags: ['files'], summary: 'the result files a run\'s imports keep as evidence',
        description: 'The files of every import into the run that did not fail, not deleted yet, with when they will be (expiresAt: IMPORT_FILE_RETENTION_DAYS after '
          + 'the import completed; null while it runs). Readable by whoever can see the run\'s project; download each with GET /api/files/{key}.',
        parameters: [{ name: 'testRunId', in: 'path', required: true, schema: idSchema() }],
        responses: {
          200: {
            description: 'the files, by import job and name',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { data: { type: 'array', items: { allOf: [storedFile, { type: 'object', properties: { expiresAt: { type: 'string', format: 'date-time', nullable: true } } }] } } },
                },
              },
            },
          },
          400: error('testRunId is not a positive integer'),
          401: error('not authenticated'),
          403: error(none),
          404: error('test-run-not-found: no such run, or not visible to the caller'),
        },
      },
    },
  };
}
