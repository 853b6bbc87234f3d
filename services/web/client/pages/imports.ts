import { get, post, put, upload, type User } from '../api';
import { bytes, type Child, count, h, progressBar, replace, when } from '../dom';
import { action, errorBox, frame } from '../layout';

/**
 * `/admin/imports` and `/admin/imports/{jobId}`: the migration wizard over
 * /api/admin/imports/external/jobs. Upload → analysis → mappings → review and execute → progress,
 * then the result with cancel and rollback. The job's phase (from the API) decides the step shown,
 * so a person can leave and come back to a job from the list.
 */
const JOBS = '/api/admin/imports/external/jobs';
const POLL_MS = 1000;

type Phase = 'uploaded' | 'analysing' | 'analysed' | 'configured' | 'queued' | 'importing' | 'completed' | 'failed' | 'cancelled' | 'rollingBack' | 'rolledBack';
interface Issue { code: string; message: string; details: Record<string, unknown> }
interface Dataset {
  name: string; disposition: 'import' | 'skip'; skipReason: string | null; rowCount: number; sampleRows?: unknown[]; samplesTruncated?: boolean;
  warnings: Issue[]; errors: Issue[]; progress: { rows: number; processed: number; created: number; skipped: number; percent: number } | null;
}
interface Entry { sourceId: string; action: 'map' | 'create' | 'skip'; targetId?: number; kind?: 'caseField' | 'resultField' }
type Mappings = Record<string, Entry[]>;
interface Source { sourceId: string; name: string; hint?: Record<string, unknown> }
interface Job {
  jobId: number; phase: Phase; cancelRequested: boolean; file: { name: string; size: number; deleted: boolean };
  datasets: Dataset[]; warnings: Issue[]; errors: Issue[]; mappings: Mappings | null; suggestions?: Mappings | null; sources?: Record<string, Source[]> | null;
  progress: { currentDataset: string | null; rows: number; processed: number; percent: number };
  counts: Record<string, { created: number; mapped: number; skipped: number }> | null; deleted: Record<string, number> | null;
  error: { code: string; error: string } | null; createdBy: { name: string; email: string } | null;
  createdAt: string; finishedAt: string | null; rolledBackAt: string | null;
}
interface Preview {
  datasets: Array<{ dataset: string; rows: number; create: number; map: number; skip: number; skipReasons: Record<string, number>; readWith?: string }>;
  skipped: Array<{ dataset: string; rows: number; reason: string }>;
  /** Rows executing would refuse (a placeholder user whose e-mail is claimed): map or skip them first. */
  conflicts?: Array<{ dataset: string; sourceId: string; message: string }>;
}

const PHASE_LABEL: Record<Phase, string> = {
  uploaded: 'uploaded', analysing: 'analysing', analysed: 'analysed', configured: 'configured', queued: 'queued', importing: 'importing',
  completed: 'completed', failed: 'failed', cancelled: 'cancelled', rollingBack: 'rolling back', rolledBack: 'rolled back',
};
const STEPS = ['Upload', 'Analyse', 'Map', 'Review', 'Import'] as const;
const stepOf = (phase: Phase): number => ({ uploaded: 1, analysing: 1, analysed: 2, configured: 3, queued: 4, importing: 4 } as Record<string, number>)[phase] ?? 5;

/** What each mapping list maps to: the model API entity and the field people know its rows by. */
const TARGETS: Record<string, { label: string; entity: string; field: string }> = {
  states: { label: 'Workflow states', entity: 'workflow', field: 'name' },
  statuses: { label: 'Result statuses', entity: 'status', field: 'name' },
  users: { label: 'Users (matched by e-mail)', entity: 'user', field: 'email' },
  roles: { label: 'Roles', entity: 'role', field: 'name' },
  templates: { label: 'Templates', entity: 'template', field: 'name' },
  templateFields: { label: 'Template fields', entity: 'caseField', field: 'displayName' },
  milestoneTypes: { label: 'Milestone types', entity: 'milestoneType', field: 'name' },
  groups: { label: 'Groups', entity: 'group', field: 'name' },
  issueTrackers: { label: 'Issue trackers', entity: 'integration', field: 'name' },
  configurations: { label: 'Configurations', entity: 'configuration', field: 'name' },
  tags: { label: 'Tags', entity: 'tag', field: 'name' },
};

