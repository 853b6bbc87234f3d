// Support for the suites that need a real search engine: OpenSearch from `npm run search:up`
// (infra/opensearch/up.sh) at SEARCH_URL (default http://127.0.0.1:9200), and Elasticsearch only
// at ELASTICSEARCH_URL (it cannot be obtained on this project's machines). Suites share one
// server: each names its indices with its own prefix (uniqueIndexPrefix) and drops them after
// (dropIndices).
import { randomBytes } from 'node:crypto';

export const SEARCH_TEST_URL = process.env.SEARCH_URL ?? 'http://127.0.0.1:9200';

const PROBE_MS = 3000;

/**
 * fetch of path under the server's URL (a path prefix kept; credentials in the URL sent as Basic
 * authentication, as fetch refuses URLs that carry them).
 */
export function searchFetch(url: string, path: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Response> {
  const base = new URL(url);
  const headers = new Headers(init.headers);
  if (base.username || base.password) {
    const user = decodeURIComponent(base.username);
    const password = decodeURIComponent(base.password);
    headers.set('authorization', `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`);
    base.username = '';
    base.password = '';
  }
  const target = `${base.href.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
  return fetch(target, { ...init, headers, signal: init.signal ?? AbortSignal.timeout(init.timeoutMs ?? 30_000) });
}

/** What a search server answers to `GET /` (the fields used here). */
interface RootAnswer {
  tagline?: unknown;
  version?: { distribution?: unknown; number?: unknown };
}

async function rootOf(url: string): Promise<RootAnswer | null> {
  try {
    const response = await searchFetch(url, '/', { timeoutMs: PROBE_MS });
    if (!response.ok) return null;
    return (await response.json()) as RootAnswer;
  } catch {
    return null;
  }
}

const isOpenSearch = (root: RootAnswer) => root.version?.distribution === 'opensearch';
const isElasticsearch = (root: RootAnswer) =>
  !isOpenSearch(root) && typeof root.tagline === 'string' && root.tagline.includes('You Know, for Search');

/** True if an OpenSearch or Elasticsearch server answers `GET /` at url. */
export async function searchAnswers(url: string): Promise<boolean> {
  const root = await rootOf(url);
  return root !== null && (isOpenSearch(root) || isElasticsearch(root));
}

/** In a `before`: skips the suite with one visible line when no OpenSearch answers at SEARCH_TEST_URL, or fails with REQUIRE_SERVICES=1. */
export async function requireOpenSearch(ctx: Mocha.Context, suite: string): Promise<void> {
  const root = await rootOf(SEARCH_TEST_URL);
  if (root && isOpenSearch(root)) return;
  if (process.env.REQUIRE_SERVICES === '1') {
    throw new Error(`${suite}: no OpenSearch answers at ${SEARCH_TEST_URL} and REQUIRE_SERVICES=1 (start one with npm run search:up)`);
  }
  console.log(`  SKIPPED ${suite}: no OpenSearch at ${SEARCH_TEST_URL} (npm run search:up)`);
  ctx.skip();
}

/**
 * In a `before`: the Elasticsearch to test against (ELASTICSEARCH_URL), or the suite is skipped
 * with one line. Never fails, not even with REQUIRE_SERVICES=1: Elasticsearch cannot be obtained
 * on this project's machines (no image registry, and its modules are not on Maven Central), as
 * EventStoreDB cannot (test/infra/eventstore.esdb.int.spec.ts).
 */
export async function requireElasticsearch(ctx: Mocha.Context, suite: string): Promise<string> {
  const url = process.env.ELASTICSEARCH_URL;
  if (!url) {
    console.log(`  SKIPPED ${suite}: ELASTICSEARCH_URL is not set (Elasticsearch cannot be started on this project's machines)`);
    ctx.skip();
  }
  const root = await rootOf(url);
  if (!root || !isElasticsearch(root)) {
    throw new Error(`${suite}: ELASTICSEARCH_URL=${url} is set but no Elasticsearch answers there`);
  }
  return url;
}

/** An index name prefix of its own (`t<10 hex>_`), so that suites running at once never share an index. */
export const uniqueIndexPrefix = (): string => `t${randomBytes(5).toString('hex')}_`;

/**
 * Deletes every index (and so its aliases) and index template whose name starts with prefix: for
 * `after` hooks. The indices are listed first and deleted by name, as Elasticsearch 8+ refuses
 * wildcard deletes (action.destructive_requires_name). Refuses a prefix that could match other
 * suites' indices.
 */
export async function dropIndices(url: string, prefix: string): Promise<void> {
  if (!/^[a-z0-9][a-z0-9_-]{3,}$/.test(prefix)) throw new Error(`dropIndices: refusing the prefix ${JSON.stringify(prefix)}`);
  const listed = await searchFetch(url, `/_cat/indices/${prefix}*?format=json&h=index&expand_wildcards=all`);
  if (!listed.ok) throw new Error(`dropIndices ${prefix}*: listing answered ${listed.status} ${await listed.text()}`);
  const names = ((await listed.json()) as { index: string }[]).map((row) => row.index).filter((name) => name.startsWith(prefix));
  for (let i = 0; i < names.length; i += 50) {
    const batch = names.slice(i, i + 50).map(encodeURIComponent).join(',');
    const response = await searchFetch(url, `/${batch}?ignore_unavailable=true`, { method: 'DELETE' });
    if (!response.ok) throw new Error(`dropIndices ${prefix}*: ${response.status} ${await response.text()}`);
  }
  // The engine's index template of the prefix (infra/search/engineBodies.ts indexTemplateBody).
  const templates = await searchFetch(url, `/_index_template/${prefix}*`);
  if (templates.status === 404) return;
  if (!templates.ok) throw new Error(`dropIndices ${prefix}*: listing templates answered ${templates.status} ${await templates.text()}`);
  for (const { name } of ((await templates.json()) as { index_templates: { name: string }[] }).index_templates) {
    if (!name.startsWith(prefix)) continue;
    const response = await searchFetch(url, `/_index_template/${encodeURIComponent(name)}`, { method: 'DELETE' });
    if (!response.ok && response.status !== 404) throw new Error(`dropIndices ${prefix}*: template ${name}: ${response.status} ${await response.text()}`);
  }
}
