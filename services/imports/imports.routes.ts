import { createHash } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import { ENTITIES } from '../../contracts/entities';
import type { UniqueValueClaimed } from '../../contracts/events';
import { resolveProjectAccess, permits } from '../access/projectAccess';
import { policyFor } from '../model/policy';
import { isRowVisible } from '../model/query';
import { asyncHandler } from '../shared/http';
import { sanitiseFileName, normaliseMimeType } from '../files/fileMeta';
import type { FileStore } from '../files/fileStore';
import { stagedUploads, type UploadedFile } from '../files/stagedUploads';
import type { StoredFiles } from '../files/storedFiles';
import type { CommandDeps } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { textProblem } from '../shared/text';
import { type CiContext, type CiField, ciValueProblem } from '../shared/ciContext';
import { badRequest, ConcurrencyError, EventParked, HttpError, notFound } from '../shared/errors';
import { isTransient } from '../shared/faults';
import type { JobLeases } from '../shared/jobLeases';
import { detectFormat } from './formats/detect';
import { IMPORT_FORMATS, type ImportFormat } from './formats/parsedResult';
import { type ImportOptions, importJobDecider, importJobStream, type StoredFile } from './importJob.decider';
import { RESULT_IMPORT_KIND } from './importJob.saga';
import { parseId } from '../shared/validate';

/**
 * POST /api/junit/import and POST /api/test-results/import: result files in, a Server-Sent Events
 * stream of the job's progress out. Everything that can be checked before the job starts is
 * checked first and answered as an ordinary JSON error (nothing staged is kept, nothing appended);
 * then the files are stored, the job is requested on its stream, a worker runs it (the saga, in
 * the worker role) and the answer follows it in the `imports` read model.
 * GET /api/imports/:jobId shows a job.
 */

export const JUNIT_IMPORT_PATH = '/api/junit/import';
export const RESULTS_IMPORT_PATH = '/api/test-results/import';
export const IMPORT_PATHS = [JUNIT_IMPORT_PATH, RESULTS_IMPORT_PATH] as const;
/** Result files per request. */
export const MAX_IMPORT_FILES = 100;
const FILES_FIELD = 'files';
const HEAD_BYTES = 64 * 1024;

export interface ImportRoutesDeps extends CommandDeps {
  files: FileStore;
  /** The job's files are stored files of the job (storedFiles.ts): counted in the uploader's quota, kept with the run, deleted if it fails. */
  storedFiles: StoredFiles;
  maxUploadBytes: number;
  imports: ImportWorkers;
  logger: Logger;
}

/** The workers that run the jobs (services/process/worker), as the API sees them. */
export interface ImportWorkers {
  /** Tells a worker in this process that a job was requested (workers elsewhere find it when they poll). */
  wakeWorkers(): void;
  /** Who holds a job's lease: a stream says whether a worker has the job or it waits for one. */
  leases: Pick<JobLeases, 'holder'>;
}

const ID_FIELDS = ['projectId', 'stateId', 'parentFolderId', 'testRunId', 'configId', 'milestoneId', 'templateId'] as const;
/** Where the run came from (services/shared/ciContext.ts), and whether a repeated upload is meant as a new import. */
const CI_FIELDS = ['branch', 'commit', 'buildUrl', 'ciJobId', 'attempt', 'newAttempt'] as const;
const FIELDS: Record<'junit' | 'test-results', readonly string[]> = {
  junit: ['name', ...ID_FIELDS.filter((f) => f !== 'templateId'), 'tagIds', ...CI_FIELDS],
  'test-results': ['name', ...ID_FIELDS, 'tagIds', 'format', ...CI_FIELDS],
};
/** A claimed upload whose job never got requested (its request died in between) may be taken over after this long. */
const UPLOAD_CLAIM_GRACE_MS = 60_000;
/** How often an answer reads the progress of the job it follows, and how long it waits for an earlier upload's job to appear. */
const FOLLOW_POLL_MS = 200;
const FOLLOW_APPEAR_MS = 60_000;
/** A job queued this long without a worker holding it is said to wait for one. */
const WAITING_NOTICE_MS = 3000;
/** A stream that had nothing to say for this long sends an SSE comment, so that proxies keep it open while a job waits. */
const KEEP_ALIVE_MS = 15_000;

