import type { Logger } from 'pino';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import { ENTITIES, type EntityName } from '../../contracts/entities';
import { streamOf } from '../../contracts/entityEvents';
import type { DataOf, ExternalImportEvent, ExternalMappingKey } from '../../contracts/events';
import { type BulkRow, CreateRefused, decideCreates } from '../entities/bulkCreate';
import { createEntity, deciderOf, deleteEntity, factOf, uniqueClaimsOf } from '../entities/entity.handlers';
import { importedRow } from '../entities/importedRows';
import type { FileStore } from '../files/fileStore';
import { deleteUser } from '../identity/identity.handlers';
import { emailReservationStream, normaliseEmail, userDecider, userStream } from '../identity/user.decider';
import { type Claim, releaseDeletedOwnerClaim } from '../claims/uniqueClaims';
import { loadAggregate } from '../shared/decider';
import { notify, planNotificationId } from '../notifications/notify';
import { deleteFolder } from '../repository/repository.handlers';
import { folderStream } from '../repository/repositoryFolder.decider';
import { type CommandDeps, readYourWrites } from '../shared/commandBus';
import { ConcurrencyError, ContractViolation, DomainError, EventParked, HttpError, ReadModelWaitFailed } from '../shared/errors';
import type { EventStore } from '../shared/eventStore';
import { DEFAULT_RETRY_BUDGET_MS, describeError, isTransient } from '../shared/faults';
import { analyseExport } from './analysis';
import { type ExportLimits, ExportFileError } from './exportReader';
import {
  type ExternalImportCommand, type ExternalImportState, externalImportDecider, externalImportStream, isRunnable,
} from './externalImport.decider';
import { childCounts, type ChunkChildren, type DatasetStep, entryOf, fieldKindOf, IMPORT_STEPS, type ImportContext, NOT_PLACED, type Writer } from './importers';
import { MAPPING_DEFS, sourcesOf, suggestMappings } from './mappings';
import { dropStaging, stageExport, stagedCounts, stagedRows } from './staging';
import { type IdAllocator, IdPool } from '../shared/ids';

/**
 * The worker side of an external import job (externalImport.decider.ts): analyse an uploaded
 * export (read it through, stage its rows, suggest mappings), then, once queued, write every
 * dataset in order, a chunk at a time: plan the chunk's ids (one event), write each row through
 * the domain's commands under its planned id (a row whose stream exists was written before a
 * crash and is passed over), record the chunk (one event). Cancel stops between chunks; a
 * rollback deletes what the job created, in reverse order. The file and the staging go when the
 * job ends; the administrator who started it is notified.
 *
 * A job runs in one worker at a time (the worker's lease), and any worker can take it up where its
 * stream says: the saga keeps nothing that the stream and the staging do not hold.
 */

export interface ExternalImportSettings {
  /** Rows per chunk (one pair of events per chunk). */
  chunkSize: number;
  /** Rows per chunk of a bulk dataset (cases, runs, run tests, results, sessions and their results: one append per chunk). */
  bulkChunkSize: number;
  /** Rows of a chunk written at the same time. */
  concurrency: number;
  /** Keep the uploaded file after the job ends (EXTERNAL_IMPORT_KEEP_FILES). */
  keepFiles: boolean;
  limits: Partial<ExportLimits>;
  /**
   * How long a job may keep being interrupted by the database or the event store (RETRY_BUDGET_MS)
   * before it fails with external-import-interrupted-too-long; until then the worker takes it up again with backoff.
   */
  retryBudgetMs?: number;
}

/**
 * 32 rows at once: the PostgreSQL event store writes the appends waiting at the same moment in one
 * transaction, so a chunk's rows share a few commits instead of each waiting for its own.
 */
export const DEFAULT_EXTERNAL_IMPORT_SETTINGS: ExternalImportSettings = { chunkSize: 200, bulkChunkSize: 2000, concurrency: 32, keepFiles: false, limits: {} };

export interface ExternalImportDeps extends CommandDeps {
  files: FileStore;
  logger: Logger;
  settings: ExternalImportSettings;
}

/** Rows of a bulk dataset a rollback deletes at once (their Deleted events appended together). */
const ROLLBACK_BATCH = 500;

/** Thrown out of a run when its signal aborts (the lease is lost or the worker stops). */
class Stopped extends Error {}

/** The streams a row of an entity lives on (folders and users have aggregates of their own). */
function rowStream(entity: string, id: number): string {
  if (entity === 'repositoryFolder') return folderStream(id);
  if (entity === 'user') return userStream(id);
  return streamOf(ENTITIES[entity as EntityName], id);
}

export class ExternalImportSaga {
  /** Jobs interrupted by transient faults in this process: when the first interruption of the current run of them was. */
  private readonly interrupted = new Map<number, number>();
  /**
   * Jobs this process found with nothing left to do (waiting for the administrator, or ended and
   * closed) that the read model may still list while it catches up: not offered again until the
   * read model moves on. Forgotten as soon as the read model stops listing them.
   */
  private readonly idle = new Set<string>();

  constructor(private readonly deps: ExternalImportDeps) {}

  /** Jobs with work for a worker, oldest first (the read model's view; the stream decides). */
  async candidates(): Promise<number[]> {
    const rows = await this.deps.knex('external_import_jobs')
      .where((w) => w.whereIn('phase', ['uploaded', 'analysing', 'queued', 'importing', 'rollingBack'])
        .orWhere((e) => e.whereIn('phase', ['completed', 'failed', 'cancelled', 'rolledBack']).andWhere('closed', false)))
      .orderBy('job_id').limit(100).select('job_id', 'revision');
    const listed = rows.map((r: { job_id: number; revision: string }) => `${r.job_id}@${r.revision}`);
    for (const key of this.idle) if (!listed.includes(key)) this.idle.delete(key);
    return rows.filter((r: { job_id: number; revision: string }) => !this.idle.has(`${r.job_id}@${r.revision}`)).map((r: { job_id: number }) => r.job_id);
  }

