import fs from 'node:fs';
import path from 'node:path';
import { CliError } from './settings';

/** What the service's import stream says, event by event. */
export type ImportEvent =
  | { progress: number; status: string }
  | { warning: { file: string; message: string; case?: string } }
  | { complete: true; testRunId: number; jobId: number; duplicateOf?: number }
  | { error: string; code: string; details?: Record<string, unknown> };

export interface ImportFields {
  projectId: number;
  name?: string;
  testRunId?: number;
  format: string;
  stateId?: number;
  configId?: number;
  milestoneId?: number;
  parentFolderId?: number;
  templateId?: number;
  tagIds: number[];
  branch?: string;
  commit?: string;
  buildUrl?: string;
  ciJobId?: string;
  attempt?: number;
  newAttempt?: boolean;
}

/** How an import's stream ended: complete (perhaps answered with an earlier job), or interrupted while the job goes on by itself. */
export interface ImportOutcome { jobId: number; testRunId: number | null; duplicateOf: number | null; interrupted: boolean }

/** What a finished job recorded: its state, run, counts (GET /api/imports/{jobId}). */
export interface FinishedJob { state: 'completed' | 'failed'; testRunId: number | null; counts: Record<string, number> | null; error: { error: string; code: string } | null }

const JOB_POLL_MS = 500;