export function importRoutes(deps: ImportRoutesDeps): Router {
  const router = Router();
  const uploads = stagedUploads({ files: deps.files, maxUploadBytes: deps.maxUploadBytes, field: FILES_FIELD, maxFiles: MAX_IMPORT_FILES, maxFields: 60, headBytes: HEAD_BYTES });

  for (const [path, endpoint] of [[JUNIT_IMPORT_PATH, 'junit'], [RESULTS_IMPORT_PATH, 'test-results']] as const) {
    router.post(path, (req, res, next) => {
      uploads.parse(req, res, (err?: unknown) => {
        if (err) return next(err);
        startImport(deps, endpoint, req, res).catch(async (error) => {
          await uploads.dropStaged(req).catch(() => undefined);
          if (res.headersSent) {
            deps.logger.error({ err: error, correlationId: req.correlationId }, 'import stream failed');
            return void res.end();
          }
          next(error);
        });
      });
    });
  }

  router.get('/api/imports/:jobId', asyncHandler(async (req, res) => {
    const jobId = parseId('jobId', req.params.jobId);
    const row = await deps.knex('import_jobs').where({ job_id: jobId }).first();
    // Read as the model API reads its project (and run): not by being its creator, and never by access NONE.
    const visible = row && (await isRowVisible(deps.knex, ENTITIES.project, row.project_id, (await policyFor(deps.knex, req.auth!.user)).read));
    if (!visible) throw new HttpError(404, 'import-job-not-found', `No import job ${jobId}`, { jobId });
    const { view, position } = await jobAnswer(deps, row);
    if (position !== null) res.setHeader('X-Event-Position', position);
    res.json({ data: view });
  }));
  return router;
}

/**
 * A job as GET /api/imports/{jobId} shows it. The `imports` read model applies a job's events on
 * its own, ahead of the others: a job it holds as completed (or failed) is shown so only once
 * every read model applied the event that finished it, so a client that reads the run after
 * seeing `completed` finds every row; until then it is `running` with `finalizing: true`.
 * A read model that parked the job's events (it cannot apply them: docs/architecture.md) holds
 * the finishing event parked too: `parked` then names those read models, whose rows lack the
 * job's results until an administrator retries them.
 * `position` is that event's (for X-Event-Position), null before the job finished.
 */
export async function jobAnswer(deps: Pick<CommandDeps, 'watcher'>, row: Record<string, unknown>): Promise<{ view: ReturnType<typeof jobView>; position: string | null }> {
  const view = jobView(row);
  const position = row.final_position === null || row.final_position === undefined ? null : String(row.final_position);
  if (position === null) return { view, position };
  if (!(await deps.watcher.applied({ position, streamId: importJobStream(row.job_id as number) }))) {
    return { view: { ...view, state: 'running', finalizing: true }, position };
  }
  const parkedBy = await deps.watcher.parkedBy({ position });
  return { view: parkedBy.length > 0 ? { ...view, parked: { projections: parkedBy, position } } : view, position };
}

function jobView(row: Record<string, unknown>) {
  return {
    jobId: row.job_id, state: row.state as string, finalizing: false, parked: null as { projections: string[]; position: string } | null, projectId: row.project_id, testRunId: row.test_run_id, testRunName: row.test_run_name,
    endpoint: row.endpoint, format: row.format, ci: row.ci ?? null, options: row.options, files: row.files,
    totalCases: row.total_cases, processedCases: row.processed_cases, chunks: row.chunks, counts: row.counts,
    warnings: row.warnings, warningCount: row.warning_count, error: row.error,
    createdById: row.created_by_id, tokenId: row.token_id, via: row.via,
    createdAt: row.created_at, updatedAt: row.updated_at, finishedAt: row.finished_at,
  };
}

