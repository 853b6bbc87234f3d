import { Router, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { resolveProjectAccess, permits } from '../access/projectAccess';
import { asyncHandler } from '../api/http';
import { sanitiseFileName, normaliseMimeType } from '../files/fileMeta';
import type { FileStore } from '../files/fileStore';
import { stagedUploads, type UploadedFile } from '../files/stagedUploads';
import type { CommandDeps } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { badRequest, HttpError, notFound } from '../shared/errors';
import { detectFormat } from './formats/detect';
import { IMPORT_FORMATS, type ImportFormat } from './formats/parsedResult';
import { type ImportOptions, importJobDecider, importJobStream, type StoredFile } from './importJob.decider';
import type { ImportSaga, JobSignal } from './importJob.saga';

/**
 * POST /api/junit/import and POST /api/test-results/import: result files in, a Server-Sent Events
 * stream of the job's progress out. Everything that can be checked before the job starts is
 * checked first and answered as an ordinary JSON error (nothing staged is kept, nothing appended);
 * then the files are stored, the job is requested on its stream, and the saga runs it.
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
  maxUploadBytes: number;
  imports: ImportSaga;
  logger: Logger;
}

const ID_FIELDS = ['projectId', 'stateId', 'parentFolderId', 'testRunId', 'configId', 'milestoneId', 'templateId'] as const;
const FIELDS: Record<'junit' | 'test-results', readonly string[]> = {
  junit: ['name', ...ID_FIELDS.filter((f) => f !== 'templateId'), 'tagIds'],
  'test-results': ['name', ...ID_FIELDS, 'tagIds', 'format'],
};

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
    const jobId = Number(req.params.jobId);
    if (!Number.isSafeInteger(jobId) || jobId < 1) throw badRequest('invalid-argument', 'jobId must be a positive integer', { path: 'jobId' });
    const row = await deps.knex('import_jobs').where({ job_id: jobId }).first();
    const user = req.auth!.user;
    const visible = row && (user.access === 'ADMIN' || row.created_by_id === user.id || (await resolveProjectAccess(deps.knex, user)).projects.has(row.project_id));
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
 * `position` is that event's (for X-Event-Position), null before the job finished.
 */
export async function jobAnswer(deps: Pick<CommandDeps, 'watcher'>, row: Record<string, unknown>): Promise<{ view: ReturnType<typeof jobView>; position: string | null }> {
  const view = jobView(row);
  const position = row.final_position === null || row.final_position === undefined ? null : String(row.final_position);
  if (position !== null && !(await deps.watcher.applied({ position, streamId: importJobStream(row.job_id as number) }))) {
    return { view: { ...view, state: 'running', finalizing: true }, position };
  }
  return { view, position };
}

function jobView(row: Record<string, unknown>) {
  return {
    jobId: row.job_id, state: row.state as string, finalizing: false, projectId: row.project_id, testRunId: row.test_run_id, testRunName: row.test_run_name,
    endpoint: row.endpoint, format: row.format, options: row.options, files: row.files,
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

  // Checked: store the files, request the job, stream its progress.
  const metadata = metadataFor(req.auth!, req);
  const jobId = await deps.ids.next('importJob', metadata);
  const stored: StoredFile[] = [];
  for (const [index, file] of uploaded.entries()) {
    const name = sanitiseFileName(file.originalname);
    const kept = await deps.files.commit(file.staged, { name, mimeType: normaliseMimeType(file.mimetype) });
    stored.push({ index, fileName: name, storedAs: kept.key, sizeBytes: kept.size, sha256: kept.sha256 });
  }
  const { format: _f, ...rest } = fields;
  const options: ImportOptions = { ...rest, endpoint, format };
  const events = importJobDecider.decide({ type: 'Request', jobId, options, files: stored, now: deps.clock().toISOString() }, importJobDecider.initialState);
  await deps.store.append(importJobStream(jobId), events, { expectedRevision: 'no-stream', metadata });

  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('X-Accel-Buffering', 'no');
  res.setHeader('X-Import-Job-Id', String(jobId));
  res.setHeader('Location', `/api/imports/${jobId}`);
  res.flushHeaders();
  let progress = 0;
  let open = true;
  const send = (payload: unknown) => open && res.write(`data: ${JSON.stringify(payload)}\n\n`);
  const finish = () => {
    if (!open) return;
    open = false;
    stop();
    res.end();
  };
  const onSignal = (signal: JobSignal) => {
    switch (signal.kind) {
      case 'progress':
        if (signal.progress < progress) return; // rising only
        progress = signal.progress;
        return void send({ progress: signal.progress, status: signal.status });
      case 'warning':
        return void send({ warning: signal.warning });
      case 'complete':
        send({ complete: true, testRunId: signal.testRunId, jobId });
        return finish();
      case 'error':
        send({ error: signal.error, code: signal.code, details: signal.details });
        return finish();
    }
  };
  const stop = deps.imports.listen(jobId, onSignal);
  // The client may leave: the job goes on (GET /api/imports/:jobId shows it).
  res.once('close', () => {
    open = false;
    stop();
  });
  onSignal({ kind: 'progress', progress: 5, status: `Import job ${jobId} started with ${stored.length} ${format.toUpperCase()} file(s)` });
  await deps.imports.run(jobId).catch((err) => deps.logger.error({ err, jobId, correlationId: req.correlationId }, 'import job stopped'));
  finish();
}

interface ImportFields extends Omit<ImportOptions, 'endpoint' | 'format'> {
  format: ImportFormat | 'auto';
}

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
    if (!/^[1-9]\d{0,9}$/.test(text) || Number(text) > 2147483647) throw badRequest('invalid-argument', `${key} must be a positive integer`, { path: key });
    return Number(text);
  };
  const projectId = id('projectId');
  if (projectId === null) throw badRequest('invalid-argument', 'projectId is required', { path: 'projectId' });
  const testRunId = id('testRunId');
  const name = single('name')?.trim() || null;
  if (name === null && testRunId === null) throw badRequest('invalid-argument', 'name is required unless testRunId is given', { path: 'name' });
  if (name !== null && name.length > 255) throw badRequest('invalid-argument', 'name is longer than 255 characters', { path: 'name' });
  const rawTags = body.tagIds === undefined ? [] : Array.isArray(body.tagIds) ? body.tagIds : [body.tagIds];
  const tagIds = [...new Set(rawTags.map((t, i) => {
    if (!/^[1-9]\d{0,9}$/.test(String(t))) throw badRequest('invalid-argument', 'tagIds must be positive integers', { path: `tagIds.${i}` });
    return Number(t);
  }))];
  const format = endpoint === 'junit' ? 'junit' : (single('format') ?? 'auto');
  if (format !== 'auto' && !(IMPORT_FORMATS as readonly string[]).includes(format))
    throw badRequest('unknown-format', `format must be auto or one of ${IMPORT_FORMATS.join(', ')}`, { path: 'format', allowed: ['auto', ...IMPORT_FORMATS] });
  return {
    projectId, testRunName: name, testRunId, stateId: id('stateId'), parentFolderId: id('parentFolderId'), configId: id('configId'),
    milestoneId: id('milestoneId'), tagIds, templateId: endpoint === 'junit' ? null : id('templateId'), format: format as ImportFormat | 'auto',
  };
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
