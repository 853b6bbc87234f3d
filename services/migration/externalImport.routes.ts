import { type Request, Router } from 'express';
import type { ExternalDurationUnit, ExternalMappingKey, ExternalMappings, ExternalSourceEntry } from '../../contracts/events';
import { requireAdmin } from '../admin/admin.routes';
import { sanitiseFileName } from '../files/fileMeta';
import { type FileStore, newFileKey } from '../files/fileStore';
import { stagedUploads, type UploadedFile } from '../files/stagedUploads';
import { type CommandDeps, readYourWrites, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { handleCommand } from '../shared/decider';
import { badRequest, DomainError, HttpError } from '../shared/errors';
import { asyncHandler } from '../shared/http';
import {
  EXTERNAL_IMPORT_ID_CATEGORY, type ExternalImportCommand, externalImportDecider, externalImportStream,
} from './externalImport.decider';
import { foldJobStream } from './externalImport.saga';
import { checkMappings, readMappings } from './mappings';
import { previewImport } from './preview';
import { parseId } from '../shared/validate';

/**
 * The external-tool migration, for administrators (docs/migration.md): upload an export (a job
 * that a worker analyses), read the analysis, save the mappings, preview, execute, watch, cancel,
 * roll back. Every write is an event on the job's stream `externalImport-<jobId>`; the worker
 * (externalImport.saga.ts) does the reading and writing of rows. A refused request appends nothing.
 */

export const EXTERNAL_IMPORT_PATH = '/api/admin/imports/external/jobs';
export const EXTERNAL_UPLOAD_FIELD = 'file';
export const EXTERNAL_IMPORT_PAGE = { default: 25, max: 100 } as const;
const DURATION_UNITS: readonly ExternalDurationUnit[] = ['ns', 'us', 'ms', 's'];
const PHASES = ['uploaded', 'analysing', 'analysed', 'configured', 'queued', 'importing', 'completed', 'failed', 'cancelled', 'rollingBack', 'rolledBack'];

export interface ExternalImportRouteDeps extends CommandDeps {
  files: FileStore;
  /** EXTERNAL_IMPORT_MAX_BYTES: the largest export accepted. */
  externalImportMaxBytes: number;
  /** Tells the workers a job has work now (they look every few seconds anyway). */
  wakeWorkers(): void;
}

const invalid = (path: string, message: string) => badRequest('invalid-argument', message, { path });
const ZIP_MAGIC = [Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.from([0x50, 0x4b, 0x05, 0x06])];

/** Which container the first bytes say the upload is, or null for neither (refused before it is kept). */
function containerOf(head: Buffer): 'zip' | 'json' | null {
  if (ZIP_MAGIC.some((magic) => head.subarray(0, 4).equals(magic))) return 'zip';
  return head.toString('utf8').replace(/^\uFEFF/, '').trimStart().startsWith('{') ? 'json' : null;
}

const jobIdOf = (req: Request): number => parseId('jobId', req.params.jobId);

const notFound = (jobId: number) => new HttpError(404, 'external-import-not-found', `No external import job ${jobId}`, { jobId });

export function externalImportRoutes(deps: ExternalImportRouteDeps): Router {
  const router = Router();
  router.use('/api/admin/imports/external', requireAdmin);
  const uploads = stagedUploads({ files: deps.files, maxUploadBytes: deps.externalImportMaxBytes, field: EXTERNAL_UPLOAD_FIELD, maxFiles: 1, maxFields: 0, headBytes: 4096 });

  /** Decides a command on the job's stream as the caller and answers the job once the read model has it. */
  const command = async (req: Request, res: Parameters<Parameters<typeof router.post>[1]>[1], jobId: number, cmd: ExternalImportCommand, status: number) => {
    if (!(await deps.knex('external_import_jobs').where({ job_id: jobId }).first('job_id'))) {
      const [first] = await deps.store.readStream(externalImportStream(jobId), { maxCount: 1 });
      if (!first) throw notFound(jobId);
    }
    // The job's state without its map of source ids (a large job's chunks are not read): these commands decide on the phase.
    const load = async () => {
      const { state, last } = await foldJobStream(deps.store, jobId, undefined, { withIds: false });
      return { state, revision: last ? BigInt(last.revision) : null };
    };
    const outcome = await handleCommand(deps.store, externalImportStream(jobId), externalImportDecider, cmd, metadataFor(req.auth!, req), undefined, load).catch((err) => {
      // The job's phase does not allow it: a conflict with the job's state, not a malformed request.
      if (err instanceof DomainError && !err.code.endsWith('-not-found')) throw new HttpError(409, err.code, err.message, err.details);
      throw err;
    });
    await readYourWrites(withPositionHeader(deps, res), outcome);
    deps.wakeWorkers();
    res.status(status).json({ data: await jobView(deps, jobId, true) });
  };

  router.post(EXTERNAL_IMPORT_PATH, (req, res, next) => {
    uploads.parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      upload(req, res).catch(async (error) => {
        await uploads.dropStaged(req).catch(() => undefined);
        next(error);
      });
    });
  });

  async function upload(req: Request, res: Parameters<Parameters<typeof router.post>[1]>[1]): Promise<void> {
    const [file] = (req.files ?? []) as UploadedFile[];
    if (!file) throw badRequest('file-required', `Send the export in a multipart field named "${EXTERNAL_UPLOAD_FIELD}"`, { path: EXTERNAL_UPLOAD_FIELD });
    if (file.size === 0) throw badRequest('empty-file', `${file.originalname} is empty`, { path: EXTERNAL_UPLOAD_FIELD });
    const container = containerOf(file.head);
    if (!container) {
      throw badRequest('export-not-recognised', 'The upload is neither a ZIP archive nor a JSON export', { path: EXTERNAL_UPLOAD_FIELD, firstBytes: file.head.subarray(0, 8).toString('hex') });
    }
    const fileName = sanitiseFileName(file.originalname);
    const metadata = metadataFor(req.auth!, req);
    // Stored under a name the server chooses (a random key), never the client's.
    const key = newFileKey();
    await deps.files.commit(file.staged, key, { name: fileName, mimeType: container === 'zip' ? 'application/zip' : 'application/json' });
    try {
      const jobId = await deps.ids.next(EXTERNAL_IMPORT_ID_CATEGORY, metadata);
      const outcome = await handleCommand(deps.store, externalImportStream(jobId), externalImportDecider, {
        type: 'Upload', jobId, now: deps.clock().toISOString(),
        file: { fileName, fileSize: file.size, sha256: file.staged.sha256, storedAs: key, container },
      }, metadata);
      await readYourWrites(withPositionHeader(deps, res), outcome);
      deps.wakeWorkers();
      res.status(201).json({ data: await jobView(deps, jobId, true) });
    } catch (err) {
      await deps.files.remove(key).catch(() => undefined);
      throw err;
    }
  }

  router.get(EXTERNAL_IMPORT_PATH, asyncHandler(async (req, res) => {
    const { take, cursor, phase } = readListQuery(req.query as Record<string, unknown>);
    const q = deps.knex('external_import_jobs').orderBy('job_id', 'desc').limit(take + 1);
    if (cursor !== null) q.where('job_id', '<', cursor);
    if (phase !== null) q.where({ phase });
    const rows = await q.select('*');
    const page = rows.slice(0, take);
    res.json({ data: page.map((row: Record<string, unknown>) => viewOf(row, false)), nextCursor: rows.length > take ? String(page[page.length - 1].job_id) : null });
  }));

  router.get(`${EXTERNAL_IMPORT_PATH}/:jobId`, asyncHandler(async (req, res) => {
    const jobId = jobIdOf(req);
    const view = await jobView(deps, jobId, true);
    if (!view) throw notFound(jobId);
    res.json({ data: view });
  }));

  router.put(`${EXTERNAL_IMPORT_PATH}/:jobId/configuration`, asyncHandler(async (req, res) => {
    const jobId = jobIdOf(req);
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body !== 'object' || Array.isArray(body)) throw invalid('', 'The body must be a JSON object');
    for (const key of Object.keys(body)) if (!['mappings', 'durationUnit', 'reset'].includes(key)) throw invalid(key, `Unknown field "${key}"; expected mappings, durationUnit, reset`);
    if (body.reset !== undefined && typeof body.reset !== 'boolean') throw invalid('reset', 'reset must be a boolean');
    if (body.reset === true && body.mappings !== undefined) throw invalid('mappings', 'reset restores the suggested mappings: send mappings or reset, not both');
    if (body.durationUnit !== undefined && !DURATION_UNITS.includes(body.durationUnit as ExternalDurationUnit))
      throw badRequest('invalid-argument', `durationUnit must be one of ${DURATION_UNITS.join(', ')}`, { path: 'durationUnit', allowed: DURATION_UNITS });
    const given = readMappings(body.mappings ?? {});
    const row = await deps.knex('external_import_jobs').where({ job_id: jobId }).first('phase', 'sources', 'suggestions', 'mappings', 'duration_unit', 'errors', 'datasets');
    if (!row) throw notFound(jobId);
    if (row.phase !== 'analysed' && row.phase !== 'configured') {
      throw new HttpError(409, `external-import-${kebab(row.phase)}`, `External import job ${jobId} is ${row.phase}; mappings are saved after the analysis and before the import is queued`, { jobId, phase: row.phase });
    }
    if (Array.isArray(row.errors) && (row.errors.length > 0 || (row.datasets as Array<{ errors: unknown[] }>).some((d) => d.errors.length > 0)))
      throw new HttpError(409, 'external-import-has-errors', `The export of job ${jobId} has errors (listed on the job); it cannot be imported`, { jobId });
    const sources = row.sources as Record<ExternalMappingKey, ExternalSourceEntry[]>;
    const suggestions = row.suggestions as ExternalMappings;
    // Reset: the suggestions, checked again (an account registered or deleted since the analysis).
    const mappings = await checkMappings(deps.knex, deps.store, given, body.reset === true ? suggestions : (row.mappings as ExternalMappings | null) ?? suggestions, sources);
    const durationUnit = (body.durationUnit as ExternalDurationUnit | undefined) ?? (row.duration_unit as ExternalDurationUnit | null) ?? 'us';
    await command(req, res, jobId, { type: 'Configure', mappings, durationUnit, reset: body.reset === true, now: deps.clock().toISOString() }, 200);
  }));

  router.post(`${EXTERNAL_IMPORT_PATH}/:jobId/preview`, asyncHandler(async (req, res) => {
    const jobId = jobIdOf(req);
    noBody(req);
    const row = await deps.knex('external_import_jobs').where({ job_id: jobId }).first('phase', 'mappings', 'suggestions', 'duration_unit');
    if (!row) throw notFound(jobId);
    if (row.phase !== 'analysed' && row.phase !== 'configured') {
      throw new HttpError(409, `external-import-${kebab(row.phase)}`, `External import job ${jobId} is ${row.phase}; a preview is for an analysed job before it runs`, { jobId, phase: row.phase });
    }
    res.json({ data: await previewImport(deps.knex, deps.store, jobId, (row.mappings ?? row.suggestions) as ExternalMappings, (row.duration_unit ?? 'us') as ExternalDurationUnit) });
  }));

  for (const [action, type, status] of [['execute', 'Queue', 202], ['cancel', 'RequestCancel', 202], ['rollback', 'RequestRollback', 202]] as const) {
    router.post(`${EXTERNAL_IMPORT_PATH}/:jobId/${action}`, asyncHandler(async (req, res) => {
      const jobId = jobIdOf(req);
      noBody(req);
      if (action === 'execute' && (await deps.knex('external_import_jobs').where({ job_id: jobId }).first('phase'))?.phase === 'analysed')
        throw new HttpError(409, 'external-import-not-configured', `Save the mappings of job ${jobId} first (PUT …/configuration)`, { jobId, phase: 'analysed' });
      await command(req, res, jobId, { type, now: deps.clock().toISOString() }, status);
    }));
  }
  return router;
}

