import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { Parse as unzipParse, type Entry } from 'unzip-stream';
import { JsonReader, JsonTooDeep } from '../imports/formats/jsonStream';
import { ResultFileError } from '../imports/formats/parsedResult';
import { isWholeZip, readRange, ZIP_EMPTY_ARCHIVE, ZIP_LOCAL_HEADER } from '../shared/zipFile';

/**
 * Reading an external tool's export (Testmo, as TestPlanIt reads it:
 * docs/external-export-format.md): a ZIP whose `*.json` entries are each a whole export or one dataset
 * named by the file stem, or a bare JSON export in one of the three container shapes (A: top-level
 * keyed, B: `datasets`/`entities` object, C: `datasets` array of `{name, rows}`).
 *
 * Streaming: the ZIP is read with unzip-stream entry by entry, and each JSON value is walked token
 * by token with the stream-json reader the result imports already use (services/imports/formats/
 * jsonStream.ts); only one row (or one schema) is assembled at a time, so an export of any size is
 * read in bounded memory and yielded as records, never held whole.
 */

export type ExportErrorCode =
  | 'export-not-recognised'
  | 'export-no-datasets'
  | 'export-unsafe-entry'
  | 'export-too-large'
  | 'export-compression-ratio'
  | 'export-truncated'
  | 'export-invalid-json'
  | 'export-dataset-unnamed'
  | 'export-name-too-long'
  | 'export-too-many-datasets'
  | 'export-row-too-deep';

/** A refused upload; `code` is stable and the HTTP layer answers it with 400. */
export class ExportFileError extends Error {
  constructor(
    readonly code: ExportErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ExportFileError';
  }
}

export interface ExportLimits {
  /** Total bytes all ZIP entries may inflate to (default 4 GiB). */
  maxExpandedBytes: number;
  /** Inflated bytes over the ZIP file's size (default 100); real JSON exports compress 5-20×. */
  maxCompressionRatio: number;
  /** The ratio is judged once this much has been inflated (default 16 MiB), so a small file of blanks is not a bomb. */
  ratioCheckFromBytes: number;
  /** Entries a ZIP may hold (default 10,000). */
  maxEntries: number;
}

export const DEFAULT_EXPORT_LIMITS: Readonly<ExportLimits> = Object.freeze({
  maxExpandedBytes: 4 * 1024 ** 3,
  maxCompressionRatio: 100,
  ratioCheckFromBytes: 16 * 1024 ** 2,
  maxEntries: 10_000,
});

/**
 * What an analysis can record (its event's contract, ExternalImportAnalysed.v1): names and counts
 * past these are refused with a stable code before anything is kept.
 */
export const EXPORT_SHAPE_LIMITS = Object.freeze({
  /** Characters of a dataset's name (a JSON key, a `name`, a ZIP entry's stem). */
  maxDatasetName: 200,
  /** Characters of a ZIP entry's name, and of a key read and passed over. */
  maxEntryName: 1000,
  /** Datasets of one export (the format knows about 70). */
  maxDatasets: 1000,
  /** Parts read and passed over (non-JSON entries, keys that hold no dataset). */
  maxIgnored: 10_000,
  /** Levels of nesting of one row (or schema), the row itself the first: rows are flat records of a few levels. */
  maxRowDepth: 64,
});

/** A name as details show it: at most 100 characters of it (the whole one may be 65,000 long). */
const shown = (name: string) => (name.length > 100 ? `${name.slice(0, 100)}…` : name);

export type ExportContainer = 'zip' | 'json';

/** What reading yields, in file order. Every row sits between its dataset's `dataset` and `datasetEnd`. */
export type ExportRecord =
  | { type: 'dataset'; name: string; entry: string }
  | { type: 'row'; dataset: string; row: unknown }
  | { type: 'datasetEnd'; name: string; entry: string; schema: Record<string, unknown> | null }
  /** Something read and passed over: a non-JSON ZIP entry, `meta`/`summary`, a key that holds no dataset. */
  | { type: 'ignored'; entry: string; name: string; reason: string };

