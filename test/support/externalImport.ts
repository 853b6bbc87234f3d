import type { HttpClient } from './server';
import { waitUntil } from './wait';

/** Helpers of the external-tool migration's tests: the jobs' routes, over HTTP. */

export const JOBS = '/api/admin/imports/external/jobs';

/** Uploads a file as the multipart field `file` (the client's session cookie or token). */
export async function uploadExport(url: string, client: HttpClient, content: Buffer | string, name = 'export.json', field = 'file') {
  const form = new FormData();
  form.append(field, new Blob([content]), name);
  const headers: Record<string, string> = { origin: new URL(url).origin };
  if (client.cookie) headers.cookie = client.cookie;
  if (client.bearer) headers.authorization = `Bearer ${client.bearer}`;
  const res = await fetch(`${url}${JOBS}`, { method: 'POST', body: form, headers });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function waitForPhase(client: HttpClient, jobId: number, phases: string[], timeoutMs = 90_000): Promise<any> {
  let job: any;
  await waitUntil(async () => {
    job = (await client.get(`${JOBS}/${jobId}`)).body.data;
    return phases.includes(job.phase);
  }, `job ${jobId} to reach ${phases.join('/')}`, timeoutMs, () => JSON.stringify({ phase: job?.phase, error: job?.error }));
  return job;
}

