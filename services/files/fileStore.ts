import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';

/**
 * Where uploaded files' content lives: one stored file per upload, under a key of its own (a
 * fresh random key per upload, never reused), so that each upload keeps its own name and type and
 * can be deleted on its own. Who owns a file and who may read it is not the store's business: the
 * file records (storedFiles.ts, the `files` read model) say. The filesystem adapter is
 * infra/files/localFileStore.ts; an object store can replace it behind this port.
 */
export interface FileStore {
  /**
   * Streams `content` to a temporary place, hashing it on the way. Nothing is visible under a key
   * until `commit`. Past `maxBytes` it fails with FileTooLargeError and leaves nothing behind; on
   * any failure the rest of `content` is drained so a multipart parser can go on.
   */
  stage(content: Readable, options: { maxBytes: number }): Promise<StagedFile>;
  /** Makes a staged file durable under `key` (a new key: newFileKey()). */
  commit(staged: StagedFile, key: string, meta: FileMeta): Promise<StoredContent>;
  /** Drops a staged file that will not be committed (idempotent). */
  discard(staged: StagedFile): Promise<void>;
  /** stage + commit. */
  put(content: Readable, key: string, meta: FileMeta, options: { maxBytes: number }): Promise<StoredContent>;
  /** The stored file under `key`, or null for an unknown or malformed key. */
  stat(key: string): Promise<StoredContent | null>;
  /** The stored file and a stream of its content, or null for an unknown or malformed key. */
  open(key: string): Promise<{ file: StoredContent; content: Readable } | null>;
  /**
   * A path on this machine to read the content under `key` from, for readers that need a file
   * (an external export is read twice and seeked in: services/migration), or null for an unknown
   * key. A store without local files downloads the content to a temporary file here.
   */
  localPath(key: string): Promise<string | null>;
  /** Removes the file under `key` (idempotent: a missing file is no error). */
  remove(key: string): Promise<void>;
  /** Stops background work (the sweep of abandoned temporary files). */
  close(): Promise<void>;
}

export interface FileMeta {
  /** The original file name, already sanitised (see sanitiseFileName). */
  name: string;
  mimeType: string;
}

export interface StagedFile {
  readonly sha256: string;
  readonly size: number;
  /** Adapter-specific handle of the temporary copy. */
  readonly ref: string;
}

export interface StoredContent extends FileMeta {
  /** Where the content is: the file's key (64 lower-case hex digits). */
  key: string;
  sha256: string;
  size: number;
}

const KEY = /^[a-f0-9]{64}$/;

/**
 * A key is 64 lower-case hex digits and nothing else: no path can be smuggled through it. New
 * files get random keys; files stored before keys were per upload are under their SHA-256.
 */
export function isFileKey(key: unknown): key is string {
  return typeof key === 'string' && KEY.test(key);
}

/** A key for a new upload: 256 random bits, so it names this upload alone and cannot be guessed from its content. */
export function newFileKey(): string {
  return randomBytes(32).toString('hex');
}

export class FileTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The file is larger than ${limit} bytes`);
    this.name = 'FileTooLargeError';
  }
}
