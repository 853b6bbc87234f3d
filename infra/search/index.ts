import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { SearchUnavailable, type SearchEngine, type SearchSettings } from '../../services/shared/search';
import { classifyClientError, urlWithoutCredentials } from './documentEngine';
import type * as ElasticsearchModule from './elasticsearch';
import type * as OpenSearchModule from './opensearch';
import { PostgresSearchEngine } from './postgres';

// The two clients are loaded when an engine URL asks for them: together they weigh about 37 MB of
// a process's memory, which the PostgreSQL default (npm start) does not need.
/* eslint-disable @typescript-eslint/no-require-imports */
const openSearchClient = async () => require('./opensearch') as typeof OpenSearchModule;
const elasticsearchClient = async () => require('./elasticsearch') as typeof ElasticsearchModule;
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * The search engine the settings name: PostgreSQL full-text search without SEARCH_URL, else the
 * engine forced by SEARCH_ENGINE, else the one the server says it is when asked `GET /`.
 * Throws SearchUnavailable when the server does not answer (the caller retries), and an Error
 * naming the URL when it answers as something that is neither OpenSearch nor Elasticsearch 8/9.
 */
export async function openSearchEngine(settings: SearchSettings, deps: { knex: Knex; logger: Logger }): Promise<SearchEngine> {
  if (settings.url === null || settings.engine === 'postgres') return new PostgresSearchEngine(deps.knex, settings);
  if (settings.engine === 'opensearch') return (await openSearchClient()).openOpenSearch(settings);
  if (settings.engine === 'elasticsearch') return (await elasticsearchClient()).openElasticsearch(settings);

  const where = urlWithoutCredentials(settings.url);
  // The OpenSearch client checks no product: it can ask any server, with the same auth, TLS and time limit.
  const { createOpenSearchClient, openOpenSearch } = await openSearchClient();
  const client = createOpenSearchClient(settings);
  let answer: { status: number; body: unknown; headers: Record<string, unknown> };
  try {
    const response = await client.transport.request({ method: 'GET', path: '/' }, { ignore: [400, 401, 403, 404, 405, 406, 410] });
    answer = { status: response.statusCode ?? 0, body: response.body, headers: response.headers ?? {} };
  } catch (error) {
    await client.close();
    const classified = classifyClientError('opensearch', settings.url, '/', error);
    if (classified instanceof SearchUnavailable) throw new SearchUnavailable('opensearch', new Error(`no search engine answers at ${where}: ${describe(error)}`, { cause: error }));
    throw new Error(`the search engine at ${where} could not be asked GET /: ${describe(error)}`, { cause: error });
  }
  const detected = detectEngine(answer);
  if (detected.engine === null) {
    await client.close();
    throw new Error(`SEARCH_URL ${where} is not OpenSearch 2.x/3.x or Elasticsearch 8.x/9.x: ${detected.reason} (set SEARCH_ENGINE to force one, or unset SEARCH_URL for PostgreSQL search)`);
  }
  deps.logger.info({ engine: detected.engine, version: detected.version, url: where }, 'search engine detected');
  if (detected.engine === 'opensearch') return openOpenSearch(settings, client);
  await client.close();
  return (await elasticsearchClient()).openElasticsearch(settings);
}

const describe = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

export type Detection = { engine: 'opensearch' | 'elasticsearch'; version: string } | { engine: null; reason: string };

/** Which engine an answer to `GET /` comes from. */
export function detectEngine(answer: { status: number; body: unknown; headers: Record<string, unknown> }): Detection {
  const body = (typeof answer.body === 'object' && answer.body !== null ? answer.body : {}) as {
    version?: { number?: string; distribution?: string }; tagline?: string;
  };
  if (answer.status === 401 || answer.status === 403) {
    return { engine: null, reason: `it answered ${answer.status} to GET / (check SEARCH_USERNAME/SEARCH_PASSWORD or SEARCH_API_KEY)` };
  }
  const version = body.version?.number;
  if (answer.status === 200 && body.version?.distribution === 'opensearch' && version) return { engine: 'opensearch', version };
  const product = answer.headers['x-elastic-product'];
  const looksElastic = product === 'Elasticsearch' || (body.tagline === 'You Know, for Search' && !body.version?.distribution);
  if (answer.status === 200 && looksElastic && version) {
    const major = Number(version.split('.')[0]);
    if (major === 8 || major === 9) return { engine: 'elasticsearch', version };
    return { engine: null, reason: `it is Elasticsearch ${version}` };
  }
  const shown = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? '');
  const contentType = String(answer.headers['content-type'] ?? 'no content type');
  return { engine: null, reason: `it answered GET / with ${answer.status} (${contentType}) ${JSON.stringify(shown.slice(0, 120))}` };
}