function noBody(req: Request): void {
  if (req.body && typeof req.body === 'object' && Object.keys(req.body).length > 0) throw invalid(Object.keys(req.body)[0], 'This operation takes no body');
}

function readListQuery(query: Record<string, unknown>): { take: number; cursor: number | null; phase: string | null } {
  for (const [name, value] of Object.entries(query)) {
    if (!['take', 'cursor', 'phase'].includes(name)) throw invalid(name, `Unknown parameter ${name}; expected take, cursor, phase`);
    if (typeof value !== 'string') throw invalid(name, `${name} must be given once, as a plain value`);
  }
  const int = (name: string, max: number) => {
    const v = query[name] as string;
    if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max) throw invalid(name, `${name} must be an integer between 1 and ${max}`);
    return Number(v);
  };
  const phase = (query.phase as string | undefined) ?? null;
  if (phase !== null && !PHASES.includes(phase)) throw badRequest('invalid-argument', `phase must be one of ${PHASES.join(', ')}`, { path: 'phase', allowed: PHASES });
  return {
    take: query.take === undefined ? EXTERNAL_IMPORT_PAGE.default : int('take', EXTERNAL_IMPORT_PAGE.max),
    cursor: query.cursor === undefined ? null : parseId('cursor', query.cursor),
    phase,
  };
}