async function startImport(deps: ImportRoutesDeps, endpoint: 'junit' | 'test-results', req: Request, res: Response): Promise<void> {
  const uploaded = (req.files ?? []) as UploadedFile[];
  const fields = readFields(endpoint, req.body ?? {});
  if (uploaded.length === 0) throw badRequest('files-required', `Send at least one result file in a field named "${FILES_FIELD}"`, { path: FILES_FIELD });
  const empty = uploaded.find((f) => f.size === 0);
  if (empty) throw badRequest('empty-file', `${empty.originalname} is empty`, { path: FILES_FIELD, file: empty.originalname });
  const format = formatOf(fields.format, uploaded);
  await checkReferences(deps, req, fields);

  // The same files sent again for the same CI job and attempt: answered with the job that has them.
  const metadata = metadataFor(req.auth!, req);
  const upload = fields.ciJobId === null ? null : uploadClaim(fields, uploaded.map((f) => f.staged.sha256));
  const earlier = upload && !fields.newAttempt ? await holderOf(deps, upload) : null;
  if (earlier !== null) return answerDuplicate(deps, req, res, uploaded, earlier, fields);
  // Over the quota: refused before anything is claimed (checked again, under the user's lock, as the files are stored).
  const userId = req.auth!.user.id;
  await deps.storedFiles.checkQuota(userId, uploaded.reduce((sum, f) => sum + f.size, 0));

  // Checked: store the files, request the job, stream its progress.
  const jobId = await deps.ids.next('importJob', metadata);
  if (upload) {
    const winner = await claimUpload(deps, upload, jobId, fields.newAttempt, metadata);
    if (winner !== jobId) return answerDuplicate(deps, req, res, uploaded, winner, fields);
  }
  const kept = await deps.storedFiles.store({
    userId, projectId: fields.projectId, importJobId: jobId, metadata,
    uploads: uploaded.map((file) => ({ staged: file.staged, name: sanitiseFileName(file.originalname), mimeType: normaliseMimeType(file.mimetype) })),
  });
  const stored: StoredFile[] = kept.map((file, index) => ({ index, fileName: file.name, storedAs: file.key, sizeBytes: file.size, sha256: file.sha256 }));
  const { format: _f, ...rest } = fields;
  const options: ImportOptions = { ...rest, endpoint, format };
  if (upload) deps.logger.info({ jobId, ciJobId: fields.ciJobId, attempt: fields.attempt, newAttempt: fields.newAttempt, correlationId: req.correlationId }, 'import of a CI upload');
  const events = importJobDecider.decide({ type: 'Request', jobId, options, files: stored, now: deps.clock().toISOString() }, importJobDecider.initialState);
  try {
    await deps.store.append(importJobStream(jobId), events, { expectedRevision: 'no-stream', metadata });
  } catch (error) {
    // No job, so nobody keeps its files (what this misses, the sweep removes after an hour).
    await deps.storedFiles.remove(kept.map((f) => f.key), 'import-not-started', metadata)
      .catch((err) => deps.logger.error({ err, jobId, correlationId: req.correlationId }, 'cannot delete the files of an import that did not start'));
    throw error;
  }

  // A worker in this process starts at once; the others find the job when they poll.
  deps.imports.wakeWorkers();
  openStream(res, jobId, null);
  await followJob(deps, res, jobId, null, `Import job ${jobId} started with ${stored.length} ${format.toUpperCase()} file(s)`);
}

type ImportFields = Omit<ImportOptions, 'endpoint' | 'format' | keyof CiContext | 'newAttempt'> & CiContext & {
  format: ImportFormat | 'auto';
  newAttempt: boolean;
};

/** The text fields, checked: ids are positive integers, `name` is needed unless `testRunId` is given. */
function readFields(endpoint: 'junit' | 'test-results', body: Record<string, unknown>): ImportFields {
  const allowed = FIELDS[endpoint];
  for (const key of Object.keys(body)) {
    if (key === FILES_FIELD) throw badRequest('invalid-file', `The field "${FILES_FIELD}" must be a file, not a text value`, { path: FILES_FIELD });
    if (!allowed.includes(key)) throw badRequest('unexpected-field', `Unexpected field "${key}"; the fields are ${allowed.join(', ')}, ${FILES_FIELD}`, { path: key });
  }
  const single = (key: string): string | undefined => {
    const value = body[key];
    if (Array.isArray(value)) throw badRequest('invalid-argument', `${key} may be given once`, { path: key });
    return value === undefined ? undefined : String(value);
  };
  const id = (key: string): number | null => {
    const text = single(key);
    if (text === undefined || text === '') return null;
    return parseId(key, text);
  };
  const projectId = id('projectId');
  if (projectId === null) throw badRequest('invalid-argument', 'projectId is required', { path: 'projectId' });
  const testRunId = id('testRunId');
  const name = single('name')?.trim() || null;
  if (name === null && testRunId === null) throw badRequest('invalid-argument', 'name is required unless testRunId is given', { path: 'name' });
  if (name !== null && name.length > 255) throw badRequest('invalid-argument', 'name is longer than 255 characters', { path: 'name' });
  // The CI fields check their text themselves (invalid-ci-context); the others are ids, flags and a format.
  const nameProblem = name === null ? null : textProblem(name);
  if (nameProblem) throw badRequest('invalid-argument', `name: ${nameProblem}`, { path: 'name' });
  const rawTags = body.tagIds === undefined ? [] : Array.isArray(body.tagIds) ? body.tagIds : [body.tagIds];
  const tagIds = [...new Set(rawTags.map((t, i) => parseId(`tagIds.${i}`, String(t))))];
  const format = endpoint === 'junit' ? 'junit' : (single('format') ?? 'auto');
  if (format !== 'auto' && !(IMPORT_FORMATS as readonly string[]).includes(format))
    throw badRequest('unknown-format', `format must be auto or one of ${IMPORT_FORMATS.join(', ')}`, { path: 'format', allowed: ['auto', ...IMPORT_FORMATS] });
  return {
    projectId, testRunName: name, testRunId, stateId: id('stateId'), parentFolderId: id('parentFolderId'), configId: id('configId'),
    milestoneId: id('milestoneId'), tagIds, templateId: endpoint === 'junit' ? null : id('templateId'), format: format as ImportFormat | 'auto',
    ...ciFields(single), newAttempt: flag(single('newAttempt'), 'newAttempt'),
  };
}

