/**
 * `npm run export:generate -- --out <file.json|file.zip> [--seed 1] [--cases 50000] [--runs 2000]
 * [--results 500000] [--projects 5] [--users 50] [--shape A|B|C] [--match-email a@x,b@y]`
 *
 * Writes a realistic, seeded external-tool export (Testmo, in the shapes TestPlanIt reads:
 * docs/external-export-format.md) for the migration tests and the benchmark. Nothing
 * here comes from a real Testmo file; the rows carry the columns of the reference's §4 examples.
 *
 * Streamed: rows are generated one at a time and written in 64 KiB chunks with backpressure, so
 * memory holds a few typed arrays of ids (one entry per case and per run), never the export. The
 * same seed gives byte-identical output (a mulberry32 stream per dataset and per run, no clock, a
 * fixed ZIP timestamp).
 *
 * Counts: `cases` master-repository cases, `runs` runs and `results` non-deleted run results, exactly.
 * On top of them, as an importer must skip them: 1% (rounded up) more cases in each project's
 * snapshot repository (`is_snapshot: 1`, with their own folders), and one `is_deleted: 1` result after
 * every 100th result. Every other dataset's size follows from these (the summary lists them all).
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { once } from 'node:events';
import type { Writable } from 'node:stream';

export type ExportShape = 'A' | 'B' | 'C';
export type ExportFormat = 'json' | 'zip';

export interface GenerateOptions {
  seed: number;
  /** Master-repository cases (snapshot cases come on top: ceil(1%)). */
  cases: number;
  runs: number;
  /** Non-deleted run results (deleted ones come on top: one per 100). */
  results: number;
  projects: number;
  users: number;
  /** JSON container shape (ignored for ZIP, whose entries are each `{schema, data}`). */
  shape: ExportShape;
  format: ExportFormat;
  /** E-mails given to the first users, so an import maps them onto existing accounts. */
  matchEmails: string[];
}

export const DEFAULT_OPTIONS: Readonly<GenerateOptions> = Object.freeze({
  seed: 1, cases: 50_000, runs: 2_000, results: 500_000, projects: 5, users: 50,
  shape: 'A', format: 'json', matchEmails: ['admin@example.com'],
});

export interface GenerateSummary {
  seed: number;
  format: ExportFormat;
  shape: ExportShape | null;
  /** Rows written per dataset, in file order. */
  datasets: Record<string, number>;
  /** The rows an importer must skip, included in `datasets`. */
  skippable: { snapshotRepositories: number; snapshotFolders: number; snapshotCases: number; deletedResults: number };
  bytes: number;
  ms: number;
}

type Row = Record<string, unknown>;
interface Dataset {
  name: string;
  schema: Record<string, string>;
  rows: () => Iterable<Row>;
}

/** Writes the export to `writable`, ends it and resolves once it has finished. */
export async function generateExport(input: Partial<GenerateOptions>, writable: Writable): Promise<GenerateSummary> {
  const options = validated({ ...DEFAULT_OPTIONS, ...input });
  const started = process.hrtime.bigint();
  const sink = new ByteSink(writable);
  const emitter = options.format === 'zip' ? new ZipEmitter(sink) : new JsonEmitter(sink, options.shape, options.seed);
  const model = new ExportModel(options);
  const counts: Record<string, number> = {};
  await emitter.start();
  for (const dataset of model.datasets()) {
    await emitter.begin(dataset.name, dataset.schema);
    let n = 0;
    for (const row of dataset.rows()) {
      await emitter.row(JSON.stringify(row));
      n++;
    }
    await emitter.end();
    counts[dataset.name] = n;
  }
  await emitter.finish();
  writable.end();
  if (!writable.writableFinished) await once(writable, 'finish');
  sink.check();
  return {
    seed: options.seed,
    format: options.format,
    shape: options.format === 'json' ? options.shape : null,
    datasets: counts,
    skippable: {
      snapshotRepositories: options.projects,
      snapshotFolders: model.snapshotFolderTotal,
      snapshotCases: model.snapshotCaseTotal,
      deletedResults: Math.floor(options.results / 100),
    },
    bytes: sink.bytes,
    ms: Number((process.hrtime.bigint() - started) / 1_000_000n),
  };
}

function validated(options: GenerateOptions): GenerateOptions {
  for (const key of ['seed', 'cases', 'runs', 'results', 'projects', 'users'] as const) {
    if (!Number.isSafeInteger(options[key]) || options[key] < 0) throw new Error(`--${key} must be a whole number ≥ 0 (got ${options[key]})`);
  }
  if (options.projects < 1) throw new Error('--projects must be at least 1');
  if (options.users < 2) throw new Error('--users must be at least 2 (one of them is the CI bot)');
  if (!['A', 'B', 'C'].includes(options.shape)) throw new Error(`--shape must be A, B or C (got ${options.shape})`);
  if (options.results > 0 && options.runs === 0) throw new Error('results need at least one run');
  if (options.runs > 0 && options.cases === 0) throw new Error('runs need at least one case');
  return options;
}

// ---------------------------------------------------------------------------------------------
// Randomness: mulberry32, one stream per dataset (and per run), so a dataset's rows do not depend
// on how many numbers an earlier dataset drew, and a run's plan can be replayed by a later dataset.

type Rng = () => number;

/** mulberry32: a small seeded generator (the benchmarks' seeded logs use it too: bench/support.ts). */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function rngFor(seed: number, label: string, index = 0): Rng {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
  h = Math.imul(h ^ index, 0x01000193);
  h = Math.imul(h ^ (seed >>> 16), 0x85ebca6b);
  return mulberry32(h ^ (h >>> 13));
}

const int = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));
const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)];
const chance = (rng: Rng, p: number) => rng() < p;