export function importsPage(user: User, jobId: number | null): HTMLElement {
  if (jobId === null) return frame(user, 'Imports from another tool', uploadStep(), jobList());
  const body = h('div', { class: 'job' }, h('p', { class: 'loading' }, 'Loading the job…'));
  void showJob(body, jobId);
  return frame(user, `Import job ${jobId}`, h('p', null, h('a', { href: '/admin/imports' }, 'All import jobs')), body);
}

/** Step 1: the export file, sent with its progress. */
function uploadStep(): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const file = h('input', { id: 'export-file', name: 'file', type: 'file', accept: '.zip,.json,application/zip,application/json', required: true });
  const submit = h('button', { type: 'submit' }, 'Upload and analyse');
  return h('section', { class: 'card', 'aria-labelledby': 'upload-title' },
    h('h2', { id: 'upload-title' }, 'Step 1: upload an export'),
    h('p', null, 'A ZIP export of the other tool, or its JSON. The server analyses it before anything is imported.'),
    h('form', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const chosen = file.files?.[0];
        if (!chosen) {
          replace(status, errorBox(new Error('Choose the export file first.')));
          file.focus();
          return;
        }
        submit.disabled = true;
        const bar = progressBar('Upload', 0);
        replace(status, h('p', null, `Uploading ${chosen.name} (${bytes(chosen.size)})…`), bar);
        try {
          const job = await upload<{ data?: { jobId: number }; jobId?: number }>(JOBS, 'file', chosen, (p) => replace(status, h('p', null, `Uploading ${chosen.name} (${bytes(chosen.size)})…`), progressBar('Upload', p)));
          location.assign(`/admin/imports/${job.data?.jobId ?? job.jobId}`);
        } catch (err) {
          replace(status, errorBox(err));
          submit.disabled = false;
        }
      },
    },
    h('div', { class: 'field' }, h('label', { for: 'export-file' }, 'Export file'), file),
    submit, status));
}

