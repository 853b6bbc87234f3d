import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import {
  ExportFileError,
  readExport,
  type ExportLimits,
  type ExportRecord,
} from '../../../services/migration/exportReader';
import { zipOf } from './zipWriter';

const FIXTURES = path.join(__dirname, 'fixtures');
const fixture = (name: string) => path.join(FIXTURES, name);
const fixtureText = (name: string) => fs.readFileSync(fixture(name), 'utf8');

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'export-reader-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

let counter = 0;
function write(content: string | Buffer, ext = 'bin'): string {
  const file = path.join(dir, `upload-${++counter}.${ext}`);
  fs.writeFileSync(file, content);
  return file;
}

async function readAll(file: string, limits?: Partial<ExportLimits>): Promise<ExportRecord[]> {
  const records: ExportRecord[] = [];
  for await (const record of readExport(file, limits)) records.push(record);
  return records;
}

/** `name: row count` per dataset, in the order read. */
function summary(records: ExportRecord[]): string[] {
  const out: string[] = [];
  let rows = 0;
  for (const record of records) {
    if (record.type === 'row') rows++;
    if (record.type === 'dataset') rows = 0;
    if (record.type === 'datasetEnd') out.push(`${record.name}: ${rows}`);
  }
  return out;
}

async function refusal(file: string, limits?: Partial<ExportLimits>): Promise<ExportFileError> {
  try {
    await readAll(file, limits);
  } catch (error) {
    expect(error).to.be.instanceOf(ExportFileError);
    return error as ExportFileError;
  }
  throw new Error('the export was read, a refusal was expected');
}