/** The service's HTTP API as the CLI uses it: bearer token, `User-Agent: testament-cli/<version>`. */
export class ServiceClient {
  constructor(
    readonly url: string,
    private readonly token: string,
    private readonly version: string,
  ) {}

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, 'user-agent': `testament-cli/${this.version}` };
  }

  private async send(pathname: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(this.url + pathname, { ...init, headers: { ...this.headers(), ...(init.headers as Record<string, string>) } });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
      throw new CliError(`Cannot reach ${this.url}: ${cause}`);
    }
  }

  /** The id of a row named `name` (exact), through the caller's permissions. */
  async lookup(type: string, name: string, projectId?: number, createIfMissing = false): Promise<number> {
    const res = await this.send('/api/lookup', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type, name, ...(projectId !== undefined && { projectId }), ...(createIfMissing && { createIfMissing }) }),
    });
    const body = await jsonOf(res);
    if (res.status === 404 && body?.details?.path !== 'projectId') throw new CliError(`No ${label(type)} named "${name}"${projectId !== undefined ? ` in project ${projectId}` : ''}`);
    if (res.status === 409) throw new CliError(`Several ${label(type)}s are named "${name}" (ids ${(body?.details?.ids ?? []).join(', ')}): give the id instead`);
    if (!res.ok) throw errorOf(res, body);
    return body!.data!.id as number;
  }

  /** GET /api/evidence for the run or milestone, written to `file` (through a temporary file beside it: a cut download leaves none). */
  async downloadEvidence(subject: { runId: number } | { milestoneId: number }, file: string): Promise<number> {
    const query = 'runId' in subject ? `runId=${subject.runId}` : `milestoneId=${subject.milestoneId}`;
    const res = await this.send(`/api/evidence?${query}`, { method: 'GET' });
    if (!res.ok || !res.body) throw errorOf(res, await jsonOf(res));
    const partial = `${file}.part`;
    const out = fs.createWriteStream(partial);
    let bytes = 0;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += chunk.length;
        if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
      }
      await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
      fs.renameSync(partial, file);
    } catch (err) {
      out.destroy();
      fs.rmSync(partial, { force: true });
      throw new CliError(`The download of the evidence stopped: ${(err as Error).message}`);
    }
    return bytes;
  }

  async job(jobId: number): Promise<Record<string, unknown>> {
    const res = await this.send(`/api/imports/${jobId}`, { method: 'GET' });
    const body = await jsonOf(res);
    if (!res.ok) throw errorOf(res, body);
    return body!.data!;
  }

  /**
   * Polls the job until it is completed or failed. The service says `completed` only once the run
   * is readable in full (until then `running`, `finalizing`), so what is read next is all there.
   */
  async finishedJob(jobId: number, timeoutMs = 6 * 3_600_000): Promise<FinishedJob> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await this.job(jobId);
      if (job.state === 'completed' || job.state === 'failed') return job as unknown as FinishedJob;
      if (Date.now() > deadline) throw new CliError(`Import job ${jobId} did not finish in time; see ${this.url}/api/imports/${jobId}`);
      await new Promise((r) => setTimeout(r, JOB_POLL_MS));
    }
  }

  /** How many of the run's test cases the job gave a result (each counted once, however many attempts). */
  async testsOf(jobId: number): Promise<number> {
    const res = await this.send('/api/model/testRunCase/count', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ where: { results: { some: { importJobId: jobId } } } }),
    });
    const body = await jsonOf(res);
    if (!res.ok) throw errorOf(res, body);
    return (body as unknown as { data: number }).data;
  }

  /** Attempts of the job's results that the files say were retried (Surefire's flakyFailure/rerunFailure, TestNG's retried="true"). */
  async retriesOf(jobId: number): Promise<number> {
    const res = await this.send('/api/model/testRunResult/count', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ where: { importJobId: jobId, retried: true } }),
    });
    const body = await jsonOf(res);
    if (!res.ok) throw errorOf(res, body);
    return (body as unknown as { data: number }).data;
  }

  /** Uploads the files and follows the import's event stream to its `complete` (or to an interruption the job recovers from). */
  async importResults(files: string[], fields: ImportFields, onEvent: (event: ImportEvent) => void): Promise<ImportOutcome> {
    const form = new FormData();
    const put = (key: string, value: number | string | undefined) => value !== undefined && form.append(key, String(value));
    put('projectId', fields.projectId);
    put('name', fields.name);
    put('testRunId', fields.testRunId);
    put('format', fields.format);
    put('stateId', fields.stateId);
    put('configId', fields.configId);
    put('milestoneId', fields.milestoneId);
    put('parentFolderId', fields.parentFolderId);
    put('templateId', fields.templateId);
    for (const tag of fields.tagIds) put('tagIds', tag);
    put('branch', fields.branch);
    put('commit', fields.commit);
    put('buildUrl', fields.buildUrl);
    put('ciJobId', fields.ciJobId);
    put('attempt', fields.attempt);
    if (fields.newAttempt) put('newAttempt', 'true');
    for (const file of files) form.append('files', await blobOf(file), path.basename(file));
    const res = await this.send('/api/test-results/import', { method: 'POST', body: form });
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) throw errorOf(res, await jsonOf(res));
    const jobId = Number(res.headers.get('x-import-job-id'));
    let buffer = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
        if (!data) continue;
        const event = JSON.parse(data) as ImportEvent;
        onEvent(event);
        if ('complete' in event) return { testRunId: event.testRunId, jobId: event.jobId, duplicateOf: event.duplicateOf ?? null, interrupted: false };
        // The database or event store went away: the job resumes by itself; the caller follows it.
        if ('error' in event && event.code === 'import-interrupted') return { testRunId: null, jobId, duplicateOf: null, interrupted: true };
        if ('error' in event) throw new CliError(`Import failed: ${event.error} (${event.code})`);
      }
    }
    throw new CliError('The service ended the import stream without completing it');
  }
}

const LABELS: Record<string, string> = { testRun: 'test run', config: 'configuration', state: 'workflow state' };
const label = (type: string) => LABELS[type] ?? type;

async function blobOf(file: string): Promise<Blob> {
  const open = (fs as unknown as { openAsBlob?: (p: string) => Promise<Blob> }).openAsBlob;
  return open ? open(file) : new Blob([fs.readFileSync(file)]);
}

/** A JSON answer of the service: `{data}` or `{error, code, details}`. */
interface Answer { data?: Record<string, unknown>; error?: string; code?: string; details?: { path?: string; ids?: number[] } }

async function jsonOf(res: Response): Promise<Answer | null> {
  const text = await res.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { error: text.slice(0, 200) };
  }
}

function errorOf(res: Response, body: Answer | null): CliError {
  const detail = body?.error ? `${body.error}${body.code ? ` (${body.code})` : ''}` : `HTTP ${res.status}`;
  if (res.status === 401) return new CliError(`The service refused the token: ${detail}. Set a valid one with \`testament config set --token\` or SERVICE_TOKEN`);
  return new CliError(`The service answered ${res.status}: ${detail}`);
}
