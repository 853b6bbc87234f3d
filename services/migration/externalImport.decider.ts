import type {
  DataOf, ExternalDurationUnit, ExternalImportEvent, ExternalMappings,
} from '../../contracts/events';
import { assertNever, DomainError } from '../shared/errors';

/**
 * An external import job (the external-tool migration): an event-sourced process on its own
 * stream `externalImport-<jobId>`.
 *
 *   uploaded → analysing → analysed → configured (again and again) → queued → importing
 *     → completed | failed | cancelled;   completed | failed | cancelled → rolling back → rolled back
 *
 * While importing, each chunk of a dataset is two events: the ids its rows get (planned before
 * anything is written) and, once every row is written, the chunk done. The ids a job planned are
 * its map from source ids to new ids: a resumed job writes a planned row under its planned id
 * (and skips it when its stream exists), so no row is written twice, and later datasets find the
 * rows they point at. Pure: the saga (externalImport.saga.ts) reads files and writes entities.
 */

export { externalImportStream } from '../../contracts/events';
export const EXTERNAL_IMPORT_ID_CATEGORY = 'externalImport';

export type ExternalImportPhase =
  | 'none' | 'uploaded' | 'analysing' | 'analysed' | 'configured' | 'queued' | 'importing'
  | 'completed' | 'failed' | 'cancelled' | 'rollingBack' | 'rolledBack';

export interface DatasetProgress {
  /** The last staged row index written (rows are numbered from 1 per dataset). */
  lastRow: number;
  chunks: number;
  created: number;
  skipped: number;
}

export interface PlannedChunk {
  chunk: number;
  lastRow: number;
  /** Source id → new id (null: skipped). */
  rows: Array<[string, number | null]>;
}

/**
 * Source id → new id of every row a job planned: a job of a million rows keeps them all, so ids
 * written as plain decimal numbers (most exports' ids) are kept as numbers, not strings, which
 * halves what the map holds. Answers and iterates the ids as the strings they came as.
 */
export class SourceIds {
  private readonly map = new Map<string | number, number>();

  private static keyOf(sourceId: string): string | number {
    return /^(0|[1-9][0-9]{0,14})$/.test(sourceId) ? Number(sourceId) : sourceId;
  }

  get size(): number {
    return this.map.size;
  }

  get(sourceId: string): number | undefined {
    return this.map.get(SourceIds.keyOf(sourceId));
  }

  has(sourceId: string): boolean {
    return this.map.has(SourceIds.keyOf(sourceId));
  }

  set(sourceId: string, id: number): void {
    this.map.set(SourceIds.keyOf(sourceId), id);
  }

  *[Symbol.iterator](): IterableIterator<[string, number]> {
    for (const [key, id] of this.map) yield [String(key), id];
  }
}

export interface ExternalImportState {
  phase: ExternalImportPhase;
  jobId: number;
  file: Omit<DataOf<'ExternalImportUploaded'>, 'jobId' | 'uploadedAt'> | null;
  fileDeleted: boolean;
  /** The ended job was tidied up (creator told, staging dropped, file deleted unless kept); a rollback reopens it. */
  closed: boolean;
  analysisErrors: number;
  suggestions: ExternalMappings | null;
  mappings: ExternalMappings | null;
  durationUnit: ExternalDurationUnit;
  plan: Array<{ dataset: string; rows: number }>;
  progress: Record<string, DatasetProgress>;
  /** Per dataset, the entity its rows became, source id → id of every row planned so far, and the ids it creates (not those mapped). */
  ids: Map<string, { entity: string; bySource: SourceIds; created: number[] }>;
  /** The chunk planned and not yet recorded as written (at most one: chunks are written one after the other). */
  openChunk: { dataset: string; entity: string; chunk: number; lastRow: number; rows: Array<[string, number | null]>; mapped: boolean[] } | null;
  cancelRequested: boolean;
  /** Where the job ended before a rollback (completed, failed or cancelled). */
  endedAs: 'completed' | 'failed' | 'cancelled' | null;
  /** Per dataset, the rows the rollback deleted (rows never written, or deleted by someone else since, are not counted). */
  deleted: Record<string, number>;
  /** Per dataset, how many of the rows the job created (in the order the rollback goes through them) the rollback has gone through. */
  processed: Record<string, number>;
  /** The notification that tells the creator how the job ended, and the error it failed with. */
  notificationId: number | null;
  failure: { code: string; error: string } | null;
}

