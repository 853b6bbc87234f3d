import type { OpenAPIV3 } from 'openapi-types';
import { CONNECTION_PATH } from './connection.routes';

const json = (schema: OpenAPIV3.SchemaObject) => ({ 'application/json': { schema } });
const error = (description: string): OpenAPIV3.ResponseObject =>
  ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
const ENGINES = ['postgres', 'opensearch', 'elasticsearch'];

const probe: Record<string, OpenAPIV3.SchemaObject> = {
  reachable: { type: 'boolean', description: 'the engine answered info()' },
  engine: { type: 'string', enum: ENGINES, nullable: true },
  version: { type: 'string', nullable: true, description: 'the engine\'s version, as it says' },
  latencyMs: { type: 'number', nullable: true, description: 'how long info() took, ms' },
  error: { type: 'string', nullable: true, description: 'why the engine did not answer; never a credential' },
};

const publicSettings: OpenAPIV3.SchemaObject = {
  type: 'object', additionalProperties: false, description: 'the settings in force, without any secret',
  required: ['engine', 'url', 'username', 'hasPassword', 'hasApiKey', 'sslVerify', 'sslCaPath', 'hasSslCa'],
  properties: {
    engine: { type: 'string', enum: ['auto', ...ENGINES] },
    url: { type: 'string', nullable: true, description: 'null: PostgreSQL full-text search in the service\'s database' },
    username: { type: 'string', nullable: true },
    hasPassword: { type: 'boolean' },
    hasApiKey: { type: 'boolean' },
    sslVerify: { type: 'boolean' },
    sslCaPath: { type: 'string', nullable: true },
    hasSslCa: { type: 'boolean', description: 'a CA certificate (PEM) was given as sslCa' },
  },
};

const status: OpenAPIV3.SchemaObject = {
  type: 'object', additionalProperties: false,
  required: [...Object.keys(probe), 'state', 'lastError', 'source', 'settingsId', 'settings', 'changedAt', 'changedBy'],
  properties: {
    ...probe,
    state: { type: 'string', enum: ['connecting', 'open', 'failed'], description: 'the process\'s connection: connecting (retried within RETRY_BUDGET_MS), open, failed (given up)' },
    lastError: { type: 'string', nullable: true, description: 'the connection\'s last failure' },
    source: { type: 'string', enum: ['environment', 'administrator'], description: 'environment: the SEARCH_* variables; administrator: settings saved through this API' },
    settingsId: { type: 'integer', nullable: true, description: 'the saved change in force (null: SEARCH_*, never changed)' },
    settings: publicSettings,
    changedAt: { type: 'string', format: 'date-time', nullable: true },
    changedBy: {
      type: 'object', nullable: true, additionalProperties: false, required: ['userId', 'name', 'email'],
      properties: { userId: { type: 'integer' }, name: { type: 'string', nullable: true }, email: { type: 'string', nullable: true } },
    },
  },
};

const nullableText = (maxLength: number, description: string, extra: { format?: string; writeOnly?: boolean } = {}): OpenAPIV3.SchemaObject =>
  ({ type: 'string', nullable: true, minLength: 1, maxLength, description, ...extra });

/** The request body of test and PUT: every field optional; omitted keeps the value in force (secrets included), null clears it. */
const settingsBody: OpenAPIV3.SchemaObject = {
  type: 'object', additionalProperties: false,
  description: 'Fields omitted keep the value in force (secrets included); null clears one. Credentials go in their fields, never in url.',
  properties: {
    engine: { type: 'string', enum: ['auto', ...ENGINES], description: 'auto: detected from the server\'s answer to GET /' },
    url: nullableText(2000, 'http(s)://host:port of OpenSearch or Elasticsearch, without user:password; null: PostgreSQL search (engine becomes auto unless given)', { format: 'uri' }),
    username: nullableText(200, 'basic authentication, with password'),
    password: nullableText(1000, 'basic authentication; stored encrypted, never answered', { writeOnly: true }),
    apiKey: nullableText(2000, 'sent as Authorization: ApiKey <key>; stored encrypted, never answered', { writeOnly: true }),
    sslVerify: { type: 'boolean', description: 'verify the engine\'s TLS certificate' },
    sslCaPath: nullableText(1000, 'a PEM file on the server of the CA to trust'),
    sslCa: nullableText(100_000, 'the CA certificate to trust, as PEM text (taken before sslCaPath); stored encrypted', { writeOnly: true }),
  },
};