/** `total` split over `n` parts with random weights in [low, high), exactly (largest remainder). */
function split(total: number, weights: ArrayLike<number>): Int32Array {
  const n = weights.length;
  const out = new Int32Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += weights[i];
  if (n === 0 || total === 0 || sum === 0) return out;
  let given = 0;
  const rest: Array<[number, number]> = [];
  for (let i = 0; i < n; i++) {
    const exact = (total * weights[i]) / sum;
    out[i] = Math.floor(exact);
    given += out[i];
    rest.push([exact - out[i], i]);
  }
  rest.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (let k = 0; given < total; k++, given++) out[rest[k % n][1]]++;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Vocabulary

const PROJECT_NAMES = ['Web Shop', 'Mobile App', 'Billing', 'Backend API', 'Admin Portal', 'Data Platform', 'Partner Portal', 'Search'];
const FOLDER_NAMES = ['Checkout', 'Login', 'Search', 'Account', 'Orders', 'Payments', 'Reports', 'Settings', 'Notifications',
  'Admin', 'API', 'Integrations', 'Onboarding', 'Catalog', 'Shipping', 'Returns'];
const SUBFOLDER_NAMES = ['Smoke', 'Regression', 'Edge cases', 'Negative', 'Accessibility', 'Performance', 'Localization', 'Security'];
const VERBS = ['Create', 'Edit', 'Delete', 'View', 'Search for', 'Filter', 'Export', 'Import', 'Pay with', 'Share', 'Archive',
  'Restore', 'Sort', 'Upload', 'Download', 'Validate', 'Cancel', 'Approve', 'Reset', 'Duplicate'];
const OBJECTS = ['saved card', 'coupon', 'order', 'invoice', 'user profile', 'password', 'shopping cart', 'wishlist',
  'product review', 'shipping address', 'report', 'dashboard widget', 'API token', 'team member', 'notification',
  'comment', 'subscription', 'refund', 'gift card', 'tax rate'];
const QUALIFIERS = ['', '', '', ' as guest', ' on mobile', ' with invalid data', ' after session timeout', ' in dark mode',
  ' with 2FA enabled', ' for large accounts', ' while offline', ' via keyboard only', ' in German & French'];
const FIRST_NAMES = ['Alice', 'Bob', 'Chloé', 'Dmitri', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kemal', 'Lena',
  'Mateo', 'Nadia', 'Oskar', 'Priya', 'Quinn', 'Rosa', 'Sven', 'Tomás', 'Uma', 'Viktor', 'Wen', 'Yara', 'Zoe'];
const LAST_NAMES = ['Doe', 'Smith', 'Müller', 'Nguyen', 'García', 'Kowalski', 'Okafor', 'Rossi', 'Tanaka', 'Johansson',
  'Haddad', 'Novak', "O'Brien", 'Petrov', 'Silva'];
const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];
const SYSTEMS = ['Windows 11', 'macOS', 'Ubuntu 24.04', 'iOS 18', 'Android 15'];
const TAGS = ['smoke', 'regression', 'critical-path', 'flaky', 'ui', 'api', 'mobile', 'a11y', 'security', 'performance',
  'payments', 'i18n', 'nightly', 'release-blocker', 'manual-only', 'needs-review', 'customer-reported', 'legacy',
  'beta', 'gdpr', 'sso', 'edge-case', 'data-migration', 'onboarding', 'email', 'search', 'reporting', 'admin', 'sprint', 'hotfix'];
const COMMENTS = ['<p>Works as expected.</p>', '<p>Failed: the total shows <strong>0.00 €</strong> after applying the coupon.</p>',
  '<p>Blocked by the staging outage, see <a href="https://status.example.com">status page</a>.</p>',
  '<p>Retest after the fix in build #&#8203;1234.</p>', '<p>Slow (&gt; 5 s) but correct.</p>', null, null, null];

const BASE_TIME = Date.UTC(2023, 0, 2, 8, 0, 0);
const DAY = 86_400_000;
const MINUTE_US = 60_000_000;
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, 'Z');

/** Statuses in the order Testmo lists them; `weight` is how often results get them. */
const STATUSES = [
  { id: 1, name: 'Passed', system_name: 'passed', color: '2ECC71', is_passed: 1, is_failed: 0, is_final: 1, is_untested: 0, weight: 0.78 },
  { id: 2, name: 'Failed', system_name: 'failed', color: 'E74C3C', is_passed: 0, is_failed: 1, is_final: 1, is_untested: 0, weight: 0.12 },
  { id: 3, name: 'Blocked', system_name: 'blocked', color: '7F8C8D', is_passed: 0, is_failed: 1, is_final: 1, is_untested: 0, weight: 0.05 },
  { id: 4, name: 'Retest', system_name: 'retest', color: 'F1C40F', is_passed: 0, is_failed: 0, is_final: 0, is_untested: 0, weight: 0.05 },
  { id: 5, name: 'Untested', system_name: 'untested', color: 'BDC3C7', is_passed: 0, is_failed: 0, is_final: 0, is_untested: 1, weight: 0 },
];
const UNTESTED = 5;

function resultStatus(rng: Rng): number {
  let x = rng();
  for (const s of STATUSES) {
    if (x < s.weight) return s.id;
    x -= s.weight;
  }
  return 1;
}

// Custom fields (ids fixed): dropdowns with their options, long texts, one result string.
const FIELDS = [
  { id: 1, type: 8, name: 'severity', display_name: 'Severity', is_required: true, hint: 'Impact if this fails', options: ['Low', 'Medium', 'High', 'Critical'] },
  { id: 2, type: 8, name: 'priority', display_name: 'Priority', is_required: false, hint: null, options: ['P1', 'P2', 'P3', 'P4'] },
  { id: 3, type: 2, name: 'preconditions', display_name: 'Preconditions', is_required: false, hint: 'State before the first step', options: [] },
  { id: 4, type: 1, name: 'browser_version', display_name: 'Browser version', is_required: false, hint: null, options: [] },
  { id: 5, type: 2, name: 'mission', display_name: 'Mission', is_required: false, hint: 'What the session explores', options: [] },
];
const fieldValueId = (fieldId: number, index: number) => fieldId * 100 + index + 1;
const TEMPLATES = [
  { id: 1, name: 'Steps', caseFields: [1, 2, 3], resultFields: [4] },
  { id: 2, name: 'Text', caseFields: [1, 3], resultFields: [4] },
  { id: 3, name: 'Exploratory', caseFields: [5], resultFields: [] },
];

// ---------------------------------------------------------------------------------------------
// The model: sizes and id blocks decided up front (small arrays), rows generated on demand.