export const initialExternalImportState = (): ExternalImportState => ({
  phase: 'none', jobId: 0, file: null, fileDeleted: false, closed: false, analysisErrors: 0, suggestions: null, mappings: null, durationUnit: 'us',
  plan: [], progress: {}, ids: new Map(), openChunk: null, cancelRequested: false, endedAs: null, deleted: {}, processed: {}, notificationId: null, failure: null,
});

export type ExternalImportCommand =
  | { type: 'Upload'; jobId: number; file: NonNullable<ExternalImportState['file']>; now: string }
  | { type: 'StartAnalysis'; now: string }
  /** `failure`: the analysis found errors; the job fails with it in the same append (never seen analysed). */
  | {
    type: 'RecordAnalysis'; analysis: Omit<DataOf<'ExternalImportAnalysed'>, 'jobId' | 'analysedAt'>; now: string;
    failure?: { code: string; error: string; details: Record<string, unknown>; notificationId: number | null };
  }
  | { type: 'Configure'; mappings: ExternalMappings; durationUnit: ExternalDurationUnit; reset: boolean; now: string }
  | { type: 'Queue'; now: string }
  | { type: 'Start'; plan: Array<{ dataset: string; rows: number }>; now: string }
  | { type: 'PlanChunk'; dataset: string; entity: string; lastRow: number; rows: DataOf<'ExternalImportChunkPlanned'>['rows'] }
  | { type: 'RecordChunk'; created: number; skipped: number; now: string }
  /** A chunk planned and written at once: its rows' Created data in the job's own stream (a bulk dataset). */
  | { type: 'ImportChunk'; plan: Omit<Extract<ExternalImportCommand, { type: 'PlanChunk' }>, 'type'>; written: { fields: string[]; rows: unknown[][] }; now: string }
  | { type: 'Complete'; counts: DataOf<'ExternalImportCompleted'>['counts']; notificationId: number | null; now: string }
  | { type: 'Fail'; code: string; error: string; details: Record<string, unknown>; notificationId: number | null; now: string }
  | { type: 'RequestCancel'; now: string }
  | { type: 'Cancel'; now: string }
  | { type: 'RequestRollback'; now: string }
  | { type: 'RecordRollback'; dataset: string; processed: number; deleted: number; now: string }
  | { type: 'FinishRollback'; now: string }
  | { type: 'Close'; fileDeleted: boolean; now: string };

export const isEnded = (s: Pick<ExternalImportState, 'phase'>) =>
  s.phase === 'completed' || s.phase === 'failed' || s.phase === 'cancelled' || s.phase === 'rolledBack';

/** Phases in which a worker has something to do. */
export const isRunnable = (s: ExternalImportState) =>
  s.phase === 'uploaded' || s.phase === 'analysing' || s.phase === 'queued' || s.phase === 'importing' || s.phase === 'rollingBack'
  || (isEnded(s) && !s.closed);

const refuse = (s: ExternalImportState, wanted: string) =>
  new DomainError(`external-import-${kebab(s.phase)}`, `External import job ${s.jobId} is ${phaseWords(s.phase)}; ${wanted}`, { jobId: s.jobId, phase: s.phase });

