import { archiveRun } from '../evidence/archive';
import type { Logger } from 'pino';
import type { EventMetadata } from '../../contracts/envelope';
import type { FileDeletionReason } from '../../contracts/events';
import { resolveProjectAccess } from '../access/projectAccess';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import type { AuthenticatedUser } from '../shared/context';
import { systemMetadata } from '../shared/context';
import { type CommandOutcome, handleCommand, loadAggregate } from '../shared/decider';
import { HttpError } from '../shared/errors';
import { newFileKey, type FileStore, type StagedFile } from './fileStore';
import { fileStream, storedFileDecider } from './storedFile.decider';

/**
 * Stored files and what owns them. Every upload is a file of its own (key, name, type), recorded
 * on its stream `file-<key>` (storedFile.decider.ts) with who stored it and through what, owned by
 * its project (POST /api/files/upload), an import job (its result files), or the attachment it
 * became; the `files` read model (`stored_files`) answers who may read it, how much each user
 * keeps (the quota), and which files lost their owner. Content lives in the FileStore, one
 * content per key; a record is written before its content, and content is removed before its
 * record says deleted, so no content is ever stored without a record saying whose it is.
 */

export interface StoredFilesSettings {
  /** Bytes one user's stored files may take together (USER_STORAGE_QUOTA_BYTES); 0: no limit. */
  quotaBytes: number;
  /** Days a completed import's files are kept as its run's evidence (IMPORT_FILE_RETENTION_DAYS); 0: removed at the next sweep. */
  importFileRetentionDays: number;
  /** Files one round of the sweep deletes at most (default SWEEP_BATCH). */
  sweepBatch?: number;
  /**
   * Where a run's evidence bundle is written before its result files go for retention (ARCHIVE_DIR;
   * services/evidence/archive.ts); null: they go without one (their FileDeleted events remain).
   */
  archiveDir?: string | null;
}

export interface StoredFilesDeps extends CommandDeps {
  files: FileStore;
  logger: Logger;
  settings: StoredFilesSettings;
}

/** A staged upload to keep, with the name and type its client gave (sanitised). */
export interface Upload { staged: StagedFile; name: string; mimeType: string }

/** A row of `stored_files`, as the routes show it. */
export interface StoredFileRow {
  key: string;
  projectId: number;
  owner: 'project' | 'importJob' | 'attachment';
  importJobId: number | null;
  attachmentId: number | null;
  name: string;
  mimeType: string;
  size: number;
  sha256: string;
  uploadedById: number | null;
  storedAt: string;
}

export const fileUrl = (key: string) => `/api/files/${key}`;

const DAY_MS = 24 * 60 * 60 * 1000;
/** Files of an import job whose request never reached the log (a crash in between) are removed after this long. */
const NOT_STARTED_GRACE_MS = 60 * 60 * 1000;
/** The sweep removes at most this many files per round; a full round is followed by another one soon. */
export const SWEEP_BATCH = 200;
const SWEEP_INTERVAL_MS = 10 * 60 * 1000;
const SWEEP_AGAIN_MS = 5000;
/** Files recorded (or deleted) at once: each is an append of its own, and the database commits them together. */
const PARALLEL_WRITES = 8;