const DATASET_CONTAINER_KEYS = new Set(['datasets', 'entities']);
const DATASET_DATA_KEYS = new Set(['data', 'rows', 'records', 'items']);
const DATASET_SCHEMA_KEYS = new Set(['schema', 'columns', 'fields']);
const IGNORED_DATASET_KEYS = new Set(['meta', 'summary']);


/** Which container a file is, from its first bytes; anything else is `export-not-recognised`. */
export async function detectContainer(file: string): Promise<ExportContainer> {
  const head = await readRange(file, 0, 4096); // room for leading blanks before the `{`
  if (head.subarray(0, 4).equals(ZIP_LOCAL_HEADER) || head.subarray(0, 4).equals(ZIP_EMPTY_ARCHIVE)) return 'zip';
  const text = head.toString('utf8').replace(/^\uFEFF/, '').trimStart();
  if (text.startsWith('{')) return 'json';
  throw new ExportFileError('export-not-recognised', 'The upload is neither a ZIP archive nor a JSON export', {
    firstBytes: head.subarray(0, 8).toString('hex'),
  });
}

/**
 * The export's datasets and rows, streamed. Throws `ExportFileError` for hostile or broken input.
 * `name`: the file's name as uploaded, which records and errors name a bare JSON export by (the
 * stored file's own name is the server's choice; default: its base name).
 */
export async function* readExport(
  file: string,
  limits: Partial<ExportLimits> = {},
  name: string = path.basename(file),
): AsyncGenerator<ExportRecord> {
  const container = await detectContainer(file);
  const datasets = new Set<string>();
  let ignored = 0;
  const source = container === 'zip' ? readZip(file, { ...DEFAULT_EXPORT_LIMITS, ...limits }) : readJsonEntry(fs.createReadStream(file), name, null);
  for await (const record of source) {
    if (record.type === 'dataset') {
      checkName('dataset', record.name, EXPORT_SHAPE_LIMITS.maxDatasetName, record.entry);
      datasets.add(record.name);
      if (datasets.size > EXPORT_SHAPE_LIMITS.maxDatasets) {
        throw new ExportFileError('export-too-many-datasets', `The export holds more than ${EXPORT_SHAPE_LIMITS.maxDatasets} datasets`, {
          maxDatasets: EXPORT_SHAPE_LIMITS.maxDatasets,
        });
      }
    } else if (record.type === 'ignored') {
      checkName('ignored', record.name, EXPORT_SHAPE_LIMITS.maxEntryName, record.entry);
      if (++ignored > EXPORT_SHAPE_LIMITS.maxIgnored) {
        throw new ExportFileError('export-too-many-datasets', `The export holds more than ${EXPORT_SHAPE_LIMITS.maxIgnored} parts that are not datasets`, {
          maxIgnored: EXPORT_SHAPE_LIMITS.maxIgnored,
        });
      }
    }
    yield record;
  }
  if (datasets.size === 0) {
    throw new ExportFileError(
      'export-no-datasets',
      container === 'zip' ? 'The ZIP archive holds no export (no JSON entry with a dataset)' : 'The JSON holds no dataset',
      { container },
    );
  }
}

/** A name the analysis records: not empty, and not longer than its limit (`export-name-too-long`). */
function checkName(what: 'dataset' | 'entry' | 'ignored', name: string, maxLength: number, entry: string): void {
  if (what === 'dataset' && name === '') throw new ExportFileError('export-dataset-unnamed', `${shown(entry)}: a dataset has an empty name`, { entry: shown(entry) });
  if (name.length <= maxLength) return;
  throw new ExportFileError('export-name-too-long', `A ${what === 'ignored' ? 'key' : what} name of ${name.length} characters: at most ${maxLength}`, {
    [what === 'entry' ? 'entry' : 'name']: shown(name), ...(what !== 'entry' && { entry: shown(entry) }), length: name.length, maxLength,
  });
}