class ExportModel {
  readonly o: GenerateOptions;
  readonly P: number;
  /** Master cases: project p holds ids caseStart[p] .. caseStart[p] + caseCount[p] - 1. */
  readonly caseCount: Int32Array;
  readonly caseStart: Int32Array;
  readonly firstCaseId = 1001;
  readonly caseTemplate: Uint8Array;
  readonly caseSteps: Uint8Array;
  readonly snapshotCount: Int32Array;
  readonly folderCount: Int32Array;
  readonly folderStart: Int32Array;
  readonly snapshotFolderStart: Int32Array;
  readonly runProject: Uint16Array;
  readonly runResults: Int32Array;
  readonly runTests: Int32Array;
  readonly runTestStart: Float64Array;
  readonly runCaseOffset: Int32Array;
  readonly issueStart: Int32Array;
  readonly issueCount: Int32Array;
  readonly configs: string[];
  readonly snapshotCaseTotal: number;
  readonly snapshotFolderTotal: number;

  constructor(options: GenerateOptions) {
    this.o = options;
    this.P = options.projects;
    const rng = rngFor(options.seed, 'layout');
    const P = this.P;

    // Cases over projects, every project one at least when there are enough.
    const weights = Array.from({ length: P }, () => 0.4 + rng() * 1.6);
    const base = options.cases >= P ? 1 : 0;
    this.caseCount = split(options.cases - base * P, weights).map((n) => n + base);
    this.caseStart = new Int32Array(P);
    let nextCase = this.firstCaseId;
    for (let p = 0; p < P; p++) {
      this.caseStart[p] = nextCase;
      nextCase += this.caseCount[p];
    }
    const snapshotTotal = Math.ceil(options.cases / 100);
    this.snapshotCount = split(snapshotTotal, this.caseCount);
    this.snapshotCaseTotal = snapshotTotal;

    const totalCases = options.cases;
    this.caseTemplate = new Uint8Array(totalCases);
    this.caseSteps = new Uint8Array(totalCases);
    for (let i = 0; i < totalCases; i++) {
      const x = rng();
      this.caseTemplate[i] = x < 0.7 ? 1 : x < 0.95 ? 2 : 3;
      this.caseSteps[i] = this.caseTemplate[i] === 1 ? int(rng, 1, 6) : 0;
    }

    // Folders: about one per 40 cases, a few top-level ones and the rest nested below.
    this.folderCount = this.caseCount.map((n) => Math.max(3, Math.ceil(n / 40)));
    this.folderStart = new Int32Array(P);
    this.snapshotFolderStart = new Int32Array(P);
    let nextFolder = 1;
    for (let p = 0; p < P; p++) {
      this.folderStart[p] = nextFolder;
      nextFolder += this.folderCount[p];
    }
    for (let p = 0; p < P; p++) {
      this.snapshotFolderStart[p] = nextFolder;
      nextFolder += 2;
    }
    this.snapshotFolderTotal = 2 * P;

    // Runs over the projects that have cases, in proportion to their size.
    const R = options.runs;
    this.runProject = new Uint16Array(R);
    const cumulative: number[] = [];
    let acc = 0;
    for (let p = 0; p < P; p++) cumulative.push((acc += this.caseCount[p]));
    for (let r = 0; r < R; r++) {
      const x = rng() * acc;
      let p = 0;
      while (cumulative[p] <= x) p++;
      this.runProject[r] = p;
    }
    this.runResults = split(options.results, Array.from({ length: R }, () => 0.2 + rng() * 1.6));
    this.runTests = new Int32Array(R);
    this.runTestStart = new Float64Array(R + 1);
    this.runCaseOffset = new Int32Array(R);
    let nextTest = 1;
    for (let r = 0; r < R; r++) {
      const cases = this.caseCount[this.runProject[r]];
      this.runTests[r] = Math.max(1, Math.min(cases, Math.ceil(this.runResults[r] / 1.3)));
      this.runTestStart[r] = nextTest;
      nextTest += this.runTests[r];
      this.runCaseOffset[r] = Math.floor(rng() * cases);
    }
    this.runTestStart[R] = nextTest;

    this.issueCount = this.caseCount.map((n) => 10 + Math.ceil(n / 100));
    this.issueStart = new Int32Array(P);
    let nextIssue = 1;
    for (let p = 0; p < P; p++) {
      this.issueStart[p] = nextIssue;
      nextIssue += this.issueCount[p];
    }
    this.configs = [];
    for (const os of SYSTEMS) for (const browser of BROWSERS) {
      if ((os.startsWith('iOS') || os === 'macOS') !== (browser === 'Safari')) continue;
      this.configs.push(`${browser}, ${os}`);
    }
  }

  datasets(): Dataset[] {
    return datasetsOf(this);
  }

  sessionCount(): number {
    return Math.max(this.P, Math.ceil(this.o.runs / 20));
  }

  /** Which test each of run `r`'s results is for, and its status: replayed identically by every dataset that needs it. */
  planRun(r: number): { test: Int32Array; status: Uint8Array } {
    const rng = rngFor(this.o.seed, 'plan', r);
    const n = this.runResults[r];
    const tests = this.runTests[r];
    const test = new Int32Array(n);
    const status = new Uint8Array(n);
    for (let k = 0; k < n; k++) {
      test[k] = k < tests ? k : Math.floor(rng() * tests); // every test once, then retests of random ones
      status[k] = resultStatus(rng);
    }
    return { test, status };
  }

  /** All results in id order, deleted extras included (one after every 100th result, on the same test). */
  *results(): Generator<{ id: number; run: number; index: number; test: number; status: number; deleted: boolean }> {
    let id = 1;
    let kept = 0;
    for (let r = 0; r < this.o.runs; r++) {
      const plan = this.planRun(r);
      for (let k = 0; k < plan.test.length; k++) {
        yield { id: id++, run: r, index: k, test: plan.test[k], status: plan.status[k], deleted: false };
        if (++kept % 100 === 0) yield { id: id++, run: r, index: k, test: plan.test[k], status: 2, deleted: true };
      }
    }
  }
}