  /** Runs the job's next phases until it waits for the administrator or ends. */
  async run(jobId: number, signal: AbortSignal): Promise<void> {
    let job = await JobStream.load(this.deps, jobId);
    if (job.state.phase === 'none') return;
    if (!isRunnable(job.state)) {
      // The read model listed it as it was before its last event: not again at the revision it lists.
      const row = await this.deps.knex('external_import_jobs').where({ job_id: jobId }).first('revision');
      if (row) this.idle.add(`${jobId}@${String(row.revision)}`);
      return;
    }
    for (let round = 0; round < 1000 && isRunnable(job.state); round++) {
      if (signal.aborted) return;
      try {
        await this.step(job, signal);
      } catch (err) {
        if (err instanceof Stopped) return;
        if (err instanceof ConcurrencyError) {
          // The administrator wrote to the stream (cancel, rollback): read it again and go on from there.
          job = await JobStream.load(this.deps, jobId);
          continue;
        }
        // The database or event store away, or the read models behind (a projector stopped): the job waits, as for an outage.
        if (isTransient(err) || err instanceof ReadModelWaitFailed) return this.interruptedBy(job, err);
        await this.failed(job, err);
      }
      this.interrupted.delete(jobId);
    }
  }

  /**
   * The database or the event store failed under the job: it stays as it is and the worker takes it
   * up again (backoff), until the interruptions have lasted the retry budget; then it fails once.
   * Counted per process: a worker that starts again starts the count again.
   */
  private async interruptedBy(job: JobStream, err: unknown): Promise<void> {
    const jobId = job.state.jobId;
    const since = this.interrupted.get(jobId) ?? Date.now();
    this.interrupted.set(jobId, since);
    if (Date.now() - since < (this.deps.settings.retryBudgetMs ?? DEFAULT_RETRY_BUDGET_MS)) throw err;
    this.deps.logger.error({ err, jobId }, 'external import interrupted for longer than its retry budget; failing it');
    const fresh = await JobStream.load(this.deps, jobId);
    await this.failed(fresh, new DomainError('external-import-interrupted-too-long',
      `The import was interrupted by the database or event store for longer than its retry budget: ${describeError(err)}`, { lastError: describeError(err) }));
    this.interrupted.delete(jobId);
  }

  private async step(job: JobStream, signal: AbortSignal): Promise<void> {
    const s = job.state;
    switch (s.phase) {
      case 'uploaded':
      case 'analysing':
        if (s.cancelRequested) {
          await job.apply({ type: 'Cancel', now: this.now() });
          return;
        }
        return this.analyse(job);
      case 'queued':
        return this.start(job);
      case 'importing':
        if (s.cancelRequested && !s.openChunk) {
          await job.apply({ type: 'Cancel', now: this.now() });
          return;
        }
        return this.importAll(job, signal);
      case 'rollingBack':
        return this.rollBack(job, signal);
      default:
        return this.finish(job);
    }
  }

  private now(): string {
    return this.deps.clock().toISOString();
  }

  /** A path to read the uploaded export from. */
  private async exportPath(job: JobStream): Promise<string> {
    const path = job.state.file && !job.state.fileDeleted ? await this.deps.files.localPath(job.state.file.storedAs) : null;
    if (!path) throw new DomainError('external-import-file-missing', 'The uploaded export is no longer stored; upload it again as a new job', { jobId: job.state.jobId });
    return path;
  }

  private async analyse(job: JobStream): Promise<void> {
    await job.apply({ type: 'StartAnalysis', now: this.now() });
    const path = await this.exportPath(job);
    // Named as uploaded (the stored file's name is a key the server chose).
    const name = job.state.file?.fileName;
    const analysis = await analyseExport(path, { limits: this.deps.settings.limits, name });
    await stageExport(this.deps.knex, job.state.jobId, path, this.deps.settings.limits, name);
    const sources = await sourcesOf(this.deps.knex, job.state.jobId);
    const suggestions = await suggestMappings(this.deps.knex, this.deps.store, sources);
    // Datasets the export holds that this domain has no place for are listed as skipped, with the reason; their problems only warn.
    const datasets = analysis.datasets.map((d) => (d.disposition === 'import' && NOT_PLACED.has(d.name)
      ? { ...d, disposition: 'skip' as const, skipReason: NOT_PLACED.get(d.name)!, warnings: [...d.warnings, ...d.errors], errors: [] }
      : d));
    const errors = analysis.errors.length + datasets.reduce((n, d) => n + d.errors.length, 0);
    const failed = errors === 0 ? null : new DomainError('external-import-has-errors', `The export has ${errors} error(s) (listed on the job); nothing is imported`, { errors });
    const outcome = await job.apply({
      type: 'RecordAnalysis', analysis: { ...analysis, datasets, sources, suggestions }, now: this.now(),
      ...(failed && { failure: { code: failed.code, error: failed.message, details: failed.details, notificationId: await this.planNotification(job) } }),
    });
    if (outcome) await readYourWrites(this.deps, outcome);
  }

  private async start(job: JobStream): Promise<void> {
    let counts = await stagedCounts(this.deps.knex, job.state.jobId);
    // Staged at analysis; a staging dropped since (or never written by an older worker) is made again from the file.
    if (counts === null) counts = await stageExport(this.deps.knex, job.state.jobId, await this.exportPath(job), this.deps.settings.limits, job.state.file?.fileName);
    const plan = IMPORT_STEPS.filter((step) => (counts![step.dataset] ?? 0) > 0).map((step) => ({ dataset: step.dataset, rows: counts![step.dataset] }));
    await job.apply({ type: 'Start', plan, now: this.now() });
  }