/** The CI context fields, checked (empty: not given); a commit is kept in lower case, a build URL as the URL parser writes it. */
function ciFields(single: (key: string) => string | undefined): CiContext {
  const value = (key: CiField): string | number | null => {
    const text = single(key)?.trim();
    if (text === undefined || text === '') return null;
    if (key === 'attempt') {
      if (!/^[1-9]\d{0,9}$/.test(text) || Number(text) > 2147483647) throw invalidCi(key, 'must be a positive integer');
      return Number(text);
    }
    const problem = ciValueProblem(key, text);
    if (problem) throw invalidCi(key, problem);
    return key === 'commit' ? text.toLowerCase() : key === 'buildUrl' ? new URL(text).href : text;
  };
  return {
    branch: value('branch') as string | null, commit: value('commit') as string | null, buildUrl: value('buildUrl') as string | null,
    ciJobId: value('ciJobId') as string | null, attempt: value('attempt') as number | null,
  };
}

const invalidCi = (path: CiField, reason: string) => badRequest('invalid-ci-context', `${path} ${reason}`, { path, reason });

function flag(text: string | undefined, path: string): boolean {
  if (text === undefined || text.trim() === '' || text.trim() === 'false') return false;
  if (text.trim() === 'true') return true;
  throw badRequest('invalid-argument', `${path} must be true or false`, { path });
}

// ------------------------------------------------------------------------------ repeated uploads

/**
 * "The same upload" is the same project, CI job id and attempt (none given: 1) and the same set of
 * files by content (SHA-256): a CI job's upload step retried. Its claim is a `UniqueValueClaimed`
 * on its own stream, appended at the revision the request read (the way unique values are claimed,
 * services/entities/entity.handlers.ts): of two identical uploads at the same moment one claims,
 * the other fails the append and answers with the winner's job. The event store decides, so no
 * read model lag and no lock held across requests; and the claim is in the audit trail.
 */
interface UploadClaim { streamId: string; value: string }

function uploadClaim(f: ImportFields, sha256s: string[]): UploadClaim {
  const identity = JSON.stringify([f.projectId, f.ciJobId, f.attempt ?? 1, [...new Set(sha256s)].sort()]);
  const value = createHash('sha256').update(identity).digest('hex');
  return { streamId: `unique-import.upload-${value}`, value };
}

const lastClaimOf = async (deps: ImportRoutesDeps, claim: UploadClaim) =>
  (await deps.store.readStream(claim.streamId, { direction: 'backwards', maxCount: 1 }))[0] as EventEnvelope | undefined;

/**
 * The job that holds the upload, or null: a claim holds unless its job failed (a retry then
 * imports again), or its job was never requested and the claim is older than the grace period.
 */
async function holderOf(deps: ImportRoutesDeps, claim: UploadClaim): Promise<number | null> {
  const last = await lastClaimOf(deps, claim);
  if (!last) return null;
  const jobId = (last.data as UniqueValueClaimed['data']).ownerId;
  const [jobLast] = await deps.store.readStream(importJobStream(jobId), { direction: 'backwards', maxCount: 1 });
  if (!jobLast) return Date.now() - Date.parse(last.recordedAt) < UPLOAD_CLAIM_GRACE_MS ? jobId : null;
  return jobLast.type === 'ImportFailed' ? null : jobId;
}

