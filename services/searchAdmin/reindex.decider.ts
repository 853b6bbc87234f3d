import type { SearchEngineName, SearchReindexEvent, SearchReindexRequested, SearchTypeName } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';
import { SEARCH_TYPES } from '../shared/search';

/**
 * A reindex job: an event-sourced process on its own stream `searchReindex-<jobId>`.
 * requested (now, or at `runAt`) → started (the version it writes, its types and their totals) →
 * one progress per acknowledged batch (the type's cursor) → completed; paused and resumed, cancelled,
 * or failed on the way. Pure: the saga (reindex.saga.ts) talks to the engine and the read model and
 * hands the decider what it did; the decider keeps the order and makes repeats harmless.
 */

export const reindexJobStream = (jobId: number) => `searchReindex-${jobId}`;

export type ReindexRequest = Omit<SearchReindexRequested['data'], 'jobId' | 'requestedAt'>;

export interface TypeProgress {
  /** The last row id scanned: the next batch starts after it. */
  afterId: number;
  /** Documents written so far. */
  documents: number;
  done: boolean;
}

export type ReindexPhase = 'none' | 'queued' | 'running' | 'paused' | 'completed' | 'cancelled' | 'failed';

export interface ReindexJobState {
  status: ReindexPhase;
  jobId: number;
  request: ReindexRequest | null;
  /** SearchReindexStarted was recorded (a paused job resumes to running, not to queued). */
  started: boolean;
  engine: SearchEngineName | null;
  target: string | null;
  version: number | null;
  replacesVersion: number | null;
  checkpoints: Record<string, string>;
  /** The job's types in the order they are written (SEARCH_TYPES order), with their totals at the start. */
  types: SearchTypeName[];
  totals: Partial<Record<SearchTypeName, number>>;
  progress: Partial<Record<SearchTypeName, TypeProgress>>;
}

export const initialReindexJobState: ReindexJobState = {
  status: 'none', jobId: 0, request: null, started: false, engine: null, target: null, version: null, replacesVersion: null,
  checkpoints: {}, types: [], totals: {}, progress: {},
};

/** A repeating schedule's shortest interval. */
export const MIN_REPEAT_MINUTES = 5;

export type ReindexCommand =
  | { type: 'Request'; jobId: number; request: ReindexRequest; now: string }
  | {
    type: 'Start'; engine: SearchEngineName; target: string; version: number; replacesVersion: number | null;
    checkpoints: Record<string, string>; totals: Partial<Record<SearchTypeName, number>>; now: string;
  }
  /** A batch of `type` the engine acknowledged: `documents` written in it, the cursor now `afterId`. */
  | { type: 'Progress'; reindexType: SearchTypeName; afterId: number; documents: number; typeDone: boolean; now: string }
  | { type: 'Pause'; now: string }
  | { type: 'Resume'; now: string }
  | { type: 'Cancel'; now: string }
  | { type: 'Complete'; switched: boolean; droppedVersions: number[]; now: string }
  | { type: 'Fail'; code: string; error: string; details: Record<string, unknown>; now: string };

export const isFinished = (s: Pick<ReindexJobState, 'status'>) => s.status === 'completed' || s.status === 'cancelled' || s.status === 'failed';

/** The job's next type to write (null: every type done). */
export const currentType = (s: ReindexJobState): SearchTypeName | null => s.types.find((t) => !s.progress[t]?.done) ?? null;

/** Documents written so far, every type. */
export const documentsOf = (s: ReindexJobState): number => s.types.reduce((sum, t) => sum + (s.progress[t]?.documents ?? 0), 0);

const byType = (s: ReindexJobState): Record<string, number> => Object.fromEntries(s.types.map((t) => [t, s.progress[t]?.documents ?? 0]));