  private context(job: JobStream, pending: Map<string, Map<string, number>>): ImportContext {
    const s = job.state;
    const mappingOf = new Map<string, ExternalMappingKey>(Object.entries(MAPPING_DEFS).map(([key, def]) => [def.dataset, key as ExternalMappingKey]));
    return {
      knex: this.deps.knex, jobId: s.jobId, mappings: s.mappings!, durationUnit: s.durationUnit,
      snapshotRepos: job.snapshotRepos, cache: job.cache,
      idOf(dataset, sourceId) {
        if (sourceId === null || sourceId === undefined || sourceId === '') return null;
        const key = String(sourceId);
        const planned = s.ids.get(dataset)?.bySource.get(key) ?? pending.get(dataset)?.get(key);
        if (planned !== undefined) return planned;
        const mapping = mappingOf.get(dataset);
        const entry = mapping ? entryOf(s.mappings!, mapping, key) : undefined;
        return entry?.action === 'map' ? entry.targetId! : null;
      },
    };
  }

  private writer(job: JobStream): Writer {
    // Each row is waited for once, at the end of its chunk: a row's own write does not wait for the read models.
    // The rows a chunk points at (a run, its statuses, their project) are read once per chunk.
    const deps: CommandDeps = { ...this.deps, watcher: { waitFor: async () => undefined } as unknown as CommandDeps['watcher'], factMemo: new Map() };
    return {
      deps, metadata: job.metadata,
      at: (createdAt) => {
        const at = timeOf(createdAt);
        return at === null ? deps : { ...deps, clock: () => new Date(at) };
      },
    };
  }

  /** Waits until the read models hold every event of the job's stream so far (a bulk chunk's rows are not waited for one by one). */
  private async caughtUp(job: JobStream): Promise<void> {
    if (job.lastPosition === null) return;
    await readYourWrites({ ...this.deps, writeTimeoutMs: Math.max(this.deps.writeTimeoutMs, 120_000) }, { position: job.lastPosition, streamId: externalImportStream(job.state.jobId) });
  }

  private async importAll(job: JobStream, signal: AbortSignal): Promise<void> {
    await job.loadSnapshots(this.deps);
    // A job taken up again: what an earlier run appended is in the read models before anything is decided from them.
    await this.caughtUp(job);
    for (const step of IMPORT_STEPS) {
      for (;;) {
        if (signal.aborted) throw new Stopped();
        if (job.state.cancelRequested && !job.state.openChunk) return; // step() cancels
        const open = job.state.openChunk;
        if (open && open.dataset !== step.dataset) break; // a later dataset's chunk is open: this one is done
        if (open) {
          const started = Date.now();
          await this.writeChunk(job, step);
          this.deps.logger.debug({ jobId: job.state.jobId, dataset: step.dataset, chunk: open.chunk, rows: open.rows.length, ms: Date.now() - started }, 'external import chunk written');
          continue;
        }
        const after = job.state.progress[step.dataset]?.lastRow ?? 0;
        const started = Date.now();
        const rows = await stagedRows(this.deps.knex, job.state.jobId, step.dataset, after, step.bulk ? this.deps.settings.bulkChunkSize : this.deps.settings.chunkSize);
        if (rows.length === 0) break;
        if (step.bulk) {
          const times = await this.importBulkChunk(job, step, rows);
          this.deps.logger.debug({ jobId: job.state.jobId, dataset: step.dataset, rows: rows.length, ms: Date.now() - started, ...times }, 'external import bulk chunk written');
          continue;
        }
        await this.planChunk(job, step, rows);
        this.deps.logger.debug({ jobId: job.state.jobId, dataset: step.dataset, rows: rows.length, ms: Date.now() - started }, 'external import chunk planned');
      }
      // The next datasets refer to this one's rows through the read model (a run test's case, a result's run test): it has them first.
      await this.caughtUp(job);
    }
    const counts: Record<string, { created: number; mapped: number; skipped: number }> = {};
    for (const { dataset } of job.state.plan) {
      const p = job.state.progress[dataset];
      const map = job.state.ids.get(dataset);
      const created = map?.created.length ?? 0;
      counts[dataset] = { created, mapped: (map?.bySource.size ?? 0) - created, skipped: p?.skipped ?? 0 };
    }
    // A template's fields are read with it: those left out (their template not imported, or mapped; their field not imported) are counted too.
    const staged = await stagedCounts(this.deps.knex, job.state.jobId);
    if (staged?.template_fields) {
      const createdIds = new Map([...job.state.ids].map(([dataset, m]) => [dataset, new Set(m.created)]));
      const owner = (dataset: string, sourceId: unknown) => {
        const id = sourceId === null || sourceId === undefined ? undefined : job.state.ids.get(dataset)?.bySource.get(String(sourceId));
        return id === undefined ? null : createdIds.get(dataset)?.has(id) ? 'created' as const : 'mapped' as const;
      };
      counts.template_fields = await childCounts(this.context(job, new Map()), 'template_fields', owner);
    }
    const outcome = await job.apply({ type: 'Complete', counts, notificationId: await this.planNotification(job), now: this.now() });
    if (outcome) await readYourWrites(this.deps, outcome);
  }

  private async planChunk(job: JobStream, step: DatasetStep, rows: StagedRow[]): Promise<void> {
    const columns = await this.planRows(job, step, rows);
    await job.apply({ type: 'PlanChunk', dataset: step.dataset, entity: entityOfRows(step, job), lastRow: rows[rows.length - 1].index, rows: columns });
    [job.plannedHere, job.plannedDataset] = [job.state.openChunk!.chunk, step.dataset];
  }