const kebab = (phase: string) => phase.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

async function jobView(deps: Pick<CommandDeps, 'knex'>, jobId: number, detail: boolean) {
  const row = await deps.knex('external_import_jobs').where({ job_id: jobId }).first();
  if (!row) return null;
  const view = viewOf(row, detail);
  const creator = row.created_by_id === null ? null : await deps.knex('users').where({ id: row.created_by_id }).first('id', 'name', 'email');
  return {
    ...view, createdBy: creator ? { id: creator.id, name: creator.name, email: creator.email } : null,
    ...(detail && ['completed', 'failed', 'cancelled'].includes(row.phase) && { skipReasons: await skipReasonsOf(deps, jobId) }),
  };
}

/** An ended job's skipped rows: per dataset, how many for each reason (from the rows' provenance). */
async function skipReasonsOf(deps: Pick<CommandDeps, 'knex'>, jobId: number): Promise<Record<string, Record<string, number>>> {
  const rows = await deps.knex('external_import_rows').where({ job_id: jobId }).whereNotNull('skip_reason')
    .groupBy('dataset', 'skip_reason').orderBy(['dataset', 'skip_reason']).select('dataset', 'skip_reason', deps.knex.raw('count(*)::int AS n'));
  // Keyed by the export's own dataset names: no prototype to meet.
  const reasons: Record<string, Record<string, number>> = Object.create(null);
  for (const r of rows as Array<{ dataset: string; skip_reason: string; n: number }>) (reasons[r.dataset] ??= Object.create(null))[r.skip_reason] = r.n;
  return reasons;
}

