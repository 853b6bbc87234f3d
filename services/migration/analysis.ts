import { readExport, type ExportLimits } from './exportReader';
import { fieldTypeOf } from './fieldTypes';

/**
 * The analysis of an export (issue 18's "analyse" phase): per dataset its row count, a few sample
 * rows (bounded), warnings and errors; datasets the import has no place for are listed as skipped
 * with the reason. The result is a plain JSON value in a fixed order, so the job can record it as
 * an event and two analyses of one file are equal.
 *
 * Two passes over the file, both streamed: the first counts, samples and collects the ids of the
 * datasets other rows point at; the second checks every reference against them (a row may name a
 * row that comes later in the file, or in another ZIP entry). Memory: the id sets, not the rows.
 */

/** Every dataset TestPlanIt reads (reference §3); the importer places these. */
export const IMPORTED_DATASETS: readonly string[] = [
  'states', 'statuses', 'templates', 'template_fields', 'fields', 'field_values', 'milestone_types', 'roles',
  'users', 'user_groups', 'groups', 'issue_targets', 'configs', 'tags',
  'projects', 'project_links', 'milestones', 'milestone_links', 'milestone_issues',
  'repositories', 'repository_folders', 'repository_cases', 'repository_case_steps', 'repository_case_values',
  'repository_case_tags', 'repository_case_issues',
  'runs', 'run_tests', 'run_results', 'run_result_steps', 'run_tags', 'run_links', 'run_issues', 'run_result_issues',
  'sessions', 'session_results', 'session_values', 'session_tags', 'session_issues', 'session_result_issues',
  'automation_cases', 'automation_runs', 'automation_run_tests', 'automation_run_fields',
  'automation_run_test_fields', 'automation_run_links', 'automation_run_tags',
  'issues',
];

/** Known to the export but not imported (reference §3, "Not imported"); anything matching /attachment/i too. */
export const NOT_IMPORTED_DATASETS: readonly string[] = [
  'automation_sources', 'automation_run_artifacts', 'automation_run_test_comments',
  'automation_run_test_comment_issues', 'automation_run_test_artifacts', 'automation_run_threads',
  'automation_run_thread_fields', 'automation_run_thread_artifacts', 'repository_case_comments',
  'milestone_automation_tags',
];

/**
 * The columns that name another dataset's row (reference §4). `parent`: the row cannot be placed
 * without it, so a missing target dataset is an error; otherwise (creator, status, tag, ...) a warning.
 */
type Reference = { field: string; target: string; parent?: true };
const P = (field: string, target: string): Reference => ({ field, target, parent: true });
const R = (field: string, target: string): Reference => ({ field, target });
const PROJECT = P('project_id', 'projects');
const CREATOR = R('created_by', 'users');

export const REFERENCES: ReadonlyMap<string, readonly Reference[]> = new Map(Object.entries({
  template_fields: [P('template_id', 'templates'), P('field_id', 'fields')],
  field_values: [P('field_id', 'fields')],
  user_groups: [P('user_id', 'users'), P('group_id', 'groups')],
  projects: [CREATOR],
  project_links: [PROJECT],
  milestones: [PROJECT, R('parent_id', 'milestones'), R('root_id', 'milestones'), R('type_id', 'milestone_types'), CREATOR],
  milestone_links: [P('milestone_id', 'milestones')],
  milestone_issues: [P('milestone_id', 'milestones'), P('issue_id', 'issues')],
  repositories: [PROJECT],
  repository_folders: [PROJECT, R('repo_id', 'repositories'), R('parent_id', 'repository_folders'), CREATOR],
  repository_cases: [PROJECT, R('repo_id', 'repositories'), R('folder_id', 'repository_folders'),
    R('template_id', 'templates'), R('state_id', 'states'), CREATOR],
  repository_case_steps: [P('case_id', 'repository_cases')],
  repository_case_values: [P('case_id', 'repository_cases'), P('field_id', 'fields'), R('value_id', 'field_values')],
  repository_case_tags: [P('case_id', 'repository_cases'), P('tag_id', 'tags')],
  repository_case_issues: [P('case_id', 'repository_cases'), P('issue_id', 'issues')],
  runs: [PROJECT, R('config_id', 'configs'), R('milestone_id', 'milestones'), R('state_id', 'states'), CREATOR],
  run_tests: [P('run_id', 'runs'), R('case_id', 'repository_cases'), R('status_id', 'statuses'), R('assignee_id', 'users')],
  run_results: [P('run_id', 'runs'), P('test_id', 'run_tests'), R('status_id', 'statuses'), CREATOR],
  run_result_steps: [P('result_id', 'run_results'), R('test_id', 'run_tests'), R('status_id', 'statuses')],
  run_tags: [P('run_id', 'runs'), P('tag_id', 'tags')],
  run_links: [P('run_id', 'runs')],
  run_issues: [P('run_id', 'runs'), P('issue_id', 'issues')],
  run_result_issues: [P('result_id', 'run_results'), P('issue_id', 'issues')],
  sessions: [PROJECT, R('template_id', 'templates'), R('config_id', 'configs'), R('milestone_id', 'milestones'),
    R('state_id', 'states'), R('assignee_id', 'users'), CREATOR],
  session_results: [P('session_id', 'sessions'), R('status_id', 'statuses'), CREATOR],
  session_values: [P('session_id', 'sessions'), P('field_id', 'fields'), R('value_id', 'field_values')],
  session_tags: [P('session_id', 'sessions'), P('tag_id', 'tags')],
  session_issues: [P('session_id', 'sessions'), P('issue_id', 'issues')],
  session_result_issues: [P('result_id', 'session_results'), P('issue_id', 'issues')],
  automation_cases: [PROJECT],
  automation_runs: [PROJECT, R('config_id', 'configs'), R('milestone_id', 'milestones'), CREATOR],
  automation_run_tests: [PROJECT, P('run_id', 'automation_runs'), R('case_id', 'automation_cases')],
  automation_run_fields: [P('run_id', 'automation_runs')],
  automation_run_test_fields: [P('run_id', 'automation_runs'), P('test_id', 'automation_run_tests')],
  automation_run_links: [P('run_id', 'automation_runs')],
  automation_run_tags: [P('run_id', 'automation_runs'), P('tag_id', 'tags')],
  issues: [PROJECT, R('target_id', 'issue_targets')],
}));