  /** Decides what each row of a chunk becomes and gives the rows created their ids (reserved now, recorded by the caller's event). */
  private async planRows(job: JobStream, step: DatasetStep, rows: StagedRow[], ids: Pick<IdAllocator, 'nextMany'> = this.deps.ids): Promise<PlannedRows> {
    const pending = new Map<string, Map<string, number>>([[step.dataset, new Map()]]);
    const ctx = this.context(job, pending);
    const columns = { sourceId: [] as string[], id: [] as Array<number | null>, key: [] as Array<string | null>, createdBy: [] as Array<string | null>,
      createdAt: [] as Array<string | null>, skipReason: [] as Array<string | null>, mapped: [] as boolean[] };
    const decisions: Array<{ create: true } | { map: number } | { skip: string }> = [];
    const seen = new Set<string>();
    for (const { index, row } of rows) {
      const sourceId = step.sourceIdOf ? step.sourceIdOf(row, index) : row.id === undefined || row.id === null ? `#${index}` : String(row.id);
      const twice = seen.has(sourceId) || job.state.ids.get(step.dataset)?.bySource.has(sourceId);
      let decision = twice ? { skip: `a second row with id ${sourceId}` } : await step.decide(row, ctx);
      if (sourceId.startsWith('#') && !step.sourceIdOf) decision = { skip: 'the row has no id' };
      seen.add(sourceId);
      decisions.push(decision);
      columns.sourceId.push(sourceId.slice(0, 200));
      columns.key.push(typeof row.key === 'string' ? row.key.slice(0, 200) : null);
      columns.createdBy.push(row.created_by === undefined || row.created_by === null ? null : String(row.created_by).slice(0, 200));
      columns.createdAt.push(typeof row.created_at === 'string' ? row.created_at.slice(0, 100) : null);
      columns.skipReason.push('skip' in decision ? decision.skip : null);
      columns.mapped.push('map' in decision);
      columns.id.push('map' in decision ? decision.map : null);
      // A row later in the chunk may point at this one (a subfolder at its parent): known as soon as decided.
      if ('create' in decision) pending.get(step.dataset)!.set(sourceId, -1);
      else if ('map' in decision) pending.get(step.dataset)!.set(sourceId, decision.map);
    }
    const creating = decisions.filter((d) => 'create' in d).length;
    const planned = creating > 0 ? await ids.nextMany(step.entity === 'repositoryFolder' ? 'repositoryFolder' : step.entity, creating, job.metadata) : [];
    let next = 0;
    decisions.forEach((d, i) => {
      if ('create' in d) columns.id[i] = planned[next++];
    });
    return columns;
  }

  /**
   * A chunk of a bulk dataset (cases, runs, run tests, results, sessions and their results):
   * planned, built, decided as each row's own create would be (services/entities/bulkCreate.ts),
   * and appended as one: the plan, the rows' Created data and the record in one append. A process
   * that stops before it appends leaves nothing of the chunk (its reserved ids stay unused); after
   * it, the whole chunk.
   */
  private async importBulkChunk(job: JobStream, step: DatasetStep, rows: StagedRow[]): Promise<Record<string, number>> {
    const t0 = Date.now();
    // Ids of the rows and of their children reserved ten chunks ahead: a chunk costs one append, its own.
    job.idPool ??= new IdPool(this.deps.ids, 10 * this.deps.settings.bulkChunkSize);
    const columns = await this.planRows(job, step, rows, job.idPool);
    const t1 = Date.now();
    const planned = new Map<string, Map<string, number>>([[step.dataset, new Map(columns.sourceId.map((sourceId, i) => [sourceId, columns.id[i] ?? -1]))]]);
    const ctx = this.context(job, planned);
    const children: ChunkChildren = step.prepare ? await step.prepare(rows.map((r) => r.row), ctx) : {};
    const writer = this.writer(job);
    const t2 = Date.now();
    const creates: Array<{ sourceId: string; row: BulkRow }> = [];
    for (const [i, { row }] of rows.entries()) {
      const id = columns.id[i];
      if (id === null || columns.mapped[i]) continue;
      const sourceId = columns.sourceId[i];
      try {
        creates.push({ sourceId, row: { id, write: await step.build!(row, ctx, children), at: timeOf(row.created_at) ?? this.now() } });
      } catch (err) {
        if (isTransient(err)) throw err;
        throw new RowRefused(step.dataset, sourceId, err);
      }
    }
    const t3 = Date.now();
    let data: Record<string, unknown>[];
    try {
      data = await decideCreates(writer.deps, step.entity, creates.map((c) => c.row), job.metadata, job.idPool);
    } catch (err) {
      if (!(err instanceof CreateRefused)) throw err;
      if (isTransient(err.cause)) throw err.cause;
      throw new RowRefused(step.dataset, creates[err.index].sourceId, err.cause);
    }
    const t4 = Date.now();
    const fields = [...new Set(data.flatMap((d) => Object.keys(d)))];
    await job.apply({
      type: 'ImportChunk', plan: { dataset: step.dataset, entity: step.entity, lastRow: rows[rows.length - 1].index, rows: columns },
      written: { fields, rows: data.map((d) => fields.map((f) => d[f] ?? null)) }, now: this.now(),
    });
    return { planMs: t1 - t0, prepareMs: t2 - t1, buildMs: t3 - t2, decideMs: t4 - t3, appendMs: Date.now() - t4 };
  }

