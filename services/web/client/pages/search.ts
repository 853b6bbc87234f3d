import { call, get, post, put, type User } from '../api';
import { lineChart } from '../chart';
import { bytes, count, h, progressBar, replace, when } from '../dom';
import { action, errorBox, frame } from '../layout';

/**
 * `/admin/search`: the search administration panel over /api/admin/search/… (docs/search.md,
 * "Administration"). Each part loads on its own, so an engine that does not answer leaves the
 * rest usable; destructive operations need what the API asks (an index's name typed, the index
 * prefix for a full reindex) and the API's refusal is shown as it is.
 */
const API = '/api/admin/search';

interface Settings { engine: string; url: string | null; username: string | null; hasPassword: boolean; hasApiKey: boolean; sslVerify: boolean; sslCaPath: string | null; hasSslCa: boolean }
interface Connection {
  engine: string | null; version: string | null; reachable: boolean; latencyMs: number | null; error?: string | null; state: string; lastError: string | null;
  source: 'environment' | 'administrator'; settings: Settings; changedAt: string | null; changedBy: { name: string; email: string } | null;
}
interface Index {
  name: string; alias: string | null; type: string; version: number; live: boolean; documents: number | null; sizeBytes: number | null; health: string | null;
  lag: { events: number; exact: boolean } | null;
}
interface IndexList { engine: string; liveVersion: number | null; head: string; indices: Index[] }
interface ReindexJob {
  jobId: number; mode: 'full' | 'partial'; phase: string; progress: { documents: number; total: number | null; percent: number };
  createdAt: string; finishedAt: string | null; error: { code: string; error: string } | null; runAt?: string | null; repeatEveryMinutes?: number | null;
}

export function searchPage(user: User): HTMLElement {
  const indices = part('indices', 'Indices');
  const reindex = part('reindex', 'Reindex');
  let types: string[] = [];
  let prefix = '';
  const drawIndices = async () => {
    const list = await get<IndexList>(`${API}/indices`);
    types = [...new Set(list.indices.map((i) => i.type))].sort();
    const any = list.indices[0];
    if (any) prefix = any.name.slice(0, any.name.length - `${any.type}_v${any.version}`.length);
    replace(indices.body, indicesView(list, () => load(indices.body, drawIndices)), maintenance());
  };
  void load(indices.body, drawIndices).then(() => load(reindex.body, () => reindexView(reindex.body, types, () => prefix)));
  return frame(user, 'Search administration',
    h('p', null, 'The search engine this service uses: its connection, indices, upkeep and monitoring. Every operation is recorded in the audit trail.'),
    part('connection', 'Connection', connectionView).section,
    part('health', 'Cluster health', healthView).section,
    indices.section, reindex.section,
    part('monitoring', 'Monitoring', monitoringView).section,
    part('errors', 'Error log', errorLogView).section);
}

/** A card with a heading whose body `draw` fills (an error in it stays in it). */
function part(id: string, title: string, draw?: (body: HTMLElement) => Promise<void>): { section: HTMLElement; body: HTMLElement } {
  const body = h('div', null, h('p', { class: 'loading' }, 'Loading…'));
  const section = h('section', { class: 'card', id: `${id}-part`, 'aria-labelledby': `${id}-title` }, h('h2', { id: `${id}-title` }, title), body);
  if (draw) void load(body, () => draw(body));
  return { section, body };
}

async function load(body: HTMLElement, draw: () => Promise<unknown>): Promise<void> {
  try {
    await draw();
  } catch (err) {
    replace(body, errorBox(err));
  }
}

const field = (id: string, label: string, control: HTMLElement, hint?: string): HTMLElement =>
  h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('p', { class: 'meta', id: `${id}-hint` }, hint) : null);

