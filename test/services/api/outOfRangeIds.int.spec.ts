import { expect } from 'chai';
import type { OpenAPIV3 } from 'openapi-types';
import pino from 'pino';
import { PostgresSearchEngine } from '../../../infra/search/postgres';
import { searchBuilder } from '../../../projections/search/rebuild';
import { SearchMetrics } from '../../../services/search/metrics';
import { DEFAULT_REINDEX_SETTINGS, ReindexSaga } from '../../../services/searchAdmin/reindex.saga';
import { DEFAULT_SEARCH_SETTINGS } from '../../../services/shared/search';
import { startTestApp, type TestApp } from '../../support/app';
import { type Answer, type Doc, fetchDocuments, isErrorShaped, METHODS, plain, resolve, type Schema, seededAdminToken, sendRaw } from '../../support/openapiDocs';
import { serveSearchAdmin } from '../../support/searchAdminApp';

const MAX_INT4 = 2_147_483_647;
/** Requests in flight at once: the app's database round trips overlap (one at a time, the file took 35 s). */
const REQUESTS_AT_ONCE = 6;

/** An id no row has and no column holds: as a URL or a form carries it, and as a JSON body does. */
interface BadId { text: string; json: string }
const BAD_IDS: readonly BadId[] = [
  { text: '2147483648', json: '2147483648' },
  { text: '99999999999', json: '99999999999' },
  { text: '-1', json: '-1' },
  { text: '0', json: '0' },
  { text: '1.5', json: '1.5' },
  { text: '1e3', json: '"1e3"' },
  { text: '9'.repeat(400), json: '9'.repeat(400) },
];

/** Named as one of our ids: `id`, `…Id`, `…Ids` (an `externalId` is the source tool's, any text or number). */
const ID_NAME = /^ids?$|^(?!external)[a-zA-Z0-9]*[a-z0-9](Id|Ids)$/;
/** Where the value goes in a JSON body before the bad literal replaces it. */
const SLOT = '\u0000bad-id\u0000';

/** The integer a schema takes, if it takes one (the integer alternative of a filter, say). */
function integerOf(doc: Doc, schema: Schema, depth = 0): OpenAPIV3.SchemaObject | null {
  const s = resolve(doc, schema);
  if (s.type === 'integer') return s;
  if (s.type === 'string' && s.pattern && /^\^\[1-9\]\[0-9\]/.test(s.pattern)) return s;
  if (depth > 2) return null;
  for (const option of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) {
    const found = integerOf(doc, option, depth + 1);
    if (found) return found;
  }
  return null;
}

/** An id the document describes: named as one, or bounded like a row id of an `integer` column. */
const isId = (name: string, s: OpenAPIV3.SchemaObject) => ID_NAME.test(name) || (s.type === 'integer' && s.minimum === 1 && s.maximum === MAX_INT4);

/** The range the document declares for an integer (int32 when only the format says it). */
function declaredRange(s: OpenAPIV3.SchemaObject): { min?: number; max?: number } {
  const int32 = s.format === 'int32';
  return { min: s.minimum ?? (int32 ? -(MAX_INT4 + 1) : undefined), max: s.maximum ?? (int32 ? MAX_INT4 : undefined) };
}

/** Whether the value (as JSON gives it, or as text) is outside what the schema declares. */
function outside(s: OpenAPIV3.SchemaObject, bad: BadId, asText: boolean): boolean {
  const literal = asText ? bad.text : bad.json;
  if (!/^-?[0-9]+$/.test(literal)) return true;
  const { min, max } = declaredRange(s);
  const n = Number(literal);
  return (min !== undefined && n < min) || (max !== undefined && n > max);
}

/**
 * A place for an id in a request body: its path as the API names it, its schema, the body with
 * SLOT there; `valid`: the rest of the body is one the route takes (else it may be refused first
 * for that: an update of a row that has no field an update may change).
 */
interface Slot { path: string; schema: OpenAPIV3.SchemaObject; body: unknown; valid: boolean }

/** How deep in a body ids are looked for (`data.stepResults.create[0].statusId`). */
const MAX_DEPTH = 5;

/**
 * A plain value of a field the request needs. An object that must not be empty (an update's
 * `data`) gets its first plain text or flag; null when it has none (no valid value).
 */
function needed(doc: Doc, schema: Schema, depth: number): { value: unknown } | null {
  const value = plain(doc, schema, depth);
  const s = resolve(doc, schema);
  if (!value || typeof value !== 'object' || Array.isArray(value) || Object.keys(value).length > 0 || !s.minProperties) return { value };
  for (const [name, property] of Object.entries(s.properties ?? {})) {
    const first = plain(doc, property, depth + 1);
    if (typeof first === 'string' || typeof first === 'boolean') return { value: { [name]: first } };
  }
  return null;
}

/**
 * Every id field of a body: its own properties, and those of the objects (and of the first item of
 * the lists of objects) in it, through each alternative (`oneOf`, `anyOf`), down to MAX_DEPTH; the
 * other required fields filled with plain values. Below the top two levels a schema the document
 * names (a `$ref`: `ConnectInput`, a `…WhereInput`) is searched once per document (`expanded`),
 * where the first operation reaches it: the same schema is parsed the same way wherever it sits,
 * and searching it everywhere would send millions of requests.
 */