export function decide(cmd: ExternalImportCommand, s: ExternalImportState): ExternalImportEvent[] {
  const jobId = s.jobId;
  switch (cmd.type) {
    case 'Upload':
      if (s.phase !== 'none') throw new DomainError('external-import-exists', `External import job ${cmd.jobId} exists`);
      return [{ type: 'ExternalImportUploaded', data: { jobId: cmd.jobId, ...cmd.file, uploadedAt: cmd.now } }];
    case 'StartAnalysis':
      if (s.phase === 'analysing') return [];
      if (s.phase !== 'uploaded') throw refuse(s, 'only an uploaded export is analysed');
      return [{ type: 'ExternalImportAnalysisStarted', data: { jobId, startedAt: cmd.now } }];
    case 'RecordAnalysis': {
      if (s.phase !== 'analysing') throw refuse(s, 'it is not being analysed');
      const analysed: ExternalImportEvent = { type: 'ExternalImportAnalysed', data: { jobId, ...cmd.analysis, analysedAt: cmd.now } };
      if (!cmd.failure) return [analysed];
      return [analysed, { type: 'ExternalImportFailed', data: { jobId, phase: 'analysing', ...cmd.failure, failedAt: cmd.now } }];
    }
    case 'Configure':
      if (s.phase !== 'analysed' && s.phase !== 'configured') throw refuse(s, 'mappings are saved after the analysis and before the import is queued');
      if (s.analysisErrors > 0) throw new DomainError('external-import-has-errors', `The export has ${s.analysisErrors} error(s); it cannot be imported`, { jobId });
      return [{ type: 'ExternalImportConfigured', data: { jobId, mappings: cmd.mappings, durationUnit: cmd.durationUnit, reset: cmd.reset, configuredAt: cmd.now } }];
    case 'Queue':
      if (s.phase === 'queued' || s.phase === 'importing') return [];
      if (s.phase === 'analysed') throw new DomainError('external-import-not-configured', `Save the mappings of job ${jobId} first (PUT …/configuration)`, { jobId, phase: s.phase });
      if (s.phase !== 'configured') throw refuse(s, 'only an analysed and configured job is queued');
      return [{ type: 'ExternalImportQueued', data: { jobId, queuedAt: cmd.now } }];
    case 'Start':
      if (s.phase === 'importing') return [];
      if (s.phase !== 'queued') throw refuse(s, 'only a queued job starts');
      return [{ type: 'ExternalImportStarted', data: { jobId, plan: cmd.plan, startedAt: cmd.now } }];
    case 'PlanChunk': {
      if (s.phase !== 'importing') throw refuse(s, 'chunks are planned while importing');
      if (s.openChunk) throw new DomainError('external-import-chunk-open', `Chunk ${s.openChunk.chunk} of ${s.openChunk.dataset} is not written yet`, { jobId });
      const at = s.progress[cmd.dataset];
      if (cmd.lastRow <= (at?.lastRow ?? 0)) throw new DomainError('external-import-chunk-repeated', `Rows up to ${cmd.lastRow} of ${cmd.dataset} are planned already`, { jobId });
      return [{ type: 'ExternalImportChunkPlanned', data: { jobId, dataset: cmd.dataset, entity: cmd.entity, chunk: at?.chunks ?? 0, lastRow: cmd.lastRow, rows: cmd.rows } }];
    }
    case 'ImportChunk': {
      const [planned] = decide({ type: 'PlanChunk', ...cmd.plan }, s);
      const d = planned.data as DataOf<'ExternalImportChunkPlanned'>;
      const created = d.rows.id.filter((id, i) => id !== null && !d.rows.mapped[i]).length;
      if (created !== cmd.written.rows.length) {
        throw new DomainError('external-import-chunk-mismatch', `Chunk ${d.chunk} of ${d.dataset} plans ${created} new rows but writes ${cmd.written.rows.length}`, { jobId });
      }
      const skipped = d.rows.id.filter((id) => id === null).length;
      return [
        planned,
        ...(created > 0 ? [{ type: 'ExternalImportRowsWritten' as const, data: { jobId, dataset: d.dataset, chunk: d.chunk, entity: d.entity, ...cmd.written } }] : []),
        { type: 'ExternalImportChunkImported', data: { jobId, dataset: d.dataset, chunk: d.chunk, lastRow: d.lastRow, created, skipped, at: cmd.now } },
      ];
    }
    case 'RecordChunk': {
      const open = s.openChunk;
      if (!open) throw new DomainError('external-import-no-chunk', `Job ${jobId} has no chunk to record`, { jobId });
      return [{ type: 'ExternalImportChunkImported', data: { jobId, dataset: open.dataset, chunk: open.chunk, lastRow: open.lastRow, created: cmd.created, skipped: cmd.skipped, at: cmd.now } }];
    }
    case 'Complete':
      if (s.phase === 'completed') return [];
      if (s.phase !== 'importing' || s.openChunk) throw refuse(s, 'only an import with every chunk written completes');
      return [{ type: 'ExternalImportCompleted', data: { jobId, counts: cmd.counts, notificationId: cmd.notificationId, completedAt: cmd.now } }];
    case 'Fail': {
      if (s.phase === 'failed') return [];
      if (s.phase === 'none') throw new DomainError('external-import-not-found', 'No such external import job');
      if (isEnded(s) && s.phase !== 'rollingBack') throw refuse(s, 'it has ended');
      const phase = s.phase === 'rollingBack' ? 'rollingBack' : s.phase;
      return [{ type: 'ExternalImportFailed', data: { jobId, phase, code: cmd.code, error: cmd.error, details: cmd.details, notificationId: cmd.notificationId, failedAt: cmd.now } }];
    }
    case 'RequestCancel': {
      if (s.phase === 'none') throw new DomainError('external-import-not-found', 'No such external import job');
      if (s.phase === 'rollingBack' || s.phase === 'rolledBack') throw refuse(s, 'only an unfinished job is cancelled');
      if (s.cancelRequested || s.phase === 'cancelled') return [];
      if (isEnded(s)) throw refuse(s, 'only an unfinished job is cancelled');
      const requested: ExternalImportEvent = { type: 'ExternalImportCancelRequested', data: { jobId, requestedAt: cmd.now } };
      // Waiting for the administrator (or for a worker to start it): nothing runs, so it ends at once.
      if (s.phase === 'analysed' || s.phase === 'configured' || s.phase === 'queued') return [requested, { type: 'ExternalImportCancelled', data: { jobId, cancelledAt: cmd.now } }];
      return [requested];
    }
    case 'Cancel':
      if (s.phase === 'cancelled') return [];
      if (!s.cancelRequested) throw refuse(s, 'no cancel was asked');
      if (s.openChunk) throw new DomainError('external-import-chunk-open', 'A job stops between chunks', { jobId });
      return [{ type: 'ExternalImportCancelled', data: { jobId, cancelledAt: cmd.now } }];
    case 'RequestRollback':
      if (s.phase === 'rollingBack' || s.phase === 'rolledBack') return [];
      if (s.phase !== 'completed' && s.phase !== 'failed' && s.phase !== 'cancelled') throw refuse(s, 'a rollback undoes a completed, failed or cancelled import');
      return [{ type: 'ExternalImportRollbackRequested', data: { jobId, requestedAt: cmd.now } }];
    case 'RecordRollback':
      if (s.phase !== 'rollingBack') throw refuse(s, 'it is not rolling back');
      if ((s.processed[cmd.dataset] ?? 0) >= cmd.processed && cmd.processed > 0 && (s.deleted[cmd.dataset] ?? 0) === cmd.deleted) return [];
      return [{ type: 'ExternalImportRollbackProgressed', data: { jobId, dataset: cmd.dataset, processed: cmd.processed, deleted: cmd.deleted, at: cmd.now } }];
    case 'FinishRollback':
      if (s.phase === 'rolledBack') return [];
      if (s.phase !== 'rollingBack') throw refuse(s, 'it is not rolling back');
      // What it deleted, and only that: a dataset of which it deleted nothing (never written, or deleted since) is not listed.
      return [{ type: 'ExternalImportRolledBack', data: { jobId, deleted: Object.fromEntries(Object.entries(s.deleted).filter(([, n]) => n > 0)), rolledBackAt: cmd.now } }];
    case 'Close':
      if (s.closed) return [];
      if (!isEnded(s)) throw refuse(s, 'a job is closed when it has ended');
      return [{ type: 'ExternalImportClosed', data: { jobId, fileDeleted: cmd.fileDeleted, closedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

/**
 * Folds an event. The id maps grow in place (a job's maps hold a row per imported row; copying
 * them per chunk would make a large import quadratic): the returned state shares them.
 */
export function evolve(s: ExternalImportState, e: ExternalImportEvent): ExternalImportState {
  switch (e.type) {
    case 'ExternalImportUploaded': {
      const { jobId, uploadedAt: _u, ...file } = e.data;
      return { ...s, phase: 'uploaded', jobId, file };
    }
    case 'ExternalImportAnalysisStarted':
      return { ...s, phase: 'analysing' };
    case 'ExternalImportAnalysed':
      return {
        ...s, phase: 'analysed', suggestions: e.data.suggestions,
        analysisErrors: e.data.errors.length + e.data.datasets.reduce((n, d) => n + d.errors.length, 0),
      };
    case 'ExternalImportConfigured':
      return { ...s, phase: 'configured', mappings: e.data.mappings, durationUnit: e.data.durationUnit };
    case 'ExternalImportQueued':
      return { ...s, phase: 'queued' };
    case 'ExternalImportStarted':
      return { ...s, phase: 'importing', plan: e.data.plan };
    case 'ExternalImportChunkPlanned': {
      const d = e.data;
      let map = s.ids.get(d.dataset);
      if (!map) s.ids.set(d.dataset, (map = { entity: d.entity, bySource: new SourceIds(), created: [] }));
      const rows: Array<[string, number | null]> = d.rows.sourceId.map((sourceId, i) => [sourceId, d.rows.id[i]]);
      rows.forEach(([sourceId, id], i) => {
        if (id === null) return;
        map!.bySource.set(sourceId, id);
        if (!d.rows.mapped[i]) map!.created.push(id);
      });
      return { ...s, openChunk: { dataset: d.dataset, entity: d.entity, chunk: d.chunk, lastRow: d.lastRow, rows, mapped: d.rows.mapped } };
    }
    case 'ExternalImportRowsWritten':
      return s;
    case 'ExternalImportChunkImported': {
      const d = e.data;
      const at = s.progress[d.dataset] ?? { lastRow: 0, chunks: 0, created: 0, skipped: 0 };
      return {
        ...s, openChunk: null,
        progress: { ...s.progress, [d.dataset]: { lastRow: d.lastRow, chunks: at.chunks + 1, created: at.created + d.created, skipped: at.skipped + d.skipped } },
      };
    }
    case 'ExternalImportCompleted':
      return { ...s, phase: 'completed', endedAs: 'completed', notificationId: e.data.notificationId };
    case 'ExternalImportFailed':
      return { ...s, phase: 'failed', endedAs: 'failed', notificationId: e.data.notificationId, failure: { code: e.data.code, error: e.data.error } };
    case 'ExternalImportCancelRequested':
      return { ...s, cancelRequested: true };
    case 'ExternalImportCancelled':
      return { ...s, phase: 'cancelled', endedAs: 'cancelled' };
    case 'ExternalImportRollbackRequested':
      return { ...s, phase: 'rollingBack', closed: false };
    case 'ExternalImportRollbackProgressed': {
      // Before v3 `deleted` counted the rows gone through.
      const processed = (e.data as { processed?: number }).processed ?? e.data.deleted;
      return { ...s, deleted: { ...s.deleted, [e.data.dataset]: e.data.deleted }, processed: { ...s.processed, [e.data.dataset]: processed } };
    }
    case 'ExternalImportRolledBack':
      return { ...s, phase: 'rolledBack' };
    case 'ExternalImportClosed':
      return { ...s, closed: true, fileDeleted: s.fileDeleted || e.data.fileDeleted };
    default:
      return assertNever(e);
  }
}

export const externalImportDecider = { get initialState() { return initialExternalImportState(); }, decide, evolve };

function kebab(phase: string): string {
  return phase.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function phaseWords(phase: ExternalImportPhase): string {
  return phase === 'none' ? 'unknown' : kebab(phase).replace('-', ' ');
}