async function connectionView(body: HTMLElement): Promise<void> {
  const c = await get<Connection>(`${API}/connection`);
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const s = c.settings;
  const engine = h('select', { id: 'conn-engine' }, ['auto', 'postgres', 'opensearch', 'elasticsearch'].map((e) => h('option', { value: e, ...(s.engine === e && { selected: true }) }, e)));
  const url = h('input', { id: 'conn-url', type: 'url', value: s.url ?? '', placeholder: 'empty: PostgreSQL search', 'aria-describedby': 'conn-url-hint' });
  const username = h('input', { id: 'conn-username', autocomplete: 'off', value: s.username ?? '' });
  const password = h('input', { id: 'conn-password', type: 'password', autocomplete: 'new-password', placeholder: s.hasPassword ? 'saved: leave empty to keep it' : '', 'aria-describedby': 'conn-password-hint' });
  const apiKey = h('input', { id: 'conn-apikey', type: 'password', autocomplete: 'off', placeholder: s.hasApiKey ? 'saved: leave empty to keep it' : '', 'aria-describedby': 'conn-apikey-hint' });
  const clearSecrets = h('input', { id: 'conn-clear', type: 'checkbox' });
  const sslVerify = h('input', { id: 'conn-sslverify', type: 'checkbox', ...(s.sslVerify && { checked: true }) });
  const sslCaPath = h('input', { id: 'conn-sslcapath', value: s.sslCaPath ?? '', placeholder: '/etc/ssl/search-ca.pem' });
  /** The change the form asks for: a secret left empty keeps the saved one (never sent back to this page). */
  const change = (): Record<string, unknown> => {
    const body: Record<string, unknown> = { engine: engine.value, url: url.value.trim() === '' ? null : url.value.trim(), sslVerify: sslVerify.checked, sslCaPath: sslCaPath.value.trim() === '' ? null : sslCaPath.value.trim() };
    if (clearSecrets.checked) Object.assign(body, { username: null, password: null, apiKey: null });
    else {
      if (password.value !== '') Object.assign(body, { username: username.value.trim() === '' ? null : username.value.trim(), password: password.value });
      else if ((username.value.trim() || null) !== s.username) throw new Error('Type the password too to change the user name (they are saved together).');
      if (apiKey.value !== '') body.apiKey = apiKey.value;
    }
    return body;
  };
  const probeView = (p: { reachable: boolean; engine: string | null; version: string | null; latencyMs: number | null; error: string | null }) => (p.reachable
    ? h('p', { class: 'ok' }, `Reachable: ${p.engine} ${p.version ?? ''} in ${p.latencyMs} ms.`)
    : h('div', { class: 'error', role: 'alert' }, h('p', null, `Not reachable: ${p.error ?? 'no answer'}`)));
  replace(body,
    h('dl', { class: 'summary' },
      h('dt', null, 'Engine'), h('dd', { id: 'conn-engine-in-use' }, `${c.engine ?? 'none'}${c.version ? ` ${c.version}` : ''}`),
      h('dt', null, 'Status'), h('dd', { id: 'conn-status' }, c.reachable ? `answering (${c.latencyMs} ms)` : `not answering${c.error ? `: ${c.error}` : ''}`, `, connection ${c.state}`),
      c.lastError ? [h('dt', null, 'Last error'), h('dd', null, c.lastError)] : null,
      h('dt', null, 'Settings from'), h('dd', null, c.source === 'environment' ? 'the SEARCH_* variables' : `an administrator${c.changedBy ? ` (${c.changedBy.name}, ${when(c.changedAt)})` : ''}`),
      h('dt', null, 'URL'), h('dd', null, s.url ?? '— (PostgreSQL search)'),
      h('dt', null, 'Credentials'), h('dd', null, [s.username ? `user ${s.username}` : null, s.hasPassword ? 'password saved' : null, s.hasApiKey ? 'API key saved' : null, s.hasSslCa ? 'CA certificate saved' : null].filter(Boolean).join(', ') || 'none')),
    h('form', { class: 'settings', onsubmit: (e: Event) => e.preventDefault() },
      h('h3', null, 'Settings'),
      field('conn-engine', 'Engine', engine),
      field('conn-url', 'URL', url, 'http(s)://host:port, without user or password; empty for PostgreSQL search.'),
      field('conn-username', 'User name', username),
      field('conn-password', 'Password', password, 'Never shown; leave empty to keep the saved one.'),
      field('conn-apikey', 'API key', apiKey, 'Never shown; leave empty to keep the saved one.'),
      h('div', { class: 'check' }, clearSecrets, h('label', { for: 'conn-clear' }, 'Remove the saved user name, password and API key')),
      h('div', { class: 'check' }, sslVerify, h('label', { for: 'conn-sslverify' }, 'Verify the engine\'s TLS certificate')),
      field('conn-sslcapath', 'CA certificate file on the server', sslCaPath),
      h('div', { class: 'actions' },
        action('Test these settings', async () => probeView(await post(`${API}/connection/test`, change())), { id: 'conn-test', status }),
        action('Save and switch', async () => {
          await put(`${API}/connection`, change());
          void load(body, () => connectionView(body));
          return h('p', null, 'Saved; search uses it now.');
        }, { id: 'conn-save', status, cls: '' }),
        c.source === 'administrator' ? action('Back to the SEARCH_* variables', async () => {
          await call('DELETE', `${API}/connection`);
          void load(body, () => connectionView(body));
          return h('p', null, 'Back to the environment\'s settings.');
        }, { id: 'conn-reset', status }) : null),
      status));
}

