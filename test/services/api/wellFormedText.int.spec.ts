import { expect } from 'chai';
import type { OpenAPIV3 } from 'openapi-types';
import { startTestApp, type TestApp } from '../../support/app';
import { type Doc, fetchDocuments, isErrorShaped, METHODS, plain, resolve, type Schema, seededAdminToken, sendRaw } from '../../support/openapiDocs';

/** What a text column cannot hold, as JSON carries it, and as near as a URL and a form's bytes get to it. */
interface BadText { name: string; char: string; inUrl: string; inForm: Buffer }
const SURROGATE: BadText = {
  // A URL or a form carries at best the CESU-8 bytes of a lone surrogate, which no UTF-8 decoder turns back into one.
  name: 'a lone surrogate', char: '\ud800', inUrl: '%ED%A0%80', inForm: Buffer.from([0xed, 0xa0, 0x80]),
};
const NUL: BadText = { name: 'the NUL character', char: '\u0000', inUrl: '%00', inForm: Buffer.from([0]) };

/**
 * A value for `schema` with exactly one string holding a lone surrogate, and that string's path as
 * the API names paths (`data.name`, `where.AND[0].title`); the other required fields are filled
 * with plain values, so the surrogate sits in a request a route would otherwise read.
 */
function planted(doc: Doc, schema: Schema, bad: string, depth = 0): { value: unknown; path: string } | null {
  const s = resolve(doc, schema);
  if (depth > 6) return null;
  for (const alternatives of [s.allOf, s.anyOf, s.oneOf]) {
    for (const option of alternatives ?? []) {
      const found = planted(doc, option, bad, depth + 1);
      if (found) return found;
    }
  }
  if (s.type === 'string') return s.enum || s.format || s.pattern ? null : { value: `x${bad}`, path: '' };
  if (s.type === 'array') {
    const found = planted(doc, s.items, bad, depth + 1);
    return found && { value: [found.value], path: `[0]${found.path ? (found.path.startsWith('[') ? found.path : `.${found.path}`) : ''}` };
  }
  const properties = Object.entries(s.properties ?? {});
  if (properties.length === 0) return null;
  const required = new Set(s.required ?? []);
  // Required fields first: a request without them would be refused before its text is read.
  for (const [name, property] of [...properties.filter(([n]) => required.has(n)), ...properties.filter(([n]) => !required.has(n))]) {
    const found = planted(doc, property, bad, depth + 1);
    if (!found) continue;
    const value: Record<string, unknown> = {};
    for (const other of required) if (other !== name && s.properties![other]) value[other] = plain(doc, s.properties![other], depth + 1);
    value[name] = found.value;
    // An aggregate asks for one at least, or is refused before its filter is read.
    if (s.properties!._count && name !== '_count') value._count = true;
    return { value, path: found.path ? (found.path.startsWith('[') ? `${name}${found.path}` : `${name}.${found.path}`) : name };
  }
  return null;
}

/** A JSON text as a client's JSON.stringify writes a lone surrogate: the escape `\ud800`. */
const json = (value: unknown) => JSON.stringify(value);