  /** Writes the open chunk's planned rows (those written before a crash are passed over) and records it. */
  private async writeChunk(job: JobStream, step: DatasetStep): Promise<void> {
    const started = Date.now();
    const open = job.state.openChunk!;
    const rows = await openChunkRows(job, step, open.lastRow, open.rows.length);
    const bySource = new Map(rows.map((r) => [sourceIdOfRow(step, r), r.row]));
    const ctx = this.context(job, new Map());
    const children: ChunkChildren = step.prepare ? await step.prepare(rows.map((r) => r.row), ctx) : {};
    const writer = this.writer(job);
    // A bulk dataset's chunk planned by an older worker (one row at a time) is finished that way.
    const write = step.write ?? (async (row: Record<string, unknown>, id: number, c: ImportContext, w: Writer, ch: ChunkChildren) =>
      createEntity(w.at(row.created_at), step.entity, await step.build!(row, c, ch), w.metadata, id));
    const todo = open.rows.filter(([, id], i) => id !== null && !open.mapped[i]) as Array<[string, number]>;
    const plannedHere = job.plannedHere === open.chunk && job.plannedDataset === open.dataset;
    const writeOne = async ([sourceId, id]: [string, number]) => {
      const row = bySource.get(sourceId);
      if (!row) throw new DomainError('external-import-staging-changed', `Row ${sourceId} of ${step.dataset} is no longer staged`, { dataset: step.dataset, sourceId });
      // A chunk planned by an earlier run (a process that stopped) may have some rows written already.
      if (!plannedHere) {
        const [existing] = await this.deps.store.readStream(rowStream(entityOfRow(job, step.dataset, open.entity, sourceId), id), { maxCount: 1 });
        if (existing) return;
      }
      try {
        await write(row, id, ctx, writer, children);
      } catch (err) {
        if (isTransient(err) || err instanceof ConcurrencyError) throw err;
        throw new RowRefused(step.dataset, sourceId, err);
      }
    };
    for (const wave of wavesOf(step, todo, bySource)) {
      for (let i = 0; i < wave.length; i += this.deps.settings.concurrency) await Promise.all(wave.slice(i, i + this.deps.settings.concurrency).map(writeOne));
    }
    const written = Date.now();
    const skipped = open.rows.filter(([, id]) => id === null).length;
    const outcome = await job.apply({ type: 'RecordChunk', created: todo.length, skipped, now: this.now() });
    // The next chunk may point at this one's rows through the read model (a case's folder, a result's run case): wait until it has them.
    if (outcome) await readYourWrites({ ...this.deps, writeTimeoutMs: Math.max(this.deps.writeTimeoutMs, 120_000) }, outcome);
    this.deps.logger.debug({ jobId: job.state.jobId, dataset: step.dataset, writeMs: written - started, waitMs: Date.now() - written }, 'external import chunk recorded');
  }

  /**
   * Deletes every row the job created, datasets in the reverse of their import order, each with
   * its entity's own `Deleted` event (the administrator as actor, the job as correlation), and
   * gives back the unique values of the rows it deletes (a placeholder user's e-mail). The rows a
   * dataset wrote in bulk are deleted a batch at a time (deleteBulkRows); the others as a user
   * deletes them, `concurrency` at a time. The rows gone through and those deleted are recorded every `bulkChunkSize`:
   * a rollback taken up again goes on from there, and counts only what it deleted.
   */
  private async rollBack(job: JobStream, signal: AbortSignal): Promise<void> {
    // No fact memo: the rollback deletes the very rows a memo would remember.
    const deps: CommandDeps = { ...this.writer(job).deps, factMemo: undefined };
    const every = this.deps.settings.bulkChunkSize;
    for (const step of [...IMPORT_STEPS].reverse()) {
      const map = job.state.ids.get(step.dataset);
      const done = job.state.processed[step.dataset] ?? 0;
      if (!map || map.created.length === 0 || done >= map.created.length) continue;
      const created = new Set(map.created);
      // The same order every time (the order the job planned them, last first): `done` rows of it are gone through.
      const rows = [...map.bySource].filter(([, id]) => created.has(id)).reverse().slice(done);
      const started = Date.now();
      // Folders and milestones refer to each other, but none of their deletions depends on another's: all go `concurrency` at a time.
      const width = step.bulk ? Math.min(every, ROLLBACK_BATCH) : this.deps.settings.concurrency;
      let processed = done;
      let deleted = job.state.deleted[step.dataset] ?? 0;
      let recorded = done;
      // The record before the last one: the read models are waited for up to it, so they apply one record's deletions while the next are appended.
      let behind: { position: string; streamId: string } | undefined;
      for (let i = 0; i < rows.length; i += width) {
        if (signal.aborted) throw new Stopped();
        const group = rows.slice(i, i + width);
        deleted += step.bulk
          ? await this.deleteBulkRows(job, deps, step, group)
          : (await Promise.all(group.map((row) => this.deleteRow(job, deps, step, map.entity, row)))).filter(Boolean).length;
        processed += group.length;
        if (processed - recorded >= every && processed < done + rows.length) {
          const progressed = await job.apply({ type: 'RecordRollback', dataset: step.dataset, processed, deleted, now: this.now() });
          // The read models stay at most two records behind: a bulk batch appends its Deleted events far faster than they apply them
          // (at the bench's full size the read model fell 300,000 events behind, and the wait at the dataset's end timed out).
          if (behind) await readYourWrites({ ...this.deps, writeTimeoutMs: Math.max(this.deps.writeTimeoutMs, 120_000) }, behind);
          behind = progressed ?? undefined;
          recorded = processed;
        }
      }
      const written = Date.now();
      const outcome = await job.apply({ type: 'RecordRollback', dataset: step.dataset, processed, deleted, now: this.now() });
      if (outcome) await readYourWrites({ ...this.deps, writeTimeoutMs: Math.max(this.deps.writeTimeoutMs, 120_000) }, outcome);
      this.deps.logger.info({ jobId: job.state.jobId, dataset: step.dataset, rows: rows.length, deleted, deleteMs: written - started, waitMs: Date.now() - written },
        'external import rollback: dataset done');
    }
    await job.apply({ type: 'FinishRollback', now: this.now() });
  }