/** The datasets in file order (the import's order, reference §3), each a generator of rows. */
function datasetsOf(m: ExportModel): Dataset[] {
  const o = m.o;
  const P = m.P;
  const seed = o.seed;
  const user = (rng: Rng) => 2 + Math.floor(rng() * (o.users - 1)); // a person: user 1 is the CI bot
  const projectName = (p: number) => (p < PROJECT_NAMES.length ? PROJECT_NAMES[p] : `Project ${p + 1}`);
  const projectKey = (p: number) => projectName(p).split(' ').map((w) => w[0]).join('').toUpperCase() + (p < PROJECT_NAMES.length ? '' : String(p + 1));
  const projectId = (p: number) => 10 + p;
  const masterRepo = (p: number) => 100 + 2 * p;
  const snapshotRepo = (p: number) => 101 + 2 * p;
  const milestoneId = (p: number, k: number) => 1 + p * 8 + k; // 2 releases + 3 sprints each = 8 per project
  const caseProject = (id: number) => {
    let p = 0;
    while (p < P - 1 && id >= m.caseStart[p + 1]) p++;
    return p;
  };
  const title = (rng: Rng) => `${pick(rng, VERBS)} ${pick(rng, OBJECTS)}${pick(rng, QUALIFIERS)}`;
  const at = (rng: Rng, fromDay: number, spanDays: number) => BASE_TIME + fromDay * DAY + Math.floor(rng() * spanDays * DAY / 1000) * 1000;
  const caseOfTest = (r: number, t: number) => {
    const p = m.runProject[r];
    return m.caseStart[p] + ((m.runCaseOffset[r] + t) % m.caseCount[p]);
  };
  const configCount = m.configs.length;

  /** A schema from "column:type ..." (type tags as the reference shows them; "string" when left out). */
  const S = (cols: string): Record<string, string> =>
    Object.fromEntries(cols.split(' ').map((c) => {
      const [name, type] = c.split(':');
      return [name, type ?? 'string'];
    }));

  return [
    {
      name: 'states', schema: S('id:id name'),
      rows: () => ['Draft', 'In Review', 'Active', 'Retired', 'Rejected'].map((name, i) => ({ id: i + 1, name })),
    },
    {
      name: 'statuses', schema: S('id:id name system_name color is_passed:bool is_failed:bool is_final:bool is_untested:bool'),
      rows: () => STATUSES.map(({ weight: _weight, ...status }) => status),
    },
    { name: 'templates', schema: S('id:id name'), rows: () => TEMPLATES.map(({ id, name }) => ({ id, name })) },
    {
      name: 'fields', schema: S('id:id type:int name display_name is_required:bool is_restricted:bool hint default_value'),
      rows: () => FIELDS.map(({ options: _options, ...f }) => ({ ...f, is_restricted: false, default_value: null })),
    },
    {
      name: 'field_values', schema: S('id:id field_id:id name color'),
      rows: () => FIELDS.flatMap((f) => f.options.map((name, i) => ({
        id: fieldValueId(f.id, i), field_id: f.id, name, color: ['#95A5A6', '#3498DB', '#E67E22', '#C0392B'][i % 4],
      }))),
    },
    {
      name: 'template_fields', schema: S('id:id template_id:id field_id:id target_type is_required:bool order:int'),
      rows: function* () {
        let id = 1001;
        for (const t of TEMPLATES) {
          let order = 0;
          for (const f of t.caseFields) yield { id: id++, template_id: t.id, field_id: f, target_type: 'case', is_required: f === 1, order: order++ };
          for (const f of t.resultFields) yield { id: id++, template_id: t.id, field_id: f, target_type: 'result', is_required: false, order: order++ };
        }
      },
    },
    {
      name: 'milestone_types', schema: S('id:id name icon is_default:bool'),
      rows: () => [{ id: 1, name: 'Release', icon: 'rocket', is_default: 1 }, { id: 2, name: 'Sprint', icon: 'flag', is_default: 0 },
        { id: 3, name: 'Iteration', icon: 'repeat', is_default: 0 }],
    },
    {
      name: 'roles', schema: S('id:id name is_default:bool permissions:object'),
      rows: () => [
        { id: 1, name: 'Tester', is_default: 1, permissions: { TestRuns: { canAddEdit: true, canDelete: false, canClose: false } } },
        { id: 2, name: 'Lead', is_default: 0, permissions: { TestRuns: { canAddEdit: true, canDelete: true, canClose: true } } },
        { id: 3, name: 'Viewer', is_default: 0, permissions: {} },
      ],
    },
    {
      name: 'users', schema: S('id:id email name is_active:bool is_api:bool role'),
      rows: function* () {
        const rng = rngFor(seed, 'users');
        for (let id = 1; id <= o.users; id++) {
          if (id === 1) {
            yield { id, email: 'ci-bot@example.test', name: 'CI', is_active: 1, is_api: 1, role: 'Tester' };
            continue;
          }
          const first = pick(rng, FIRST_NAMES);
          const last = pick(rng, LAST_NAMES);
          const email = o.matchEmails[id - 2] ?? `${first}.${last}.${id}@example.test`.toLowerCase().replace(/[^a-z0-9.@-]/g, '');
          yield {
            id, email, name: `${first} ${last}`, is_active: chance(rng, 0.9) ? 1 : 0, is_api: 0,
            role: id <= 4 ? 'Lead' : chance(rng, 0.1) ? 'Viewer' : 'Tester',
          };
        }
      },
    },
    {
      name: 'groups', schema: S('id:id name note'),
      rows: () => ['Web QA', 'Mobile QA', 'Payments squad', 'Release managers', 'Contractors'].map((name, i) => ({
        id: i + 1, name, note: i === 1 ? 'iOS + Android' : null,
      })),
    },
    {
      name: 'user_groups', schema: S('user_id:id group_id:id'),
      rows: function* () {
        const rng = rngFor(seed, 'user_groups');
        for (let u = 2; u <= o.users; u++) {
          const first = int(rng, 1, 5);
          yield { user_id: u, group_id: first };
          if (chance(rng, 0.3)) yield { user_id: u, group_id: (first % 5) + 1 };
        }
      },
    },
    { name: 'configs', schema: S('id:id name'), rows: () => m.configs.map((name, i) => ({ id: i + 1, name })) },
    { name: 'tags', schema: S('id:id name'), rows: () => TAGS.map((name, i) => ({ id: i + 1, name })) },
    {
      name: 'issue_targets', schema: S('id:id name type:int'),
      rows: () => [{ id: 1, name: 'Company Jira', type: 1 }, { id: 2, name: 'GitHub', type: 2 }],
    },
    {
      name: 'projects', schema: S('id:id name note docs is_completed:bool completed_at:datetime created_at:datetime created_by:id'),
      rows: function* () {
        const rng = rngFor(seed, 'projects');
        for (let p = 0; p < P; p++) {
          yield {
            id: projectId(p), name: projectName(p), note: `<p>${projectName(p)}: manual regression &amp; release testing</p>`,
            docs: null, is_completed: 0, completed_at: null, created_at: iso(at(rng, 0, 10)), created_by: user(rng),
          };
        }
      },
    },
    {
      name: 'milestones',
      schema: S('id:id project_id:id parent_id:id root_id:id type_id:id name note docs is_started:bool started_at:datetime is_completed:bool completed_at:datetime created_at:datetime created_by:id'),
      rows: function* () {
        const rng = rngFor(seed, 'milestones');
        for (let p = 0; p < P; p++) {
          for (let release = 0; release < 2; release++) {
            const root = milestoneId(p, release * 4);
            const start = BASE_TIME + (20 + release * 90) * DAY;
            const done = release === 0;
            yield {
              id: root, project_id: projectId(p), parent_id: null, root_id: null, type_id: 1, name: `v${release + 1}.0`,
              note: `<p>Release ${release + 1}.0</p>`, docs: null, is_started: 1, started_at: iso(start),
              is_completed: done ? 1 : 0, completed_at: done ? iso(start + 85 * DAY) : null,
              created_at: iso(start - 5 * DAY), created_by: user(rng),
            };
            for (let sprint = 1; sprint <= 3; sprint++) {
              const sprintStart = start + (sprint - 1) * 28 * DAY;
              yield {
                id: root + sprint, project_id: projectId(p), parent_id: root, root_id: root, type_id: 2,
                name: `Sprint ${release * 3 + sprint}`, note: null, docs: null, is_started: 1, started_at: iso(sprintStart),
                is_completed: done ? 1 : 0, completed_at: done ? iso(sprintStart + 27 * DAY) : null,
                created_at: iso(sprintStart - DAY), created_by: user(rng),
              };
            }
          }
        }
      },
    },
    {
      name: 'repositories', schema: S('id:id project_id:id is_snapshot:bool is_master:bool'),
      rows: function* () {
        for (let p = 0; p < P; p++) {
          yield { id: masterRepo(p), project_id: projectId(p), is_snapshot: 0, is_master: 1 };
          yield { id: snapshotRepo(p), project_id: projectId(p), is_snapshot: 1, is_master: 0 };
        }
      },
    },
    {
      name: 'repository_folders',
      schema: S('id:id project_id:id repo_id:id parent_id:id name docs display_order:int created_at:datetime created_by:id'),
      rows: function* () {
        const rng = rngFor(seed, 'repository_folders');
        for (let p = 0; p < P; p++) {
          const count = m.folderCount[p];
          const top = Math.min(count, Math.max(2, Math.round(Math.sqrt(count))));
          for (let k = 0; k < count; k++) {
            const parent = k < top ? null : m.folderStart[p] + Math.floor(rng() * k);
            const name = k < top ? FOLDER_NAMES[k % FOLDER_NAMES.length] + (k >= FOLDER_NAMES.length ? ` ${Math.floor(k / FOLDER_NAMES.length) + 1}` : '')
              : `${pick(rng, SUBFOLDER_NAMES)} ${k}`;
            yield {
              id: m.folderStart[p] + k, project_id: projectId(p), repo_id: masterRepo(p), parent_id: parent, name,
              docs: chance(rng, 0.1) ? '<p>See the <em>test strategy</em> page.</p>' : null,
              display_order: k + 1, created_at: iso(at(rng, 10, 30)), created_by: user(rng),
            };
          }
        }
        for (let p = 0; p < P; p++) {
          for (let k = 0; k < 2; k++) {
            yield {
              id: m.snapshotFolderStart[p] + k, project_id: projectId(p), repo_id: snapshotRepo(p),
              parent_id: k === 0 ? null : m.snapshotFolderStart[p], name: k === 0 ? 'Snapshot' : 'Copied cases', docs: null,
              display_order: k + 1, created_at: iso(at(rng, 200, 10)), created_by: user(rng),
            };
          }
        }
      },
    },
    {
      name: 'repository_cases',
      schema: S('id:id project_id:id repo_id:id folder_id:id template_id:id state_id:id name key estimate:int automated:bool display_order:int created_at:datetime created_by:id custom_severity custom_priority custom_preconditions custom_mission'),
      rows: function* () {
        const rng = rngFor(seed, 'repository_cases');
        const caseRow = (id: number, p: number, repo: number, folder: number, template: number, order: number): Row => {
          const severity = int(rng, 0, 3);
          const row: Row = {
            id, project_id: projectId(p), repo_id: repo, folder_id: folder, template_id: template,
            state_id: chance(rng, 0.85) ? 3 : int(rng, 1, 5), name: title(rng), key: `C${id}`,
            estimate: chance(rng, 0.2) ? null : int(rng, 1, 30) * MINUTE_US, automated: chance(rng, 0.15) ? 1 : 0,
            display_order: order, created_at: iso(at(rng, 10, 300)), created_by: user(rng),
          };
          if (template !== 3) row.custom_severity = FIELDS[0].options[severity];
          if (template === 1) row.custom_priority = FIELDS[1].options[int(rng, 0, 3)];
          if (template !== 3 && chance(rng, 0.6)) {
            row.custom_preconditions = `<p>User has a <strong>${pick(rng, OBJECTS)}</strong></p><ul><li>logged in</li><li>locale &quot;${pick(rng, ['en', 'de', 'fr'])}&quot;</li></ul>`;
          }
          if (template === 3) row.custom_mission = `<p>Explore ${pick(rng, OBJECTS)} handling${pick(rng, QUALIFIERS)}</p>`;
          return row;
        };
        for (let p = 0; p < P; p++) {
          const n = m.caseCount[p];
          for (let j = 0; j < n; j++) {
            const id = m.caseStart[p] + j;
            const folder = m.folderStart[p] + Math.floor((j * m.folderCount[p]) / n);
            yield caseRow(id, p, masterRepo(p), folder, m.caseTemplate[id - m.firstCaseId], j + 1);
          }
        }
        let snapshotId = m.firstCaseId + o.cases;
        for (let p = 0; p < P; p++) {
          for (let j = 0; j < m.snapshotCount[p]; j++) {
            yield caseRow(snapshotId++, p, snapshotRepo(p), m.snapshotFolderStart[p] + (j % 2), 1, j + 1);
          }
        }
      },
    },
    {
      name: 'repository_case_steps', schema: S('id:id case_id:id project_id:id repo_id:id display_order:int text1 text2 text3 text4'),
      rows: function* () {
        const rng = rngFor(seed, 'repository_case_steps');
        let id = 1;
        for (let i = 0; i < o.cases; i++) {
          const caseId = m.firstCaseId + i;
          const p = caseProject(caseId);
          for (let s = 1; s <= m.caseSteps[i]; s++) {
            const object = pick(rng, OBJECTS);
            yield {
              id: id++, case_id: caseId, project_id: projectId(p), repo_id: masterRepo(p), display_order: s,
              text1: `<p>${s === 1 ? 'Open' : pick(rng, VERBS)} the ${object}</p>`,
              text2: chance(rng, 0.3) ? `<p>${object}=<code>${int(rng, 1, 999)}</code></p>` : null,
              text3: `<p>The ${object} is ${pick(rng, ['listed', 'saved', 'shown', 'updated', 'gone'])}</p>`,
              text4: chance(rng, 0.1) ? '<p>Total &lt;= 100 &euro;</p>' : null,
            };
          }
        }
      },
    },
    {
      name: 'repository_case_values', schema: S('case_id:id field_id:id value_id:id project_id:id repo_id:id'),
      rows: function* () {
        const rng = rngFor(seed, 'repository_case_values');
        for (let i = 0; i < o.cases; i++) {
          const caseId = m.firstCaseId + i;
          const p = caseProject(caseId);
          const template = TEMPLATES[m.caseTemplate[i] - 1];
          for (const f of template.caseFields) {
            const field = FIELDS[f - 1];
            if (field.options.length === 0) continue;
            yield { case_id: caseId, field_id: f, value_id: fieldValueId(f, int(rng, 0, field.options.length - 1)), project_id: projectId(p), repo_id: masterRepo(p) };
          }
        }
      },
    },
    {
      name: 'repository_case_tags', schema: S('case_id:id tag_id:id'),
      rows: function* () {
        const rng = rngFor(seed, 'repository_case_tags');
        for (let i = 0; i < o.cases; i++) {
          const n = rng() < 0.5 ? 0 : int(rng, 1, 3);
          const first = int(rng, 1, TAGS.length);
          for (let k = 0; k < n; k++) yield { case_id: m.firstCaseId + i, tag_id: ((first + k * 7 - 1) % TAGS.length) + 1 };
        }
      },
    },
    {
      name: 'issues', schema: S('id:id project_id:id target_id:id display_id'),
      rows: function* () {
        for (let p = 0; p < P; p++) {
          for (let k = 0; k < m.issueCount[p]; k++) {
            const jira = k % 4 !== 3;
            yield {
              id: m.issueStart[p] + k, project_id: projectId(p), target_id: jira ? 1 : 2,
              display_id: jira ? `${projectKey(p)}-${100 + k}` : `#${1000 + k}`,
            };
          }
        }
      },
    },
    {
      name: 'repository_case_issues', schema: S('case_id:id issue_id:id'),
      rows: function* () {
        const rng = rngFor(seed, 'repository_case_issues');
        for (let i = 0; i < o.cases; i++) {
          if (!chance(rng, 0.05)) continue;
          const p = caseProject(m.firstCaseId + i);
          yield { case_id: m.firstCaseId + i, issue_id: m.issueStart[p] + int(rng, 0, m.issueCount[p] - 1) };
        }
      },
    },
    {
      name: 'sessions',
      schema: S('id:id project_id:id template_id:id name note custom_mission config_id:id milestone_id:id state_id:id assignee_id:id estimate:int forecast:int elapsed:int is_closed:bool closed_at:datetime created_at:datetime created_by:id'),
      rows: function* () {
        const rng = rngFor(seed, 'sessions');
        for (let s = 0; s < m.sessionCount(); s++) {
          const p = s % P;
          const created = at(rng, 30, 300);
          const closed = chance(rng, 0.8);
          const object = pick(rng, OBJECTS);
          yield {
            id: 800 + s, project_id: projectId(p), template_id: 3, name: `Explore ${object}s`, note: null,
            custom_mission: `<p>Break the ${object} form${pick(rng, QUALIFIERS)}</p>`, config_id: int(rng, 1, configCount),
            milestone_id: milestoneId(p, int(rng, 0, 7)), state_id: closed ? 4 : 3, assignee_id: user(rng),
            estimate: int(rng, 1, 4) * 30 * MINUTE_US, forecast: null, elapsed: closed ? int(rng, 10, 180) * MINUTE_US : null,
            is_closed: closed ? 1 : 0, closed_at: closed ? iso(created + 3 * 3_600_000) : null, created_at: iso(created), created_by: user(rng),
          };
        }
      },
    },
    {
      name: 'session_results', schema: S('id:id session_id:id status_id:id comment elapsed:int created_at:datetime created_by:id'),
      rows: function* () {
        const rng = rngFor(seed, 'session_results');
        let id = 1;
        for (let s = 0; s < m.sessionCount(); s++) {
          const n = int(rng, 1, 5);
          for (let k = 0; k < n; k++) {
            yield {
              id: id++, session_id: 800 + s, status_id: resultStatus(rng), comment: pick(rng, COMMENTS) ?? '<p>Nothing found.</p>',
              elapsed: int(rng, 1, 40) * MINUTE_US, created_at: iso(at(rng, 30, 300)), created_by: user(rng),
            };
          }
        }
      },
    },
    {
      name: 'runs',
      schema: S('id:id project_id:id name note docs config_id:id milestone_id:id state_id:id forecast:int elapsed:int is_closed:bool closed_at:datetime created_at:datetime created_by:id'),
      rows: function* () {
        const rng = rngFor(seed, 'runs');
        for (let r = 0; r < o.runs; r++) {
          const p = m.runProject[r];
          const created = BASE_TIME + 20 * DAY + Math.floor((r / Math.max(1, o.runs)) * 300 * DAY);
          const closed = r < o.runs * 0.9;
          const milestone = chance(rng, 0.8) ? milestoneId(p, int(rng, 0, 7)) : null;
          yield {
            id: r + 1, project_id: projectId(p), name: `${pick(rng, ['Regression', 'Smoke', 'Release', 'Nightly', 'Exploratory follow-up'])} ${projectName(p)} #${r + 1}`,
            note: chance(rng, 0.3) ? '<p>Run against <code>staging</code>.</p>' : null, docs: null,
            config_id: chance(rng, 0.7) ? int(rng, 1, configCount) : null, milestone_id: milestone, state_id: closed ? 4 : 3,
            forecast: m.runTests[r] * 5 * MINUTE_US, elapsed: m.runResults[r] * int(rng, 1, 6) * MINUTE_US,
            is_closed: closed ? 1 : 0, closed_at: closed ? iso(created + 2 * DAY) : null, created_at: iso(created), created_by: user(rng),
          };
        }
      },
    },
    {
      name: 'run_tests', schema: S('id:id run_id:id case_id:id name status_id:id assignee_id:id is_selected:bool'),
      rows: function* () {
        const rng = rngFor(seed, 'run_tests');
        const names = rngFor(seed, 'names');
        for (let r = 0; r < o.runs; r++) {
          const plan = m.planRun(r);
          const last = new Uint8Array(m.runTests[r]).fill(UNTESTED);
          for (let k = 0; k < plan.test.length; k++) last[plan.test[k]] = plan.status[k];
          for (let t = 0; t < m.runTests[r]; t++) {
            yield {
              id: m.runTestStart[r] + t, run_id: r + 1, case_id: caseOfTest(r, t), name: title(names),
              status_id: last[t], assignee_id: chance(rng, 0.9) ? user(rng) : null, is_selected: 1,
            };
          }
        }
      },
    },
    {
      name: 'run_results',
      schema: S('id:id run_id:id test_id:id status_id:id comment elapsed:int is_deleted:bool created_at:datetime created_by:id custom_browser_version'),
      rows: function* () {
        const rng = rngFor(seed, 'run_results');
        for (const result of m.results()) {
          const created = BASE_TIME + 21 * DAY + Math.floor((result.run / Math.max(1, o.runs)) * 300 * DAY) + result.index * 60_000;
          yield {
            id: result.id, run_id: result.run + 1, test_id: m.runTestStart[result.run] + result.test, status_id: result.status,
            comment: result.status === 1 ? (chance(rng, 0.1) ? COMMENTS[0] : null) : pick(rng, COMMENTS),
            elapsed: int(rng, 5, 900) * 1_000_000, is_deleted: result.deleted ? 1 : 0, created_at: iso(created),
            created_by: chance(rng, 0.05) ? 1 : user(rng),
            custom_browser_version: chance(rng, 0.5) ? String(int(rng, 118, 131)) : null,
          };
        }
      },
    },
    {
      name: 'run_result_steps',
      schema: S('id:id result_id:id test_id:id status_id:id display_order:int comment elapsed:int text1 text2 text3 text4'),
      rows: function* () {
        const rng = rngFor(seed, 'run_result_steps');
        let id = 1;
        for (const result of m.results()) {
          if (result.deleted || !chance(rng, 0.1)) continue;
          const caseIndex = caseOfTest(result.run, result.test) - m.firstCaseId;
          const steps = m.caseSteps[caseIndex];
          for (let s = 1; s <= steps; s++) {
            const failedHere = result.status !== 1 && s === steps;
            yield {
              id: id++, result_id: result.id, test_id: m.runTestStart[result.run] + result.test, status_id: failedHere ? result.status : 1,
              display_order: s, comment: failedHere ? pick(rng, COMMENTS) : null, elapsed: chance(rng, 0.5) ? int(rng, 1, 120) * 1_000_000 : null,
              text1: `<p>Step ${s}</p>`, text2: null, text3: `<p>Expected outcome ${s}</p>`, text4: null,
            };
          }
        }
      },
    },
    {
      name: 'run_tags', schema: S('run_id:id tag_id:id'),
      rows: function* () {
        const rng = rngFor(seed, 'run_tags');
        for (let r = 0; r < o.runs; r++) {
          const n = int(rng, 0, 2);
          const first = int(rng, 1, TAGS.length);
          for (let k = 0; k < n; k++) yield { run_id: r + 1, tag_id: ((first + k * 11 - 1) % TAGS.length) + 1 };
        }
      },
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Output: a byte sink with backpressure, a JSON emitter (shapes A/B/C) and a streaming ZIP emitter.

class ByteSink {
  bytes = 0;
  private error: Error | null = null;

  constructor(readonly writable: Writable) {
    writable.on('error', (error: Error) => {
      this.error = error;
    });
  }

  async write(chunk: Buffer): Promise<void> {
    this.check();
    this.bytes += chunk.length;
    if (!this.writable.write(chunk)) await this.drain();
  }

  /** Writes without waiting (the caller pauses its producer on `false`). */
  push(chunk: Buffer): boolean {
    this.bytes += chunk.length;
    return this.writable.write(chunk);
  }

  async drain(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        this.writable.off('error', failed);
        resolve();
      };
      const failed = (error: Error) => {
        this.writable.off('drain', done);
        reject(error);
      };
      this.writable.once('drain', done);
      this.writable.once('error', failed);
    });
  }

  check(): void {
    if (this.error) throw this.error;
  }
}

