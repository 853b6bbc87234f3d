import { PassThrough } from 'node:stream';
import type { Request } from 'express';
import multer, { MulterError } from 'multer';
import { badRequest, HttpError } from '../shared/errors';
import { FileTooLargeError, type FileStore, type StagedFile } from './fileStore';

/**
 * multipart/form-data uploads staged in the file store as they arrive (hashed on the way, nothing
 * visible under a key until committed), for the routes that take files: POST /api/files/upload
 * and the result imports. A failed request drops what it staged.
 */

/** A file as multer hands it over: the staged copy, and the first bytes (for format detection). */
export type UploadedFile = Express.Multer.File & { staged: StagedFile; head: Buffer };

/** A failure of the store itself (disk full, permissions): a server error, not a malformed request. */
class StoreFailure extends Error {
  constructor(cause: unknown) {
    super('The file store failed', { cause });
  }
}

export interface StagedUploadOptions {
  files: FileStore;
  maxUploadBytes: number;
  /** The multipart field that carries files. */
  field: string;
  maxFiles: number;
  /** Text fields allowed besides the files (each at most 64 KiB). */
  maxFields: number;
  /** How many leading bytes of each file to keep on `head`. */
  headBytes?: number;
}

export function stagedUploads(options: StagedUploadOptions) {
  const { files, maxUploadBytes, field, maxFiles, maxFields } = options;
  const headBytes = options.headBytes ?? 0;
  // What each request staged, so that a failed request can wait for and drop all of it before
  // answering (multer's own bookkeeping lets an error through while a file is still being written).
  const stagings = new WeakMap<Request, Promise<StagedFile | null>[]>();
  const storage: multer.StorageEngine = {
    _handleFile(req, file, done) {
      const heads: Buffer[] = [];
      let kept = 0;
      let content: NodeJS.ReadableStream = file.stream;
      if (headBytes > 0) {
        const tee = new PassThrough();
        file.stream.on('data', (chunk: Buffer) => {
          if (kept < headBytes) {
            heads.push(chunk.subarray(0, headBytes - kept));
            kept += Math.min(chunk.length, headBytes - kept);
          }
        });
        file.stream.pipe(tee);
        content = tee;
      }
      const staging = files.stage(content as never, { maxBytes: maxUploadBytes });
      stagings.set(req, [...(stagings.get(req) ?? []), staging.catch(() => null)]);
      staging.then(
        (staged) => done(null, { size: staged.size, staged, head: Buffer.concat(heads) } as Partial<UploadedFile>),
        (err) => done(err instanceof FileTooLargeError || !isStoreError(err) ? err : new StoreFailure(err)),
      );
    },
    _removeFile(_req, file, done) {
      files.discard((file as UploadedFile).staged).then(() => done(null), done);
    },
  };
  const parse = multer({
    storage,
    defParamCharset: 'utf8', // file names as browsers and curl send them
    limits: { fileSize: maxUploadBytes, files: maxFiles + 1, fields: maxFields, fieldSize: 64 * 1024, parts: maxFiles + maxFields + 1 },
  }).array(field, maxFiles);

  return {
    /** Parses the request; on failure, drops what was staged and passes the error as the HTTP error to answer. */
    parse(req: Request, res: Parameters<typeof parse>[1], next: (err?: unknown) => void): void {
      if (!req.is('multipart/form-data'))
        return next(new HttpError(415, 'unsupported-media-type', 'Send the files as multipart/form-data', { contentType: req.headers['content-type'] ?? null }));
      parse(req, res, (err?: unknown) => {
        if (err) return void dropStaged(req).then(() => next(uploadError(err)), next);
        next();
      });
    },
    /** Drops whatever the request staged and did not commit. */
    dropStaged,
  };

  async function dropStaged(req: Request): Promise<void> {
    const staged = await Promise.all(stagings.get(req) ?? []);
    await Promise.all(staged.map((s) => s && files.discard(s)));
  }

  function uploadError(err: unknown): unknown {
    if (err instanceof StoreFailure) return err.cause;
    if (err instanceof FileTooLargeError || (err instanceof MulterError && err.code === 'LIMIT_FILE_SIZE'))
      return new HttpError(413, 'payload-too-large', `A file is larger than the limit of ${maxUploadBytes} bytes`, { limit: maxUploadBytes, path: field });
    if (err instanceof MulterError) {
      switch (err.code) {
        case 'LIMIT_UNEXPECTED_FILE':
        case 'LIMIT_FILE_COUNT':
          if (err.field === field || err.code === 'LIMIT_FILE_COUNT')
            return new HttpError(413, 'too-many-files', `At most ${maxFiles} files per request`, { limit: maxFiles, path: field });
          return badRequest('unexpected-field', `Unexpected file field "${err.field}": send files as "${field}"`, { path: err.field ?? '' });
        default:
          return badRequest('invalid-multipart', `Invalid multipart body: ${err.message}`, { path: err.field ?? '', reason: err.code });
      }
    }
    // Everything else comes from the multipart parser: a malformed or interrupted body.
    return badRequest('invalid-multipart', `Invalid multipart body: ${err instanceof Error ? err.message : String(err)}`, { path: '' });
  }
}

/** Errors of the filesystem (or another store) rather than of the incoming stream. */
function isStoreError(err: unknown): boolean {
  return typeof (err as NodeJS.ErrnoException)?.code === 'string' && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}