/** `fn` over the items, `size` at a time; every item of a batch is settled before a failure is thrown. */
async function inBatches<T>(items: readonly T[], size: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  for (let start = 0; start < items.length; start += size) {
    const settled = await Promise.allSettled(items.slice(start, start + size).map((item, i) => fn(item, start + i)));
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

export function rowOf(r: Record<string, unknown>): StoredFileRow {
  return {
    key: r.key as string, projectId: r.project_id as number, owner: r.owner as StoredFileRow['owner'],
    importJobId: (r.import_job_id as number | null) ?? null, attachmentId: (r.attachment_id as number | null) ?? null,
    name: r.name as string, mimeType: r.mime_type as string, size: Number(r.size), sha256: r.sha256 as string,
    uploadedById: (r.uploaded_by_id as number | null) ?? null, storedAt: new Date(r.stored_at as string).toISOString(),
  };
}

export class StoredFiles {
  /** One store (quota check, records, content) per user at a time in this process: the check sees every file stored before it. */
  private readonly userLocks = new Map<number, Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private sweeping: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(private readonly deps: StoredFilesDeps) {}

  get quotaBytes(): number {
    return this.deps.settings.quotaBytes;
  }

  get importFileRetentionDays(): number {
    return this.deps.settings.importFileRetentionDays;
  }

  /** Bytes the user's files not deleted take (every upload counts, whatever its content). */
  async usage(userId: number): Promise<number> {
    const row = await this.deps.knex('stored_files').where({ uploaded_by_id: userId }).whereNull('deleted_at').sum({ used: 'size' }).first();
    return Number(row?.used ?? 0);
  }

  /** Refuses with 413 storage-quota-exceeded when `bytes` more would take the user past the quota. */
  async checkQuota(userId: number, bytes: number): Promise<void> {
    const quota = this.deps.settings.quotaBytes;
    if (quota === 0) return;
    const used = await this.usage(userId);
    if (used + bytes > quota) {
      throw new HttpError(413, 'storage-quota-exceeded',
        `These files (${bytes} bytes) would take your stored files past your quota of ${quota} bytes (${used} in use); delete files you no longer need`,
        { quota, used, requested: bytes });
    }
  }

  /**
   * Keeps a request's uploads for a project (`importJobId` null) or an import job: checks the
   * quota, records each file, then moves its content under its key; answers once the read model
   * has them. All or nothing: a failure part-way deletes what was kept (the staged rest is the
   * caller's to drop).
   */
  store(request: { userId: number; projectId: number; importJobId: number | null; uploads: Upload[]; metadata: EventMetadata }): Promise<StoredFileRow[]> {
    const { userId } = request;
    const previous = this.userLocks.get(userId) ?? Promise.resolve();
    const result = previous.catch(() => undefined).then(() => this.storeNow(request));
    this.userLocks.set(userId, result);
    void result.catch(() => undefined).then(() => {
      if (this.userLocks.get(userId) === result) this.userLocks.delete(userId);
    });
    return result;
  }

  private async storeNow(request: { userId: number; projectId: number; importJobId: number | null; uploads: Upload[]; metadata: EventMetadata }): Promise<StoredFileRow[]> {
    const { deps } = this;
    const { userId, projectId, importJobId, uploads, metadata } = request;
    await this.checkQuota(userId, uploads.reduce((sum, u) => sum + u.staged.size, 0));
    const kept: StoredFileRow[] = new Array(uploads.length);
    const recorded: string[] = [];
    const writes: CommandOutcome<unknown>[] = [];
    try {
      await inBatches(uploads, PARALLEL_WRITES, async (upload, index) => {
        const key = newFileKey();
        const file = {
          key, projectId, importJobId, name: upload.name, mimeType: upload.mimeType, size: upload.staged.size, sha256: upload.staged.sha256, uploadedById: userId,
        };
        const now = deps.clock().toISOString();
        // A new random key: its stream does not exist yet.
        const events = storedFileDecider.decide({ type: 'Store', file, now }, storedFileDecider.initialState);
        const { position } = await deps.store.append(fileStream(key), events, { expectedRevision: 'no-stream', metadata });
        recorded.push(key);
        writes.push({ events, streamId: fileStream(key), position });
        await deps.files.commit(upload.staged, key, { name: upload.name, mimeType: upload.mimeType });
        kept[index] = { ...file, owner: importJobId === null ? 'project' : 'importJob', attachmentId: null, storedAt: now };
      });
    } catch (error) {
      await this.remove(recorded, 'upload-failed', metadata).catch((err) =>
        deps.logger.error({ err, keys: recorded }, 'an upload failed part-way and its files could not all be deleted; the sweep or their owner removes them'));
      throw error;
    }
    await Promise.all(writes.map((write) => readYourWrites(deps, write)));
    return kept;
  }

  /** Removes each file's content, then records the deletion; answers once the read model has it. */
  async remove(keys: string[], reason: FileDeletionReason, metadata: EventMetadata): Promise<void> {
    const writes: CommandOutcome<unknown>[] = [];
    await inBatches(keys, PARALLEL_WRITES, async (key) => {
      await this.deps.files.remove(key);
      writes.push(await handleCommand(this.deps.store, fileStream(key), storedFileDecider, { type: 'Delete', key, reason, now: this.deps.clock().toISOString() }, metadata));
    });
    await Promise.all(writes.map((write) => readYourWrites(this.deps, write)));
  }

  /** The files of an import job not deleted yet, deleted (its import failed or never started). */
  async removeImportFiles(jobId: number, reason: FileDeletionReason, metadata: EventMetadata): Promise<number> {
    const rows: { key: string }[] = await this.deps.knex('stored_files').where({ import_job_id: jobId }).whereNull('deleted_at').select('key');
    await this.remove(rows.map((r) => r.key), reason, metadata);
    if (rows.length > 0) this.deps.logger.info({ jobId, files: rows.length, reason }, 'deleted the files of an import job');
    return rows.length;
  }

  /**
   * One bounded round of the sweep: at most `sweepBatch` files whose owner no longer keeps them —
   * a failed import's (if its own clean-up did not happen), an import's that never started (after
   * an hour, checked against the log), a completed import's past the retention, a deleted
   * attachment's — are deleted (by the system, so the audit trail shows each), and logged.
   */
  /** Legacy keys an attachment names but the store does not hold: not looked at again by this process. */
  private readonly missingLegacy = new Set<string>();

  /**
   * Files stored before each upload had a key and a record of its own lie under their SHA-256,
   * with no record, and would be read by nobody. An attachment (not deleted) whose url names such
   * a file adopts it: FileStored (by the system; uploader unknown, so it counts against no one's
   * quota) and FileAttached, so that the file is read with the attachment as before. One
   * attachment per content: a second attachment of the same content finds it held (as a new
   * attachment would). Bounded: at most `limit` per call; answers how many were adopted.
   */
  async adoptLegacyFiles(limit: number): Promise<number> {
    const { knex, clock } = this.deps;
    const { rows } = await knex.raw(`
      SELECT a.id, a.project_id, substring(a.url from '([0-9a-f]{64})$') AS key
        FROM attachments a
       WHERE NOT a.is_deleted AND a.url ~ '^(/api/files/){0,1}[0-9a-f]{64}$'
         AND NOT EXISTS (SELECT 1 FROM stored_files f WHERE f.key = substring(a.url from '([0-9a-f]{64})$'))
         AND NOT (substring(a.url from '([0-9a-f]{64})$') = ANY(CAST(? AS text[])))
       ORDER BY a.id
       LIMIT ?`, [[...this.missingLegacy], limit]);
    const metadata = systemMetadata('file-adoption');
    let adopted = 0;
    for (const row of rows as { id: number; project_id: number; key: string }[]) {
      const content = await this.deps.files.stat(row.key);
      if (!content) {
        this.missingLegacy.add(row.key);
        this.deps.logger.warn({ attachmentId: row.id, key: row.key }, 'an attachment names a file the store does not hold; its url stays as it is');
        continue;
      }
      const stream = fileStream(row.key);
      const { state } = await loadAggregate(this.deps.store, stream, storedFileDecider);
      if (state.status !== 'none') continue; // recorded meanwhile (the read model is behind)
      const now = clock().toISOString();
      await handleCommand(this.deps.store, stream, storedFileDecider, {
        type: 'Store', now,
        file: { key: row.key, projectId: row.project_id, importJobId: null, name: content.name, mimeType: content.mimeType, size: content.size, sha256: content.sha256, uploadedById: null },
      }, metadata);
      const outcome = await handleCommand(this.deps.store, stream, storedFileDecider, { type: 'Attach', key: row.key, projectId: row.project_id, attachmentId: row.id, now }, metadata);
      await readYourWrites(this.deps, outcome);
      adopted++;
    }
    if (adopted > 0) this.deps.logger.info({ adopted }, 'file sweep: attachments adopted files stored before each upload had a record of its own');
    return adopted;
  }

  async sweep(): Promise<{ deleted: Record<string, number>; more: boolean }> {
    const { knex, clock, settings } = this.deps;
    const adopted = await this.adoptLegacyFiles(settings.sweepBatch ?? SWEEP_BATCH);
    const now = clock().getTime();
    const limit = settings.sweepBatch ?? SWEEP_BATCH;
    const { rows } = await knex.raw(`
      SELECT f.key, f.import_job_id, j.test_run_id, CASE
          WHEN f.owner = 'attachment' THEN 'attachment-deleted'
          WHEN j.state = 'failed' THEN 'import-failed'
          WHEN j.state = 'completed' THEN 'retention'
          ELSE 'import-not-started' END AS reason
        FROM stored_files f
        LEFT JOIN import_jobs j ON f.owner = 'importJob' AND j.job_id = f.import_job_id
        LEFT JOIN attachments a ON f.owner = 'attachment' AND a.id = f.attachment_id
       WHERE f.deleted_at IS NULL AND (
             (f.owner = 'attachment' AND a.is_deleted)
          OR (f.owner = 'importJob' AND j.state = 'failed')
          OR (f.owner = 'importJob' AND j.state = 'completed' AND j.finished_at <= :retainedBefore)
          OR (f.owner = 'importJob' AND j.job_id IS NULL AND f.stored_at <= :startedBefore))
       ORDER BY f.stored_at
       LIMIT :limit`, {
      retainedBefore: new Date(now - settings.importFileRetentionDays * DAY_MS).toISOString(),
      startedBefore: new Date(now - NOT_STARTED_GRACE_MS).toISOString(),
      limit,
    });
    const byReason = new Map<FileDeletionReason, string[]>();
    const kept = await this.archiveBeforeRetention(rows as { key: string; test_run_id: number | null; reason: FileDeletionReason }[]);
    for (const row of rows as { key: string; import_job_id: number | null; reason: FileDeletionReason }[]) {
      // A job missing from the read model may only be behind: the log says whether it was ever requested.
      if (row.reason === 'import-not-started' && (await this.deps.store.readStream(`importJob-${row.import_job_id}`, { maxCount: 1 })).length > 0) continue;
      if (kept.has(row.key)) continue;
      byReason.set(row.reason, [...(byReason.get(row.reason) ?? []), row.key]);
    }
    const deleted: Record<string, number> = {};
    for (const [reason, keys] of byReason) {
      await this.remove(keys, reason, systemMetadata('file-sweep'));
      deleted[reason] = keys.length;
    }
    if (rows.length > 0) this.deps.logger.info({ deleted, retentionDays: settings.importFileRetentionDays }, 'file sweep: deleted stored files whose owner no longer keeps them');
    // A full round that deleted something: more may be waiting (a round of skipped rows only is no reason to hurry).
    return { deleted, more: (rows.length === limit && Object.keys(deleted).length > 0) || adopted === limit };
  }

  /**
   * Before result files go for retention, each of their runs' evidence bundle is written to the
   * archive and checked (services/evidence/archive.ts). Answers the keys to keep this round: those
   * of a run whose archive failed (logged; the next round tries again, the files stay meanwhile).
   */
  private async archiveBeforeRetention(rows: { key: string; test_run_id: number | null; reason: FileDeletionReason }[]): Promise<Set<string>> {
    const dir = this.deps.settings.archiveDir ?? null;
    const kept = new Set<string>();
    if (dir === null) return kept;
    const runs = new Map<number, string[]>();
    for (const row of rows) if (row.reason === 'retention' && row.test_run_id !== null) runs.set(row.test_run_id, [...(runs.get(row.test_run_id) ?? []), row.key]);
    for (const [runId, keys] of runs) {
      try {
        const file = await archiveRun(this.deps, runId, dir);
        this.deps.logger.info({ runId, file, files: keys.length }, 'file sweep: archived the run\'s evidence before its result files go for retention');
      } catch (err) {
        for (const key of keys) kept.add(key);
        this.deps.logger.error({ err, runId, dir }, 'file sweep: cannot archive the run\'s evidence; its result files are kept until it can');
      }
    }
    return kept;
  }

  /** Sweeps now and then every interval (sooner while a round was full), in the background; `close` stops it. */
  startSweeping(intervalMs = SWEEP_INTERVAL_MS): void {
    const round = () => {
      if (this.stopped) return;
      this.sweeping = this.sweep().then(
        ({ more }) => schedule(more ? SWEEP_AGAIN_MS : intervalMs),
        (err) => {
          this.deps.logger.warn({ err }, 'file sweep failed; trying again later');
          schedule(intervalMs);
        },
      );
    };
    const schedule = (ms: number) => {
      if (this.stopped) return;
      this.timer = setTimeout(round, ms);
      this.timer.unref();
    };
    round();
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.sweeping.catch(() => undefined);
  }

  /** The file under `key` if the user may read it: its owner is live and the user reaches its project. */
  async readable(user: AuthenticatedUser, key: string): Promise<StoredFileRow | null> {
    const row = await this.deps.knex('stored_files').where({ key }).whereNull('deleted_at').first();
    if (!row) return null;
    const file = rowOf(row);
    return (await mayRead(this.deps, user, file)) ? file : null;
  }
}

/**
 * Read permission of a file is its owner's: a project's upload, whoever reaches the project; an
 * attachment's, whoever reads the attachment (not deleted, in a project they reach); an import
 * job's, whoever reads its run (the job not failed; once completed, its run not deleted).
 */
export async function mayRead(deps: Pick<CommandDeps, 'knex'>, user: AuthenticatedUser, file: StoredFileRow): Promise<boolean> {
  if (user.access === 'NONE') return false;
  const access = await resolveProjectAccess(deps.knex, user);
  if (!access.all && !access.projects.has(file.projectId)) return false;
  switch (file.owner) {
    case 'project':
      return true;
    case 'attachment': {
      const attachment = await deps.knex('attachments').where({ id: file.attachmentId }).first('is_deleted');
      return attachment !== undefined && !attachment.is_deleted;
    }
    case 'importJob': {
      const job = await deps.knex('import_jobs').where({ job_id: file.importJobId }).first('state', 'test_run_id');
      if (!job) return true; // being requested right now (its files are recorded first)
      if (job.state === 'failed') return false;
      if (job.state !== 'completed') return true;
      const run = await deps.knex('test_runs').where({ id: job.test_run_id }).first('is_deleted');
      return run !== undefined && !run.is_deleted;
    }
  }
}