function slotsOf(doc: Doc, schema: Schema, expanded: Set<string>, depth = 0): Slot[] {
  if ('$ref' in schema && depth >= 2) {
    if (expanded.has(schema.$ref)) return [];
    expanded.add(schema.$ref);
  }
  const s = resolve(doc, schema);
  const found = new Map<string, Slot>();
  for (const option of [...(s.oneOf ?? []), ...(s.anyOf ?? [])]) {
    const o = resolve(doc, option);
    if (o.type !== 'object' && !o.properties && !o.anyOf && !o.oneOf) continue;
    for (const slot of slotsOf(doc, option, expanded, depth)) if (!found.has(slot.path)) found.set(slot.path, slot);
  }
  /** The object with `value` at `name`, its required fields plain; whether they are valid. */
  const filled = (name: string, value: unknown): { body: Record<string, unknown>; valid: boolean } => {
    const body: Record<string, unknown> = {};
    let valid = true;
    for (const other of s.required ?? []) {
      if (other === name || !s.properties![other]) continue;
      const given = needed(doc, s.properties![other], depth + 1);
      body[other] = given?.value ?? {};
      valid &&= given !== null;
    }
    // An aggregate asks for one at least, or is refused before its filter is read.
    if (s.properties!._count && name !== '_count') body._count = true;
    body[name] = value;
    return { body, valid };
  };
  for (const [name, property] of Object.entries(s.properties ?? {})) {
    const p = resolve(doc, property);
    const integer = integerOf(doc, p);
    if (integer && isId(name, integer)) {
      found.set(name, { path: name, schema: integer, ...filled(name, SLOT) });
      continue;
    }
    const itemsRef = p.type === 'array' ? p.items : null;
    const items = itemsRef ? resolve(doc, itemsRef) : null;
    const itemInteger = items && integerOf(doc, items);
    if (itemInteger && ID_NAME.test(name)) {
      found.set(`${name}[0]`, { path: `${name}[0]`, schema: itemInteger, ...filled(name, [SLOT]) });
      continue;
    }
    if (depth >= MAX_DEPTH) continue;
    const inner = items?.properties || items?.anyOf || items?.oneOf ? itemsRef! : p.properties || p.oneOf || p.anyOf ? property : null;
    if (!inner) continue;
    for (const slot of slotsOf(doc, inner, expanded, depth + 1)) {
      const at = items ? `${name}[0].${slot.path}` : `${name}.${slot.path}`;
      const outer = filled(name, items ? [slot.body] : slot.body);
      found.set(at, { path: at, schema: slot.schema, body: outer.body, valid: slot.valid && outer.valid });
    }
  }
  return [...found.values()];
}

