import { Router, type Request, type Response } from 'express';
import { asyncHandler } from '../api/http';
import { badRequest, HttpError } from '../shared/errors';
import { normaliseMimeType, sanitiseFileName } from './fileMeta';
import { isFileKey, type FileStore } from './fileStore';
import { stagedUploads, type UploadedFile } from './stagedUploads';

export const UPLOAD_PATH = '/api/files/upload';
/** Files per upload request; each may be up to maxUploadBytes. */
export const MAX_FILES_PER_UPLOAD = 20;
const FILE_FIELD = 'file';

export interface FileRoutesDeps {
  files: FileStore;
  /** Largest file accepted, in bytes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
}

/**
 * POST /api/files/upload (multipart/form-data, one or more `file` fields) and GET /api/files/:key.
 * Mounted behind requireAuthentication. A request's files are staged first and committed only
 * when the whole request was read and valid: a failed upload stores nothing.
 */
export function fileRoutes(deps: FileRoutesDeps): Router {
  const router = Router();
  const uploads = stagedUploads({ files: deps.files, maxUploadBytes: deps.maxUploadBytes, field: FILE_FIELD, maxFiles: MAX_FILES_PER_UPLOAD, maxFields: 20 });

  router.post(UPLOAD_PATH, (req, res, next) => {
    uploads.parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      storeUploads(deps.files, req, res).catch(next);
    });
  });

  router.get('/api/files/:key', asyncHandler(async (req, res) => {
    const key = req.params.key;
    const opened = isFileKey(key) ? await deps.files.open(key) : null;
    if (!opened) throw new HttpError(404, 'file-not-found', 'No file is stored under this key', { key });
    const { file, content } = opened;
    res.attachment(file.name); // Content-Disposition: attachment, the name encoded per RFC 6266 (sets a type too)
    res.setHeader('Content-Type', file.mimeType);
    res.setHeader('Content-Length', String(file.size));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Stored content is served, never rendered as a page of this origin.
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    res.setHeader('ETag', `"${file.sha256}"`);
    res.setHeader('Cache-Control', 'private, max-age=31536000, immutable');
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
  return router;
}

async function storeUploads(files: FileStore, req: Request, res: Response): Promise<void> {
  const uploads = (req.files ?? []) as UploadedFile[];
  const committed = new Set<UploadedFile>();
  try {
    const field = Object.keys(req.body ?? {})[0];
    if (field === FILE_FIELD) throw badRequest('invalid-file', 'The field "file" must be a file, not a text value', { path: FILE_FIELD });
    if (field !== undefined) throw badRequest('unexpected-field', `Unexpected field "${field}": send only "file" fields`, { path: field });
    if (uploads.length === 0) throw badRequest('file-required', 'Send at least one file in a field named "file"', { path: FILE_FIELD });
    const data = [];
    for (const upload of uploads) {
      const name = sanitiseFileName(upload.originalname);
      const mimeType = normaliseMimeType(upload.mimetype);
      const stored = await files.commit(upload.staged, { name, mimeType });
      committed.add(upload);
      data.push({ key: stored.key, name, size: stored.size, mimeType, sha256: stored.sha256 });
    }
    res.status(201).json({ data });
  } finally {
    await Promise.all(uploads.filter((u) => !committed.has(u)).map((u) => files.discard(u.staged)));
  }
}