/** Claims the upload for `jobId`; answers the job that holds it (another one when a concurrent request won). */
async function claimUpload(deps: ImportRoutesDeps, claim: UploadClaim, jobId: number, newAttempt: boolean, metadata: EventMetadata): Promise<number> {
  const last = await lastClaimOf(deps, claim);
  if (last && !newAttempt) {
    const holder = await holderOf(deps, claim);
    if (holder !== null) return holder;
  }
  const event: UniqueValueClaimed = { type: 'UniqueValueClaimed', data: { scope: 'import.upload', value: claim.value, ownerId: jobId } };
  try {
    // A new attempt asked for takes the claim whatever it held: later retries of it answer with this job.
    await deps.store.append(claim.streamId, [event], { expectedRevision: newAttempt ? 'any' : last ? BigInt(last.revision) : 'no-stream', metadata });
    return jobId;
  } catch (error) {
    if (!(error instanceof ConcurrencyError)) throw error;
    const winner = await lastClaimOf(deps, claim);
    return (winner!.data as UniqueValueClaimed['data']).ownerId;
  }
}

/**
 * A repeated upload: nothing is stored or appended; the answer is the stream of the job that has
 * the files, followed in the `imports` read model (it may run in another process) until it is
 * readable, and its `complete` names that job and run, with `duplicateOf`.
 */
async function answerDuplicate(deps: ImportRoutesDeps, req: Request, res: Response, uploaded: UploadedFile[], jobId: number, f: ImportFields): Promise<void> {
  await Promise.all(uploaded.map((file) => deps.files.discard(file.staged)));
  deps.logger.info({ duplicateOf: jobId, ciJobId: f.ciJobId, attempt: f.attempt, correlationId: req.correlationId }, 'repeated CI upload answered with the earlier job');
  openStream(res, jobId, jobId);
  await followJob(deps, res, jobId, jobId,
    `These files were sent for CI job ${f.ciJobId} (attempt ${f.attempt ?? 1}) before: import job ${jobId} has them; nothing is added twice (newAttempt=true imports them again)`);
}

// ------------------------------------------------------------------------------ the progress stream

function openStream(res: Response, jobId: number, duplicateOf: number | null): void {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  res.setHeader('X-Import-Job-Id', String(jobId));
  if (duplicateOf !== null) res.setHeader('X-Import-Duplicate-Of', String(duplicateOf));
  res.setHeader('Location', `/api/imports/${jobId}`);
  res.flushHeaders();
}

/** What the stream has told of a job so far. */
interface Told { progress: number; status: string; warnings: number; parsed: boolean }

/**
 * The progress a job shows, from its row in the `imports` read model (as jobAnswer gives it),
 * whether a worker holds it and how long the stream has seen it listed: null for nothing to say.
 * Pure; the percentages are those the stream has always used (parse 10-20, chunks 25-95, done 100).
 */
export function progressOf(
  view: { state: string; finalizing: boolean; format: unknown; totalCases: unknown; processedCases: unknown; warningCount: unknown },
  jobId: number, held: boolean, listedForMs: number,
): { progress: number; status: string } | null {
  const total = Number(view.totalCases ?? 0);
  const processed = Number(view.processedCases ?? 0);
  if (view.state === 'completed') return { progress: 100, status: 'Import completed successfully' };
  if (view.state === 'queued') {
    if (held) return { progress: 10, status: `Parsing ${String(view.format).toUpperCase()} results...` };
    return listedForMs >= WAITING_NOTICE_MS
      ? { progress: 5, status: `Import job ${jobId} is waiting for a worker to take it (it goes on if you leave: GET /api/imports/${jobId})` } : null;
  }
  if (view.state !== 'running') return null;
  if (view.finalizing || (total > 0 && processed >= total)) return { progress: 95, status: 'Finalizing import...' };
  if (processed > 0) return { progress: 25 + Math.floor((70 * processed) / total), status: `Imported ${processed} of ${total} test cases...` };
  return null;
}

