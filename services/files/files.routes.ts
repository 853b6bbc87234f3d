import { Router, type Request, type Response } from 'express';
import multer, { MulterError } from 'multer';
import { asyncHandler } from '../api/http';
import { badRequest, HttpError } from '../shared/errors';
import { normaliseMimeType, sanitiseFileName } from './fileMeta';
import { FileTooLargeError, isFileKey, type FileStore, type StagedFile } from './fileStore';

export const UPLOAD_PATH = '/api/files/upload';
/** Files per upload request; each may be up to maxUploadBytes. */
export const MAX_FILES_PER_UPLOAD = 20;
const FILE_FIELD = 'file';

export interface FileRoutesDeps {
  files: FileStore;
  /** Largest file accepted, in bytes (MAX_UPLOAD_BYTES). */
  maxUploadBytes: number;
}

/** A file as multer hands it over: the staged copy rides along on the file object. */
type UploadedFile = Express.Multer.File & { staged: StagedFile };

/** A failure of the store itself (disk full, permissions): a server error, not a malformed request. */
class StoreFailure extends Error {
  constructor(cause: unknown) {
    super('The file store failed', { cause });
  }
}

/**
 * POST /api/files/upload (multipart/form-data, one or more `file` fields) and GET /api/files/:key.
 * Mounted behind requireAuthentication. A request's files are staged first and committed only
 * when the whole request was read and valid: a failed upload stores nothing.
 */
export function fileRoutes(deps: FileRoutesDeps): Router {
  const router = Router();
  // What each request staged, so that a failed request can wait for and drop all of it before
  // answering (multer's own bookkeeping lets an error through while a file is still being written).
  const stagings = new WeakMap<Request, Promise<StagedFile | null>[]>();
  const storage: multer.StorageEngine = {
    _handleFile(req, file, done) {
      const staging = deps.files.stage(file.stream, { maxBytes: deps.maxUploadBytes });
      stagings.set(req, [...(stagings.get(req) ?? []), staging.catch(() => null)]);
      staging.then(
        (staged) => done(null, { size: staged.size, staged } as Partial<UploadedFile>),
        (err) => done(err instanceof FileTooLargeError || !isStoreError(err) ? err : new StoreFailure(err)),
      );
    },
    _removeFile(_req, file, done) {
      deps.files.discard((file as UploadedFile).staged).then(() => done(null), done);
    },
  };
  const dropStaged = async (req: Request) => {
    const staged = await Promise.all(stagings.get(req) ?? []);
    await Promise.all(staged.map((s) => s && deps.files.discard(s)));
  };
  const parse = multer({
    storage,
    defParamCharset: 'utf8', // file names as browsers and curl send them
    limits: { fileSize: deps.maxUploadBytes, files: MAX_FILES_PER_UPLOAD + 1, fields: 20, fieldSize: 64 * 1024, parts: MAX_FILES_PER_UPLOAD + 21 },
  }).array(FILE_FIELD, MAX_FILES_PER_UPLOAD);

  router.post(UPLOAD_PATH, (req, res, next) => {
    if (!req.is('multipart/form-data'))
      return next(new HttpError(415, 'unsupported-media-type', 'Send the files as multipart/form-data', { contentType: req.headers['content-type'] ?? null }));
    parse(req, res, (err?: unknown) => {
      if (err) return void dropStaged(req).then(() => next(uploadError(err, deps.maxUploadBytes)), next);
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

function uploadError(err: unknown, maxUploadBytes: number): unknown {
  if (err instanceof StoreFailure) return err.cause;
  if (err instanceof FileTooLargeError || (err instanceof MulterError && err.code === 'LIMIT_FILE_SIZE'))
    return new HttpError(413, 'payload-too-large', `A file is larger than the limit of ${maxUploadBytes} bytes`, { limit: maxUploadBytes, path: FILE_FIELD });
  if (err instanceof MulterError) {
    switch (err.code) {
      case 'LIMIT_UNEXPECTED_FILE':
      case 'LIMIT_FILE_COUNT':
        if (err.field === FILE_FIELD || err.code === 'LIMIT_FILE_COUNT')
          return new HttpError(413, 'too-many-files', `At most ${MAX_FILES_PER_UPLOAD} files per request`, { limit: MAX_FILES_PER_UPLOAD, path: FILE_FIELD });
        return badRequest('unexpected-field', `Unexpected file field "${err.field}": send files as "file"`, { path: err.field ?? '' });
      default:
        return badRequest('invalid-multipart', `Invalid multipart body: ${err.message}`, { path: err.field ?? '', reason: err.code });
    }
  }
  // Everything else comes from the multipart parser: a malformed or interrupted body.
  return badRequest('invalid-multipart', `Invalid multipart body: ${err instanceof Error ? err.message : String(err)}`, { path: '' });
}

/** Errors of the filesystem (or another store) rather than of the incoming stream. */
function isStoreError(err: unknown): boolean {
  return typeof (err as NodeJS.ErrnoException)?.code === 'string' && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}