/** Collects text and hands it on in chunks of about 64 KiB (one write per row would be slow). */
class TextBuffer {
  private parts: string[] = [];
  private length = 0;

  constructor(private readonly flushTo: (chunk: Buffer) => Promise<void>) {}

  async add(text: string): Promise<void> {
    this.parts.push(text);
    this.length += text.length;
    if (this.length >= 65_536) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.length === 0) return;
    const chunk = Buffer.from(this.parts.join(''), 'utf8');
    this.parts = [];
    this.length = 0;
    await this.flushTo(chunk);
  }
}

interface Emitter {
  start(): Promise<void>;
  begin(name: string, schema: Record<string, string>): Promise<void>;
  row(json: string): Promise<void>;
  end(): Promise<void>;
  finish(): Promise<void>;
}

class JsonEmitter implements Emitter {
  readonly text: TextBuffer;
  private datasetCount = 0;
  private rowCount = 0;

  constructor(sink: ByteSink, private readonly shape: ExportShape, private readonly seed: number) {
    this.text = new TextBuffer((chunk) => sink.write(chunk));
  }

  async start(): Promise<void> {
    if (this.shape === 'A') await this.text.add('{');
    if (this.shape === 'B') await this.text.add(`{"meta":${JSON.stringify({ source: 'testmo', generator: 'testament scripts/generateExport.ts', seed: this.seed })},"datasets":{`);
    if (this.shape === 'C') await this.text.add('{"datasets":[');
  }