/**
 * The answer's stream: the job followed in the `imports` read model (a worker runs it, here or in
 * another process) until it is readable: progress (rising only), each warning the read model keeps
 * (once), then `complete` (once every read model has the job: jobAnswer) or `error`. A job no
 * worker takes stays queued, and the stream says it waits. If the read model cannot be read (the
 * database away), the stream ends with `import-interrupted`: the job goes on by itself. The
 * client may leave at any time; the job goes on (GET /api/imports/:jobId shows it).
 * `duplicateOf`: the answer of a repeated upload, following the job that has its files.
 */
async function followJob(deps: ImportRoutesDeps, res: Response, jobId: number, duplicateOf: number | null, started: string): Promise<void> {
  let open = true;
  res.once('close', () => (open = false));
  let sentAt = Date.now();
  const write = (text: string) => {
    sentAt = Date.now();
    return open && res.write(text);
  };
  const send = (payload: unknown) => write(`data: ${JSON.stringify(payload)}\n\n`);
  const dup = duplicateOf === null ? {} : { duplicateOf };
  const told: Told = { progress: 5, status: started, warnings: 0, parsed: false };
  const say = (progress: number, status: string) => {
    if (progress < told.progress || (progress === told.progress && status === told.status)) return; // rising only, each once
    Object.assign(told, { progress, status });
    send({ progress, status });
  };
  send({ progress: told.progress, status: started, ...dup });
  const since = Date.now();
  let listedAt: number | null = null;
  while (open) {
    let row: Record<string, unknown> | undefined;
    let view: Awaited<ReturnType<typeof jobAnswer>>['view'] | null = null;
    let held = false;
    try {
      row = await deps.knex('import_jobs').where({ job_id: jobId }).first();
      if (row) view = (await jobAnswer(deps, row)).view;
      if (view?.state === 'queued') held = (await deps.imports.leases.holder(RESULT_IMPORT_KIND, jobId)) !== null;
    } catch (err) {
      if (!isTransient(err)) throw err;
      deps.logger.warn({ err, jobId }, 'an import stream cannot read its job; it ends, the job goes on');
      const interrupted = new HttpError(503, 'import-interrupted',
        'The import was interrupted; it goes on by itself once the database answers again (GET /api/imports/{jobId} shows it)', { jobId, ...dup });
      send({ error: interrupted.message, code: interrupted.code, details: interrupted.details });
      break;
    }
    if (view) {
      // The job is listed now: a worker in this process looks at once (the first wake may have come before the listing).
      if (listedAt === null) {
        listedAt = Date.now();
        if (duplicateOf === null) deps.imports.wakeWorkers();
      }
      const warnings = (view.warnings ?? []) as unknown[];
      for (; told.warnings < warnings.length; told.warnings++) send({ warning: warnings[told.warnings] });
      if (!told.parsed && view.totalCases !== null && view.totalCases !== undefined && view.state !== 'failed') {
        told.parsed = true;
        const count = Number(view.warningCount ?? 0);
        say(20, `Parsed ${String(view.totalCases)} test case(s)${count ? ` with ${count} warning(s)` : ''}`);
      }
      if (view.state === 'failed') {
        const error = (view.error ?? {}) as { error?: string; code?: string; details?: Record<string, unknown> };
        send({ error: error.error, code: error.code, details: { ...error.details, jobId, ...dup } });
        break;
      }
      if (view.state === 'completed' && told.parsed && told.progress < 95) {
        const total = Number(view.totalCases);
        say(95, `Imported ${total} of ${total} test cases...`);
      }
      const next = progressOf(view, jobId, held, Date.now() - listedAt);
      if (next) say(next.progress, next.status);
      if (view.state === 'completed' && view.parked) {
        const parked = new EventParked(view.parked.position, view.parked.projections);
        deps.logger.error({ jobId, ...parked.details }, 'import job completed, but its events are parked');
        send({ error: parked.message, code: parked.code, details: { ...parked.details, jobId, testRunId: view.testRunId, ...dup } });
        break;
      }
      if (view.state === 'completed') {
        send({ complete: true, testRunId: view.testRunId, jobId, ...dup });
        break;
      }
    } else if (duplicateOf !== null && Date.now() - since > FOLLOW_APPEAR_MS) {
      // A claim whose job was never requested (its request died before it).
      send({ error: `Import job ${jobId} did not start`, code: 'import-job-not-found', details: { jobId, duplicateOf } });
      break;
    }
    if (Date.now() - sentAt >= KEEP_ALIVE_MS) write(': the job goes on\n\n');
    await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
  }
  res.end();
}

