import { Router, type Request } from 'express';
import type { SearchTypeName } from '../../contracts/events';
import { handleCommand } from '../shared/decider';
import { readYourWrites, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { badRequest, DomainError, HttpError, notFound } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import { SEARCH_TYPES, SearchUnavailable, type SearchEngine } from '../shared/search';
import { MIN_REPEAT_MINUTES, type ReindexCommand, reindexDecider, reindexJobStream, type ReindexRequest } from './reindex.decider';
import { REINDEX_ID_CATEGORY, targetOf } from './reindex.saga';
import type { SearchAdminDeps } from './searchAdmin.deps';
import { parseId } from '../shared/validate';

/**
 * Reindex jobs (docs/search.md, "Reindex"): POST /api/admin/search/reindex requests one (202 with
 * the job; the worker of reindex.saga.ts runs it), GET lists them and shows one, and
 * POST …/{jobId}/pause|resume|cancel steer one. Administrators only (searchAdmin.routes.ts).
 * A refused request appends nothing.
 */

export const REINDEX_PATH = '/api/admin/search/reindex';
export const MAX_BATCH_SIZE = 10_000;
/** A year, in minutes: the longest repeat interval. */
export const MAX_REPEAT_MINUTES = 527_040;
export const MAX_PROJECT_IDS = 1000;
export const REINDEX_PAGE = { default: 25, max: 100 } as const;
const FIELDS = ['mode', 'projectIds', 'types', 'batchSize', 'runAt', 'repeatEveryMinutes', 'confirm'];
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

const invalid = (path: string, message: string) => badRequest('invalid-argument', message, { path });
const isPositiveInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;

export function reindexRoutes(deps: SearchAdminDeps): Router {
  const router = Router();

  router.post(REINDEX_PATH, asyncHandler(async (req, res) => {
    const request = await readRequest(deps, req);
    const metadata = metadataFor(req.auth!, req);
    const jobId = await deps.ids.next(REINDEX_ID_CATEGORY, metadata);
    const outcome = await handleCommand(deps.store, reindexJobStream(jobId), reindexDecider, { type: 'Request', jobId, request, now: deps.clock().toISOString() }, metadata);
    await readYourWrites(withPositionHeader(deps, res), outcome);
    deps.reindex.wake();
    res.status(202).json({ data: await jobView(deps, jobId) });
  }));

  router.get(REINDEX_PATH, asyncHandler(async (req, res) => {
    const { take, cursor, state } = readListQuery(req.query);
    const q = deps.knex('search_reindex_jobs').orderBy('job_id', 'desc').limit(take + 1);
    if (cursor !== null) q.where('job_id', '<', cursor);
    if (state === 'scheduled') q.where({ state: 'queued' }).where('run_at', '>', deps.clock());
    else if (state === 'queued') q.where({ state: 'queued' }).andWhere((w) => w.whereNull('run_at').orWhere('run_at', '<=', deps.clock()));
    else if (state !== null) q.where({ state });
    const rows = await q.select('*');
    const page = rows.slice(0, take);
    const next = await nextRuns(deps, page.map((r) => r.job_id));
    res.json({
      data: page.map((row) => viewOf(row, deps.clock(), next.get(row.job_id) ?? null)),
      nextCursor: rows.length > take ? String(page[page.length - 1].job_id) : null,
    });
  }));

  router.get(`${REINDEX_PATH}/:jobId`, asyncHandler(async (req, res) => {
    res.json({ data: await jobView(deps, jobIdOf(req.params.jobId)) });
  }));

  const steer = (action: 'pause' | 'resume' | 'cancel', command: (now: string) => ReindexCommand) =>
    router.post(`${REINDEX_PATH}/:jobId/${action}`, asyncHandler(async (req, res) => {
      const jobId = jobIdOf(req.params.jobId);
      if (req.body !== undefined && Object.keys(req.body ?? {}).length > 0) throw invalid(Object.keys(req.body)[0], 'This request takes no body');
      if (!(await deps.knex('search_reindex_jobs').where({ job_id: jobId }).first('job_id'))) throw notFoundJob(jobId);
      try {
        const outcome = await handleCommand(deps.store, reindexJobStream(jobId), reindexDecider, command(deps.clock().toISOString()), metadataFor(req.auth!, req));
        await readYourWrites(withPositionHeader(deps, res), outcome);
      } catch (err) {
        if (err instanceof DomainError && err.code === 'reindex-job-finished') {
          throw new HttpError(409, 'reindex-job-finished', `${err.message}: it can no longer be ${action === 'pause' ? 'paused' : action === 'resume' ? 'resumed' : 'cancelled'}`, err.details);
        }
        throw err;
      }
      if (action === 'resume') deps.reindex.wake();
      if (action === 'cancel') deps.reindex.cancelled(jobId);
      res.json({ data: await jobView(deps, jobId) });
    }));
  steer('pause', (now) => ({ type: 'Pause', now }));
  steer('resume', (now) => ({ type: 'Resume', now }));
  steer('cancel', (now) => ({ type: 'Cancel', now }));
  return router;
}

const notFoundJob = (jobId: number) => new HttpError(404, 'reindex-job-not-found', `No reindex job ${jobId}`, { jobId });

const jobIdOf = (value: string): number => parseId('jobId', value);

/** Checks every field of a request; a full reindex's confirmation last (the index prefix of the engine in use). */
async function readRequest(deps: SearchAdminDeps, req: Request): Promise<ReindexRequest> {
  const body = req.body as Record<string, unknown> | undefined;
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('', 'Send a JSON object: { "mode": "full" | "partial", … }');
  const unknown = Object.keys(body).find((k) => !FIELDS.includes(k));
  if (unknown !== undefined) throw invalid(unknown, `Unknown field ${unknown}; the fields are ${FIELDS.join(', ')}`);
  const { mode } = body;
  if (mode !== 'full' && mode !== 'partial') throw invalid('mode', 'mode must be "full" (a new version, switched to when complete) or "partial" (some projects and/or types, into the live version)');

  // Each field's own shape first (an id out of range is refused as such), then how the fields go together.
  const givenIds = body.projectIds === undefined || body.projectIds === null ? null : body.projectIds;
  if (givenIds !== null && (!Array.isArray(givenIds) || givenIds.length === 0 || givenIds.length > MAX_PROJECT_IDS)) throw invalid('projectIds', `projectIds must be a list of 1 to ${MAX_PROJECT_IDS} project ids`);
  const ids = givenIds?.map((id, i) => parseId(`projectIds[${i}]`, id, 'json')) ?? null;
  let projectIds: number[] | null = null;
  let types: SearchTypeName[] | null = null;
  if (mode === 'full') {
    for (const field of ['projectIds', 'types'] as const) {
      if (body[field] !== undefined && body[field] !== null) throw invalid(field, `A full reindex writes every document; ${field} is for a partial one`);
    }
  } else {
    if (ids !== null) {
      projectIds = [...new Set(ids)].sort((a, b) => a - b);
      const found = new Set((await deps.knex('projects').whereIn('id', projectIds).andWhere({ is_deleted: false }).select('id')).map((r: { id: number }) => r.id));
      const missing = projectIds.find((id) => !found.has(id));
      if (missing !== undefined) throw notFound(`Project ${missing} does not exist`, { path: `projectIds[${ids.indexOf(missing)}]`, id: missing });
    }
    if (body.types !== undefined && body.types !== null) {
      const list = body.types;
      if (!Array.isArray(list) || list.length === 0) throw invalid('types', `types must be a list of entity types: ${SEARCH_TYPES.join(', ')}`);
      const bad = list.findIndex((t) => typeof t !== 'string' || !(SEARCH_TYPES as readonly string[]).includes(t));
      if (bad >= 0) throw invalid(`types[${bad}]`, `${JSON.stringify(list[bad])} is not an entity type: ${SEARCH_TYPES.join(', ')}`);
      types = SEARCH_TYPES.filter((t) => (list as string[]).includes(t));
    }
  }

  let batchSize = deps.reindex.defaultBatchSize;
  if (body.batchSize !== undefined && body.batchSize !== null) {
    if (!isPositiveInteger(body.batchSize) || body.batchSize > MAX_BATCH_SIZE) throw invalid('batchSize', `batchSize must be an integer from 1 to ${MAX_BATCH_SIZE}`);
    batchSize = body.batchSize;
  }
  let runAt: string | null = null;
  if (body.runAt !== undefined && body.runAt !== null) {
    const at = typeof body.runAt === 'string' && ISO_TIME.test(body.runAt) ? new Date(body.runAt) : null;
    if (at === null || Number.isNaN(at.getTime())) throw invalid('runAt', 'runAt must be an ISO 8601 date and time with its offset, e.g. 2026-07-01T02:00:00Z');
    if (at.getTime() <= deps.clock().getTime()) throw invalid('runAt', `runAt must be in the future (it is ${deps.clock().toISOString()})`);
    runAt = at.toISOString();
  }
  let repeatEveryMinutes: number | null = null;
  if (body.repeatEveryMinutes !== undefined && body.repeatEveryMinutes !== null) {
    const every = body.repeatEveryMinutes;
    if (!isPositiveInteger(every) || every < MIN_REPEAT_MINUTES || every > MAX_REPEAT_MINUTES) {
      throw invalid('repeatEveryMinutes', `repeatEveryMinutes must be an integer from ${MIN_REPEAT_MINUTES} to ${MAX_REPEAT_MINUTES}`);
    }
    repeatEveryMinutes = every;
  }

  if (mode === 'full') {
    const target = targetOf(engineOf(deps));
    if (body.confirm !== target) {
      throw badRequest('confirmation-required', `A full reindex replaces the live index version: send { "confirm": "${target}" } (the index prefix) to go ahead`, { path: 'confirm', expected: target });
    }
    // One full build at a time: another one waiting or under way now is refused (a scheduled one runs after it).
    if (runAt === null) {
      const running = await deps.knex('search_reindex_jobs').where({ mode: 'full' }).whereIn('state', ['queued', 'running', 'paused'])
        .andWhere((q) => q.whereNull('run_at').orWhere('run_at', '<=', deps.clock())).orderBy('job_id').first('job_id', 'state');
      if (running) {
        throw new HttpError(409, 'reindex-running', `Full reindex job ${running.job_id} is ${running.state}; cancel it or wait for it to finish`, { jobId: running.job_id, state: running.state });
      }
    }
  }
  return { mode, projectIds, types, batchSize, runAt, repeatEveryMinutes, repeatOf: null };
}

function engineOf(deps: SearchAdminDeps): SearchEngine {
  try {
    return deps.engine();
  } catch (err) {
    if (!(err instanceof SearchUnavailable)) throw err;
    throw new HttpError(503, 'search-unavailable', 'The search engine does not answer; try again shortly', { engine: err.engine });
  }
}

const PHASES = ['scheduled', 'queued', 'running', 'paused', 'completed', 'cancelled', 'failed'] as const;

function readListQuery(query: Request['query']): { take: number; cursor: number | null; state: (typeof PHASES)[number] | null } {
  const unknown = Object.keys(query).find((k) => !['take', 'cursor', 'state'].includes(k));
  if (unknown !== undefined) throw invalid(unknown, `Unknown parameter ${unknown}; the parameters are take, cursor, state`);
  const one = (name: string): string | null => {
    const v = query[name];
    if (v === undefined) return null;
    if (typeof v !== 'string') throw invalid(name, `${name} is given once`);
    return v;
  };
  const takeText = one('take');
  const take = takeText === null ? REINDEX_PAGE.default : Number(takeText);
  if (takeText !== null && (!/^\d+$/.test(takeText) || take < 1 || take > REINDEX_PAGE.max)) throw invalid('take', `take must be an integer from 1 to ${REINDEX_PAGE.max}`);
  const cursorText = one('cursor');
  const cursor = cursorText === null ? null : parseId('cursor', cursorText);
  const state = one('state');
  if (state !== null && !(PHASES as readonly string[]).includes(state)) throw invalid('state', `state must be one of ${PHASES.join(', ')}`);
  return { take, cursor, state: state as (typeof PHASES)[number] | null };
}

/** The next run of each repeating job that has one. */
async function nextRuns(deps: SearchAdminDeps, jobIds: number[]): Promise<Map<number, number>> {
  if (jobIds.length === 0) return new Map();
  const rows: { job_id: number; repeat_of: number }[] = await deps.knex('search_reindex_jobs').whereIn('repeat_of', jobIds).select('job_id', 'repeat_of');
  return new Map(rows.map((r) => [r.repeat_of, r.job_id]));
}

async function jobView(deps: SearchAdminDeps, jobId: number) {
  const row = await deps.knex('search_reindex_jobs').where({ job_id: jobId }).first();
  if (!row) throw notFoundJob(jobId);
  return viewOf(row, deps.clock(), (await nextRuns(deps, [jobId])).get(jobId) ?? null);
}

type Progress = Record<string, { documents: number; total: number; afterId: number; done: boolean }>;

/** A job as the routes answer it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a knex row
function viewOf(row: Record<string, any>, now: Date, nextJobId: number | null) {
  const progress = (row.progress ?? {}) as Progress;
  const documents: number = row.documents;
  const total: number = row.total;
  const phase = row.state === 'queued' && row.run_at !== null && new Date(row.run_at) > now ? 'scheduled' : row.state;
  const percentOf = (done: number, of: number, finished: boolean) => (finished ? 100 : of === 0 ? 0 : Math.min(99, Math.floor((done * 100) / of)));
  const iso = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());
  return {
    jobId: row.job_id as number,
    mode: row.mode as 'full' | 'partial',
    phase: phase as (typeof PHASES)[number],
    projectIds: row.project_ids as number[] | null,
    types: row.types as string[] | null,
    batchSize: row.batch_size as number,
    runAt: iso(row.run_at),
    repeatEveryMinutes: row.repeat_every_minutes as number | null,
    repeatOf: row.repeat_of as number | null,
    nextJobId,
    engine: row.engine as string | null,
    target: row.target as string | null,
    version: row.version as number | null,
    replacesVersion: row.replaces_version as number | null,
    progress: {
      documents, total, percent: percentOf(documents, total, row.state === 'completed'),
      types: SEARCH_TYPES.filter((t) => progress[t] !== undefined).map((type) => ({
        type, documents: progress[type].documents, total: progress[type].total, done: progress[type].done, afterId: progress[type].afterId,
        percent: percentOf(progress[type].documents, progress[type].total, progress[type].done),
      })),
    },
    switched: row.switched as boolean | null,
    droppedVersions: row.dropped_versions as number[] | null,
    error: row.error as { code: string; error: string; details: Record<string, unknown> } | null,
    createdBy: { userId: row.created_by_id as number | null, tokenId: row.token_id as number | null, via: row.via as string },
    createdAt: iso(row.created_at), startedAt: iso(row.started_at), pausedAt: iso(row.paused_at), finishedAt: iso(row.finished_at), updatedAt: iso(row.updated_at),
  };
}