  async begin(name: string, schema: Record<string, string>): Promise<void> {
    const comma = this.datasetCount++ > 0 ? ',' : '';
    this.rowCount = 0;
    if (this.shape === 'C') await this.text.add(`${comma}\n{"name":${JSON.stringify(name)},"schema":${JSON.stringify(schema)},"rows":[`);
    else await this.text.add(`${comma}\n${JSON.stringify(name)}:{"schema":${JSON.stringify(schema)},"data":[`);
  }

  async row(json: string): Promise<void> {
    await this.text.add(this.rowCount++ > 0 ? `,\n${json}` : `\n${json}`);
  }

  async end(): Promise<void> {
    await this.text.add(']}');
  }

  async finish(): Promise<void> {
    await this.text.add(this.shape === 'A' ? '\n}\n' : this.shape === 'B' ? '\n}}\n' : '\n]}\n');
    await this.text.flush();
  }
}

/**
 * One deflated entry per dataset, written as it is produced: sizes and CRC follow the data in a
 * data descriptor (general-purpose flag bit 3), as yazl and archiver do, so nothing is buffered or
 * seeked back to. No ZIP64: an entry or the archive past 4 GiB is refused (default sizes stay far below).
 */
class ZipEmitter implements Emitter {
  readonly central: Buffer[] = [];
  private entryCount = 0;
  private current: { name: Buffer; offset: number; crc: number; size: number; compressed: number; deflate: zlib.DeflateRaw; text: TextBuffer } | null = null;
  private rowCount = 0;

