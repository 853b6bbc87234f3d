import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { generateExport, parseArgs, type GenerateOptions, type GenerateSummary } from '../../scripts/generateExport';
import { analyseExport } from '../../services/migration/analysis';
import { readExport } from '../../services/migration/exportReader';

const SMALL = { cases: 200, runs: 10, results: 1000, projects: 5, users: 50 };

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'generate-export-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

let counter = 0;
async function generate(options: Partial<GenerateOptions>): Promise<{ file: string; summary: GenerateSummary }> {
  const file = path.join(dir, `export-${++counter}.${options.format === 'zip' ? 'zip' : 'json'}`);
  const summary = await generateExport(options, fs.createWriteStream(file));
  return { file, summary };
}

type Row = Record<string, unknown>;
async function rowsOf(file: string): Promise<Map<string, Row[]>> {
  const rows = new Map<string, Row[]>();
  for await (const record of readExport(file)) {
    if (record.type === 'dataset' && !rows.has(record.name)) rows.set(record.name, []);
    if (record.type === 'row') rows.get(record.dataset)!.push(record.row as Row);
  }
  return rows;
}

const variants: Array<{ label: string; options: Partial<GenerateOptions> }> = [
  { label: 'JSON shape A', options: { shape: 'A', format: 'json' } },
  { label: 'JSON shape B', options: { shape: 'B', format: 'json' } },
  { label: 'JSON shape C', options: { shape: 'C', format: 'json' } },
  { label: 'ZIP', options: { format: 'zip' } },
];