const forbidden = error('forbidden: the caller is not an administrator (access ADMIN)');
const unauthenticated = error('not authenticated; or session-expired (see the session security scheme)');
const unsafeForbidden = error('forbidden: the caller is not an administrator; or csrf-rejected (see the session security scheme)');
const position = { 'X-Event-Position': { description: 'the position of the event recorded', schema: { type: 'string' } } } as const;

/** /api/admin/search/connection and /test: the engine connection (docs/search.md, "Connection"). */
export function connectionPaths(): OpenAPIV3.PathsObject {
  return {
    [CONNECTION_PATH]: {
      get: {
        operationId: 'adminSearchConnection',
        tags: ['admin'],
        summary: 'the search engine connection: engine, version, reachable, latency, state, the settings without secrets (administrators)',
        description: 'Asks the engine in use `info()` now and times it. Reading changes nothing and appends nothing.',
        responses: { 200: { description: 'the connection', content: json(status) }, 401: unauthenticated, 403: forbidden },
      },
      put: {
        operationId: 'adminSearchConnectionUpdate',
        tags: ['admin'],
        summary: 'change the URL, credentials or TLS settings; tested first, then in force without a restart (administrators)',
        description: 'The new settings are tried first (the engine opened and asked info()). If it does not answer: 400 `search-connection-failed` '
          + 'and nothing changes. If it does: saved (credentials encrypted with AES-256-GCM), recorded as SearchConnectionChanged (no secret, '
          + 'only which fields changed), and search and the indexer switch to it; every other process follows within seconds. '
          + 'Settings equal to those in force change nothing and append nothing.',
        requestBody: { required: true, content: json(settingsBody) },
        responses: {
          200: { description: 'in force (or unchanged): the connection as GET answers it', headers: position, content: json(status) },
          400: error('invalid-argument (details.path names the field); search-connection-failed (details.error says why; nothing saved)'),
          401: unauthenticated,
          403: unsafeForbidden,
        },
      },
      delete: {
        operationId: 'adminSearchConnectionReset',
        tags: ['admin'],
        summary: 'back to the SEARCH_* variables, tested first, without a restart (administrators)',
        description: 'As PUT with the SEARCH_* variables\' settings, recorded as SearchConnectionChanged with `source: environment`. '
          + 'Already on them: changes nothing.',
        responses: {
          200: { description: 'in force (or unchanged)', headers: position, content: json(status) },
          400: error('search-connection-failed: the engine of SEARCH_* does not answer; nothing changed'),
          401: unauthenticated,
          403: unsafeForbidden,
        },
      },
    },
    [`${CONNECTION_PATH}/test`]: {
      post: {
        operationId: 'adminSearchConnectionTest',
        tags: ['admin'],
        summary: 'try settings without saving them (administrators)',
        description: 'Opens a temporary engine with the settings in force changed by the body, asks it info(), closes it. Saves nothing; '
          + 'recorded as SearchOperationPerformed (`connection-test`) with its outcome. An engine that does not answer is a 200 with '
          + '`reachable: false` and the reason.',
        requestBody: { required: true, content: json(settingsBody) },
        responses: {
          200: { description: 'the outcome', headers: position, content: json({ type: 'object', additionalProperties: false, required: Object.keys(probe), properties: probe }) },
          400: error('invalid-argument (details.path names the field)'),
          401: unauthenticated,
          403: unsafeForbidden,
        },
      },
    },
  };
}
