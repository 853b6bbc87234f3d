import { createHash, randomUUID } from 'node:crypto';
import fsp, { type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable, type Readable } from 'node:stream';
import type { Logger } from 'pino';
import { DEFAULT_MIME_TYPE } from '../../services/files/fileMeta';
import { FileTooLargeError, isFileKey, type FileMeta, type FileStore, type StagedFile, type StoredContent } from '../../services/files/fileStore';

/**
 * The file store on a local directory. Layout, flat in `dir`:
 *   <key>                the content of one upload, never rewritten once there
 *   <key>.meta.json      its name and MIME type (the sidecar)
 *   .upload-<host>-<pid>-<uuid>.tmp   content or sidecar being written (by that host's process)
 * (Files stored before keys were per upload are under their SHA-256, and read the same way.)
 * A file appears under its key only by rename(2) of a temporary file that was fsynced, then the
 * directory is fsynced: after a crash a key holds its whole content or does not exist. The sidecar
 * is renamed into place before the content, and removed after it, so content is never visible
 * without its metadata.
 */
export interface LocalFileStoreOptions {
  dir: string;
  logger: Logger;
  /**
   * While running, a temporary file not written for this long belongs to no live upload (Node's
   * HTTP server ends a request after 5 minutes) and is swept.
   */
  staleAfterMs?: number;
  /** How often that sweep runs. */
  sweepIntervalMs?: number;
}

/**
 * `.upload-<host>-<pid>-<uuid>.tmp`: the machine (a hash of its host name: containers sharing the
 * directory each have theirs) and the process writing it. Older versions wrote `.upload-<uuid>.tmp`.
 */
const TEMP_FILE = /^\.upload-(?:([0-9a-f]{8})-([1-9][0-9]{0,9})-)?[0-9a-f-]{36}\.tmp$/;
const HOST = createHash('sha256').update(os.hostname()).digest('hex').slice(0, 8);

/** Whether a process with this id runs here. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
const META_SUFFIX = '.meta.json';
const TEN_MINUTES = 10 * 60 * 1000;

/**
 * Creates the directory if needed and removes the temporary files of uploads a crash interrupted:
 * those whose writing process (named in the file's name) runs no more, and any nobody has written
 * for the grace period. Not the others: the processes of one installation share the directory
 * (the API and the workers when the roles run apart), and a process starting while another
 * stores an upload must not take its temporary file away (a worker restarted mid-upload did: the
 * upload failed with a 500). While running, files untouched for the grace period are swept
 * periodically. (Several replicas share files through an object store behind the FileStore port.)
 */
export async function openLocalFileStore(options: LocalFileStoreOptions): Promise<LocalFileStore> {
  const dir = path.resolve(options.dir);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const store = new LocalFileStore(dir, options.logger);
  const staleAfterMs = options.staleAfterMs ?? TEN_MINUTES;
  await store.sweep(staleAfterMs, { writerGone: true });
  store.sweepEvery(options.sweepIntervalMs ?? TEN_MINUTES, staleAfterMs);
  return store;
}

/** `sha256` is absent in the sidecars of files stored under their SHA-256 (the key is the hash there). */
interface Sidecar { name: string; mimeType: string; sha256?: string }

export class LocalFileStore implements FileStore {
  private timer: NodeJS.Timeout | null = null;

  constructor(readonly dir: string, private readonly logger: Logger) {}