/** A job as the routes show it; `detail` adds what the wizard needs for one job (sources, suggestions, sample rows). */
function viewOf(row: Record<string, unknown>, detail: boolean) {
  const plan = (row.plan as Array<{ dataset: string; rows: number }> | null) ?? [];
  const progress = (row.progress as Record<string, { lastRow: number; created: number; skipped: number }>) ?? {};
  const totals = new Map(plan.map((p) => [p.dataset, p.rows]));
  const datasets = ((row.datasets as Array<Record<string, unknown>> | null) ?? []).map((d) => {
    const total = totals.get(d.name as string);
    // Planned datasets only: the export's own names (`constructor`) are no keys of the progress.
    const done = total === undefined ? undefined : progress[d.name as string];
    const shown = detail ? d : { ...d, sampleRows: undefined };
    return {
      ...shown,
      progress: total === undefined ? null : {
        rows: total, processed: done?.lastRow ?? 0, created: done?.created ?? 0, skipped: done?.skipped ?? 0,
        percent: total === 0 ? 100 : Math.floor((100 * (done?.lastRow ?? 0)) / total),
      },
    };
  });
  const rowsTotal = plan.reduce((n, p) => n + p.rows, 0);
  const rowsDone = plan.reduce((n, p) => n + (progress[p.dataset]?.lastRow ?? 0), 0);
  return {
    jobId: row.job_id, phase: row.phase, cancelRequested: row.cancel_requested,
    file: { name: row.file_name, size: Number(row.file_size), sha256: row.sha256, container: row.container, deleted: row.file_deleted },
    createdById: row.created_by_id, tokenId: row.token_id, via: row.via,
    datasets, ignored: row.ignored ?? [], warnings: row.warnings ?? [], errors: row.errors ?? [], totals: row.totals ?? null,
    durationUnit: row.duration_unit ?? null, mappings: row.mappings ?? null,
    ...(detail && { sources: row.sources ?? null, suggestions: row.suggestions ?? null }),
    progress: { currentDataset: row.current_dataset ?? null, rows: rowsTotal, processed: rowsDone, percent: rowsTotal === 0 ? (row.phase === 'completed' ? 100 : 0) : Math.floor((100 * rowsDone) / rowsTotal) },
    counts: row.counts ?? null, deleted: row.deleted ?? null, error: row.error ?? null,
    createdAt: row.created_at, analysedAt: row.analysed_at, configuredAt: row.configured_at, queuedAt: row.queued_at,
    startedAt: row.started_at, finishedAt: row.finished_at, rolledBackAt: row.rolled_back_at, updatedAt: row.updated_at,
  };
}