/** The jobs to come back to. */
function jobList(): HTMLElement {
  const body = h('div', null, h('p', { class: 'loading' }, 'Loading the jobs…'));
  void (async () => {
    try {
      const page = await get<{ data: Job[] }>(`${JOBS}?take=50`);
      replace(body, page.data.length === 0 ? h('p', null, 'No import jobs yet.') : scrolling('Latest import jobs', h('table', null,
        h('caption', null, 'Latest import jobs'),
        h('thead', null, h('tr', null, ['Job', 'File', 'Phase', 'Progress', 'Started by', 'Uploaded'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, page.data.map((j) => h('tr', null,
          h('td', null, h('a', { href: `/admin/imports/${j.jobId}` }, `Job ${j.jobId}`)),
          h('td', null, j.file.name),
          h('td', null, PHASE_LABEL[j.phase] ?? j.phase),
          h('td', null, `${j.progress.percent} %`),
          h('td', null, j.createdBy?.name ?? '—'),
          h('td', null, when(j.createdAt))))))));
    } catch (err) {
      replace(body, errorBox(err));
    }
  })();
  return h('section', { class: 'card', 'aria-labelledby': 'jobs-title' }, h('h2', { id: 'jobs-title' }, 'Import jobs'), body);
}

function stepper(phase: Phase): HTMLElement {
  const at = stepOf(phase);
  return h('ol', { class: 'steps', 'aria-label': 'Wizard steps' }, STEPS.map((label, i) => h('li', {
    class: i < at ? 'done' : i === at ? 'current' : 'todo', ...(i === at && { 'aria-current': 'step' }),
  }, `${i + 1}. ${label}`)));
}

/** Draws the job as its phase says, and polls while the server works on it. */
async function showJob(body: HTMLElement, jobId: number): Promise<void> {
  let job: Job;
  try {
    job = (await get<{ data: Job }>(`${JOBS}/${jobId}`)).data;
  } catch (err) {
    replace(body, errorBox(err));
    return;
  }
  const again = () => showJob(body, jobId);
  const working = ['uploaded', 'analysing', 'queued', 'importing', 'rollingBack'].includes(job.phase);
  const view: Child[] = [stepper(job.phase), summary(job)];
  if (job.phase === 'uploaded' || job.phase === 'analysing') view.push(h('p', { role: 'status' }, 'Analysing the export…'));
  if (['analysed', 'configured'].includes(job.phase)) view.push(analysis(job), mappingsStep(job, again), reviewStep(job, again));
  if (['queued', 'importing', 'completed', 'failed', 'cancelled', 'rollingBack', 'rolledBack'].includes(job.phase)) view.push(progressStep(job, again));
  if (job.phase === 'failed' && job.error) view.push(h('div', { class: 'error', role: 'alert' }, h('p', null, job.error.error), h('p', { class: 'meta' }, `code: ${job.error.code}`)));
  // A redraw while polling keeps the focus where it was when the same control is drawn again.
  const focused = document.activeElement?.id;
  replace(body, ...view);
  if (focused) document.getElementById(focused)?.focus();
  if (working) window.setTimeout(again, POLL_MS);
}

function summary(job: Job): HTMLElement {
  return h('dl', { class: 'summary' },
    h('dt', null, 'Phase'), h('dd', { 'data-phase': job.phase }, PHASE_LABEL[job.phase] ?? job.phase, job.cancelRequested && job.phase === 'importing' ? ' (cancel requested)' : ''),
    h('dt', null, 'File'), h('dd', null, `${job.file.name} (${bytes(job.file.size)})${job.file.deleted ? ', deleted since' : ''}`),
    h('dt', null, 'Started by'), h('dd', null, job.createdBy ? `${job.createdBy.name} (${job.createdBy.email})` : '—'),
    h('dt', null, 'Uploaded'), h('dd', null, when(job.createdAt)));
}

const issues = (list: Issue[], kind: string): Child => (list.length === 0 ? null : h('ul', { class: kind }, list.map((i) => h('li', null, `${i.message} (${i.code})`))));

/** Step 2: what the export holds, dataset by dataset, with sample rows. */
function analysis(job: Job): HTMLElement {
  return h('section', { class: 'card', 'aria-labelledby': 'analysis-title' },
    h('h2', { id: 'analysis-title' }, 'Step 2: analysis'),
    issues(job.errors, 'errors'), issues(job.warnings, 'warnings'),
    scrolling('Datasets in the export', h('table', null,
      h('caption', null, 'Datasets in the export'),
      h('thead', null, h('tr', null, ['Dataset', 'Rows', 'Imported', 'Warnings', 'Errors'].map(columnHeader))),
      h('tbody', null, job.datasets.map((d) => h('tr', null,
        h('th', { scope: 'row' }, d.name), h('td', { class: 'num' }, count(d.rowCount)),
        h('td', null, d.disposition === 'import' ? 'yes' : `no: ${d.skipReason ?? 'skipped'}`),
        h('td', { class: 'num' }, d.warnings.length), h('td', { class: 'num' }, d.errors.length)))))),
    job.datasets.filter((d) => (d.sampleRows?.length ?? 0) > 0 || d.warnings.length + d.errors.length > 0).map((d) => h('details', null,
      h('summary', null, `${d.name}: sample rows${d.samplesTruncated ? ' (values cut short)' : ''}`),
      issues(d.errors, 'errors'), issues(d.warnings, 'warnings'),
      sampleTable(d))));
}

function sampleTable(d: Dataset): Child {
  const rows = (d.sampleRows ?? []).filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null);
  if (rows.length === 0) return null;
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))].slice(0, 12);
  const cell = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return scrolling(`Sample rows of ${d.name}`, h('table', { class: 'sample' },
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows.map((r) => h('tr', null, columns.map((c) => h('td', null, cell(r[c]))))))));
}

/** Step 3: per mapping list, each source row mapped to an existing entity, created, or skipped. */
function mappingsStep(job: Job, redraw: () => void): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const current: Mappings = structuredClone(job.mappings ?? job.suggestions ?? {});
  const keys = Object.keys(TARGETS).filter((k) => (job.sources?.[k]?.length ?? 0) > 0);
  const save = action('Save mappings', async () => {
    await put(`${JOBS}/${job.jobId}/configuration`, { mappings: current });
    redraw();
    return h('p', null, 'Mappings saved.');
  }, { id: 'save-mappings', cls: '', status });
  const reset = action('Reset to suggestions', async () => {
    await put(`${JOBS}/${job.jobId}/configuration`, { reset: true });
    redraw();
    return h('p', null, 'The suggested mappings are back.');
  }, { id: 'reset-mappings', status });
  return h('section', { class: 'card', 'aria-labelledby': 'mappings-title' },
    h('h2', { id: 'mappings-title' }, 'Step 3: mappings'),
    h('p', null, 'For each row of the export\'s configuration: map it to an entity that exists here, create it, or skip it. Users are matched by e-mail; a missing account can be created as an inactive placeholder.'),
    keys.length === 0 ? h('p', null, 'The export has nothing to map.') : keys.map((key) => mappingTable(key, job.sources![key], current)),
    h('div', { class: 'actions' }, save, reset), status);
}