describe('migration: reading an export', () => {
  describe('the three container shapes of a bare JSON export', () => {
    it('A, top-level keyed: each key a dataset, with its schema', async () => {
      const records = await readAll(fixture('export-top-level.json'));
      expect(summary(records)).to.deep.equal(['users: 2', 'statuses: 2', 'repository_cases: 1', 'runs: 0']);
      const users = records.find((r) => r.type === 'datasetEnd' && r.name === 'users');
      expect(users).to.deep.include({ schema: { id: 'id', email: 'string', active: 'bool' } });
      const rows = records.filter((r) => r.type === 'row' && r.dataset === 'users').map((r) => (r as { row: unknown }).row);
      expect(rows).to.deep.equal([
        { id: 1, email: 'qa@example.com', active: true },
        { id: 2, email: 'dev@example.com', active: false },
      ]);
    });

    it('B, meta + datasets object: meta passed over and said so', async () => {
      const records = await readAll(fixture('export-with-container.json'));
      expect(summary(records)).to.deep.equal(['users: 1', 'projects: 1']);
      expect(records[0]).to.deep.equal({ type: 'ignored', entry: 'export-with-container.json', name: 'meta', reason: 'export metadata' });
    });

    it('C, datasets array of {name, rows}', async () => {
      const records = await readAll(fixture('export-array.json'));
      expect(summary(records)).to.deep.equal(['users: 2', 'runs: 0']);
      // A byte-order mark and blank lines before the object are still JSON.
      const padded = write(`\uFEFF${'\n'.repeat(1000)}${fixtureText('export-array.json')}`, 'json');
      expect(summary(await readAll(padded))).to.deep.equal(['users: 2', 'runs: 0']);
    });

    it('`fields` is a dataset at the top level and a schema inside a dataset', async () => {
      const file = write(JSON.stringify({
        users: { fields: { id: 'id' }, data: [{ id: 1 }] },
        fields: { data: [{ id: 5, type: 8, name: 'severity' }] },
        entities: { fields: { columns: { id: 'id' }, records: [{ id: 6 }] } },
      }), 'json');
      const records = await readAll(file);
      expect(summary(records)).to.deep.equal(['users: 1', 'fields: 1', 'fields: 1']);
      expect(records.find((r) => r.type === 'datasetEnd' && r.name === 'users')).to.deep.include({ schema: { id: 'id' } });
    });

    it('the template-fields fixture: templates, fields (a dataset at the top level), options, template fields', async () => {
      const records = await readAll(fixture('export-template-fields.json'));
      expect(summary(records)).to.deep.equal(['templates: 2', 'fields: 3', 'field_values: 2', 'template_fields: 2']);
    });

    it('every data-key alias (data, rows, records, items) and a bare array of rows', async () => {
      const file = write(JSON.stringify({
        a_data: { data: [{ id: 1 }] }, b_rows: { rows: [{ id: 1 }] }, c_records: { records: [{ id: 1 }] },
        d_items: { items: [{ id: 1 }] }, e_bare: [{ id: 1 }, { id: 2 }], f_scalar: 3,
      }), 'json');
      const records = await readAll(file);
      expect(summary(records)).to.deep.equal(['a_data: 1', 'b_rows: 1', 'c_records: 1', 'd_items: 1', 'e_bare: 2']);
      expect(records.at(-1)).to.deep.include({ type: 'ignored', name: 'f_scalar' });
    });
  });

  describe('a ZIP export', () => {
    it('a whole export whose first key is `fields` (TestPlanIt\'s template-fields fixture), zipped alone or beside another: read like the bare file', async () => {
      const bare = summary(await readAll(fixture('export-template-fields-named.json')));
      expect(bare).to.deep.equal(['fields: 2', 'field_values: 3', 'templates: 1', 'template_fields: 2']);
      const alone = await readAll(write(zipOf([{ name: 'testmo-export-template-fields.json', content: fixtureText('export-template-fields-named.json') }]), 'zip'));
      expect(summary(alone)).to.deep.equal(bare);
      const two = await readAll(write(zipOf([
        { name: 'a/testmo-export-template-fields.json', content: fixtureText('export-template-fields-named.json') },
        { name: 'b/testmo-export-sample-small.json', content: fixtureText('export-top-level.json') },
      ]), 'zip'));
      expect(summary(two)).to.deep.equal([...bare, 'users: 2', 'statuses: 2', 'repository_cases: 1', 'runs: 0']);
      // A one-dataset entry may still lead with its schema under `fields` (a type-tag map, or columns named `fields`/`schema`).
      const single = await readAll(write(zipOf([
        { name: 'users.json', content: JSON.stringify({ fields: { id: 'id', email: 'string' }, data: [{ id: 1 }] }) },
        { name: 'tags.json', content: JSON.stringify({ fields: { schema: 'string', id: 'id' }, data: [{ id: 2 }, { id: 3 }] }) },
        { name: 'runs.json', content: JSON.stringify({ fields: {}, rows: [{ id: 4 }] }) },
      ]), 'zip'));
      expect(summary(single)).to.deep.equal(['users: 1', 'tags: 2', 'runs: 1']);
    });

    it('a bare JSON export is named as uploaded (not as stored) in its records and errors', async () => {
      const stored = write(fixtureText('export-top-level.json'), 'json');
      const records: ExportRecord[] = [];
      for await (const record of readExport(stored, {}, 'sample-small.json')) records.push(record);
      expect([...new Set(records.filter((r) => r.type === 'dataset').map((r) => (r as { entry: string }).entry))]).to.deep.equal(['sample-small.json']);
      const broken = write('{"users":{"data":[{"id":1,}]}}', 'json');
      try {
        for await (const _ of readExport(broken, {}, 'my export.json')) { /* read through */ }
        expect.fail('refused');
      } catch (error) {
        expect((error as ExportFileError).details).to.include({ entry: 'my export.json' });
        expect((error as Error).message).to.contain('my export.json').and.not.contain(path.basename(broken));
      }
    });

    it('reads whole-export entries and per-dataset entries named by their stem; passes over the rest', async () => {
      const file = write(zipOf([
        { name: 'export/', content: '' },
        { name: 'export/whole.json', content: fixtureText('export-with-container.json') },
        { name: 'export/repository_cases.json', content: JSON.stringify({ schema: { id: 'id' }, data: [{ id: 1001 }, { id: 1002 }] }) },
        { name: 'export/runs.json', content: JSON.stringify([{ id: 300 }]) },
        { name: 'export/fields.json', content: JSON.stringify({ fields: { data: [{ id: 5 }] } }) },
        { name: 'export/statuses.json', content: JSON.stringify({ fields: { id: 'id' }, rows: [{ id: 1 }] }) },
        { name: 'export/README.txt', content: 'exported by Testmo' },
      ]), 'zip');
      const records = await readAll(file);
      expect(summary(records)).to.deep.equal([
        'users: 1', 'projects: 1', 'repository_cases: 2', 'runs: 1', 'fields: 1', 'statuses: 1',
      ]);
      expect(records.filter((r) => r.type === 'dataset').map((r) => (r as { entry: string }).entry)).to.deep.equal([
        'export/whole.json', 'export/whole.json', 'export/repository_cases.json', 'export/runs.json',
        'export/fields.json', 'export/statuses.json',
      ]);
      expect(records.filter((r) => r.type === 'ignored')).to.deep.equal([
        { type: 'ignored', entry: 'export/whole.json', name: 'meta', reason: 'export metadata' },
        { type: 'ignored', entry: 'export/README.txt', name: 'README.txt', reason: 'not a JSON entry' },
      ]);
    });

    it('streams rows: a 200,000-row entry is read one row at a time', async function () {
      this.timeout(20000);
      const rows = Array.from({ length: 200_000 }, (_, i) => `{"id":${i},"run_id":1,"status_id":1}`).join(',');
      const file = write(zipOf([{ name: 'run_results.json', content: `[${rows}]` }]), 'zip');
      let count = 0;
      let last: unknown;
      for await (const record of readExport(file)) {
        if (record.type === 'row') {
          count++;
          last = record.row;
        }
      }
      expect(count).to.equal(200_000);
      expect(last).to.deep.equal({ id: 199_999, run_id: 1, status_id: 1 });
    });
  });

  describe('hostile and broken uploads (each a typed refusal with a stable code)', () => {
    it('neither a ZIP nor JSON: export-not-recognised', async () => {
      const png = await refusal(write(Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')));
      expect(png.code).to.equal('export-not-recognised');
      expect(png.details).to.deep.equal({ firstBytes: '89504e470d0a1a0a' });
      expect((await refusal(write('just some text'))).code).to.equal('export-not-recognised');
      expect((await refusal(write('', 'json'))).code).to.equal('export-not-recognised');
    });

    it('JSON that is not an object of datasets: export-not-recognised', async () => {
      expect((await refusal(write('[{"id": 1}]', 'json'))).code).to.equal('export-not-recognised');
      const file = write(zipOf([{ name: 'whole.json', content: '"not an export"' }]), 'zip');
      const error = await refusal(file);
      expect(error.code).to.equal('export-not-recognised');
      expect(error.details).to.deep.equal({ entry: 'whole.json' });
      const rows = await refusal(write('{"users": {"data": {"id": 1}}}', 'json'));
      expect(rows.code).to.equal('export-not-recognised');
      expect(rows.details).to.include({ dataset: 'users' });
      expect((await refusal(write('{"datasets": 5}', 'json'))).code).to.equal('export-not-recognised');
    });

    it('a ZIP with no export in it: export-no-datasets', async () => {
      const onlyText = await refusal(write(zipOf([{ name: 'notes.txt', content: 'hello' }]), 'zip'));
      expect(onlyText.code).to.equal('export-no-datasets');
      expect(onlyText.details).to.deep.equal({ container: 'zip' });
      expect((await refusal(write(zipOf([]), 'zip'))).code).to.equal('export-no-datasets');
      expect((await refusal(write('{"meta": {"source": "testmo"}}', 'json'))).code).to.equal('export-no-datasets');
    });

    for (const name of ['../evil.json', 'export/../../evil.json', '/etc/evil.json', 'C:/evil.json', '..\\evil.json']) {
      it(`a zip-slip entry name (${name}): export-unsafe-entry, nothing read after it`, async () => {
        const file = write(zipOf([{ name, content: '[{"id":1}]' }, { name: 'users.json', content: '[{"id":1}]' }]), 'zip');
        const records: ExportRecord[] = [];
        try {
          for await (const record of readExport(file)) records.push(record);
          expect.fail('the zip-slip entry was read');
        } catch (error) {
          expect(error).to.be.instanceOf(ExportFileError);
          expect((error as ExportFileError).code).to.equal('export-unsafe-entry');
          expect((error as ExportFileError).details).to.have.property('entry');
        }
        expect(records).to.deep.equal([]);
      });
    }

    it('a zip bomb by compression ratio, with the default limits: export-compression-ratio', async () => {
      // 40 MiB of blanks after a valid export deflate to ~40 KB (a ratio near 1,000).
      const bomb = Buffer.alloc(40 * 1024 ** 2, 0x20);
      Buffer.from('{"users":{"data":[]}}').copy(bomb);
      const file = write(zipOf([{ name: 'users.json', content: bomb }]), 'zip');
      expect(fs.statSync(file).size).to.be.below(100_000);
      const error = await refusal(file);
      expect(error.code).to.equal('export-compression-ratio');
      expect(error.details).to.include({ entry: 'users.json', maxCompressionRatio: 100 });
      expect(error.details.expandedBytes as number).to.be.at.least(16 * 1024 ** 2).and.below(40 * 1024 ** 2);
    });

    it('the ratio limit is a parameter, and is judged only past ratioCheckFromBytes', async () => {
      const blanks = Buffer.alloc(2 * 1024 ** 2, 0x20);
      Buffer.from('{"users":{"data":[{"id":1}]}}').copy(blanks);
      const file = write(zipOf([{ name: 'users.json', content: blanks }]), 'zip');
      expect(summary(await readAll(file))).to.deep.equal(['users: 1']); // below the default 16 MiB
      const error = await refusal(file, { ratioCheckFromBytes: 1024 ** 2, maxCompressionRatio: 50 });
      expect(error.code).to.equal('export-compression-ratio');
    });

    it('a ZIP expanding beyond maxExpandedBytes: export-too-large', async () => {
      const file = write(zipOf([{ name: 'whole.json', content: fixtureText('export-complete.json') }]), 'zip');
      expect((await readAll(file)).length).to.be.above(50);
      const error = await refusal(file, { maxExpandedBytes: 2048 });
      expect(error.code).to.equal('export-too-large');
      expect(error.details).to.deep.equal({ entry: 'whole.json', maxExpandedBytes: 2048 });
    });

    it('a ZIP with more entries than maxEntries: export-too-large', async () => {
      const file = write(zipOf(Array.from({ length: 5 }, (_, i) => ({ name: `d${i}.json`, content: '[]' }))), 'zip');
      expect((await refusal(file, { maxEntries: 4 })).code).to.equal('export-too-large');
    });

    it('a truncated ZIP: export-truncated', async () => {
      const whole = zipOf([{ name: 'whole.json', content: fixtureText('export-complete.json') }]);
      for (const keep of [whole.length - 1, whole.length - 10, whole.length - 30, Math.floor(whole.length / 2), 40]) {
        const error = await refusal(write(whole.subarray(0, keep), 'zip'));
        expect(error.code).to.equal('export-truncated');
      }
      const padded = await refusal(write(Buffer.concat([whole.subarray(0, 100), whole]), 'zip'));
      expect(padded.code).to.equal('export-truncated');
    });

    it('a truncated JSON: export-truncated, with the entry and the position', async () => {
      const text = fixtureText('export-top-level.json');
      const error = await refusal(write(text.slice(0, 300), 'json'));
      expect(error.code).to.equal('export-truncated');
      expect(error.details).to.have.property('beforeByte', 300);
      const inZip = await refusal(write(zipOf([{ name: 'exp/users.json', content: '[{"id":1},{"id"' }]), 'zip'));
      expect(inZip.code).to.equal('export-truncated');
      expect(inZip.details).to.include({ entry: 'exp/users.json' });
    });

    it('invalid JSON: export-invalid-json naming the entry and the position', async () => {
      const file = write('{"users": {"data": [{"id": 1}, {"id": 2,]}}', 'json');
      const error = await refusal(file);
      expect(error.code).to.equal('export-invalid-json');
      expect(error.details).to.deep.equal({ entry: path.basename(file), beforeByte: 43 });
      const inZip = await refusal(write(zipOf([
        { name: 'users.json', content: '[{"id":1}]' },
        { name: 'runs.json', content: '[{"id": 300} {"id": 301}]' },
      ]), 'zip'));
      expect(inZip.code).to.equal('export-invalid-json');
      expect(inZip.details).to.include({ entry: 'runs.json' });
      expect(inZip.message).to.match(/^runs\.json is not valid JSON before byte \d+/);
    });

    it('a shape C dataset whose rows come before its name: export-dataset-unnamed', async () => {
      const file = write('{"datasets": [{"name": "users", "rows": []}, {"rows": [{"id": 1}], "name": "runs"}]}', 'json');
      const error = await refusal(file);
      expect(error.code).to.equal('export-dataset-unnamed');
      expect(error.details).to.include({ index: 1 });
    });
  });
});
