import http from 'node:http';
import type { OpenAPIV3 } from 'openapi-types';
import { seedDefaults } from '../../services/entities/seed';
import { createApiToken, registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import type { TestApp } from './app';

/**
 * Helpers of the tests that send something to every route of the OpenAPI documents
 * (GET /api/docs): the documents, their schemas resolved, plain values for the fields a request
 * needs, and a client that sends any method with any body.
 */

export type Schema = OpenAPIV3.SchemaObject | OpenAPIV3.ReferenceObject;
export type Doc = OpenAPIV3.Document;
export const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Every category's document, as GET /api/docs serves them. */
export async function fetchDocuments(base: string): Promise<Doc[]> {
  const { categories } = await (await fetch(`${base}/api/docs`)).json() as { categories: { name: string }[] };
  return Promise.all(categories.map(async ({ name }) => await (await fetch(`${base}/api/docs?category=${name}`)).json() as Doc));
}

/** The schema a reference names (references of references followed). */
export function resolve(doc: Doc, schema: Schema): OpenAPIV3.SchemaObject {
  let s = schema;
  while ('$ref' in s) s = doc.components!.schemas![s.$ref.replace('#/components/schemas/', '')];
  return s;
}

/** A plain value of the schema's type: its required fields filled the same way. */
export function plain(doc: Doc, schema: Schema, depth = 0): unknown {
  const s = resolve(doc, schema);
  const first = s.allOf?.[0] ?? s.anyOf?.[0] ?? s.oneOf?.[0];
  if (first) return plain(doc, first, depth + 1);
  if (s.enum) return s.enum[0];
  switch (s.type) {
    case 'string': return s.format === 'date-time' ? '2030-01-01T00:00:00Z' : 'plain';
    case 'integer': case 'number': return 1;
    case 'boolean': return false;
    case 'array': return [];
    default: {
      if (depth > 6) return {};
      const value: Record<string, unknown> = {};
      for (const name of s.required ?? []) if (s.properties?.[name]) value[name] = plain(doc, s.properties[name], depth + 1);
      return value;
    }
  }
}

export interface Answer { status: number; body: any }

/** node:http, not fetch: a GET or DELETE may carry a body too. A JSON answer is parsed; anything else stays text. */
export function sendRaw(base: string, token: string, method: string, path: string, body?: string | Buffer, type = 'application/json'): Promise<Answer> {
  return new Promise((resolveAnswer, reject) => {
    const req = http.request(base + path, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': type, 'content-length': Buffer.byteLength(body) }) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any = text;
        try {
          parsed = JSON.parse(text);
        } catch { /* not JSON (a stream, a file) */ }
        resolveAnswer({ status: res.statusCode!, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Whether the answer is in the error shape: `{error, code, details}`. */
export const isErrorShaped = (body: unknown): boolean =>
  !!body && typeof body === 'object' && ['error', 'code', 'details'].every((k) => k in (body as object));

/** The app's defaults seeded (statuses, workflows: an import whose fields pass goes ahead) and an administrator's API token. */
export async function seededAdminToken(app: TestApp, name: string): Promise<string> {
  await seedDefaults(app.deps, systemMetadata('test'));
  const userId = await registerUser(app.deps, { email: 'root@example.com', name: 'Root', password: 'root-Password-7431', access: 'ADMIN' }, systemMetadata('test'));
  return (await createApiToken({ ...app.deps, tokenSecret: app.appDeps.tokenSecret }, { userId, name, expiresAt: null }, systemMetadata('test'))).token;
}
