import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { analyseExport, type ExportAnalysis } from '../../../services/migration/analysis';
import { ExportFileError } from '../../../services/migration/exportReader';
import { zipOf } from './zipWriter';

const FIXTURES = path.join(__dirname, 'fixtures');
const fixture = (name: string) => path.join(FIXTURES, name);
const complete = () => JSON.parse(fs.readFileSync(fixture('export-complete.json'), 'utf8')) as Record<string, { data: unknown[] }>;

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'export-analysis-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

let counter = 0;
function write(content: string | Buffer, ext: string): string {
  const file = path.join(dir, `upload-${++counter}.${ext}`);
  fs.writeFileSync(file, content);
  return file;
}

const dataset = (analysis: ExportAnalysis, name: string) => {
  const found = analysis.datasets.find((d) => d.name === name);
  if (!found) throw new Error(`no dataset ${name} in the analysis`);
  return found;
};

describe('migration: analysing an export', () => {
  it('a complete export (every dataset of the reference, §4 rows): counts, samples, no warning, no error', async () => {
    const analysis = await analyseExport(fixture('export-complete.json'));
    expect(analysis.errors).to.deep.equal([]);
    expect(analysis.warnings).to.deep.equal([]);
    expect(analysis.totals).to.deep.equal({ datasets: 47, rows: 64, warnings: 0, errors: 0 });
    expect(analysis.datasets.map((d) => d.name)).to.deep.equal([...analysis.datasets.map((d) => d.name)].sort());
    expect(analysis.datasets.every((d) => d.disposition === 'import' && d.warnings.length === 0 && d.errors.length === 0)).to.equal(true);
    expect(dataset(analysis, 'states')).to.deep.include({
      entries: ['export-complete.json'], rowCount: 4, samplesTruncated: false, skipReason: null,
    });
    expect(dataset(analysis, 'users').sampleRows[0]).to.deep.equal(complete().users.data[0]);
    expect(analysis.ignored).to.deep.equal([{ entry: 'export-complete.json', name: 'meta', reason: 'export metadata' }]);
  });

  it('is deterministic and plain JSON; one export as JSON or as a ZIP of per-dataset entries analyses alike', async () => {
    const first = await analyseExport(fixture('export-complete.json'));
    expect(JSON.parse(JSON.stringify(first))).to.deep.equal(first);
    expect(await analyseExport(fixture('export-complete.json'))).to.deep.equal(first);

    const datasets = Object.entries(complete()).filter(([name]) => name !== 'meta');
    const zip = write(zipOf(datasets.reverse().map(([name, body]) => ({ name: `export/${name}.json`, content: JSON.stringify(body) }))), 'zip');
    const fromZip = await analyseExport(zip);
    const strip = (a: ExportAnalysis) => a.datasets.map(({ entries: _, ...rest }) => rest);
    expect(strip(fromZip)).to.deep.equal(strip(first));
    expect(dataset(fromZip, 'runs').entries).to.deep.equal(['export/runs.json']);
    expect(fromZip.totals).to.deep.equal(first.totals);
  });

  it('the three container shapes: missing datasets are warnings, naming who needs them and counting the rows skipped', async () => {
    const topLevel = await analyseExport(fixture('export-top-level.json'));
    expect(topLevel.datasets.map((d) => `${d.name}: ${d.rowCount}`)).to.deep.equal([
      'repository_cases: 1', 'runs: 0', 'statuses: 2', 'users: 2',
    ]);
    // TestPlanIt's sample-small: the case names a project the export does not hold. It cannot be placed and is
    // counted as skipped; users and statuses need no project, so nothing fails. Columns no row fills need nothing.
    expect(topLevel.errors).to.deep.equal([]);
    expect(topLevel.warnings).to.deep.equal([{
      code: 'dataset-missing',
      message: 'The export has no projects; 1 row(s) by repository_cases.project_id cannot be placed without it: they are skipped and counted',
      details: { dataset: 'projects', neededBy: ['repository_cases.project_id'], skipped: { 'repository_cases.project_id': 1 }, emptied: {} },
    }]);

    // An optional target (creator, state) missing is a warning: the column will be left empty.
    const optional = await analyseExport(write(JSON.stringify({
      projects: { data: [{ id: 10, name: 'Shop', created_by: 11 }] },
      repositories: { data: [{ id: 100, project_id: 10 }] },
      repository_cases: { data: [{ id: 1001, project_id: 10, repo_id: 100, state_id: 3, created_by: 11, folder_id: null }] },
    }), 'json'));
    expect(optional.errors).to.deep.equal([]);
    expect(optional.warnings).to.deep.equal([
      {
        code: 'dataset-missing',
        message: 'The export has no states; 1 row(s) by repository_cases.state_id will be left empty',
        details: { dataset: 'states', neededBy: ['repository_cases.state_id'], skipped: {}, emptied: { 'repository_cases.state_id': 1 } },
      },
      {
        code: 'dataset-missing',
        message: 'The export has no users; 1 row(s) by projects.created_by, 1 row(s) by repository_cases.created_by will be left empty',
        details: { dataset: 'users', neededBy: ['projects.created_by', 'repository_cases.created_by'], skipped: {}, emptied: { 'projects.created_by': 1, 'repository_cases.created_by': 1 } },
      },
    ]);

    const container = await analyseExport(fixture('export-with-container.json'));
    expect(container.datasets.map((d) => `${d.name}: ${d.rowCount}`)).to.deep.equal(['projects: 1', 'users: 1']);
    expect(container.errors).to.deep.equal([]);

    const array = await analyseExport(fixture('export-array.json'));
    expect(array.datasets.map((d) => `${d.name}: ${d.rowCount}`)).to.deep.equal(['runs: 0', 'users: 2']);
    expect(array.errors).to.deep.equal([]);
  });

  it('unknown and not-imported datasets are listed as skipped with the reason, and raise nothing', async () => {
    const file = write(JSON.stringify({
      users: { data: [{ id: 1, email: 'qa@example.com' }] },
      widgets: { data: [{ id: 1, widget_id: 99 }] },
      automation_sources: { data: [{ id: 1 }] },
      repository_case_attachments: { data: [{ id: 1, case_id: 4242 }] },
    }), 'json');
    const analysis = await analyseExport(file);
    const skipped = analysis.datasets.filter((d) => d.disposition === 'skip').map((d) => [d.name, d.skipReason, d.rowCount]);
    expect(skipped).to.deep.equal([
      ['automation_sources', 'known to the export format but not imported (no home in this domain)', 1],
      ['repository_case_attachments', 'attachments are not imported (the export carries no file content)', 1],
      ['widgets', 'unknown dataset: not part of the export format this import reads', 1],
    ]);
    expect(analysis.errors).to.deep.equal([]);
    expect(analysis.warnings).to.deep.equal([]);
  });

  it('an export with nothing the import can place is an error', async () => {
    const analysis = await analyseExport(write('{"widgets": {"data": [{"id": 1}]}}', 'json'));
    expect(analysis.errors.map((e) => e.code)).to.deep.equal(['no-importable-dataset']);
  });

  it('rows naming ids the export does not hold: warned and counted per column, not fatal; forward references resolve', async () => {
    const data = complete();
    data.run_results.data.push(
      { id: 6001, run_id: 300, test_id: 9999, status_id: 1 },
      { id: 6002, run_id: 300, test_id: 9998, status_id: 77 },
      { id: 6003, run_id: '300', test_id: '5000', status_id: 1 }, // ids as text match ids as numbers
    );
    // A row pointing at a row later in the file is fine: references are checked after all ids are known.
    data.statuses.data.push({ id: 77, name: 'Late' });
    data.run_results.data.push({ id: 6004, run_id: 300, test_id: 5000, status_id: 78 });
    const analysis = await analyseExport(write(JSON.stringify({ run_results: data.run_results, ...data, late: { data: [] } }), 'json'));
    expect(analysis.errors).to.deep.equal([]);
    expect(dataset(analysis, 'run_results').warnings).to.deep.equal([
      {
        code: 'reference-unresolved',
        message: '2 row(s) of run_results name a run_tests row the export does not hold (test_id); they will be skipped and counted',
        details: { dataset: 'run_results', field: 'test_id', target: 'run_tests', count: 2, rows: [1, 2], values: ['9999', '9998'] },
      },
      {
        code: 'reference-unresolved',
        message: '1 row(s) of run_results name a statuses row the export does not hold (status_id); they will be skipped and counted',
        details: { dataset: 'run_results', field: 'status_id', target: 'statuses', count: 1, rows: [4], values: ['78'] },
      },
    ]);
    expect(analysis.totals.warnings).to.equal(2);
  });

  it('rows of the wrong shape: not an object, or no usable id where other rows point at them', async () => {
    const file = write(JSON.stringify({
      users: { data: [{ id: 11, email: 'a@example.com' }, 'alice', [1, 2], { email: 'no-id@example.com' }, { id: '' }, { id: 12 }] },
      tags: { data: [{ id: 1, name: 'smoke' }] },
    }), 'json');
    const users = dataset(await analyseExport(file), 'users');
    expect(users.rowCount).to.equal(6);
    expect(users.errors).to.deep.equal([
      {
        code: 'row-not-an-object',
        message: '2 row(s) of users are not JSON objects',
        details: { dataset: 'users', count: 2, rows: [1, 2] },
      },
      {
        code: 'row-without-id',
        message: '2 row(s) of users have no usable id (a number or a non-empty string)',
        details: { dataset: 'users', count: 2, rows: [3, 4] },
      },
    ]);
  });

  it('sample rows are the first N, cut to bounds, with a flag saying so', async () => {
    const long = 'x'.repeat(5000);
    const rows = Array.from({ length: 12 }, (_, i) => ({ id: i + 1, name: `Case ${i + 1}` }));
    rows[1] = { id: 2, name: long, steps: Array.from({ length: 15 }, (_, i) => i), deep: { a: { b: { c: { d: 1 } } } } } as never;
    const file = write(JSON.stringify({ tags: { data: rows }, projects: { data: [{ id: 1, name: 'Shop' }] } }), 'json');
    const analysis = await analyseExport(file);
    const tags = dataset(analysis, 'tags');
    expect(tags.rowCount).to.equal(12);
    expect(tags.sampleRows).to.have.length(5);
    expect(tags.samplesTruncated).to.equal(true);
    const cut = tags.sampleRows[1] as { name: string; steps: number[]; deep: unknown };
    expect(cut.name).to.equal(`${'x'.repeat(1000)}…`);
    expect(cut.steps).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(cut.deep).to.deep.equal({ a: { b: '{…}' } });
    expect(dataset(analysis, 'projects').samplesTruncated).to.equal(false);

    const fewer = await analyseExport(file, { sampleRows: 2, sample: { maxString: 10 } });
    expect(dataset(fewer, 'tags').sampleRows).to.deep.equal([{ id: 1, name: 'Case 1' }, {
      id: 2, name: `${'x'.repeat(10)}…`, steps: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], deep: { a: { b: '{…}' } },
    }]);
  });

  it('a refused file is refused by the analysis with the reader\'s error', async () => {
    try {
      await analyseExport(write(zipOf([{ name: '../users.json', content: '[]' }]), 'zip'));
      expect.fail('analysed a zip-slip archive');
    } catch (error) {
      expect(error).to.be.instanceOf(ExportFileError);
      expect((error as ExportFileError).code).to.equal('export-unsafe-entry');
    }
  });
});