  /**
   * Deletes one row as a user deletes it; answers whether this rollback deleted it (now, or in an
   * earlier run that stopped before recording it): a row never written, or deleted by someone else
   * since, is not counted. The unique values of a row it deleted are given back.
   */
  private async deleteRow(job: JobStream, deps: CommandDeps, step: DatasetStep, datasetEntity: string, [sourceId, id]: [string, number]): Promise<boolean> {
    const entity = entityOfRow(job, step.dataset, datasetEntity, sourceId);
    const stream = rowStream(entity, id);
    const [existing] = await this.deps.store.readStream(stream, { maxCount: 1 });
    // A row written in bulk has no stream until it first changes: the read model has it.
    if (!existing && !(step.bulk && (await importedRow(this.deps.knex, ENTITIES[entity as EntityName], id)))) return false;
    try {
      if (entity === 'repositoryFolder') await deleteFolder(deps, { folderId: id }, job.metadata);
      else if (entity === 'user') await deleteUser(deps, { userId: id }, job.metadata);
      else await deleteEntity(deps, entity as EntityName, id, job.metadata);
    } catch (err) {
      if (isTransient(err)) throw err;
      // Deleted already (by a user, or by a rollback that stopped half-way), or refused: told, and the rollback goes on.
      if (!(err instanceof DomainError)) throw err;
      this.deps.logger.info({ jobId: job.state.jobId, entity, id, code: err.code }, 'external import rollback passed over a row');
    }
    const [last] = await this.deps.store.readStream(stream, { direction: 'backwards', maxCount: 1 });
    const ours = last !== undefined && last.type.endsWith('Deleted') && last.metadata.correlationId === job.metadata.correlationId;
    if (ours && !step.bulk) await this.releaseClaimsOf(job, entity, id);
    return ours;
  }

  /**
   * Gives back the unique values a row this rollback deleted held (UniqueValueReleased,
   * owner-rolled-back, on each value's claim stream): a placeholder user's e-mail, which a user's
   * deletion keeps for good, and the names of configuration rows. The claims projection applies
   * it as any release, so the reconciler and a rebuild see the value free.
   */
  private async releaseClaimsOf(job: JobStream, entity: string, id: number): Promise<void> {
    let claims: Claim[] = [];
    if (entity === 'user') {
      const { state } = await loadAggregate(this.deps.store, userStream(id), userDecider);
      if (state.email) claims = [{ streamId: emailReservationStream(state.email), scope: 'user.email', value: normaliseEmail(state.email), ownerId: id }];
    } else if (entity !== 'repositoryFolder') {
      const fact = await factOf({ store: this.deps.store, knex: this.deps.knex }, entity as EntityName, id);
      claims = uniqueClaimsOf(ENTITIES[entity as EntityName], fact.values, id);
    }
    for (const claim of claims) await releaseDeletedOwnerClaim(this.deps.store, claim, job.metadata);
  }

  /**
   * A batch of rows the import wrote in bulk. Those with no stream of their own (never changed
   * since the import: nearly all) are decided at once from one read of the read model, and their
   * `Deleted` events appended together, each on its row's own stream at `no-stream` (the event
   * store writes the appends waiting at the same moment in one transaction): a row whose stream
   * began meanwhile, or that an earlier run of this rollback deleted, loses that race and is
   * deleted the one-row way (deleteRow). Answers how many rows this rollback deleted.
   */
  private async deleteBulkRows(job: JobStream, deps: CommandDeps, step: DatasetStep, group: Array<[string, number]>): Promise<number> {
    const entity = ENTITIES[step.entity];
    const marker = entity.fields.externalImportJobId?.column;
    const deletedColumn = entity.softDeleteField ? entity.fields[entity.softDeleteField].column : null;
    if (!marker || !deletedColumn) {
      return (await Promise.all(group.map((row) => this.deleteRow(job, deps, step, step.entity, row)))).filter(Boolean).length;
    }
    const ids = group.map(([, id]) => id);
    const found = await this.deps.knex(entity.table).whereRaw('id = ANY(?::integer[])', [ids]).whereNotNull(marker).select('id', `${deletedColumn} as deleted`);
    const alive = new Set(found.filter((r: { deleted: boolean }) => !r.deleted).map((r: { id: number }) => r.id));
    const decider = deciderOf(entity);
    const now = this.now();
    const outcomes = await Promise.all(group.map(async (row) => {
      const [, id] = row;
      // Not in the read model: never written (its chunk was not appended). Deleted there: by someone, or by an earlier run (one row at a time tells).
      if (!alive.has(id)) return found.some((r: { id: number }) => r.id === id) ? this.deleteRow(job, deps, step, step.entity, row) : false;
      const events = decider.decide({ type: 'Delete', id, now }, { exists: true, isDeleted: false, values: {} });
      try {
        await this.deps.store.append(streamOf(entity, id), events, { expectedRevision: 'no-stream', metadata: job.metadata });
        return true;
      } catch (err) {
        if (!(err instanceof ConcurrencyError)) throw err;
        return this.deleteRow(job, deps, step, step.entity, row);
      }
    }));
    return outcomes.filter(Boolean).length;
  }

  /** An ended job: its creator told, its file and staging gone (the file kept with EXTERNAL_IMPORT_KEEP_FILES). */
  private async finish(job: JobStream): Promise<void> {
    const s = job.state;
    if (s.phase === 'completed' || s.phase === 'failed') await this.notify(job);
    await dropStaging(this.deps.knex, s.jobId);
    // Kept with EXTERNAL_IMPORT_KEEP_FILES (a rolled-back job has no use for its file: it goes).
    const deleteFile = !s.fileDeleted && (!this.deps.settings.keepFiles || s.phase === 'rolledBack');
    if (deleteFile && s.file) await this.deps.files.remove(s.file.storedAs);
    const outcome = await job.apply({ type: 'Close', fileDeleted: deleteFile, now: this.now() });
    if (outcome) await readYourWrites(this.deps, outcome);
  }