  constructor(private readonly sink: ByteSink) {}

  async start(): Promise<void> {}

  async begin(name: string, schema: Record<string, string>): Promise<void> {
    const nameBytes = Buffer.from(`${name}.json`, 'utf8');
    const offset = this.sink.bytes;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: deflate
    local.writeUInt16LE(0x0808, 6); // data descriptor follows, UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt16LE(nameBytes.length, 26);
    await this.sink.write(Buffer.concat([local, nameBytes]));

    const deflate = zlib.createDeflateRaw({ level: 6 });
    const entry = {
      name: nameBytes, offset, crc: 0, size: 0, compressed: 0, deflate,
      text: new TextBuffer(async (chunk) => {
        entry.crc = zlib.crc32(chunk, entry.crc);
        entry.size += chunk.length;
        if (!deflate.write(chunk)) await once(deflate, 'drain');
      }),
    };
    deflate.on('data', (chunk: Buffer) => {
      entry.compressed += chunk.length;
      if (!this.sink.push(chunk)) {
        deflate.pause();
        this.sink.writable.once('drain', () => deflate.resume());
      }
    });
    this.current = entry;
    this.rowCount = 0;
    await entry.text.add(`{"schema":${JSON.stringify(schema)},"data":[`);
  }

  async row(json: string): Promise<void> {
    await this.current!.text.add(this.rowCount++ > 0 ? `,\n${json}` : `\n${json}`);
  }