describe('scripts/generateExport', () => {
  for (const { label, options } of variants) {
    it(`${label}: the analysis reads the expected counts, with no warning, no error and no dangling reference`, async () => {
      const { file, summary } = await generate({ ...SMALL, seed: 7, ...options });
      const analysis = await analyseExport(file);
      expect(analysis.errors).to.deep.equal([]);
      expect(analysis.warnings).to.deep.equal([]);
      expect(analysis.datasets.filter((d) => d.disposition !== 'import' || d.warnings.length || d.errors.length)).to.deep.equal([]);
      const counts = Object.fromEntries(analysis.datasets.map((d) => [d.name, d.rowCount]));
      expect(counts).to.deep.equal(summary.datasets);
      // The exact counts asked for, plus the skippable extras (1% snapshot cases, 1 deleted result per 100).
      expect(counts.repository_cases).to.equal(200 + 2);
      expect(counts.runs).to.equal(10);
      expect(counts.run_results).to.equal(1000 + 10);
      expect(counts.projects).to.equal(5);
      expect(counts.users).to.equal(50);
      expect(summary.skippable).to.deep.equal({ snapshotRepositories: 5, snapshotFolders: 10, snapshotCases: 2, deletedResults: 10 });
      expect(summary.bytes).to.equal(fs.statSync(file).size);
      if (options.format === 'zip') {
        expect(new Set(analysis.datasets.flatMap((d) => d.entries))).to.have.lengthOf(analysis.datasets.length);
        expect(dataset(analysis.datasets, 'run_results').entries).to.deep.equal(['run_results.json']);
      }
    });
  }

  it('rows hang together beyond ids: snapshot rows, deleted results, tests of the run, cases of the project', async () => {
    const { file } = await generate({ ...SMALL, seed: 3 });
    const rows = await rowsOf(file);
    const all = (name: string) => rows.get(name) ?? [];

    const snapshotRepos = new Set(all('repositories').filter((r) => r.is_snapshot === 1).map((r) => r.id));
    expect(snapshotRepos.size).to.equal(5);
    const projectsWithSnapshot = new Set(all('repositories').filter((r) => r.is_snapshot === 1).map((r) => r.project_id));
    expect(projectsWithSnapshot.size).to.equal(5);
    const masterCases = all('repository_cases').filter((c) => !snapshotRepos.has(c.repo_id));
    expect(masterCases).to.have.lengthOf(200);
    expect(all('repository_folders').filter((f) => snapshotRepos.has(f.repo_id))).to.have.lengthOf(10);
    const folders = new Map(all('repository_folders').map((f) => [f.id, f]));
    for (const c of all('repository_cases')) {
      expect(c.key).to.equal(`C${c.id as number}`);
      expect(folders.get(c.folder_id)!.repo_id).to.equal(c.repo_id);
    }
    expect(all('repository_folders').some((f) => f.parent_id !== null && !snapshotRepos.has(f.repo_id))).to.equal(true);
    expect(masterCases.some((c) => typeof c.custom_preconditions === 'string' && (c.custom_preconditions as string).startsWith('<p>'))).to.equal(true);

    const results = all('run_results');
    expect(results.filter((r) => r.is_deleted === 0)).to.have.lengthOf(1000);
    expect(results.filter((r) => r.is_deleted === 1)).to.have.lengthOf(10);
    const tests = new Map(all('run_tests').map((t) => [t.id, t]));
    const runs = new Map(all('runs').map((r) => [r.id, r]));
    const cases = new Map(all('repository_cases').map((c) => [c.id, c]));
    for (const result of results) expect(tests.get(result.test_id)!.run_id).to.equal(result.run_id);
    for (const test of tests.values()) {
      const kase = cases.get(test.case_id)!;
      expect(kase.project_id).to.equal(runs.get(test.run_id)!.project_id);
      expect(snapshotRepos.has(kase.repo_id)).to.equal(false);
    }
    // A test's status is its last result's; a test with none is untested.
    const last = new Map<unknown, unknown>();
    for (const result of results) if (result.is_deleted === 0) last.set(result.test_id, result.status_id);
    for (const test of tests.values()) expect(test.status_id).to.equal(last.get(test.id) ?? 5);
    const resultIds = new Set(results.filter((r) => r.is_deleted === 0).map((r) => r.id));
    expect(all('run_result_steps').length).to.be.greaterThan(0);
    for (const step of all('run_result_steps')) expect(resultIds.has(step.result_id)).to.equal(true);
    expect(all('statuses').map((s) => s.system_name)).to.deep.equal(['passed', 'failed', 'blocked', 'retest', 'untested']);
    expect(all('configs').some((c) => c.name === 'Chrome, Windows 11')).to.equal(true);
    expect(all('milestones').some((m) => m.parent_id !== null)).to.equal(true);
    expect(all('users').some((u) => u.email === 'admin@example.com')).to.equal(true);
  });

  it('the same seed writes byte-identical files; another seed a different one', async () => {
    for (const format of ['json', 'zip'] as const) {
      const one = await generate({ ...SMALL, seed: 11, format });
      const two = await generate({ ...SMALL, seed: 11, format });
      const other = await generate({ ...SMALL, seed: 12, format });
      expect(fs.readFileSync(one.file).equals(fs.readFileSync(two.file)), `${format}: same seed`).to.equal(true);
      expect(fs.readFileSync(one.file).equals(fs.readFileSync(other.file)), `${format}: other seed`).to.equal(false);
      expect(other.summary.datasets.repository_cases).to.equal(one.summary.datasets.repository_cases);
    }
  });

  it('the e-mails to match go to the first people; the CI bot keeps its own', async () => {
    const { file } = await generate({ ...SMALL, matchEmails: ['lead@acme.test', 'qa@acme.test'] });
    const users = (await rowsOf(file)).get('users')!;
    expect(users.slice(0, 3).map((u) => [u.email, u.is_api])).to.deep.equal([['ci-bot@example.test', 1], ['lead@acme.test', 0], ['qa@acme.test', 0]]);
    expect(new Set(users.map((u) => u.email)).size).to.equal(users.length);
  });

  it('the CLI reads its flags and takes the container from the file name', () => {
    const { out, options } = parseArgs(['--out', 'x.ZIP', '--seed', '5', '--cases', '10', '--shape', 'c', '--match-email', 'a@b.c, d@e.f']);
    expect(out).to.equal('x.ZIP');
    expect(options).to.deep.include({ seed: 5, cases: 10, runs: 2000, results: 500_000, shape: 'C', format: 'zip', matchEmails: ['a@b.c', 'd@e.f'] });
    expect(() => parseArgs(['--cases', '1'])).to.throw('--out is required');
    expect(() => parseArgs(['--out', 'x.json', '--bogus', '1'])).to.throw('unknown option --bogus');
  });

  it('refuses sizes it cannot honour', async () => {
    const sink = fs.createWriteStream(path.join(dir, 'refused.json'));
    await generateExport({ cases: 0, runs: 1, results: 0 }, sink).then(
      () => expect.fail('should refuse'),
      (error: Error) => expect(error.message).to.equal('runs need at least one case'),
    );
    // Closed before the file's directory goes (after()): a stream destroyed while still opening
    // opens it first, and an open that found the directory gone killed the test process.
    const closed = new Promise<void>((resolve) => sink.once('close', () => resolve()));
    sink.destroy();
    await closed;
  });
});

function dataset<T extends { name: string }>(datasets: T[], name: string): T {
  const found = datasets.find((d) => d.name === name);
  if (!found) throw new Error(`no dataset ${name}`);
  return found;
}
