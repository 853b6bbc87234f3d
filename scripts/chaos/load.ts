import fs from 'node:fs';
import path from 'node:path';
import { generateExport } from '../generateExport';
import type { ChaosClient, Json } from './http';
import { sleep } from './processes';

/**
 * The mixed load: CI uploads of generated JUnit reports (POST /api/junit/import), readers paging
 * runs and their results through the model API, searches, and one external-tool migration. Each
 * part records what the service acknowledged, which the checks then look for.
 */

export interface LoadSizes {
  uploads: number;
  resultsPerUpload: number;
  readers: number;
  searchers: number;
  migration: { cases: number; runs: number; results: number };
  /** Between the starts of two uploads. */
  uploadStaggerMs: number;
}

export const FULL_SIZES: LoadSizes = {
  uploads: 4, resultsPerUpload: 20_000, readers: 8, searchers: 2, migration: { cases: 1000, runs: 20, results: 5000 }, uploadStaggerMs: 15_000,
};
export const SHORT_SIZES: LoadSizes = {
  uploads: 4, resultsPerUpload: 2_000, readers: 8, searchers: 2, migration: { cases: 200, runs: 5, results: 600 }, uploadStaggerMs: 4_000,
};

/** A JUnit report of `cases` cases in 20 suites, every fifth failing; the names carry `tag` (each upload its own cases). */
export function junitReport(tag: string, cases: number): string {
  const perSuite = Math.ceil(cases / 20);
  const suites: string[] = [];
  for (let s = 0, n = 0; s < 20 && n < cases; s++) {
    const lines: string[] = [];
    for (let c = 0; c < perSuite && n < cases; c++, n++) {
      lines.push(n % 5 === 0
        ? `<testcase classname="chaos.${tag}.Suite${s}" name="case ${n}" time="0.0${n % 10}"><failure message="boom ${n}" type="AssertionError">trace ${n}</failure></testcase>`
        : `<testcase classname="chaos.${tag}.Suite${s}" name="case ${n}" time="0.0${n % 10}"/>`);
    }
    suites.push(`<testsuite name="chaos.${tag}.Suite${s}" tests="${lines.length}">${lines.join('')}</testsuite>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?><testsuites>${suites.join('')}</testsuites>`;
}

/** The failing cases of `junitReport(tag, cases)`. */
export const failingOf = (cases: number) => Math.ceil(cases / 5);

export interface UploadOutcome {
  project: number;
  cases: number;
  /** The job id the service answered (null: it never acknowledged the upload). */
  jobId: number | null;
  /** Uploads refused with a 5xx or no answer before one was acknowledged. */
  retries: number;
  /** The job as last read (ended, or not after the wait). */
  job: Json;
  /** What its progress stream said last (an import-interrupted ends it early). */
  streamEnd: string;
}

const ENDED = ['completed', 'failed'];

/** Polls GET /api/imports/:id through outages until the job ended or `ms` passed. */
export async function jobWhenEnded(client: ChaosClient, jobId: number, ms: number): Promise<Json> {
  let job: Json = null;
  for (const until = Date.now() + ms; Date.now() < until;) {
    const res = await client.get(`/api/imports/${jobId}`);
    if (res.status === 200) {
      job = res.body.data;
      if (ENDED.includes(job?.state)) return job;
    }
    await sleep(500);
  }
  return job;
}

/** One CI upload: repeated while it gets a 5xx or no answer (as a CI step would), then followed to its end. */
export async function upload(client: ChaosClient, project: number, tag: string, cases: number, endMs: number): Promise<UploadOutcome> {
  const report = junitReport(tag, cases);
  const outcome: UploadOutcome = { project, cases, jobId: null, retries: 0, job: null, streamEnd: '' };
  for (const until = Date.now() + endMs; outcome.jobId === null && Date.now() < until;) {
    const form = new FormData();
    form.append('name', `CI ${tag}`);
    form.append('projectId', String(project));
    form.append('files', new Blob([report]), `${tag}.xml`);
    const { status, res, code } = await client.upload('/api/junit/import', form);
    if (status === 200 && res) {
      outcome.jobId = Number(res.headers.get('x-import-job-id'));
      try {
        const text = await res.text();
        outcome.streamEnd = text.trim().split('\n').slice(-3).join(' ').slice(-300);
      } catch (err) {
        outcome.streamEnd = `stream cut: ${(err as Error).message}`;
      }
      break;
    }
    if (status !== 0 && status < 500) throw new Error(`upload ${tag} refused with ${status} ${code}`);
    outcome.retries++;
    await sleep(1000);
  }
  if (outcome.jobId !== null) outcome.job = await jobWhenEnded(client, outcome.jobId, endMs);
  return outcome;
}

/** Pages the runs of the projects, then a few pages of a run's results, until `stop()`; answers the rows read. */
export async function reader(client: ChaosClient, projects: () => number[], stop: () => boolean, seed: number): Promise<number> {
  let rows = 0;
  let turn = seed;
  while (!stop()) {
    const ids = projects();
    const projectId = ids[turn++ % Math.max(1, ids.length)];
    const runs = await client.post('/api/model/testRun/findMany', { where: projectId ? { projectId } : {}, take: 10, orderBy: { id: 'asc' } });
    if (runs.status === 200 && runs.body.data.length > 0) {
      rows += runs.body.data.length;
      const run = runs.body.data[turn % runs.body.data.length];
      let cursor: number | null = null;
      for (let page = 0; page < 5 && !stop(); page++) {
        const res = await client.post('/api/model/testRunResult/findMany', {
          where: { testRunId: run.id }, take: 50, orderBy: { id: 'asc' }, ...(cursor !== null && { cursor: { id: cursor }, skip: 1 }),
        });
        if (res.status !== 200 || res.body.data.length === 0) break;
        rows += res.body.data.length;
        cursor = res.body.data[res.body.data.length - 1].id;
      }
    } else {
      await sleep(200);
    }
  }
  return rows;
}

/** Searches (GET and POST /api/search) until `stop()`; answers how many were answered 200. */
export async function searcher(client: ChaosClient, stop: () => boolean): Promise<number> {
  let answered = 0;
  const words = ['case', 'boom', 'trace', 'suite', 'chaos'];
  for (let i = 0; !stop(); i++) {
    const res = i % 2 === 0
      ? await client.get(`/api/search?q=${words[i % words.length]}&limit=10`)
      : await client.post('/api/search', { query: { match: { title: 'boom' } }, filters: { type: ['failures'] }, limit: 10 });
    if (res.status === 200) answered++;
    await sleep(250);
  }
  return answered;
}

export interface MigrationOutcome {
  jobId: number | null;
  job: Json;
  /** The projects it made (found after it ended). */
  projects: number[];
}

const JOBS = '/api/admin/imports/external/jobs';

async function migrationJob(client: ChaosClient, jobId: number, phases: string[], ms: number): Promise<Json> {
  let job: Json = null;
  for (const until = Date.now() + ms; Date.now() < until;) {
    const res = await client.get(`${JOBS}/${jobId}`);
    if (res.status === 200) {
      job = res.body.data;
      if (phases.includes(job.phase)) return job;
    }
    await sleep(500);
  }
  return job;
}

/** Repeats a command while it answers a 5xx or nothing; answers the last answer. */
async function command(client: ChaosClient, method: string, route: string, body: unknown, until: number) {
  for (;;) {
    const res = await client.request(method, route, body);
    if ((res.status > 0 && res.status < 500) || Date.now() > until) return res;
    await sleep(1000);
  }
}

/** One external-tool migration: a generated export uploaded, analysed, configured with its suggestions, executed, followed to its end. */
export async function migration(client: ChaosClient, workDir: string, sizes: LoadSizes['migration'], ms: number): Promise<MigrationOutcome> {
  const file = path.join(workDir, 'export.json');
  await generateExport({ ...sizes, projects: 1, users: 3, seed: 7, format: 'json', matchEmails: [] }, fs.createWriteStream(file));
  const content = fs.readFileSync(file);
  const until = Date.now() + ms;
  const outcome: MigrationOutcome = { jobId: null, job: null, projects: [] };
  while (outcome.jobId === null && Date.now() < until) {
    const form = new FormData();
    form.append('file', new Blob([content]), 'export.json');
    const res = await client.request('POST', JOBS, undefined, { form });
    if (res.status === 201) outcome.jobId = res.body.data.jobId;
    else if (res.status > 0 && res.status < 500) throw new Error(`the export upload was refused: ${res.status} ${JSON.stringify(res.body)}`);
    else await sleep(1000);
  }
  if (outcome.jobId === null) return outcome;
  const analysed = await migrationJob(client, outcome.jobId, ['analysed', 'failed'], until - Date.now());
  if (analysed?.phase !== 'analysed') return { ...outcome, job: analysed };
  const put = await command(client, 'PUT', `${JOBS}/${outcome.jobId}/configuration`, { mappings: analysed.suggestions }, until);
  if (put.status !== 200) throw new Error(`configuring the migration answered ${put.status} ${JSON.stringify(put.body)}`);
  const executed = await command(client, 'POST', `${JOBS}/${outcome.jobId}/execute`, undefined, until);
  // A 409 after a 5xx: the first execute was recorded after all.
  if (executed.status !== 202 && executed.status !== 409) throw new Error(`executing the migration answered ${executed.status} ${JSON.stringify(executed.body)}`);
  outcome.job = await migrationJob(client, outcome.jobId, ['completed', 'failed'], until - Date.now());
  return outcome;
}
