import { Client } from '@opensearch-project/opensearch';
import type { SearchSettings } from '../../services/shared/search';
import { DocumentSearchEngine, classifyClientError, trustedCa, type EngineTransport } from './documentEngine';

/**
 * OpenSearch 2.x/3.x through @opensearch-project/opensearch: only the client; the requests are
 * DocumentSearchEngine's (shared with Elasticsearch).
 */

/** A client with the settings' authentication, TLS, time limit and retries. */
export function createOpenSearchClient(settings: SearchSettings): Client {
  if (!settings.url) throw new Error('OpenSearch needs SEARCH_URL');
  return new Client({
    node: settings.url,
    requestTimeout: settings.requestTimeoutMs,
    maxRetries: settings.maxRetries,
    ...(settings.username ? { auth: { username: settings.username, password: settings.password ?? '' } } : {}),
    ...(settings.apiKey ? { headers: { authorization: `ApiKey ${settings.apiKey}` } } : {}),
    ssl: {
      rejectUnauthorized: settings.sslVerify,
      ...trustedCa(settings),
    },
  });
}

export function openSearchTransport(client: Client, url: string): EngineTransport {
  return {
    async request({ method, path, body, bulk, querystring, ignore, maxRetries, timeoutMs }) {
      try {
        const response = await client.transport.request(
          { method, path, ...(body ? { body } : {}), ...(bulk ? { bulkBody: bulk } : {}), ...(querystring ? { querystring } : {}) },
          { ...(ignore ? { ignore } : {}), ...(maxRetries === undefined ? {} : { maxRetries }),
            ...(timeoutMs === undefined ? {} : { requestTimeout: timeoutMs }) },
        );
        return { status: response.statusCode ?? 0, body: response.body, headers: response.headers ?? {} };
      } catch (error) {
        throw classifyClientError('opensearch', url, path, error);
      }
    },
    close: () => client.close(),
  };
}

/** The engine over an OpenSearch server (`client`: one already made, e.g. by the engine detection). */
export function openOpenSearch(settings: SearchSettings, client: Client = createOpenSearchClient(settings)): DocumentSearchEngine {
  return new DocumentSearchEngine('opensearch', openSearchTransport(client, settings.url ?? ''), settings);
}