  /** The id of the notification that will tell the creator how the job ended (none for a job without a creator). */
  private planNotification(job: JobStream): Promise<number | null> {
    return job.metadata.actor.userId === null ? Promise.resolve(null) : planNotificationId(this.deps, job.metadata);
  }

  /** Tells the creator, under the notification id the end planned: told once however often this runs. */
  private async notify(job: JobStream): Promise<void> {
    const s = job.state;
    const creator = job.metadata.actor.userId;
    if (creator === null || s.notificationId === null) return;
    const completed = s.phase === 'completed';
    const created = [...s.ids.values()].reduce((n, m) => n + m.created.length, 0);
    const file = s.file?.fileName ?? 'The export';
    await notify(this.deps, {
      userId: creator, kind: completed ? 'external-import-completed' : 'external-import-failed',
      title: completed ? `External import ${s.jobId} completed` : `External import ${s.jobId} failed`,
      body: (completed ? `${file}: ${created} rows created.` : `${file}: ${s.failure?.error ?? 'see the job'}`).slice(0, 2000),
      link: `/api/admin/imports/external/jobs/${s.jobId}`, subject: { type: 'externalImport', id: s.jobId }, notificationId: s.notificationId,
    }, job.metadata);
  }

  private async failed(job: JobStream, err: unknown): Promise<void> {
    const { code, message, details } = failureOf(err);
    if (!(err instanceof DomainError || err instanceof ExportFileError || err instanceof RowRefused || err instanceof HttpError)) {
      this.deps.logger.error({ err, jobId: job.state.jobId, correlationId: job.metadata.correlationId }, 'external import job failed');
    }
    if (job.state.phase === 'failed' || job.state.phase === 'none') return;
    if (job.state.openChunk) {
      // The chunk's rows written so far stay; the job fails with the chunk open (a rollback removes them).
      this.deps.logger.warn({ jobId: job.state.jobId, dataset: job.state.openChunk.dataset, chunk: job.state.openChunk.chunk }, 'external import failed inside a chunk');
    }
    const outcome = await job.apply({ type: 'Fail', code, error: message.slice(0, 2000), details, notificationId: await this.planNotification(job), now: this.now() });
    if (outcome) await readYourWrites(this.deps, outcome);
  }
}

type StagedRow = { index: number; row: Record<string, unknown> };
type PlannedRows = DataOf<'ExternalImportChunkPlanned'>['rows'];

