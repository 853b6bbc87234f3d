import { Router, type Request, type RequestHandler, type Response } from 'express';
import { permits, resolveProjectAccess } from '../access/projectAccess';
import { asyncHandler } from '../shared/http';
import type { CommandDeps } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { badRequest, HttpError, notFound } from '../shared/errors';
import { normaliseMimeType, sanitiseFileName } from './fileMeta';
import { isFileKey, type FileStore } from './fileStore';
import { stagedUploads, type UploadedFile } from './stagedUploads';
import { fileUrl, rowOf, type StoredFileRow, type StoredFiles } from './storedFiles';
import { parseId } from '../shared/validate';

export const UPLOAD_PATH = '/api/files/upload';
/** Files per upload request; each may be up to maxUploadBytes. */
export const MAX_FILES_PER_UPLOAD = 20;
const FILE_FIELD = 'file';
const PROJECT_FIELD = 'projectId';

export interface FileRoutesDeps extends CommandDeps {
  files: FileStore;
  storedFiles: StoredFiles;
  /** Largest file accepted, in bytes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
}

/**
 * The files API, mounted behind requireAuthentication; a caller of access level NONE is refused
 * everything (403). POST /api/files/upload stores files for a project (multipart/form-data: a
 * `projectId` field and one or more `file` fields): each file gets a key of its own, keeps its
 * own name and type, and counts against the uploader's quota. A request's files are staged first
 * and kept only when the whole request was read and valid: a failed upload stores nothing.
 * GET /api/files/:key serves a file to whoever may read its owner (storedFiles.ts), 404 to
 * anyone else; DELETE /api/files/:key removes an upload no attachment holds; GET
 * /api/files/usage tells a user their storage in use; GET /api/test-runs/:id/import-files lists
 * the result files the run's imports keep as evidence.
 */
export function fileRoutes(deps: FileRoutesDeps): Router {
  const router = Router();
  const uploads = stagedUploads({ files: deps.files, maxUploadBytes: deps.maxUploadBytes, field: FILE_FIELD, maxFiles: MAX_FILES_PER_UPLOAD, maxFields: 20 });

  router.post(UPLOAD_PATH, refuseNone, (req, res, next) => {
    uploads.parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      storeUploads(deps, req, res).catch(next);
    });
  });

  router.get('/api/files/usage', refuseNone, asyncHandler(async (req, res) => {
    const userId = req.auth!.user.id;
    res.json({ data: { used: await deps.storedFiles.usage(userId), quota: deps.storedFiles.quotaBytes } });
  }));

  router.get('/api/files/:key', refuseNone, asyncHandler(async (req, res) => {
    const key = req.params.key;
    const file = isFileKey(key) ? await deps.storedFiles.readable(req.auth!.user, key) : null;
    const opened = file && (await deps.files.open(key));
    if (!file || !opened) throw fileNotFound(key);
    const { content } = opened;
    res.attachment(file.name); // Content-Disposition: attachment, the name encoded per RFC 6266 (sets a type too)
    res.setHeader('Content-Type', file.mimeType);
    res.setHeader('Content-Length', String(opened.file.size));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Stored content is served, never rendered as a page of this origin.
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    res.setHeader('ETag', `"${file.sha256}"`);
    // Read permission may be taken away: a cached copy is checked again (If-None-Match, 304) before each use.
    res.setHeader('Cache-Control', 'private, no-cache');
    if (req.fresh || req.method === 'HEAD') {
      content.destroy();
      if (req.fresh) res.status(304);
      res.end();
      return;
    }
    content.once('error', (err) => res.destroy(err));
    res.once('close', () => content.destroy());
    content.pipe(res);
  }));

  router.delete('/api/files/:key', refuseNone, asyncHandler(async (req, res) => {
    const key = req.params.key;
    const user = req.auth!.user;
    const file = isFileKey(key) ? await deps.storedFiles.readable(user, key) : null;
    if (!file) throw fileNotFound(key);
    if (file.owner !== 'project') {
      const how = file.owner === 'attachment' ? `delete attachment ${file.attachmentId}` : `it is kept with import job ${file.importJobId} (IMPORT_FILE_RETENTION_DAYS)`;
      throw new HttpError(400, 'file-in-use', `The file belongs to its ${file.owner === 'attachment' ? 'attachment' : 'import job'}: ${how}`, { key, owner: file.owner });
    }
    if (file.uploadedById !== user.id) {
      const access = await resolveProjectAccess(deps.knex, user);
      const grant = access.projects.get(file.projectId);
      if (!access.all && !(grant && permits(grant, 'Documentation', 'canDelete')))
        throw new HttpError(403, 'forbidden', `Only its uploader, or who may delete documentation in project ${file.projectId}, may delete this file`, { projectId: file.projectId, area: 'Documentation' });
    }
    await deps.storedFiles.remove([key], 'requested', metadataFor(req.auth!, req));
    res.status(204).end();
  }));

  router.get('/api/test-runs/:testRunId/import-files', refuseNone, asyncHandler(async (req, res) => {
    const testRunId = parseId('testRunId', req.params.testRunId);
    const run = await deps.knex('test_runs').where({ id: testRunId }).first('project_id', 'is_deleted');
    const user = req.auth!.user;
    const access = run && !run.is_deleted ? await resolveProjectAccess(deps.knex, user) : null;
    if (!access || !(access.all || access.projects.has(run.project_id))) throw new HttpError(404, 'test-run-not-found', `No test run ${testRunId}`, { id: testRunId });
    const rows = await deps.knex('stored_files as f').join('import_jobs as j', 'j.job_id', 'f.import_job_id')
      .where('j.test_run_id', testRunId).whereNot('j.state', 'failed').whereNull('f.deleted_at')
      .orderBy([{ column: 'f.import_job_id' }, { column: 'f.name' }, { column: 'f.key' }])
      .select('f.*', 'j.state as job_state', 'j.finished_at');
    const retentionDays = deps.storedFiles.importFileRetentionDays;
    res.json({
      data: rows.map((r) => {
        const expiresAt = r.job_state === 'completed' && r.finished_at ? new Date(new Date(r.finished_at).getTime() + retentionDays * 86_400_000).toISOString() : null;
        return { ...view(rowOf(r)), expiresAt };
      }),
    });
  }));
  return router;
}