/** The one format of all files: the one asked for, or detected from each file's first bytes. */
function formatOf(requested: ImportFormat | 'auto', files: UploadedFile[]): ImportFormat {
  if (requested !== 'auto') return requested;
  const detected: Record<string, ImportFormat> = {};
  for (const file of files) {
    const format = detectFormat(file.head, file.originalname);
    if (!format) throw badRequest('unknown-format', `The format of ${file.originalname} is none of ${IMPORT_FORMATS.join(', ')}`, { path: FILES_FIELD, file: file.originalname });
    detected[file.originalname] = format;
  }
  const formats = new Set(Object.values(detected));
  if (formats.size > 1) throw badRequest('mixed-formats', 'The files are of different formats; import each format on its own', { path: FILES_FIELD, formats: detected });
  return [...formats][0];
}

/**
 * The caller may write results (and create the run) in the project, and every id names a row that
 * exists and that the caller can see: a state of scope RUNS, a folder, milestone and run of this
 * project, a configuration, tags, a template. Invisible is answered as not found.
 */
async function checkReferences(deps: ImportRoutesDeps, req: Request, f: ImportFields): Promise<void> {
  const { knex } = deps;
  const access = await resolveProjectAccess(knex, req.auth!.user);
  const project = await knex('projects').where({ id: f.projectId, is_deleted: false }).first('id');
  const grant = access.all ? null : access.projects.get(f.projectId);
  if (!project || (!access.all && !grant)) throw notFound(`Project ${f.projectId} does not exist`, { path: 'projectId', id: f.projectId });
  if (grant) {
    const needs: [Parameters<typeof permits>[1], string][] = [['TestRunResults', 'add results']];
    if (f.testRunId === null) needs.push(['TestRuns', 'create test runs']);
    else if (f.stateId !== null || f.configId !== null || f.milestoneId !== null || f.tagIds.length > 0) needs.push(['TestRuns', 'change test runs']);
    for (const [area, what] of needs) {
      if (!permits(grant, area, 'canAddEdit')) throw new HttpError(403, 'forbidden', `You may not ${what} in project ${f.projectId}`, { projectId: f.projectId, area });
    }
  }
  const missing = (path: string, entity: string, id: number) => notFound(`${entity} ${id} does not exist${path === 'tagIds' ? '' : ' here'}`, { path, id });
  if (f.testRunId !== null) {
    const run = await knex('test_runs').where({ id: f.testRunId, project_id: f.projectId, is_deleted: false }).first('id', 'is_completed');
    if (!run) throw missing('testRunId', 'Test run', f.testRunId);
    if (run.is_completed) throw badRequest('test-run-completed', `Test run ${f.testRunId} is completed; results cannot be added`, { path: 'testRunId', id: f.testRunId });
  }
  if (f.stateId !== null) {
    const state = await knex('workflows').where({ id: f.stateId, is_deleted: false }).first('scope');
    if (!state) throw missing('stateId', 'Workflow state', f.stateId);
    if (state.scope !== 'RUNS') throw badRequest('invalid-state', `Workflow state ${f.stateId} is of scope ${state.scope}; a test run needs one of scope RUNS`, { path: 'stateId', id: f.stateId });
  }
  if (f.parentFolderId !== null && !(await knex('repository_folders').where({ id: f.parentFolderId, project_id: f.projectId, is_deleted: false }).first('id')))
    throw missing('parentFolderId', 'Folder', f.parentFolderId);
  if (f.milestoneId !== null && !(await knex('milestones').where({ id: f.milestoneId, project_id: f.projectId, is_deleted: false }).first('id')))
    throw missing('milestoneId', 'Milestone', f.milestoneId);
  if (f.configId !== null && !(await knex('configurations').where({ id: f.configId, is_deleted: false }).first('id')))
    throw missing('configId', 'Configuration', f.configId);
  if (f.templateId !== null && !(await knex('templates').where({ id: f.templateId, is_deleted: false }).first('id')))
    throw missing('templateId', 'Template', f.templateId);
  if (f.tagIds.length > 0) {
    const found = new Set((await knex('tags').whereIn('id', f.tagIds).where({ is_deleted: false }).select('id')).map((r) => r.id as number));
    const absent = f.tagIds.find((t) => !found.has(t));
    if (absent !== undefined) throw missing('tagIds', 'Tag', absent);
  }
}