  async stage(content: Readable, options: { maxBytes: number }): Promise<StagedFile> {
    // Listen before the first await: the source may fail while the temporary file is being created.
    const interrupted = new Promise<never>((_resolve, reject) => {
      content.once('error', reject);
      content.once('close', () => {
        if (!content.readableEnded) reject(new Error('The upload was interrupted'));
      });
    });
    interrupted.catch(() => undefined); // raced below; a late rejection is of no interest
    const temp = this.tempPath();
    const handle = await fsp.open(temp, 'wx', 0o600).catch((err) => {
      content.resume(); // drain: the parser behind `content` goes on
      throw err;
    });
    const hash = createHash('sha256');
    let size = 0;
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        if (size > options.maxBytes) return done(new FileTooLargeError(options.maxBytes));
        hash.update(chunk);
        writeAll(handle, chunk).then(() => done(), done);
      },
      final(done) {
        handle.sync().then(() => done(), done);
      },
    });
    const written = new Promise<void>((resolve, reject) => {
      sink.once('error', reject);
      sink.once('finish', resolve);
    });
    content.pipe(sink);
    try {
      await Promise.race([written, interrupted]);
      await handle.close();
    } catch (err) {
      content.unpipe(sink);
      if (!content.destroyed) content.resume(); // drain the rest of this file
      sink.destroy();
      await handle.close().catch(() => undefined);
      await fsp.rm(temp, { force: true });
      throw err;
    }
    return { sha256: hash.digest('hex'), size, ref: temp };
  }

  async commit(staged: StagedFile, key: string, meta: FileMeta): Promise<StoredContent> {
    const temp = this.ownTemp(staged);
    if (!isFileKey(key)) throw new Error(`Not a file key: ${key}`);
    const target = this.contentPath(key);
    if (await exists(target)) throw new Error(`A file is stored under ${key} already`);
    await this.writeSidecar(key, { name: meta.name, mimeType: meta.mimeType, sha256: staged.sha256 });
    await fsp.rename(temp, target);
    await this.syncDir();
    return { key, sha256: staged.sha256, size: staged.size, name: meta.name, mimeType: meta.mimeType };
  }

  async discard(staged: StagedFile): Promise<void> {
    await fsp.rm(this.ownTemp(staged), { force: true });
  }

  async put(content: Readable, key: string, meta: FileMeta, options: { maxBytes: number }): Promise<StoredContent> {
    const staged = await this.stage(content, options);
    try {
      return await this.commit(staged, key, meta);
    } finally {
      await this.discard(staged);
    }
  }

  async stat(key: string): Promise<StoredContent | null> {
    if (!isFileKey(key)) return null;
    const stats = await fsp.stat(this.contentPath(key)).catch(ifMissing(null));
    if (!stats?.isFile()) return null;
    return this.describe(key, stats.size);
  }

  async open(key: string): Promise<{ file: StoredContent; content: Readable } | null> {
    if (!isFileKey(key)) return null;
    const handle = await fsp.open(this.contentPath(key), 'r').catch(ifMissing(null));
    if (!handle) return null;
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) {
        await handle.close();
        return null;
      }
      return { file: await this.describe(key, stats.size), content: handle.createReadStream() };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async localPath(key: string): Promise<string | null> {
    if (!isFileKey(key)) return null;
    const stats = await fsp.stat(this.contentPath(key)).catch(ifMissing(null));
    return stats?.isFile() ? this.contentPath(key) : null;
  }

  async remove(key: string): Promise<void> {
    if (!isFileKey(key)) return;
    await fsp.rm(this.contentPath(key), { force: true });
    await fsp.rm(this.metaPath(key), { force: true });
    await this.syncDir();
  }

  /**
   * Removes temporary files nobody has written for `olderThanMs` and, with `writerGone`, those
   * whose writing process runs no more (or unnamed: an older version's); answers how many.
   */
  async sweep(olderThanMs: number, options: { writerGone?: boolean } = {}): Promise<number> {
    const now = Date.now();
    let removed = 0;
    for (const name of await fsp.readdir(this.dir)) {
      const match = TEMP_FILE.exec(name);
      if (!match) continue;
      const file = path.join(this.dir, name);
      const stats = await fsp.lstat(file).catch(ifMissing(null));
      if (!stats) continue;
      // A writer on another host (another container) is never judged from here: its files go by age.
      const gone = options.writerGone === true && (match[1] === undefined || (match[1] === HOST && !running(Number(match[2]))));
      if (!gone && now - stats.mtimeMs < olderThanMs) continue;
      await fsp.rm(file, { force: true });
      removed++;
    }
    if (removed > 0) this.logger.info({ dir: this.dir, removed }, 'removed temporary files of interrupted uploads');
    return removed;
  }

  sweepEvery(intervalMs: number, olderThanMs: number): void {
    this.timer = setInterval(() => {
      this.sweep(olderThanMs).catch((err) => this.logger.warn({ err, dir: this.dir }, 'cannot sweep temporary upload files'));
    }, intervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async describe(key: string, size: number): Promise<StoredContent> {
    const sidecar = await this.readSidecar(key);
    return { key, sha256: sidecar?.sha256 ?? key, size, name: sidecar?.name ?? key, mimeType: sidecar?.mimeType ?? DEFAULT_MIME_TYPE };
  }

  private async readSidecar(key: string): Promise<Sidecar | null> {
    const text = await fsp.readFile(this.metaPath(key), 'utf8').catch(ifMissing(null));
    if (text === null) return null;
    try {
      const parsed = JSON.parse(text) as Partial<Sidecar>;
      if (typeof parsed.name !== 'string' || typeof parsed.mimeType !== 'string') return null;
      return { name: parsed.name, mimeType: parsed.mimeType, ...(isFileKey(parsed.sha256) && { sha256: parsed.sha256 }) };
    } catch {
      this.logger.warn({ key }, 'unreadable file metadata; serving as application/octet-stream');
      return null;
    }
  }

  private async writeSidecar(key: string, sidecar: Sidecar): Promise<void> {
    const temp = this.tempPath();
    const handle = await fsp.open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(JSON.stringify(sidecar));
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await fsp.rename(temp, this.metaPath(key));
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
  }

  private async syncDir(): Promise<void> {
    const handle = await fsp.open(this.dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  private tempPath(): string {
    return path.join(this.dir, `.upload-${HOST}-${process.pid}-${randomUUID()}.tmp`);
  }

  /** The temporary file of a staged upload, refusing anything that is not one of ours. */
  private ownTemp(staged: StagedFile): string {
    if (path.dirname(staged.ref) !== this.dir || !TEMP_FILE.test(path.basename(staged.ref))) throw new Error('Not a file staged by this store');
    return staged.ref;
  }

  private contentPath(key: string): string {
    return path.join(this.dir, key);
  }

  private metaPath(key: string): string {
    return path.join(this.dir, key + META_SUFFIX);
  }
}

async function writeAll(handle: FileHandle, chunk: Buffer): Promise<void> {
  for (let offset = 0; offset < chunk.length;) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

const exists = (file: string) => fsp.access(file).then(() => true, ifMissing(false));

function ifMissing<T>(value: T): (err: NodeJS.ErrnoException) => T {
  return (err) => {
    if (err.code === 'ENOENT') return value;
    throw err;
  };
}