  async end(): Promise<void> {
    const entry = this.current!;
    await entry.text.add(']}\n');
    await entry.text.flush();
    const ended = once(entry.deflate, 'end');
    entry.deflate.end();
    await ended;
    if (entry.size > 0xffffffff || entry.compressed > 0xffffffff || entry.offset > 0xffffffff) {
      throw new Error(`${entry.name.toString()} is past 4 GiB: this generator writes no ZIP64`);
    }
    const descriptor = Buffer.alloc(16);
    descriptor.writeUInt32LE(0x08074b50, 0);
    descriptor.writeUInt32LE(entry.crc, 4);
    descriptor.writeUInt32LE(entry.compressed, 8);
    descriptor.writeUInt32LE(entry.size, 12);
    await this.sink.write(descriptor);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // made by
    central.writeUInt16LE(20, 6); // needed
    central.writeUInt16LE(0x0808, 8);
    central.writeUInt16LE(8, 10);
    central.writeUInt16LE(DOS_TIME, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(entry.crc, 16);
    central.writeUInt32LE(entry.compressed, 20);
    central.writeUInt32LE(entry.size, 24);
    central.writeUInt16LE(entry.name.length, 28);
    central.writeUInt32LE(entry.offset, 42);
    this.central.push(central, entry.name);
    this.entryCount++;
    this.current = null;
  }

  async finish(): Promise<void> {
    const directory = Buffer.concat(this.central);
    const offset = this.sink.bytes;
    if (offset > 0xffffffff || this.entryCount > 0xffff) throw new Error('the archive is past ZIP limits: this generator writes no ZIP64');
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(this.entryCount, 8);
    end.writeUInt16LE(this.entryCount, 10);
    end.writeUInt32LE(directory.length, 12);
    end.writeUInt32LE(offset, 16);
    await this.sink.write(Buffer.concat([directory, end]));
  }
}

/** 2024-01-01 00:00 in MS-DOS format: a fixed stamp keeps the archive byte-identical between runs. */
const DOS_DATE = ((2024 - 1980) << 9) | (1 << 5) | 1;
const DOS_TIME = 0;

// ---------------------------------------------------------------------------------------------
// CLI

const USAGE = 'usage: tsx scripts/generateExport.ts --out <file.json|file.zip> [--seed 1] [--cases 50000] [--runs 2000] '
  + '[--results 500000] [--projects 5] [--users 50] [--shape A|B|C] [--match-email a@example.com,b@example.com]';

export function parseArgs(argv: readonly string[]): { out: string; options: GenerateOptions } {
  const options: GenerateOptions = { ...DEFAULT_OPTIONS, matchEmails: [...DEFAULT_OPTIONS.matchEmails] };
  let out: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    i++;
    switch (flag) {
      case '--out': out = value; break;
      case '--seed': case '--cases': case '--runs': case '--results': case '--projects': case '--users':
        options[flag.slice(2) as 'seed'] = Number(value);
        break;
      case '--shape': options.shape = value.toUpperCase() as ExportShape; break;
      case '--match-email': options.matchEmails = value.split(',').map((e) => e.trim()).filter(Boolean); break;
      default: throw new Error(`unknown option ${flag}`);
    }
  }
  if (!out) throw new Error('--out is required');
  options.format = path.extname(out).toLowerCase() === '.zip' ? 'zip' : 'json';
  return { out, options };
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const summary = await generateExport(parsed.options, fs.createWriteStream(parsed.out));
  const maxRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
  console.error(JSON.stringify({ out: parsed.out, ...summary, maxRssMb }, null, 2));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