/** A source row's creation time as ISO, when it has a valid one. */
/** A source row's time (created_at) as ISO, or null when it is not a time. */
function timeOf(value: unknown): string | null {
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

/** A row the domain refused (a rule, a unique name taken meanwhile): the job fails naming it. */
class RowRefused extends Error {
  constructor(readonly dataset: string, readonly sourceId: string, override readonly cause: unknown) {
    super(`The row with id ${sourceId} of ${dataset} was refused: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

function failureOf(err: unknown): { code: string; message: string; details: Record<string, unknown> } {
  const asFailure = (e: DomainError) => ({ code: e.code, message: e.message, details: e.details });
  if (err instanceof RowRefused) {
    const inner = err.cause;
    const reason = inner instanceof DomainError || inner instanceof HttpError ? inner.code : inner instanceof ContractViolation ? 'contract-violation' : 'internal-error';
    return asFailure(new DomainError('external-import-row-refused', err.message, { dataset: err.dataset, sourceId: err.sourceId, reason }));
  }
  if (err instanceof ExportFileError) return { code: err.code, message: err.message, details: err.details };
  // A row was written, but a read model parked its event: later rows may refer to it, so the job stops here (a rollback removes its rows).
  if (err instanceof EventParked) return { code: err.code, message: err.message, details: err.details };
  if (err instanceof DomainError || err instanceof HttpError) return { code: err.code, message: err.message, details: err.details };
  return asFailure(new DomainError('external-import-internal-error', `The import failed on an unexpected error: ${describeError(err)} (logged with the correlation id)`));
}

/** A chunk plan's rows left out (foldJobStream without ids). */
const NO_ROWS: DataOf<'ExternalImportChunkPlanned'>['rows'] = { sourceId: [], id: [], key: [], createdBy: [], createdAt: [], skipReason: [], mapped: [] };

/**
 * A job's state from its stream, with the stream's first and last events. Folded a page at a time
 * (`page` events per read): a long job's plans (every row's source id) are not all held at once.
 * The chunks' rows are the read model's business: the job folds their plans and records only.
 * `withIds: false`: the plans' rows are left out too (read shallow), and the state has no map of
 * source ids to new ids: enough for the administrator's commands (execute, cancel, rollback,
 * configure), which decide on the phase alone. A job of a million rows folds in megabytes then.
 */
export async function foldJobStream(
  store: EventStore, jobId: number, page = 200, options: { withIds?: boolean } = {},
): Promise<{ state: ExternalImportState; first?: EventEnvelope; last?: EventEnvelope }> {
  const withIds = options.withIds ?? true;
  let state = externalImportDecider.initialState;
  let first: EventEnvelope | undefined;
  let last: EventEnvelope | undefined;
  const shallow = withIds ? ['ExternalImportRowsWritten'] : ['ExternalImportRowsWritten', 'ExternalImportChunkPlanned'];
  for (;;) {
    const from = last ? BigInt(last.revision) + 1n : undefined;
    const events = await store.readStream(externalImportStream(jobId), { shallow, maxCount: page, ...(from !== undefined && { fromRevision: from }) });
    for (const e of events) {
      const data = !withIds && e.type === 'ExternalImportChunkPlanned' ? { ...(e.data as object), rows: NO_ROWS } : e.data;
      state = externalImportDecider.evolve(state, { type: e.type, data } as ExternalImportEvent);
    }
    first ??= events[0];
    last = events[events.length - 1] ?? last;
    if (events.length < page) return { state, first, last };
  }
}

/**
 * The rows of a chunk to write, in waves: a row whose parent (step.parentOf) is written in this
 * chunk comes in the wave after its parent's; the rows of a wave are independent of each other.
 * Rows left in a cycle come last, one per wave, in the chunk's order (the first of them is refused
 * for its missing parent, as a user's create would be).
 */
export function wavesOf<T extends [string, number]>(step: Pick<DatasetStep, 'parentOf'>, todo: T[], bySource: Map<string, Record<string, unknown>>): T[][] {
  if (!step.parentOf) return todo.length > 0 ? [todo] : [];
  const pending = new Set(todo.map(([sourceId]) => sourceId));
  const parentOf = (sourceId: string) => {
    const row = bySource.get(sourceId);
    const parent = row ? step.parentOf!(row) : null;
    return parent === null || parent === undefined || parent === '' ? null : String(parent);
  };
  const waves: T[][] = [];
  let left = todo;
  while (left.length > 0) {
    const ready = left.filter(([sourceId]) => {
      const parent = parentOf(sourceId);
      return parent === null || parent === sourceId || !pending.has(parent);
    });
    if (ready.length === 0) {
      for (const entry of left) waves.push([entry]);
      break;
    }
    waves.push(ready);
    for (const [sourceId] of ready) pending.delete(sourceId);
    left = left.filter(([sourceId]) => pending.has(sourceId));
  }
  return waves;
}

const sourceIdOfRow = (step: DatasetStep, r: { index: number; row: Record<string, unknown> }) =>
  step.sourceIdOf ? step.sourceIdOf(r.row, r.index) : r.row.id === undefined || r.row.id === null ? `#${r.index}` : String(r.row.id);

/** The open chunk's staged rows: those after the dataset's last written row, up to `lastRow`. */
async function openChunkRows(job: JobStream, step: DatasetStep, lastRow: number, count: number) {
  const after = job.state.progress[step.dataset]?.lastRow ?? 0;
  const rows = await stagedRows(job.knex, job.state.jobId, step.dataset, after, count);
  return rows.filter((r) => r.index <= lastRow);
}

function entityOfRows(step: DatasetStep, job: JobStream): string {
  // Fields become case or result fields (by their mapping); the chunk names the first kind, each row's is entityOfRow's.
  if (step.dataset === 'fields') {
    const kinds = new Set(job.state.mappings?.templateFields.map((e) => e.kind ?? 'caseField'));
    return kinds.size === 1 ? [...kinds][0] : 'caseField';
  }
  return step.entity;
}

/** The entity one row became: its dataset's, except the export's fields (case or result fields, by their mapping). */
function entityOfRow(job: JobStream, dataset: string, entity: string, sourceId: string): string {
  return dataset === 'fields' && job.state.mappings ? fieldKindOf(job.state.mappings, sourceId) : entity;
}

/** The job's stream, folded, with its revision: each command is decided and appended at that revision. */
class JobStream {
  /** Facts the importers look up once per job. */
  readonly cache = new Map<string, unknown>();
  snapshotRepos = new Set<string>();
  /** Ids reserved ahead for bulk chunks (made at the first one). */
  idPool: IdPool | null = null;
  /** The chunk this run planned (none of its rows can exist yet); a chunk planned by an earlier run is checked row by row. */
  plannedHere: number | null = null;
  plannedDataset: string | null = null;

  private constructor(
    private readonly deps: ExternalImportDeps,
    public state: ExternalImportState,
    private revision: bigint | null,
    readonly metadata: EventMetadata,
    /** The position of the stream's last event (null: none yet). */
    public lastPosition: string | null,
  ) {}

  get knex() {
    return this.deps.knex;
  }

  static async load(deps: ExternalImportDeps, jobId: number): Promise<JobStream> {
    const { state, first, last } = await foldJobStream(deps.store, jobId);
    // The saga's writes carry the administrator who uploaded as actor, through the import, correlated by the job.
    const metadata: EventMetadata = first
      ? { actor: { ...first.metadata.actor, via: 'import' }, correlationId: externalImportStream(jobId), causationId: first.id }
      : { actor: { userId: null, via: 'system' }, correlationId: externalImportStream(jobId), causationId: null };
    return new JobStream(deps, state, last ? BigInt(last.revision) : null, metadata, last ? last.position : null);
  }

  /** Repositories that are run snapshots: their folders and cases are skipped. */
  async loadSnapshots(deps: ExternalImportDeps): Promise<void> {
    const rows = await deps.knex('external_import_staging').where({ job_id: this.state.jobId, dataset: 'repositories' }).select('source_id', 'row');
    const truthy = (v: unknown) => v === true || v === 1 || v === '1' || v === 'true';
    this.snapshotRepos = new Set(rows.filter((r: { row: Record<string, unknown> }) => truthy(r.row.is_snapshot)).map((r: { source_id: string }) => r.source_id));
  }

  async apply(cmd: ExternalImportCommand): Promise<{ position: string; streamId: string } | null> {
    const events = externalImportDecider.decide(cmd, this.state);
    if (events.length === 0) return null;
    const streamId = externalImportStream(this.state.jobId);
    const result = await this.deps.store.append(streamId, events, { expectedRevision: this.revision ?? 'no-stream', metadata: this.metadata });
    for (const e of events) this.state = externalImportDecider.evolve(this.state, e);
    this.revision = result.nextRevision;
    this.lastPosition = result.position;
    return { position: result.position, streamId };
  }
}
