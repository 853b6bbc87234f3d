import { Client } from '@elastic/elasticsearch';
import type { SearchSettings } from '../../services/shared/search';
import { DocumentSearchEngine, classifyClientError, trustedCa, type EngineTransport } from './documentEngine';

/**
 * Elasticsearch 8.x/9.x through @elastic/elasticsearch (which refuses any server that is not
 * Elasticsearch): only the client; the requests are DocumentSearchEngine's (shared with OpenSearch).
 */

// The client's default media type (`compatible-with=9`) is refused by an 8.x server; plain JSON is
// what both majors take.
const JSON_HEADERS = { accept: 'application/json', 'content-type': 'application/json' };
const NDJSON_HEADERS = { accept: 'application/json', 'content-type': 'application/x-ndjson' };

export function createElasticsearchClient(settings: SearchSettings): Client {
  if (!settings.url) throw new Error('Elasticsearch needs SEARCH_URL');
  return new Client({
    node: settings.url,
    requestTimeout: settings.requestTimeoutMs,
    maxRetries: settings.maxRetries,
    ...(settings.apiKey
      ? { auth: { apiKey: settings.apiKey } }
      : settings.username ? { auth: { username: settings.username, password: settings.password ?? '' } } : {}),
    tls: {
      rejectUnauthorized: settings.sslVerify,
      ...trustedCa(settings),
    },
  });
}

export function elasticsearchTransport(client: Client, url: string): EngineTransport {
  return {
    async request({ method, path, body, bulk, querystring, ignore, maxRetries, timeoutMs }) {
      try {
        const response = await client.transport.request(
          { method, path, ...(body ? { body } : {}), ...(bulk ? { bulkBody: bulk } : {}), ...(querystring ? { querystring } : {}) },
          { meta: true, headers: bulk ? NDJSON_HEADERS : JSON_HEADERS, ...(ignore ? { ignore } : {}), ...(maxRetries === undefined ? {} : { maxRetries }),
            ...(timeoutMs === undefined ? {} : { requestTimeout: timeoutMs }) },
        );
        return { status: response.statusCode ?? 0, body: response.body, headers: response.headers ?? {} };
      } catch (error) {
        throw classifyClientError('elasticsearch', url, path, error);
      }
    },
    close: () => client.close(),
  };
}

export function openElasticsearch(settings: SearchSettings, client: Client = createElasticsearchClient(settings)): DocumentSearchEngine {
  return new DocumentSearchEngine('elasticsearch', elasticsearchTransport(client, settings.url ?? ''), settings);
}
