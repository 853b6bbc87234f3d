import type { Readable } from 'node:stream';

/**
 * Where uploaded files live: content-addressed by SHA-256, so identical content is stored once and
 * a key names exactly one content forever. The filesystem adapter is infra/files/localFileStore.ts;
 * an object store can replace it behind this port.
 */
export interface FileStore {
  /**
   * Streams `content` to a temporary place, hashing it on the way. Nothing is visible under a key
   * until `commit`. Past `maxBytes` it fails with FileTooLargeError and leaves nothing behind; on
   * any failure the rest of `content` is drained so a multipart parser can go on.
   */
  stage(content: Readable, options: { maxBytes: number }): Promise<StagedFile>;
  /** Makes a staged file durable under its key; content already stored keeps its first metadata. */
  commit(staged: StagedFile, meta: FileMeta): Promise<StoredFile>;
  /** Drops a staged file that will not be committed (idempotent). */
  discard(staged: StagedFile): Promise<void>;
  /** stage + commit. */
  put(content: Readable, meta: FileMeta, options: { maxBytes: number }): Promise<StoredFile>;
  /** The stored file under `key`, or null for an unknown or malformed key. */
  stat(key: string): Promise<StoredFile | null>;
  /** The stored file and a stream of its content, or null for an unknown or malformed key. */
  open(key: string): Promise<{ file: StoredFile; content: Readable } | null>;
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

export interface StoredFile extends FileMeta {
  /** What an attachment references as its url / storage key: the SHA-256 in lower-case hex. */
  key: string;
  sha256: string;
  size: number;
}

const KEY = /^[a-f0-9]{64}$/;

/** A key is a SHA-256 in lower-case hex and nothing else: no path can be smuggled through it. */
export function isFileKey(key: unknown): key is string {
  return typeof key === 'string' && KEY.test(key);
}

export class FileTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The file is larger than ${limit} bytes`);
    this.name = 'FileTooLargeError';
  }
}