/** A form of text fields and one file; `bad`'s bytes in the field named `badField`, and in the file's name, as a careless client would encode them. */
function multipart(bad: BadText, fields: Record<string, string>, fileField: string, badField: string | null): { body: Buffer; type: string } {
  const boundary = 'badtextboundary';
  const part = (headers: string, content: Buffer) => Buffer.concat([Buffer.from(`--${boundary}\r\n${headers}\r\n\r\n`), content, Buffer.from('\r\n')]);
  const body = Buffer.concat([
    ...Object.entries(fields).map(([name, value]) => part(`Content-Disposition: form-data; name="${name}"`, Buffer.concat([Buffer.from(value), name === badField ? bad.inForm : Buffer.alloc(0)]))),
    part(`Content-Disposition: form-data; name="${fileField}"; filename*=UTF-8''a${bad.inUrl}.xml\r\nContent-Type: application/xml`,
      Buffer.from('<testsuite name="s" tests="1"><testcase name="c" classname="k"/></testsuite>')),
    Buffer.from(`--${boundary}--\r\n`),
  ]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Issue 15, section 2: a lone UTF-16 surrogate anywhere in a request answered 500 (login, tokens,
 * every create) or was stored as U+FFFD; NUL answered 500 at login, tokens and lookup. Every route
 * of every OpenAPI document is sent each: in its JSON body (at a field its request schema names),
 * in `?q=` where the route takes one, and as well as a URL or a form can carry it in its other
 * parameters and fields. The JSON ones answer 400 invalid-argument naming the field, appending
 * nothing; nothing answers 5xx.
 */
describe('text no column can hold, sent to every route of the OpenAPI documents', function () {
  this.timeout(300_000);
  let app: TestApp;
  let token: string;
  let projectId: number;
  let docs: Doc[] = [];

  before(async () => {
    app = await startTestApp();
    token = await seededAdminToken(app, 'bad text');
    docs = await fetchDocuments(app.url);
    const project = await send('post', '/api/model/project/create', json({ data: { name: 'Forms' } }));
    expect(project.status, JSON.stringify(project.body)).to.equal(201);
    projectId = project.body.data.id;
  });
  after(() => app?.stop());

  const send = (method: string, path: string, body?: string | Buffer, type?: string) => sendRaw(app.url, token, method, path, body, type);

  for (const bad of [SURROGATE, NUL]) {
    it(`${bad.name}: every operation answers 4xx naming the field, never 5xx, and appends nothing`, async () => {
      const head = (await app.deps.store.headPosition()).toString();
      const failures: string[] = [];
      let operations = 0;
      let requests = 0;
      const forms: (() => Promise<void>)[] = [];
      for (const doc of docs) {
        for (const [template, item] of Object.entries(doc.paths)) {
          for (const method of METHODS) {
            const op = item?.[method];
            if (!op) continue;
            operations++;
            const parameters = (op.parameters ?? []) as OpenAPIV3.ParameterObject[];
            const url = template.replace(/\{[^}]+\}/g, '999999');
            const label = `${method.toUpperCase()} ${template}`;
            const expect4xx = (variant: string, res: { status: number; body: any }, path?: string) => {
              requests++;
              if (res.status < 400 || res.status >= 500 || !isErrorShaped(res.body)) failures.push(`${label} ${variant}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
              else if (path !== undefined && (res.body.code !== 'invalid-argument' || res.body.details.path !== path)) {
                failures.push(`${label} ${variant}: ${res.body.code} at ${JSON.stringify(res.body.details.path)}, expected invalid-argument at ${path}`);
              }
            };
            const expectNo5xx = (variant: string, res: { status: number; body: any }) => {
              requests++;
              if (res.status >= 500) failures.push(`${label} ${variant}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
            };
            // Outside /api (the health checks) nothing of a request is read.
            const readsInput = template.startsWith('/api/');

            // The JSON body: at a field of the route's own request schema, else at a field of its own.
            const requestBody = op.requestBody as OpenAPIV3.RequestBodyObject | undefined;
            const bodySchema = requestBody?.content['application/json']?.schema;
            const inBody = (bodySchema && planted(doc, bodySchema, bad.char)) ?? { value: { name: `x${bad.char}` }, path: 'name' };
            const res = await send(method, url, json(inBody.value));
            if (readsInput) expect4xx(`body ${inBody.path}`, res, inBody.path);
            else expectNo5xx('body', res);

            // ?q= (the model API's GET and DELETE): URL-encoded JSON, which the route parses itself.
            const qSchema = parameters.find((p) => p.name === 'q')?.content?.['application/json']?.schema;
            if (qSchema) {
              // Arguments with no free text anywhere (a findUnique of rows without text fields): it goes where a number belongs.
              const inQ = planted(doc, qSchema, bad.char) ?? { value: { where: { id: `x${bad.char}` } }, path: undefined };
              expect4xx(`q ${inQ.path ?? 'where.id'}`, await send(method, `${url}?q=${encodeURIComponent(json(inQ.value))}`), inQ.path);
            }
            // The other parameters: as near as a URL gets.
            for (const p of parameters.filter((p) => p.name !== 'q')) {
              const at = p.in === 'path' ? template.replace(`{${p.name}}`, bad.inUrl).replace(/\{[^}]+\}/g, '999999') : `${url}?${p.name}=${bad.inUrl}`;
              const answer = await send(method, at);
              // A query string decodes to the character itself where it can (NUL): refused like a body's.
              if (p.in === 'query' && readsInput && bad === NUL) expect4xx(`query ${p.name}`, answer, p.name);
              else expectNo5xx(`${p.in} ${p.name}`, answer);
            }
            // A form: its text fields and file names as near as multipart bytes get (sent last: an import may go ahead).
            const formSchema = requestBody?.content['multipart/form-data']?.schema;
            if (formSchema) {
              const properties = Object.entries(resolve(doc, formSchema).properties ?? {}).map(([name, f]) => [name, resolve(doc, f)] as const);
              const isFile = (f: OpenAPIV3.SchemaObject) => f.format === 'binary' || (f.type === 'array' && resolve(doc, f.items).format === 'binary');
              const fileField = properties.find(([, f]) => isFile(f))![0];
              const texts = properties.filter(([, f]) => f.type === 'string' && !isFile(f) && !f.format && !f.pattern).map(([name]) => name);
              // The form's other fields as a route accepts them: the project, a run name.
              const base: Record<string, string> = { projectId: String(projectId), ...(properties.some(([name]) => name === 'name') && { name: 'run' }) };
              for (const field of [null, ...texts]) {
                const form = multipart(bad, { ...base, ...(field && { [field]: 'x ' }) }, fileField, field);
                forms.push(async () => {
                  const answer = await send(method, url, form.body, form.type);
                  // NUL survives a form's decoding, and a text field refuses it; a surrogate's bytes become U+FFFD, which is text.
                  if (bad === NUL && field !== null) expect4xx(`multipart ${field}`, answer);
                  else expectNo5xx(`multipart ${field ?? 'file name'}`, answer);
                });
              }
            }
          }
        }
      }
      const after = (await app.deps.store.headPosition()).toString();
      if (after !== head) failures.push(`the refused requests appended events (head ${head} → ${after})`);
      for (const form of forms) await form();
      expect(failures, failures.join('\n')).to.deep.equal([]);
      expect(operations, 'operations of the documents').to.be.greaterThan(300);
      expect(forms.length, 'multipart operations').to.be.greaterThan(0);
      expect(requests).to.be.greaterThan(operations);
    });
  }

  it('refuses before authentication, in keys as in values; a surrogate pair is text like any other', async () => {
    const anonymous = await fetch(`${app.url}/api/auth/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: json({ email: `a${SURROGATE.char}@example.com`, password: 'whatever-1234' }),
    });
    expect(anonymous.status).to.equal(400);
    expect(await anonymous.json()).to.deep.include({ code: 'invalid-argument', details: { path: 'email' } });
    const key = await send('post', '/api/model/project/findMany', json({ where: { [`name${SURROGATE.char}`]: 'x' } }));
    expect(key.status).to.equal(400);
    expect(key.body.details.path).to.equal(`where.name${SURROGATE.char}`);
    const pair = await send('post', '/api/model/project/create', json({ data: { name: 'rocket \ud83d\ude80' } }));
    expect(pair.status, JSON.stringify(pair.body)).to.equal(201);
    expect(pair.body.data.name).to.equal('rocket \ud83d\ude80');
  });
});