async function healthView(body: HTMLElement): Promise<void> {
  const [health, nodes] = await Promise.all([
    get<{ engine: string; status: 'green' | 'yellow' | 'red'; reasons: string[]; clusterName: string | null; nodes: number | null; shards: Record<string, number> | null }>(`${API}/health`),
    get<{ nodes: Array<{ name: string; id: string; heap: { usedBytes: number; maxBytes: number } | null; disk: { totalBytes: number; freeBytes: number } | null; documents: number | null; indexingTotal: number | null; searchTotal: number | null }> }>(`${API}/nodes`),
  ]);
  const n = (v: number | null | undefined) => (v === null || v === undefined ? '—' : count(v));
  replace(body,
    h('p', null, h('span', { class: `health ${health.status}`, id: 'health-status' }, health.status), ` ${health.engine}${health.clusterName ? `, cluster ${health.clusterName}` : ''}${health.nodes !== null ? `, ${health.nodes} node(s)` : ''}`),
    health.reasons.length > 0 ? h('ul', { class: health.status === 'green' ? 'plain' : 'warnings' }, health.reasons.map((r) => h('li', null, r))) : null,
    health.shards ? h('p', { class: 'meta' }, Object.entries(health.shards).map(([k, v]) => `${k} ${v}`).join(' · ')) : null,
    h('table', null, h('caption', null, 'Node statistics'),
      h('thead', null, h('tr', null, ['Node', 'Heap', 'Disk free', 'Documents', 'Indexed', 'Searches'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, nodes.nodes.map((node, i) => h('tr', null,
        h('th', { scope: 'row' }, node.name || node.id || `node ${i + 1}`),
        h('td', null, node.heap ? `${bytes(node.heap.usedBytes)} of ${bytes(node.heap.maxBytes)}` : '—'),
        h('td', null, node.disk ? `${bytes(node.disk.freeBytes)} of ${bytes(node.disk.totalBytes)}` : '—'),
        h('td', { class: 'num' }, n(node.documents)), h('td', { class: 'num' }, n(node.indexingTotal)), h('td', { class: 'num' }, n(node.searchTotal)))))));
}

function indicesView(list: IndexList, redraw: () => void): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const confirmArea = h('div');
  const askDelete = (index: Index) => {
    const typed = h('input', { id: 'delete-confirm', autocomplete: 'off', 'aria-describedby': 'delete-confirm-hint' });
    const form = h('form', {
      class: 'confirm',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const done = await call<{ recreated?: boolean }>('DELETE', `${API}/indices/${encodeURIComponent(index.name)}`, { confirm: typed.value });
          replace(status, h('p', null, `Deleted ${index.name}${done.recreated ? ' and recreated it empty (a reindex of its type brings its documents back)' : ''}.`));
          redraw();
        } catch (err) {
          replace(status, errorBox(err));
          typed.focus();
        }
      },
    },
    h('p', { id: 'delete-confirm-hint' }, `Deleting ${index.name} removes its ${index.documents === null ? '' : `${count(index.documents)} `}documents. Type its name to confirm.`),
    field('delete-confirm', 'Index name', typed),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'danger' }, `Delete ${index.name}`), h('button', { type: 'button', class: 'secondary', onclick: () => replace(confirmArea) }, 'Keep it')));
    replace(confirmArea, form);
    typed.focus();
  };
  return h('div', null,
    h('p', null, `Engine ${list.engine}; live version ${list.liveVersion ?? 'none'}; the log's head at ${list.head}.`),
    h('table', { id: 'indices' }, h('caption', null, 'Indices of every version'),
      h('thead', null, h('tr', null, ['Index', 'Type', 'Version', 'Documents', 'Size', 'Health', 'Lag (events)', ''].map((c, i) => h('th', { scope: 'col', ...(i === 7 && { 'aria-label': 'Actions' }) }, c)))),
      h('tbody', null, list.indices.map((index) => h('tr', null,
        h('th', { scope: 'row' }, index.name, index.live ? h('span', { class: 'meta' }, ' (live)') : null),
        h('td', null, index.type), h('td', { class: 'num' }, index.version),
        h('td', { class: 'num' }, index.documents === null ? '—' : count(index.documents)),
        h('td', { class: 'num' }, index.sizeBytes === null ? '—' : bytes(index.sizeBytes)),
        h('td', null, index.health ?? '—'),
        h('td', { class: 'num' }, index.lag ? `${count(index.lag.events)}${index.lag.exact ? '' : '+'}` : '—'),
        h('td', null, h('button', { type: 'button', class: 'link', onclick: () => askDelete(index) }, `Delete`, h('span', { class: 'visually-hidden' }, ` ${index.name}`))))))),
    confirmArea,
    h('div', { class: 'actions' },
      action('Create missing indices', async () => {
        const r = await post<{ version: number; created: string[]; aliasesRepaired: string[] }>(`${API}/indices`);
        redraw();
        return h('p', null, r.created.length + r.aliasesRepaired.length === 0 ? 'Nothing was missing.' : `Created ${r.created.join(', ') || 'nothing'}; aliases repaired: ${r.aliasesRepaired.join(', ') || 'none'}.`);
      }, { id: 'create-indices', status }),
      h('button', { type: 'button', class: 'secondary', id: 'reload-indices', onclick: redraw }, 'Reload the list')),
    status);
}

