import { expect } from 'chai';
import { HttpClient } from '../support/server';

/** A big JUnit import for the end-to-end tests of started servers (a job killed mid-way, workers): the report and its checks. */

/** A JUnit report of `cases` cases in 20 suites, every fifth failing. */
export function bigReport(cases: number): string {
  const suites: string[] = [];
  for (let s = 0; s < 20; s++) {
    const lines: string[] = [];
    for (let c = 0; c < cases / 20; c++) {
      const n = s * (cases / 20) + c;
      lines.push(n % 5 === 0
        ? `<testcase classname="pkg.Suite${s}" name="case ${n}" time="0.${n % 10}"><failure message="m${n}" type="E">trace ${n}</failure></testcase>`
        : `<testcase classname="pkg.Suite${s}" name="case ${n}" time="0.${n % 10}"/>`);
    }
    suites.push(`<testsuite name="pkg.Suite${s}" tests="${lines.length}">${lines.join('')}</testsuite>`);
  }
  return `<?xml version="1.0" encoding="UTF-8"?><testsuites>${suites.join('')}</testsuites>`;
}

/** The job (of `bigReport(cases)`, alone in its project) completed with every case, run case and result exactly once. */
export async function expectEveryResultOnce(admin: HttpClient, project: number, job: any, cases: number): Promise<void> {
  expect(job.state, JSON.stringify(job)).to.equal('completed');
  expect(job.processedCases).to.equal(cases);
  expect(job.counts).to.deep.equal({ results: cases, newCases: cases, newFolders: 20, newRunCases: cases, passed: cases * 0.8, failed: cases * 0.2, error: 0, skipped: 0 });
  const count = async (entity: string, where: unknown) => (await admin.post(`/api/model/${entity}/count`, { where })).body.data as number;
  expect(await count('repositoryCase', { projectId: project })).to.equal(cases);
  expect(await count('testRunCase', { testRunId: job.testRunId })).to.equal(cases);
  expect(await count('testRunResult', { testRunId: job.testRunId })).to.equal(cases);
  expect(await count('testRunResult', { testRunId: job.testRunId, attempt: { gt: 1 } }), 'no result twice').to.equal(0);
  const perCase = (await admin.post('/api/model/testRunResult/groupBy', { by: ['testRunCaseId'], where: { testRunId: job.testRunId }, _count: { _all: true }, having: { testRunCaseId: { _count: { gt: 1 } } } })).body.data;
  expect(perCase).to.deep.equal([]);
  const names = (await admin.post('/api/model/repositoryCase/findMany', { where: { projectId: project }, select: { title: true } })).body.data.map((c: any) => c.title);
  expect(new Set(names).size).to.equal(cases);
  expect(await count('testRun', { projectId: project })).to.equal(1);
}

/** The administrator signs in, makes a token and a project; answers the token, the project and a client with the token. */
export async function tokenAndProject(url: string, admin: { email: string; password: string }, projectName: string) {
  const session = new HttpClient(url);
  expect((await session.post('/api/auth/login', admin)).status).to.equal(200);
  const token = (await session.post('/api/tokens', { name: `import e2e ${projectName}` })).body.token as string;
  const client = new HttpClient(url, token);
  const project = (await client.post('/api/model/project/create', { data: { name: projectName } })).body.data.id as number;
  return { token, project, client };
}

/** Polls the job until it ends (or `ms` pass). */
export async function jobWhenEnded(client: HttpClient, jobId: number, ms = 60_000): Promise<any> {
  let job: any;
  for (const until = Date.now() + ms; Date.now() < until;) {
    job = (await client.get(`/api/imports/${jobId}`)).body.data;
    if (job?.state === 'completed' || job?.state === 'failed') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return job;
}