async function* readZip(file: string, limits: ExportLimits): AsyncGenerator<ExportRecord> {
  const { size } = await fs.promises.stat(file);
  if (!(await isWholeZip(file))) {
    throw new ExportFileError('export-truncated', 'The ZIP archive is truncated or damaged (its end of central directory is missing or does not match)', {
      bytes: size,
    });
  }
  const input = fs.createReadStream(file);
  const unzip = input.pipe(unzipParse()) as unknown as Readable;
  // unzip-stream emits 'close' before 'end', which an async iterator takes for a premature close;
  // its entries are iterated through a plain object stream instead.
  const parser = unzip.pipe(new PassThrough({ objectMode: true }));
  unzip.on('error', (error: Error) => parser.destroy(error));
  let entries = 0;
  let expanded = 0;
  const counter = (name: string) =>
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        expanded += chunk.length;
        if (expanded > limits.maxExpandedBytes) {
          done(new ExportFileError('export-too-large', `The ZIP archive expands beyond ${limits.maxExpandedBytes} bytes`, {
            entry: name, maxExpandedBytes: limits.maxExpandedBytes,
          }));
          return;
        }
        if (expanded >= limits.ratioCheckFromBytes && expanded > size * limits.maxCompressionRatio) {
          done(new ExportFileError('export-compression-ratio', `The ZIP archive expands more than ${limits.maxCompressionRatio}× its size`, {
            entry: name, archiveBytes: size, expandedBytes: expanded, maxCompressionRatio: limits.maxCompressionRatio,
          }));
          return;
        }
        done(null, chunk);
      },
    });
  try {
    for await (const item of parser) {
      const entry = item as Entry;
      const name = entry.path;
      if (++entries > limits.maxEntries) {
        throw new ExportFileError('export-too-large', `The ZIP archive has more than ${limits.maxEntries} entries`, {
          maxEntries: limits.maxEntries,
        });
      }
      checkName('entry', name, EXPORT_SHAPE_LIMITS.maxEntryName, name);
      assertSafeEntryName(name);
      if (entry.type === 'Directory') {
        entry.autodrain();
        continue;
      }
      if (!/\.json$/i.test(name) || path.posix.basename(name.replace(/\\/g, '/')).startsWith('.')) {
        entry.autodrain();
        yield { type: 'ignored', entry: name, name: path.posix.basename(name), reason: 'not a JSON entry' };
        continue;
      }
      const stem = path.posix.basename(name.replace(/\\/g, '/')).replace(/\.json$/i, '');
      yield* readJsonEntry(entry.pipe(counter(name)), name, stem);
    }
  } catch (error) {
    if (error instanceof ExportFileError) throw error;
    throw new ExportFileError('export-truncated', `The ZIP archive cannot be read: ${(error as Error).message}`, {});
  } finally {
    parser.destroy();
    unzip.destroy();
    input.destroy();
  }
}

/**
 * unzip-stream rewrites a `..` segment to `.` before it hands an entry out, so both are refused: a
 * zip-slip attempt fails the whole upload instead of being silently renamed. Absolute names and
 * drive letters too.
 */
function assertSafeEntryName(name: string): void {
  const segments = name.replace(/\\/g, '/').split('/');
  const unsafe =
    name.startsWith('/') || name.startsWith('\\') || /^[A-Za-z]:/.test(name) || segments.some((s) => /^\.+$/.test(s));
  if (unsafe) {
    throw new ExportFileError('export-unsafe-entry', `The ZIP entry name ${JSON.stringify(name)} points outside the archive`, {
      entry: name,
    });
  }
}

/**
 * One JSON value: a whole export (`stem` null, or an object whose first key is not a dataset key),
 * or one dataset named `stem` (an array of rows, or an object starting with a data or schema key;
 * `fields` counts as the schema alias there only when the stem is not itself `fields`' export file).
 */
async function* readJsonEntry(input: Readable, entry: string, stem: string | null): AsyncGenerator<ExportRecord> {
  const json = new JsonReader(input, entry);
  try {
    const first = await json.peek();
    if (stem !== null && first.name === 'startArray') {
      yield* readDatasetBody(json, stem, entry);
    } else if (first.name !== 'startObject') {
      throw new ExportFileError('export-not-recognised', `${entry} is not a JSON object of datasets`, { entry });
    } else {
      yield* readObjectEntry(json, entry, stem);
    }
    await json.end();
  } catch (error) {
    throw asExportError(error, entry);
  } finally {
    await json.close();
  }
}

