import Ajv, { type ErrorObject, type JSONSchemaType } from 'ajv';
import addFormats from 'ajv-formats';
import { badRequest } from './errors';

const ajv = new Ajv({ allErrors: false, strict: true });
addFormats(ajv);

/** `/data/name` → `name`, `/items/0` → `items[0]`; a missing property names itself. */
function pathOf(e: ErrorObject): string {
  const base = e.instancePath.split('/').filter(Boolean)
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '');
  const extra = (e.params as { missingProperty?: string; additionalProperty?: string });
  const leaf = extra.missingProperty ?? extra.additionalProperty;
  return leaf ? (base ? `${base}.${leaf}` : leaf) : base;
}

/** Compiles a JSON Schema for a request body; the parser throws a 400 naming the offending path. */
export function bodyParser<T>(schema: JSONSchemaType<T>): (body: unknown) => T {
  const validate = ajv.compile(schema);
  return (body) => {
    if (validate(body)) return body;
    const e = validate.errors![0];
    const path = pathOf(e);
    const reason = e.keyword === 'additionalProperties' ? 'is not a known field' : e.keyword === 'required' ? 'is required' : e.message ?? 'is invalid';
    throw badRequest('invalid-argument', `${path || 'body'} ${reason}`, { path });
  };
}