export function decide(cmd: ReindexCommand, s: ReindexJobState): SearchReindexEvent[] {
  switch (cmd.type) {
    case 'Request': {
      if (s.status !== 'none') throw new DomainError('reindex-job-exists', `Reindex job ${cmd.jobId} exists`);
      const r = cmd.request;
      if (r.mode === 'full' && (r.projectIds !== null || r.types !== null))
        throw new DomainError('reindex-full-has-no-scope', 'A full reindex writes every document: projectIds and types are for a partial one');
      if (r.runAt !== null && Date.parse(r.runAt) <= Date.parse(cmd.now)) throw new DomainError('reindex-run-at-past', `runAt ${r.runAt} is not in the future`);
      if (r.repeatEveryMinutes !== null && r.repeatEveryMinutes < MIN_REPEAT_MINUTES)
        throw new DomainError('reindex-repeat-too-often', `A reindex repeats every ${MIN_REPEAT_MINUTES} minutes at most`);
      return [{ type: 'SearchReindexRequested', data: { jobId: cmd.jobId, ...r, requestedAt: cmd.now } }];
    }
    case 'Start': {
      if (s.started && s.status === 'running') {
        if (s.version === cmd.version && s.target === cmd.target) return [];
        throw new DomainError('reindex-job-started', `Reindex job ${s.jobId} writes version ${s.version}`);
      }
      requireStatus(s, 'queued');
      if (s.request!.runAt !== null && Date.parse(s.request!.runAt) > Date.parse(cmd.now))
        throw new DomainError('reindex-job-not-due', `Reindex job ${s.jobId} runs at ${s.request!.runAt}`);
      const { now, type: _t, ...started } = cmd;
      return [{ type: 'SearchReindexStarted', data: { jobId: s.jobId, ...started, startedAt: now } }];
    }
    case 'Progress': {
      requireStatus(s, 'running');
      const type = cmd.reindexType;
      if (!s.types.includes(type)) throw new DomainError('reindex-type-unknown', `Reindex job ${s.jobId} does not write ${type}`);
      const at = s.progress[type] ?? { afterId: 0, documents: 0, done: false };
      if (at.done || cmd.afterId < at.afterId || (cmd.afterId === at.afterId && !cmd.typeDone)) return []; // written before (a resumed job repeating itself)
      if (currentType(s) !== type) throw new DomainError('reindex-progress-out-of-order', `Reindex job ${s.jobId} writes ${currentType(s)} first`);
      return [{
        type: 'SearchReindexProgressed',
        data: { jobId: s.jobId, type, afterId: cmd.afterId, documents: at.documents + cmd.documents, typeDone: cmd.typeDone, at: cmd.now },
      }];
    }
    case 'Pause':
      if (s.status === 'paused') return [];
      requireUnfinished(s);
      return [{ type: 'SearchReindexPaused', data: { jobId: s.jobId, pausedAt: cmd.now } }];
    case 'Resume':
      if (s.status === 'queued' || s.status === 'running') return [];
      requireUnfinished(s);
      return [{ type: 'SearchReindexResumed', data: { jobId: s.jobId, resumedAt: cmd.now } }];
    case 'Cancel':
      if (s.status === 'cancelled') return [];
      requireUnfinished(s);
      return [{ type: 'SearchReindexCancelled', data: { jobId: s.jobId, documents: documentsOf(s), cancelledAt: cmd.now } }];
    case 'Complete':
      if (s.status === 'completed') return [];
      requireStatus(s, 'running');
      if (currentType(s) !== null) throw new DomainError('reindex-incomplete', `Reindex job ${s.jobId} has not written ${currentType(s)} yet`);
      return [{ type: 'SearchReindexCompleted', data: { jobId: s.jobId, documents: byType(s), switched: cmd.switched, droppedVersions: cmd.droppedVersions, completedAt: cmd.now } }];
    case 'Fail':
      if (isFinished(s)) return [];
      if (s.status === 'none') throw new DomainError('reindex-job-not-found', 'No such reindex job');
      return [{ type: 'SearchReindexFailed', data: { jobId: s.jobId, code: cmd.code, error: cmd.error, details: cmd.details, failedAt: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

function requireUnfinished(s: ReindexJobState): void {
  if (s.status === 'none') throw new DomainError('reindex-job-not-found', 'No such reindex job');
  if (isFinished(s)) throw new DomainError('reindex-job-finished', `Reindex job ${s.jobId} is ${s.status}`, { jobId: s.jobId, state: s.status });
}

function requireStatus(s: ReindexJobState, status: ReindexPhase): void {
  requireUnfinished(s);
  if (s.status !== status) throw new DomainError(`reindex-job-${s.status}`, `Reindex job ${s.jobId} is ${s.status}, not ${status}`, { jobId: s.jobId, state: s.status });
}

export function evolve(s: ReindexJobState, e: SearchReindexEvent): ReindexJobState {
  switch (e.type) {
    case 'SearchReindexRequested': {
      const { jobId, requestedAt: _r, ...request } = e.data;
      return { ...s, status: 'queued', jobId, request };
    }
    case 'SearchReindexStarted': {
      const d = e.data;
      const types = SEARCH_TYPES.filter((t) => d.totals[t] !== undefined);
      return {
        ...s, status: 'running', started: true, engine: d.engine, target: d.target, version: d.version, replacesVersion: d.replacesVersion,
        checkpoints: d.checkpoints, types, totals: d.totals, progress: {},
      };
    }
    case 'SearchReindexProgressed':
      return { ...s, progress: { ...s.progress, [e.data.type]: { afterId: e.data.afterId, documents: e.data.documents, done: e.data.typeDone } } };
    case 'SearchReindexPaused':
      return { ...s, status: 'paused' };
    case 'SearchReindexResumed':
      return { ...s, status: s.started ? 'running' : 'queued' };
    case 'SearchReindexCancelled':
      return { ...s, status: 'cancelled' };
    case 'SearchReindexCompleted':
      return { ...s, status: 'completed' };
    case 'SearchReindexFailed':
      return { ...s, status: 'failed' };
    default:
      return assertNever(e);
  }
}

export const reindexDecider = { initialState: initialReindexJobState, decide, evolve };