/** A parameter's plain value as text: the first of an enum, a UUID, else 1. */
function plainParameter(doc: Doc, p: OpenAPIV3.ParameterObject): string {
  const s = p.schema ? resolve(doc, p.schema) : {};
  if (s.enum) return String(s.enum[0]);
  if (s.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
  if (s.format === 'date-time') return '2030-01-01T00:00:00Z';
  return '1';
}

/**
 * Issue 35, section 2: an id above the `integer` range reached PostgreSQL on seven routes and
 * answered 500. Every route of every OpenAPI document (the app with search on PostgreSQL and its
 * administration, as a process serves them), as an administrator, is sent ids out of any column's
 * range (and -1, 0, 1.5, 1e3, 400 digits) in each id path parameter, query parameter and body
 * field: a value outside what the document declares is a 4xx in the error shape (400
 * invalid-argument naming it), and nothing answers 5xx.
 * Slow: sends 7 bad ids into each of 3,000+ id fields and 25+ id parameters of the 1,000+ operations of the OpenAPI documents: some 25,000 requests, 6 at a time, each checked
 */
describe('ids out of range, sent to every route of the OpenAPI documents', function () {
  this.timeout(900_000);
  let app: TestApp;
  let panel: { url: string; stop(): Promise<void> };
  let token: string;
  let docs: Doc[] = [];

  before(async () => {
    app = await startTestApp();
    token = await seededAdminToken(app, 'ids');
    const logger = pino({ level: 'silent' });
    const engine = new PostgresSearchEngine(app.deps.knex, { ...DEFAULT_SEARCH_SETTINGS, indexPrefix: 'ids_', requestTimeoutMs: 5000 });
    // The reindex worker is not started: no request here is valid enough to queue a job.
    const reindex = new ReindexSaga({ ...app.deps, logger, engine: () => engine, builder: searchBuilder({ knex: app.deps.knex, logger }), reindex: DEFAULT_REINDEX_SETTINGS });
    panel = await serveSearchAdmin(app, () => engine, { reindex, searchMetrics: new SearchMetrics() });
    docs = await fetchDocuments(panel.url);
  });
  after(async () => {
    await panel?.stop();
    await app?.stop();
  });

  const send = (method: string, at: string, body?: string) => sendRaw(panel.url, token, method, at, body);

  it('every id parameter declares its range', () => {
    const unbounded: string[] = [];
    for (const doc of docs) {
      for (const [template, item] of Object.entries(doc.paths)) {
        for (const method of METHODS) {
          for (const p of (item?.[method]?.parameters ?? []) as OpenAPIV3.ParameterObject[]) {
            const s = p.schema && integerOf(doc, p.schema);
            if (!s || !isId(p.name, s)) continue;
            const { min, max } = declaredRange(s);
            if (min === undefined || max === undefined || max > MAX_INT4) unbounded.push(`${method.toUpperCase()} ${template} ${p.in} ${p.name}: ${JSON.stringify(s)}`);
          }
        }
      }
    }
    expect(unbounded, unbounded.join('\n')).to.deep.equal([]);
  });

  it('each id out of range answers 4xx in the error shape (400 invalid-argument naming it), never 5xx', async () => {
    const failures: string[] = [];
    const counts = { operations: 0, parameters: 0, fields: 0, exact: 0, requests: 0 };
    /** `at`: where the refusal must point, or null where the rest of the request is refused anyway (any 400 invalid-argument). */
    const check = (label: string, res: Answer, refused: boolean, at: string | null) => {
      counts.requests++;
      const shown = `${label}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
      if (res.status >= 500) failures.push(shown);
      else if (res.status >= 400 && !isErrorShaped(res.body)) failures.push(`${shown} (not the error shape)`);
      else if (refused && (res.status !== 400 || res.body.code !== 'invalid-argument' || (at !== null && res.body.details?.path !== at))) {
        failures.push(`${shown} (expected 400 invalid-argument at ${at ?? 'any path'})`);
      }
    };
    /** Every request, sent and checked below, REQUESTS_AT_ONCE at a time (none changes anything: each is refused). */
    const requests: Array<() => Promise<void>> = [];
    for (const doc of docs) {
      const expanded = new Set<string>();
      for (const [template, item] of Object.entries(doc.paths)) {
        // Outside /api (the health checks) nothing of a request is read.
        if (!template.startsWith('/api/')) continue;
        for (const method of METHODS) {
          const op = item?.[method];
          if (!op) continue;
          counts.operations++;
          const label = `${method.toUpperCase()} ${template}`;
          const parameters = (op.parameters ?? []) as OpenAPIV3.ParameterObject[];
          /** The route's URL with `name` (if given) holding `value`, the other path parameters and the required query parameters plain. */
          const urlWith = (name: string | null, value: string) => {
            let url = template;
            const query: string[] = [];
            for (const p of parameters) {
              const text = p.name === name ? value : plainParameter(doc, p);
              if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(text));
              else if (p.in === 'query' && (p.required || p.name === name)) query.push(`${p.name}=${encodeURIComponent(text)}`);
            }
            return query.length > 0 ? `${url}?${query.join('&')}` : url;
          };
          for (const p of parameters) {
            const s = p.schema && integerOf(doc, p.schema);
            if (!s || !isId(p.name, s) || (p.in !== 'path' && p.in !== 'query')) continue;
            counts.parameters++;
            for (const bad of BAD_IDS) {
              const sent = urlWith(p.name, bad.text);
              requests.push(async () => check(`${label} ${p.in} ${p.name}=${bad.text.slice(0, 12)}`, await send(method, sent), outside(s, bad, true), p.name));
            }
          }
          const url = urlWith(null, '');
          const bodySchema = (op.requestBody as OpenAPIV3.RequestBodyObject | undefined)?.content['application/json']?.schema;
          const qSchema = parameters.find((p) => p.name === 'q')?.content?.['application/json']?.schema;
          for (const [where, schema] of [['body', bodySchema], ['q', qSchema]] as const) {
            if (!schema) continue;
            for (const slot of slotsOf(doc, schema, expanded)) {
              counts.fields++;
              if (slot.valid) counts.exact++;
              for (const bad of BAD_IDS) {
                const text = JSON.stringify(slot.body).replace(JSON.stringify(SLOT), bad.json);
                requests.push(async () => {
                  const res = where === 'body' ? await send(method, url, text) : await send(method, `${url}${url.includes('?') ? '&' : '?'}q=${encodeURIComponent(text)}`);
                  check(`${label} ${where} ${slot.path}=${bad.json.slice(0, 12)}`, res, outside(slot.schema, bad, false), slot.valid ? slot.path : null);
                });
              }
            }
          }
        }
      }
    }
    let next = 0;
    await Promise.all(Array.from({ length: REQUESTS_AT_ONCE }, async () => {
      while (next < requests.length) await requests[next++]();
    }));
    expect(counts.requests).to.equal(requests.length);
    expect(failures, `${failures.length} failures:\n${failures.sort().join('\n')}`).to.deep.equal([]);
    expect(counts.operations, 'operations of the documents').to.be.greaterThan(1000);
    expect(counts.parameters, 'id parameters').to.be.greaterThan(25);
    expect(counts.fields, 'id fields').to.be.greaterThan(3000);
    expect(counts.exact, 'id fields in an otherwise valid request').to.be.greaterThan(counts.fields * 0.9);
  });
});