function mappingTable(key: string, sources: Source[], current: Mappings): HTMLElement {
  const target = TARGETS[key];
  const list = (current[key] ??= []);
  const entryOf = (sourceId: string): Entry => {
    let entry = list.find((e) => e.sourceId === sourceId);
    if (!entry) list.push((entry = { sourceId, action: 'create' }));
    return entry;
  };
  // A template field becomes a case field or a result field (its entry says which): picked among those.
  const optionsOf = (entry: Entry) => (entry.kind === 'resultField' ? loadTargets('resultField', target.field) : loadTargets(target.entity, target.field));
  return h('section', { class: 'mapping', 'aria-labelledby': `map-${key}` },
    h('h3', { id: `map-${key}` }, target.label),
    scrolling(target.label, h('table', null,
      h('thead', null, h('tr', null, ['In the export', 'Action', 'Existing entity'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, sources.map((source, i) => {
        const entry = entryOf(source.sourceId);
        const id = `map-${key}-${i}`;
        const action = h('select', { id: `${id}-action`, 'aria-label': `Action for ${source.name}` },
          (['map', 'create', 'skip'] as const).map((a) => h('option', { value: a, ...(entry.action === a && { selected: true }) }, a === 'map' ? 'map to existing' : a)));
        const picker = h('select', { id: `${id}-target`, 'aria-label': `Existing ${entry.kind ?? target.entity} for ${source.name}`, disabled: entry.action !== 'map' },
          h('option', { value: '' }, 'Loading…'));
        void optionsOf(entry).then((rows) => replace(picker,
          h('option', { value: '' }, rows.length === 0 ? 'none exist' : 'choose…'),
          rows.map((r) => h('option', { value: r.id, ...(entry.targetId === r.id && { selected: true }) }, `${r.label} (#${r.id})`))));
        action.addEventListener('change', () => {
          entry.action = action.value as Entry['action'];
          picker.disabled = entry.action !== 'map';
          if (entry.action !== 'map') delete entry.targetId;
          else if (picker.value) entry.targetId = Number(picker.value);
        });
        picker.addEventListener('change', () => {
          if (picker.value) entry.targetId = Number(picker.value);
          else delete entry.targetId;
        });
        return h('tr', null, h('th', { scope: 'row' }, source.name, h('span', { class: 'meta' }, ` id ${source.sourceId}`)), h('td', null, action), h('td', null, picker));
      })))));
}

const targetCache = new Map<string, Promise<Array<{ id: number; label: string }>>>();
function loadTargets(entity: string, field: string): Promise<Array<{ id: number; label: string }>> {
  const key = `${entity}.${field}`;
  if (!targetCache.has(key)) {
    targetCache.set(key, post<{ data: Array<Record<string, unknown>> }>(`/api/model/${entity}/findMany`, { select: { id: true, [field]: true }, orderBy: { [field]: 'asc' }, take: 1000 })
      .then((r) => r.data.map((row) => ({ id: row.id as number, label: String(row[field] ?? row.id) })))
      .catch(() => []));
  }
  return targetCache.get(key)!;
}

/** "1 row", "2,000 rows". */
const rows = (n: number) => `${count(n)} ${n === 1 ? 'row' : 'rows'}`;

/** Columns of counts: their headers stand right, over their numbers. */
const NUMERIC_COLUMNS = new Set(['Rows', 'Warnings', 'Errors', 'Create', 'Map', 'Skip', 'Created', 'Mapped', 'Skipped', 'Rolled back']);
const columnHeader = (c: string) => h('th', { scope: 'col', ...(NUMERIC_COLUMNS.has(c) && { class: 'num' }) }, c);

/** A table that scrolls sideways on its own where the window is narrower (a keyboard scrolls it too: it takes focus). */
function scrolling(label: string, table: HTMLElement): HTMLElement {
  return h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': label }, table);
}

/** Step 4: a dry run of what executing would do, then execute. */
function reviewStep(job: Job, redraw: () => void): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const result = h('div');
  const preview = action('Preview', async () => {
    const p = (await post<{ data: Preview }>(`${JOBS}/${job.jobId}/preview`)).data;
    replace(result, scrolling('What executing would do', h('table', null,
      h('caption', null, 'What executing would do'),
      h('thead', null, h('tr', null, ['Dataset', 'Rows', 'Create', 'Map', 'Skip'].map(columnHeader))),
      h('tbody', null, p.datasets.map((d) => h('tr', null, h('th', { scope: 'row' }, d.dataset),
        ...[d.rows, d.create, d.map, d.skip].map((n) => h('td', { class: 'num' }, count(n)))))))),
    (p.conflicts ?? []).length > 0 ? h('ul', { class: 'errors' }, p.conflicts!.map((c) => h('li', null, `${c.message}: map or skip it before executing`))) : null,
    p.skipped.length > 0 ? h('ul', { class: 'warnings' }, p.skipped.map((s) => h('li', null, `${s.dataset}: ${rows(s.rows)} not imported (${s.reason})`))) : null,
    p.datasets.some((d) => d.skip > 0)
      ? h('ul', { class: 'warnings' }, p.datasets.flatMap((d) => Object.entries(d.skipReasons).map(([reason, n]) => h('li', null, `${d.dataset}: ${rows(n)} skipped (${reason})`))))
      : null);
    return null;
  }, { id: 'preview', status, busy: 'Working out what the import would do…' });
  const execute = action('Execute the import', async () => {
    await post(`${JOBS}/${job.jobId}/execute`);
    redraw();
    return null;
  }, { id: 'execute', cls: '', status, disabled: job.phase !== 'configured' });
  return h('section', { class: 'card', 'aria-labelledby': 'review-title' },
    h('h2', { id: 'review-title' }, 'Step 4: review and execute'),
    job.phase === 'configured' ? h('p', null, 'The mappings are saved. Preview what the import does, then execute it; it runs in the background, so this page may be left.')
      : h('p', null, 'Save the mappings first (step 3): the import runs with the saved ones.'),
    h('div', { class: 'actions' }, preview, execute), status, result);
}

/** Step 5: progress per dataset while importing; then the outcome, with cancel and rollback. */
function progressStep(job: Job, redraw: () => void): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const act = (label: string, id: string, operation: 'cancel' | 'rollback', question: string) =>
    action(label, async () => {
      await post(`${JOBS}/${job.jobId}/${operation}`);
      redraw();
      return null;
    }, { id, status, confirm: question, cls: operation === 'rollback' ? 'danger' : 'secondary' });
  const running = job.phase === 'queued' || job.phase === 'importing';
  const ended = ['completed', 'failed', 'cancelled'].includes(job.phase);
  const datasets = job.datasets.filter((d) => d.progress !== null);
  return h('section', { class: 'card', 'aria-labelledby': 'progress-title' },
    h('h2', { id: 'progress-title' }, running ? 'Step 5: importing' : job.phase === 'rollingBack' ? 'Rolling back' : 'Result'),
    h('div', { class: 'overall' }, progressBar('Whole import', job.progress.percent),
      h('p', { class: 'meta' }, `${count(job.progress.processed)} of ${count(job.progress.rows)} rows`, job.progress.currentDataset && running ? `, now ${job.progress.currentDataset}` : '')),
    scrolling('Per dataset', h('table', null,
      h('caption', null, 'Per dataset'),
      h('thead', null, h('tr', null, ['Dataset', 'Progress', 'Created', 'Mapped', 'Skipped', ...(job.deleted ? ['Rolled back'] : [])].map(columnHeader))),
      h('tbody', null, datasets.map((d) => h('tr', null,
        h('th', { scope: 'row' }, d.name),
        h('td', null, progressBar(`${d.name} progress`, d.progress!.percent)),
        h('td', { class: 'num' }, count(job.counts?.[d.name]?.created ?? d.progress!.created)),
        h('td', { class: 'num' }, count(job.counts?.[d.name]?.mapped ?? 0)),
        h('td', { class: 'num' }, count(job.counts?.[d.name]?.skipped ?? d.progress!.skipped)),
        job.deleted ? h('td', { class: 'num' }, count(job.deleted[d.name] ?? 0)) : null))))),
    job.phase === 'completed' ? h('p', null, 'Imported. Scripts that name rows by their old ids find them with ', h('code', null, 'POST /api/lookup'), '; the rows are in the ', h('a', { href: '/docs/api' }, 'model API'), '.') : null,
    job.phase === 'rolledBack' ? h('p', null, `Rolled back ${when(job.rolledBackAt)}: every row the job created is deleted; mapped entities are untouched.`) : null,
    h('div', { class: 'actions' },
      running && !job.cancelRequested ? act('Cancel the import', 'cancel', 'cancel', 'Stop the import at its next chunk? What is imported by then stays, and can be rolled back.') : null,
      ended ? act('Roll back', 'rollback', 'rollback', 'Delete every row this import created? Entities it mapped to are untouched.') : null),
    status);
}