function maintenance(): HTMLElement {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const segments = h('input', { id: 'max-segments', type: 'number', min: 1, max: 100, placeholder: 'engine default' });
  const operation = (label: string, id: string, path: string, body: () => Record<string, unknown> = () => ({})) =>
    action(label, async () => {
      await post(`${API}/operations/${path}`, body());
      return h('p', null, `${label}: done.`);
    }, { id, status });
  return h('div', { class: 'maintenance' },
    h('h3', null, 'Upkeep'),
    field('max-segments', 'Force merge down to segments (1–100)', segments),
    h('div', { class: 'actions' },
      operation('Force merge', 'force-merge', 'force-merge', () => (segments.value === '' ? {} : { maxSegments: Number(segments.value) })),
      operation('Clear caches', 'cache-clear', 'cache-clear'),
      operation('Refresh', 'refresh', 'refresh'),
      operation('Update the mapping', 'mapping-update', 'mapping-update')),
    status);
}

async function reindexView(body: HTMLElement, types: string[], prefix: () => string): Promise<void> {
  const status = h('div', { class: 'status', 'aria-live': 'polite' });
  const jobs = h('div', { id: 'reindex-jobs' });
  const mode = h('select', { id: 'reindex-mode' }, h('option', { value: 'partial' }, 'partial: some projects and/or types, into the live version'), h('option', { value: 'full' }, 'full: a new version, switched to when complete'));
  const projects = h('select', { id: 'reindex-projects', multiple: true, size: 4 });
  void post<{ data: Array<{ id: number; name: string }> }>('/api/model/project/findMany', { select: { id: true, name: true }, orderBy: { name: 'asc' }, take: 500 })
    .then((r) => replace(projects, r.data.map((p) => h('option', { value: p.id }, p.name)))).catch(() => undefined);
  const typeBoxes = types.map((t) => h('input', { type: 'checkbox', id: `reindex-type-${t}`, value: t }));
  const batch = h('input', { id: 'reindex-batch', type: 'number', min: 1, max: 10000, placeholder: 'SEARCH_BULK_SIZE' });
  const runAt = h('input', { id: 'reindex-runat', type: 'datetime-local' });
  const repeat = h('input', { id: 'reindex-repeat', type: 'number', min: 5, placeholder: 'once' });
  const confirm = h('input', { id: 'reindex-confirm', autocomplete: 'off', 'aria-describedby': 'reindex-confirm-hint' });
  const request = (): Record<string, unknown> => {
    const full = mode.value === 'full';
    const chosen = [...projects.selectedOptions].map((o) => Number(o.value));
    const chosenTypes = typeBoxes.filter((b) => b.checked).map((b) => b.value);
    return {
      mode: mode.value,
      ...(!full && chosen.length > 0 && { projectIds: chosen }),
      ...(!full && chosenTypes.length > 0 && { types: chosenTypes }),
      ...(batch.value !== '' && { batchSize: Number(batch.value) }),
      ...(runAt.value !== '' && { runAt: new Date(runAt.value).toISOString() }),
      ...(repeat.value !== '' && { repeatEveryMinutes: Number(repeat.value) }),
      ...(full && { confirm: confirm.value }),
    };
  };
  let timer = 0;
  const drawJobs = async () => {
    window.clearTimeout(timer);
    const page = await get<{ data: ReindexJob[] }>(`${API}/reindex?take=10`);
    const focused = document.activeElement?.id;
    replace(jobs, page.data.length === 0 ? h('p', null, 'No reindex jobs yet.') : h('table', null, h('caption', null, 'Latest reindex jobs'),
      h('thead', null, h('tr', null, ['Job', 'Mode', 'Phase', 'Progress', 'Requested', ''].map((c, i) => h('th', { scope: 'col', ...(i === 5 && { 'aria-label': 'Actions' }) }, c)))),
      h('tbody', null, page.data.map((j) => h('tr', null,
        h('th', { scope: 'row' }, `Job ${j.jobId}`), h('td', null, j.mode),
        h('td', { 'data-phase': j.phase, id: `reindex-${j.jobId}-phase` }, j.phase, j.error ? h('span', { class: 'meta' }, `: ${j.error.error}`) : ''),
        h('td', null, progressBar(`Reindex job ${j.jobId}`, j.progress.percent), h('span', { class: 'meta' }, `${count(j.progress.documents)}${j.progress.total === null ? '' : ` of ${count(j.progress.total)}`} documents`)),
        h('td', null, when(j.createdAt)),
        h('td', null, ['running', 'queued', 'scheduled'].includes(j.phase) ? jobButton(j, 'pause') : null, j.phase === 'paused' ? jobButton(j, 'resume') : null,
          ['running', 'queued', 'scheduled', 'paused'].includes(j.phase) ? jobButton(j, 'cancel') : null))))));
    if (focused) document.getElementById(focused)?.focus();
    if (page.data.some((j) => ['running', 'queued'].includes(j.phase)) && document.body.contains(jobs)) timer = window.setTimeout(() => void load(jobs, drawJobs), 1000);
  };
  const jobButton = (j: ReindexJob, verb: 'pause' | 'resume' | 'cancel') => h('button', {
    type: 'button', class: 'link', id: `reindex-${j.jobId}-${verb}`,
    onclick: async () => {
      try {
        await post(`${API}/reindex/${j.jobId}/${verb}`);
        await drawJobs();
      } catch (err) {
        replace(status, errorBox(err));
      }
    },
  }, verb, h('span', { class: 'visually-hidden' }, ` job ${j.jobId}`));
  replace(body,
    h('form', {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        try {
          const job = (await post<{ data: ReindexJob }>(`${API}/reindex`, request())).data;
          replace(status, h('p', null, `Reindex job ${job.jobId} ${job.phase}.`));
          await drawJobs();
        } catch (err) {
          replace(status, errorBox(err));
        }
      },
    },
    field('reindex-mode', 'Mode', mode),
    field('reindex-projects', 'Projects (partial; none chosen: every project)', projects),
    h('fieldset', null, h('legend', null, 'Types (partial; none chosen: every type)'), typeBoxes.map((b) => h('span', { class: 'check' }, b, h('label', { for: b.id }, b.value)))),
    field('reindex-batch', 'Batch size (1–10,000)', batch),
    field('reindex-runat', 'Run at (empty: now)', runAt),
    field('reindex-repeat', 'Repeat every … minutes (5 or more; empty: once)', repeat),
    field('reindex-confirm', 'Confirmation (full only)', confirm, `A full reindex replaces the live version: type the index prefix${prefix() ? `, ${prefix()}` : ''}.`),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'reindex-start' }, 'Request the reindex'))),
    status, jobs);
  await load(jobs, drawJobs);
}