async function* readObjectEntry(json: JsonReader, entry: string, stem: string | null): AsyncGenerator<ExportRecord> {
  let single: boolean | null = null;
  let schema: Record<string, unknown> | null = null;
  for await (const key of json.keys(entry)) {
    if (single === null) {
      single = stem !== null && (DATASET_DATA_KEYS.has(key) || (DATASET_SCHEMA_KEYS.has(key) && (key !== 'fields' || !(await holdsDataset(json)))));
      if (single) yield { type: 'dataset', name: stem!, entry };
    }
    if (single) {
      if (DATASET_DATA_KEYS.has(key)) yield* readRows(json, stem!, entry);
      else if (DATASET_SCHEMA_KEYS.has(key)) schema = asObject(await readBounded(json, stem!, entry, 'schema'));
      else await json.skipValue();
      continue;
    }
    if (IGNORED_DATASET_KEYS.has(key)) {
      await json.skipValue();
      yield { type: 'ignored', entry, name: key, reason: 'export metadata' };
    } else if (DATASET_CONTAINER_KEYS.has(key)) {
      yield* readContainer(json, entry);
    } else {
      yield* readNamedDataset(json, key, entry);
    }
  }
  if (single) yield { type: 'datasetEnd', name: stem!, entry, schema };
}

/**
 * Whether the value about to be read, under a leading `fields` key, is the custom-fields dataset
 * of a whole export rather than a one-dataset file's schema: a dataset is an array of rows or an
 * object of data and schema keys (`{"data": [...]}`); a schema maps columns to type tags
 * (`{"id": "id", ...}`). Decided from the next two tokens, whatever the entry's name.
 */
async function holdsDataset(json: JsonReader): Promise<boolean> {
  const first = await json.peek();
  if (first.name === 'startArray') return true;
  if (first.name !== 'startObject') return false;
  const key = await json.lookAhead(1);
  if (key?.name !== 'keyValue') return false;
  if (DATASET_DATA_KEYS.has(key.value)) return true;
  // A schema key holds an object (or a list of columns); a column named `schema` holds a type tag.
  const value = DATASET_SCHEMA_KEYS.has(key.value) ? await json.lookAhead(2) : undefined;
  return value?.name === 'startObject' || value?.name === 'startArray';
}

/** Shape B (`{datasets: {name: body}}`) or C (`{datasets: [{name, rows}]}`). */
async function* readContainer(json: JsonReader, entry: string): AsyncGenerator<ExportRecord> {
  const first = await json.peek();
  if (first.name === 'startObject') {
    for await (const name of json.keys(entry)) yield* readNamedDataset(json, name, entry);
    return;
  }
  if (first.name !== 'startArray') {
    throw new ExportFileError('export-not-recognised', `${entry}: datasets is neither an object nor an array`, { entry });
  }
  let index = 0;
  for await (const _ of json.items(`${entry}: datasets`)) {
    yield* readArrayDataset(json, entry, index++);
  }
}

async function* readNamedDataset(json: JsonReader, name: string, entry: string): AsyncGenerator<ExportRecord> {
  const first = await json.peek();
  if (first.name !== 'startObject' && first.name !== 'startArray') {
    await json.skipValue();
    yield { type: 'ignored', entry, name, reason: 'not a dataset (neither an object nor an array of rows)' };
    return;
  }
  yield* readDatasetBody(json, name, entry);
}