/** Datasets whose rows are pointed at by id: each of their rows needs an `id`. */
const ID_DATASETS = new Set([...REFERENCES.values()].flatMap((refs) => refs.map((r) => r.target)));

export interface AnalysisIssue {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

export interface DatasetAnalysis {
  name: string;
  /** The files (ZIP entries, or the JSON file) the dataset's rows came from. */
  entries: string[];
  /** `import`: the importer places it; `skip`: listed, not imported, with `skipReason`. */
  disposition: 'import' | 'skip';
  skipReason: string | null;
  rowCount: number;
  sampleRows: unknown[];
  /** True when a sample row was cut (long strings, long arrays, wide objects, deep nesting). */
  samplesTruncated: boolean;
  warnings: AnalysisIssue[];
  errors: AnalysisIssue[];
}

export interface ExportAnalysis {
  datasets: DatasetAnalysis[];
  /** What was read and passed over: non-JSON ZIP entries, `meta`, keys that hold no dataset. */
  ignored: Array<{ entry: string; name: string; reason: string }>;
  warnings: AnalysisIssue[];
  errors: AnalysisIssue[];
  totals: { datasets: number; rows: number; warnings: number; errors: number };
}

export interface AnalysisOptions {
  limits?: Partial<ExportLimits>;
  /** The file's name as uploaded: a bare JSON export's entry, in the records and errors (default: the stored file's name). */
  name?: string;
  /** Sample rows kept per dataset (default 5, as TestPlanIt). */
  sampleRows?: number;
  /** Bounds of a sample row (defaults as TestPlanIt: strings 1,000 chars, arrays 10 items, objects 20 keys, depth 3). */
  sample?: Partial<SampleBounds>;
  /** Row indexes listed per issue (default 10); the counts are always whole. */
  listedRows?: number;
}

export interface SampleBounds {
  maxString: number;
  maxArray: number;
  maxKeys: number;
  maxDepth: number;
}

const DEFAULT_SAMPLE: SampleBounds = { maxString: 1000, maxArray: 10, maxKeys: 20, maxDepth: 3 };

interface Tally {
  name: string;
  entries: Set<string>;
  rowCount: number;
  sampleRows: unknown[];
  samplesTruncated: boolean;
  notObject: number[];
  notObjectCount: number;
  badId: number[];
  badIdCount: number;
  /** Rows of `fields` whose type (`type`, `type_name`) names no field type. */
  untyped: number[];
  untypedCount: number;
}

/** Analyses the export at `file`; throws the reader's `ExportFileError` when the file itself is refused. */
export async function analyseExport(file: string, options: AnalysisOptions = {}): Promise<ExportAnalysis> {
  const sampleLimit = options.sampleRows ?? 5;
  const bounds = { ...DEFAULT_SAMPLE, ...options.sample };
  const listed = options.listedRows ?? 10;
  const tallies = new Map<string, Tally>();
  const ids = new Map<string, Set<string>>();
  const ignored: ExportAnalysis['ignored'] = [];

  // Pass 1: counts, samples, row shapes, the ids others point at.
  for await (const record of readExport(file, options.limits, options.name)) {
    if (record.type === 'ignored') ignored.push({ entry: record.entry, name: record.name, reason: record.reason });
    if (record.type === 'dataset') tallyOf(tallies, record.name).entries.add(record.entry);
    if (record.type !== 'row') continue;
    const tally = tallyOf(tallies, record.dataset);
    const index = tally.rowCount++;
    if (tally.sampleRows.length < sampleLimit) {
      const cut = { truncated: false };
      tally.sampleRows.push(boundedSample(record.row, bounds, 0, cut));
      if (cut.truncated) tally.samplesTruncated = true;
    }
    if (!isRow(record.row)) {
      if (tally.notObjectCount++ < listed) tally.notObject.push(index);
      continue;
    }
    if (record.dataset === 'fields' && fieldTypeOf(record.row) === null && tally.untypedCount++ < listed) tally.untyped.push(index);
    if (!ID_DATASETS.has(record.dataset)) continue;
    const id = idOf(record.row.id);
    if (id === null) {
      if (tally.badIdCount++ < listed) tally.badId.push(index);
      continue;
    }
    let set = ids.get(record.dataset);
    if (!set) ids.set(record.dataset, (set = new Set()));
    set.add(id);
  }

  // Pass 2: references to rows the export does not hold.
  const dangling = new Map<string, { count: number; rows: number[]; values: string[] }>();
  const counters = new Map<string, number>();
  const used = new Map<string, number>(); // dataset + column pairs: the rows that hold a value in the column
  for await (const record of readExport(file, options.limits, options.name)) {
    if (record.type !== 'row') continue;
    const index = counters.get(record.dataset) ?? 0;
    counters.set(record.dataset, index + 1);
    const refs = REFERENCES.get(record.dataset);
    if (!refs || !isRow(record.row)) continue;
    for (const ref of refs) {
      const value = idOf(record.row[ref.field]);
      if (value === null) continue;
      const key = `${record.dataset}\u0000${ref.field}`;
      used.set(key, (used.get(key) ?? 0) + 1);
      // A target dataset the export lacks is reported once, as missing, below.
      if (!tallies.has(ref.target) || ids.get(ref.target)?.has(value)) continue;
      let found = dangling.get(key);
      if (!found) dangling.set(key, (found = { count: 0, rows: [], values: [] }));
      if (found.count++ < listed) {
        found.rows.push(index);
        found.values.push(value);
      }
    }
  }

  const warnings: AnalysisIssue[] = [];
  const errors: AnalysisIssue[] = [];
  const datasets = [...tallies.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((tally) => datasetAnalysis(tally, tallies, dangling));

  // A dataset that rows point at (a value in the column) but the export lacks: a warning. Rows that
  // cannot be placed without it are skipped and counted (the rest of the export is imported);
  // otherwise the column is left empty.
  const missing = new Map<string, { skipped: Record<string, number>; emptied: Record<string, number> }>();
  for (const dataset of datasets) {
    if (dataset.disposition !== 'import') continue;
    for (const ref of REFERENCES.get(dataset.name) ?? []) {
      const rowCount = used.get(`${dataset.name}\u0000${ref.field}`);
      if (tallies.has(ref.target) || rowCount === undefined) continue;
      let entry = missing.get(ref.target);
      if (!entry) missing.set(ref.target, (entry = { skipped: {}, emptied: {} }));
      (ref.parent ? entry.skipped : entry.emptied)[`${dataset.name}.${ref.field}`] = rowCount;
    }
  }
  for (const [name, { skipped, emptied }] of [...missing].sort(([a], [b]) => a.localeCompare(b))) {
    const listed = (counts: Record<string, number>) => Object.entries(counts).map(([column, n]) => `${n} row(s) by ${column}`).join(', ');
    const parts = [
      ...(Object.keys(skipped).length > 0 ? [`${listed(skipped)} cannot be placed without it: they are skipped and counted`] : []),
      ...(Object.keys(emptied).length > 0 ? [`${listed(emptied)} will be left empty`] : []),
    ];
    warnings.push({
      code: 'dataset-missing',
      message: `The export has no ${name}; ${parts.join('; ')}`,
      details: { dataset: name, neededBy: [...Object.keys(skipped), ...Object.keys(emptied)], skipped, emptied },
    });
  }
  if (!datasets.some((d) => d.disposition === 'import')) {
    errors.push({ code: 'no-importable-dataset', message: 'The export holds no dataset the import can place', details: {} });
  }

  const rows = datasets.reduce((sum, d) => sum + d.rowCount, 0);
  const issues = (pick: (d: DatasetAnalysis) => AnalysisIssue[], top: AnalysisIssue[]) =>
    top.length + datasets.reduce((sum, d) => sum + pick(d).length, 0);
  return {
    datasets,
    ignored,
    warnings,
    errors,
    totals: {
      datasets: datasets.length,
      rows,
      warnings: issues((d) => d.warnings, warnings),
      errors: issues((d) => d.errors, errors),
    },
  };
}

function datasetAnalysis(
  tally: Tally,
  tallies: Map<string, Tally>,
  dangling: Map<string, { count: number; rows: number[]; values: string[] }>,
): DatasetAnalysis {
  const skipReason = skipReasonOf(tally.name);
  const warnings: AnalysisIssue[] = [];
  const errors: AnalysisIssue[] = [];
  if (tally.notObjectCount > 0) {
    errors.push({
      code: 'row-not-an-object',
      message: `${tally.notObjectCount} row(s) of ${tally.name} are not JSON objects`,
      details: { dataset: tally.name, count: tally.notObjectCount, rows: tally.notObject },
    });
  }
  if (tally.badIdCount > 0) {
    errors.push({
      code: 'row-without-id',
      message: `${tally.badIdCount} row(s) of ${tally.name} have no usable id (a number or a non-empty string)`,
      details: { dataset: tally.name, count: tally.badIdCount, rows: tally.badId },
    });
  }
  if (tally.untypedCount > 0) {
    warnings.push({
      code: 'field-type-unknown',
      message: `${tally.untypedCount} row(s) of ${tally.name} name no field type this import knows (type, type_name); they become text fields`,
      details: { dataset: tally.name, count: tally.untypedCount, rows: tally.untyped },
    });
  }
  for (const ref of REFERENCES.get(tally.name) ?? []) {
    const found = dangling.get(`${tally.name}\u0000${ref.field}`);
    if (!found || !tallies.has(ref.target)) continue;
    warnings.push({
      code: 'reference-unresolved',
      message: `${found.count} row(s) of ${tally.name} name a ${ref.target} row the export does not hold (${ref.field}); they will be skipped and counted`,
      details: { dataset: tally.name, field: ref.field, target: ref.target, count: found.count, rows: found.rows, values: found.values },
    });
  }
  return {
    name: tally.name,
    entries: [...tally.entries].sort(),
    disposition: skipReason ? 'skip' : 'import',
    skipReason,
    rowCount: tally.rowCount,
    sampleRows: tally.sampleRows,
    samplesTruncated: tally.samplesTruncated,
    warnings: skipReason ? [] : warnings,
    errors: skipReason ? [] : errors,
  };
}

function skipReasonOf(name: string): string | null {
  if (/attachment/i.test(name)) return 'attachments are not imported (the export carries no file content)';
  if (NOT_IMPORTED_DATASETS.includes(name)) return 'known to the export format but not imported (no home in this domain)';
  if (!IMPORTED_DATASETS.includes(name)) return 'unknown dataset: not part of the export format this import reads';
  return null;
}

function tallyOf(tallies: Map<string, Tally>, name: string): Tally {
  let tally = tallies.get(name);
  if (!tally) {
    tally = {
      name, entries: new Set(), rowCount: 0, sampleRows: [], samplesTruncated: false,
      notObject: [], notObjectCount: 0, badId: [], badIdCount: 0, untyped: [], untypedCount: 0,
    };
    tallies.set(name, tally);
  }
  return tally;
}

function isRow(row: unknown): row is Record<string, unknown> {
  return typeof row === 'object' && row !== null && !Array.isArray(row);
}

/** An id as the export writes it (number or string), compared as text: `7` and `"7"` are one row. */
function idOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && value.trim() !== '') return value.trim();
  return null;
}

/** A copy of a row cut to the bounds; `cut.truncated` says whether anything was left out. */
export function boundedSample(value: unknown, bounds: SampleBounds, depth: number, cut: { truncated: boolean }): unknown {
  if (typeof value === 'string') {
    if (value.length <= bounds.maxString) return value;
    cut.truncated = true;
    return `${value.slice(0, bounds.maxString)}…`;
  }
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= bounds.maxDepth) {
    cut.truncated = true;
    return Array.isArray(value) ? '[…]' : '{…}';
  }
  if (Array.isArray(value)) {
    if (value.length > bounds.maxArray) cut.truncated = true;
    return value.slice(0, bounds.maxArray).map((item) => boundedSample(item, bounds, depth + 1, cut));
  }
  const keys = Object.keys(value);
  if (keys.length > bounds.maxKeys) cut.truncated = true;
  const out: Record<string, unknown> = {};
  // Own properties, as JSON.parse makes them: a key named __proto__ is a field, not the copy's prototype.
  for (const key of keys.slice(0, bounds.maxKeys)) {
    Object.defineProperty(out, key, { value: boundedSample((value as Record<string, unknown>)[key], bounds, depth + 1, cut), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