const refuseNone: RequestHandler = (req, _res, next) => {
  if (req.auth?.user.access !== 'NONE') return next();
  next(new HttpError(403, 'forbidden', 'Your access level is NONE: you may not upload or read files', { access: 'NONE' }));
};

const fileNotFound = (key: string) => new HttpError(404, 'file-not-found', 'No file you may read is stored under this key', { key });

/** A stored file as the API answers it. */
function view(file: StoredFileRow) {
  return {
    key: file.key, url: fileUrl(file.key), name: file.name, size: file.size, mimeType: file.mimeType, sha256: file.sha256, projectId: file.projectId,
    owner: file.owner, importJobId: file.importJobId, attachmentId: file.attachmentId, uploadedById: file.uploadedById, storedAt: file.storedAt,
  };
}

async function storeUploads(deps: FileRoutesDeps, req: Request, res: Response): Promise<void> {
  const uploads = (req.files ?? []) as UploadedFile[];
  try {
    const body = (req.body ?? {}) as Record<string, unknown>;
    for (const field of Object.keys(body)) {
      if (field === FILE_FIELD) throw badRequest('invalid-file', 'The field "file" must be a file, not a text value', { path: FILE_FIELD });
      if (field !== PROJECT_FIELD) throw badRequest('unexpected-field', `Unexpected field "${field}": send "${PROJECT_FIELD}" and "${FILE_FIELD}" fields`, { path: field });
    }
    const projectId = await uploadProject(deps, req, body[PROJECT_FIELD]);
    if (uploads.length === 0) throw badRequest('file-required', 'Send at least one file in a field named "file"', { path: FILE_FIELD });
    const stored = await deps.storedFiles.store({
      userId: req.auth!.user.id, projectId, importJobId: null, metadata: metadataFor(req.auth!, req),
      uploads: uploads.map((u) => ({ staged: u.staged, name: sanitiseFileName(u.originalname), mimeType: normaliseMimeType(u.mimetype) })),
    });
    res.status(201).json({ data: stored.map(view) });
  } finally {
    // What was kept was moved out of its staging place; the rest is dropped.
    await Promise.all(uploads.map((u) => deps.files.discard(u.staged)));
  }
}

/** The project the files are for: one the caller reaches, where they may add documentation (attachments). */
async function uploadProject(deps: FileRoutesDeps, req: Request, raw: unknown): Promise<number> {
  if (raw === undefined) throw badRequest('invalid-argument', `${PROJECT_FIELD} is required: the project the files are for`, { path: PROJECT_FIELD });
  if (Array.isArray(raw)) throw badRequest('invalid-argument', `${PROJECT_FIELD} must be given once`, { path: PROJECT_FIELD });
  const projectId = parseId(PROJECT_FIELD, String(raw));
  const user = req.auth!.user;
  const access = await resolveProjectAccess(deps.knex, user);
  const project = await deps.knex('projects').where({ id: projectId, is_deleted: false }).first('id');
  const grant = access.projects.get(projectId);
  if (!project || (!access.all && !grant)) throw notFound(`Project ${projectId} does not exist`, { path: PROJECT_FIELD, id: projectId });
  if (grant && !permits(grant, 'Documentation', 'canAddEdit'))
    throw new HttpError(403, 'forbidden', `You may not add documentation (attachments) in project ${projectId}`, { projectId, area: 'Documentation' });
  return projectId;
}
