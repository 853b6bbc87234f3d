import fs from 'node:fs';
import path from 'node:path';
import { CliError } from './settings';

/** What the service's import stream says, event by event. */
export type ImportEvent =
  | { progress: number; status: string }
  | { warning: { file: string; message: string; case?: string } }
  | { complete: true; testRunId: number; jobId: number }
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
}

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

  async job(jobId: number): Promise<Record<string, unknown>> {
    const res = await this.send(`/api/imports/${jobId}`, { method: 'GET' });
    const body = await jsonOf(res);
    if (!res.ok) throw errorOf(res, body);
    return body!.data!;
  }

  /** Uploads the files and follows the import's event stream; answers its `complete` event. */
  async importResults(files: string[], fields: ImportFields, onEvent: (event: ImportEvent) => void): Promise<{ testRunId: number; jobId: number }> {
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
    for (const file of files) form.append('files', await blobOf(file), path.basename(file));
    const res = await this.send('/api/test-results/import', { method: 'POST', body: form });
    if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) throw errorOf(res, await jsonOf(res));
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
        if ('complete' in event) return { testRunId: event.testRunId, jobId: event.jobId };
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
