import { expect } from 'chai';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import type { TestApp } from '../support/app';
import { HttpClient } from '../support/server';

/** A result file for a request: its name and content. */
export interface ResultFile { name: string; content: string | Buffer }

export interface ImportAnswer {
  status: number;
  /** The JSON error, when the request was refused before the stream started. */
  body: any;
  /** The stream's events, parsed, in order. */
  events: any[];
  headers: Headers;
}

/** POSTs result files as multipart/form-data and reads the whole answer (an SSE stream, or a JSON error). */
export async function postImport(
  url: string, path: string, fields: Record<string, string | number | (string | number)[]>, files: ResultFile[], bearer: string | null,
): Promise<ImportAnswer> {
  const form = new FormData();
  for (const [key, value] of Object.entries(fields)) {
    for (const v of Array.isArray(value) ? value : [value]) form.append(key, String(v));
  }
  for (const f of files) form.append('files', new Blob([f.content]), f.name);
  const res = await fetch(url + path, { method: 'POST', headers: bearer ? { authorization: `Bearer ${bearer}` } : {}, body: form });
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    return { status: res.status, body: text ? JSON.parse(text) : null, events: [], headers: res.headers };
  }
  // Blocks of comments only (`: ...`, sent to keep a quiet stream open) carry no event.
  const events = text.split('\n\n').filter((block) => block.trim() !== '' && !block.startsWith(':')).map((block) => {
    expect(block.startsWith('data: '), block).to.equal(true);
    return JSON.parse(block.slice('data: '.length));
  });
  return { status: res.status, body: null, events, headers: res.headers };
}

/** The stream's progress events rise from 0 to 100 and the last event says complete; answers the run id. */
export function expectCompleted(answer: ImportAnswer): number {
  expect(answer.status, JSON.stringify(answer.body ?? answer.events)).to.equal(200);
  const last = answer.events[answer.events.length - 1];
  expect(last, JSON.stringify(answer.events)).to.include({ complete: true });
  const progress = answer.events.filter((e) => 'progress' in e).map((e) => e.progress as number);
  expect(progress.length).to.be.greaterThan(2);
  expect(progress).to.deep.equal([...progress].sort((a, b) => a - b));
  expect(progress[progress.length - 1]).to.equal(100);
  for (const p of progress) expect(Number.isInteger(p) && p >= 0 && p <= 100).to.equal(true);
  return last.testRunId as number;
}

/**
 * An administrator signed in (session) with an API token, and a project of theirs: `model` calls the
 * model API (expecting success), `upload` imports files into the project through
 * POST /api/test-results/import.
 */
export async function importingAdmin(app: TestApp, projectName: string) {
  const meta = systemMetadata('test');
  await seedDefaults(app.deps, meta);
  await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: ADMIN_PASSWORD, access: 'ADMIN' }, meta);
  const admin = new HttpClient(app.url);
  expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: ADMIN_PASSWORD })).status).to.equal(200);
  const token = (await admin.post('/api/tokens', { name: 'import' })).body.token as string;
  const model = async (entity: string, op: string, body: unknown) => {
    const res = await admin.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(op === 'create' ? 201 : 200);
    return res.body.data;
  };
  const projectId = (await model('project', 'create', { data: { name: projectName } })).id as number;
  const upload = (fields: Record<string, string | number>, files: ResultFile[]) =>
    postImport(app.url, '/api/test-results/import', { projectId, ...fields }, files, token);
  return { admin, token, model, projectId, upload };
}
const ADMIN_PASSWORD = 'import-admin-password-1';