async function monitoringView(body: HTMLElement): Promise<void> {
  const [metrics, rate] = await Promise.all([
    get<{ process: { id: string }; since: string; total: { queries: { search: number; facets: number }; errors: { refused: number; failed: number } };
      window: { from: string; queries: { search: number; facets: number }; latencyMs: { p50: number | null; p95: number | null; max: number | null; samples: number } } }>(`${API}/metrics`),
    get<{ points: Array<{ minute: string; documents: number; documentsPerSecond: number }>; documents: number; documentsPerSecond: number;
      indexers: Array<{ indexer: string; state: string; engine: string; version: number | null; documentsWritten: number; updatedAt: string; stale: boolean; lastError: string | null }> }>(`${API}/indexing-rate?minutes=15`),
  ]);
  const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);
  const minute = (iso: string) => new Date(iso).toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
  replace(body,
    h('h3', null, 'Indexing rate'),
    lineChart(rate.points.map((p) => ({ label: minute(p.minute), value: p.documentsPerSecond })), { title: 'Documents indexed per second, last 15 minutes', unit: 'documents/s' }),
    h('p', { class: 'meta' }, `${count(rate.documents)} documents in the window, ${rate.documentsPerSecond.toFixed(2)} per second on average.`),
    h('table', null, h('caption', null, 'Indexers'),
      h('thead', null, h('tr', null, ['Indexer', 'State', 'Engine', 'Version', 'Written', 'Heard of'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rate.indexers.map((i) => h('tr', null, h('th', { scope: 'row' }, i.indexer),
        h('td', null, i.state, i.stale ? ' (not heard of for a minute)' : '', i.lastError ? h('span', { class: 'meta' }, `: ${i.lastError}`) : ''),
        h('td', null, i.engine), h('td', { class: 'num' }, i.version ?? '—'), h('td', { class: 'num' }, count(i.documentsWritten)), h('td', null, when(i.updatedAt)))))),
    h('h3', null, 'Search metrics'),
    h('p', { class: 'meta' }, `Counted by ${metrics.process.id} since ${when(metrics.since)}.`),
    h('dl', { class: 'summary' },
      h('dt', null, 'Searches'), h('dd', null, `${count(metrics.total.queries.search)} (${count(metrics.window.queries.search)} in the last 15 minutes)`),
      h('dt', null, 'Facet counts'), h('dd', null, count(metrics.total.queries.facets)),
      h('dt', null, 'Refused'), h('dd', null, count(metrics.total.errors.refused)),
      h('dt', null, 'Failed'), h('dd', null, count(metrics.total.errors.failed)),
      h('dt', null, 'Latency (15 min)'), h('dd', null, `p50 ${ms(metrics.window.latencyMs.p50)}, p95 ${ms(metrics.window.latencyMs.p95)}, max ${ms(metrics.window.latencyMs.max)} over ${metrics.window.latencyMs.samples} queries`)));
}

async function errorLogView(body: HTMLElement): Promise<void> {
  const page = await get<{ data: Array<{ id: number; type: string; documentId: string; reason: string; failedAt: string; resolvedAt: string | null; version: number }> }>(`${API}/errors?take=20`);
  replace(body, page.data.length === 0 ? h('p', null, 'No document was refused by the engine.') : h('table', null, h('caption', null, 'Documents the engine refused (newest first)'),
    h('thead', null, h('tr', null, ['When', 'Type', 'Document', 'Reason', 'Resolved'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, page.data.map((f) => h('tr', null, h('td', null, when(f.failedAt)), h('td', null, f.type), h('td', null, f.documentId), h('td', null, f.reason), h('td', null, f.resolvedAt ? when(f.resolvedAt) : 'no'))))));
}