/** A dataset's body: `{schema?, data|rows|records|items}` or a bare array of rows. */
async function* readDatasetBody(json: JsonReader, name: string, entry: string): AsyncGenerator<ExportRecord> {
  yield { type: 'dataset', name, entry };
  let schema: Record<string, unknown> | null = null;
  if ((await json.peek()).name === 'startArray') {
    yield* readRows(json, name, entry);
  } else {
    for await (const key of json.keys(`${entry}: ${name}`)) {
      if (DATASET_DATA_KEYS.has(key)) yield* readRows(json, name, entry);
      else if (DATASET_SCHEMA_KEYS.has(key)) schema = asObject(await readBounded(json, name, entry, 'schema'));
      else await json.skipValue();
    }
  }
  yield { type: 'datasetEnd', name, entry, schema };
}

/** Shape C's item: the name must come before the rows, since rows are streamed, not held. */
async function* readArrayDataset(json: JsonReader, entry: string, index: number): AsyncGenerator<ExportRecord> {
  if ((await json.peek()).name !== 'startObject') {
    await json.skipValue();
    yield { type: 'ignored', entry, name: `datasets[${index}]`, reason: 'not a dataset object' };
    return;
  }
  let name: string | null = null;
  let schema: Record<string, unknown> | null = null;
  for await (const key of json.keys(`${entry}: datasets[${index}]`)) {
    if (key === 'name') {
      const value = await readBounded(json, `datasets[${index}]`, entry, 'name');
      if (typeof value === 'string' && value !== '' && name === null) {
        name = value;
        yield { type: 'dataset', name, entry };
      }
    } else if (DATASET_DATA_KEYS.has(key)) {
      if (name === null) {
        throw new ExportFileError('export-dataset-unnamed', `${entry}: datasets[${index}] has rows before (or without) its name`, {
          entry, index,
        });
      }
      yield* readRows(json, name, entry);
    } else if (DATASET_SCHEMA_KEYS.has(key)) {
      schema = asObject(await readBounded(json, name ?? `datasets[${index}]`, entry, 'schema'));
    } else {
      await json.skipValue();
    }
  }
  if (name === null) yield { type: 'ignored', entry, name: `datasets[${index}]`, reason: 'a dataset without a name' };
  else yield { type: 'datasetEnd', name, entry, schema };
}

async function* readRows(json: JsonReader, dataset: string, entry: string): AsyncGenerator<ExportRecord> {
  if ((await json.peek()).name !== 'startArray') {
    throw new ExportFileError('export-not-recognised', `${entry}: the rows of ${dataset} are not an array`, { entry, dataset });
  }
  let index = 0;
  for await (const _ of json.items(`${entry}: ${dataset} rows`)) {
    yield { type: 'row', dataset, row: await readBounded(json, dataset, entry, index++) };
  }
}

/**
 * One value (a row, by its index in the dataset; a schema; a name), assembled only while it is no
 * deeper than maxRowDepth: deeper, the export is refused (`export-row-too-deep`), before any code
 * walks the value (a copy, a JSON text, a jsonb column: each would fail on it).
 */
async function readBounded(json: JsonReader, dataset: string, entry: string, row: number | 'schema' | 'name'): Promise<unknown> {
  try {
    return await json.readValue(EXPORT_SHAPE_LIMITS.maxRowDepth);
  } catch (error) {
    if (!(error instanceof JsonTooDeep)) throw error;
    throw new ExportFileError('export-row-too-deep', `${shown(entry)}: ${row === 'schema' ? 'the schema' : row === 'name' ? 'the name' : `row ${row + 1} (index ${row})`} of ${shown(dataset)} is nested deeper than ${EXPORT_SHAPE_LIMITS.maxRowDepth} levels`, {
      entry: shown(entry), dataset: shown(dataset), row, maxDepth: EXPORT_SHAPE_LIMITS.maxRowDepth,
    });
  }
}

function asObject(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** The JSON reader's errors in this folder's terms; a cut-off value is a truncated file. */
function asExportError(error: unknown, entry: string): unknown {
  if (!(error instanceof ResultFileError)) return error;
  const beforeByte = error.details.beforeByte;
  if (error.code === 'empty-file' || /ends before/.test(error.message)) {
    return new ExportFileError('export-truncated', `${entry} is truncated: ${error.message}`, { entry, beforeByte });
  }
  return new ExportFileError('export-invalid-json', error.message, { entry, beforeByte });
}

