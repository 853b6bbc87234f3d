/**
 * `npx tsx scripts/event-schemas.ts`: writes the JSON Schemas of the generic entity events
 * (contracts/entitySchemas.ts) into contracts/events/, and bounds the hand-written ones: each
 * string, list, integer and JSON value of a hand-written type's newest schema without a limit
 * gets one from contracts/limits.ts (HAND_WRITTEN_LIMITS names the fields that take another than
 * their kind's default). A type whose newest file already matches is left alone; a changed shape
 * becomes a new version beside the old ones (published schemas never change). `--check` writes
 * nothing and exits 1 when a file is missing or stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ENTITIES } from '../contracts/entities';
import { GENERIC_ENTITIES } from '../contracts/entityEvents';
import { entityEventSchemas } from '../contracts/entitySchemas';
import { HAND_WRITTEN_EVENT_TYPES } from '../contracts/events';
import { INT32_MAX, INT32_MIN, LIMITS, type LimitName, MAX_BYTES, MAX_INDEX, TIME_PATTERN, jsonValueDefs, jsonValueRef } from '../contracts/limits';
import { EVENTS_SCHEMA_DIR } from '../contracts/validator';

export interface SchemaFileChange { type: string; file: string }

function newestVersion(type: string): { version: number; schema: unknown } | null {
  const versions = fs.readdirSync(EVENTS_SCHEMA_DIR)
    .map((file) => new RegExp(`^${type}\\.v(\\d+)\\.schema\\.json$`).exec(file))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]));
  if (versions.length === 0) return null;
  const version = Math.max(...versions);
  return { version, schema: JSON.parse(fs.readFileSync(path.join(EVENTS_SCHEMA_DIR, `${type}.v${version}.schema.json`), 'utf8')) };
}

/** Only the shape counts: the id, title and description may differ between versions. */
const withoutId = (schema: unknown) => ({ ...(schema as Record<string, unknown>), $id: undefined, title: undefined, description: undefined });

type Schema = Record<string, unknown>;

/**
 * Fields of hand-written events whose limit is not their kind's default (strings LIMITS.text,
 * lists LIMITS.items, integers PostgreSQL's integer), by `<Type>.<path>` (`[]` for a list's items).
 * A field that already has a limit keeps it unless it is named here.
 */
export const HAND_WRITTEN_LIMITS: Record<string, LimitName | 'bytes' | 'index'> = {
  'ApiTokenCreated.prefix': 'name',
  'DefaultsPlanned.items[].key': 'name',
  'DefaultsPlanned.items[].entity': 'name',
  'IdBlockReserved.category': 'name',
  // A claimed value is a unique field's: a name, an e-mail (the longest), or ids joined.
  'UniqueValueClaimed.scope': 'name',
  'UniqueValueClaimed.value': 'email',
  'UniqueValueReleased.scope': 'name',
  'UniqueValueReleased.value': 'email',
  'UserRegistered.email': 'email',
  'UserRegistered.name': 'name',
  'UserRegistered.passwordHash': 'name',
  'UserUpdated.changes.name': 'name',
  'UserPasswordChanged.passwordHash': 'name',
  'RepositoryFolderCreated.name': 'name',
  'RepositoryFolderUpdated.changes.name': 'name',
  'RepositoryCaseAliasAdded.aliasTitle': 'caseTitle',
  'TestResultsImported.folders.name[]': 'name',
  'TestResultsImported.cases.title[]': 'caseTitle',
  'TestResultsImported.cases.className[]': 'caseTitle',
  'TestResultsImported.results.failureType[]': 'name',
  'TestResultsImported.results.file[]': 'name',
  'TestResultsImported.results.properties[][].name': 'name',
  'TestResultsImported.suiteOutputs.suite[]': 'caseTitle',
  'TestResultsImported.suiteProperties.name[]': 'name',
  'TestResultsImported.suiteProperties.value[]': 'caseTitle',
  'ImportRequested.testRunName': 'name',
  'ImportRequested.branch': 'name',
  'ImportRequested.ciJobId': 'name',
  'ImportRequested.buildUrl': 'url',
  'TestResultsImported.chunk': 'index',
  'FileStored.size': 'bytes',
  'ImportFileStored.sizeBytes': 'bytes',
  'ExternalImportUploaded.fileSize': 'bytes',
};

/** Like HAND_WRITTEN_LIMITS, for fields named by a pattern: an external import's mapping lists, one per kind of row. */
const PATTERN_LIMITS: [RegExp, LimitName][] = [
  [/^ExternalImport(Analysed\.(sources|suggestions)|Configured\.mappings)\.[A-Za-z]+$/, 'mappedRows'],
];

/** Values of lists the validator checks against another contract (contracts/validator.ts). */
const CHECKED_BY_VALIDATOR: Record<string, string> = {
  'ExternalImportRowsWritten.rows[]': 'each row is the data of its entity\'s Created event',
};

/** A pattern that fixes its length (`^[0-9a-f]{64}$`, `^[1-9][0-9]{0,18}$`) needs no maxLength. */
const BOUNDED_PATTERN = /^\^(?:\[[^\]]+\](?:\{\d+(?:,\d+)?\})?)+\$$/;

/** The newest schema of a hand-written type with every limit it lacks (see HAND_WRITTEN_LIMITS). */
export function boundedSchema(type: string, schema: Schema): Schema {
  let usesJson = false;
  const limitOf = (path: string): number | undefined => {
    const name = HAND_WRITTEN_LIMITS[`${type}.${path}`] ?? PATTERN_LIMITS.find(([pattern]) => pattern.test(`${type}.${path}`))?.[1];
    return name === undefined ? undefined : name === 'bytes' ? MAX_BYTES : name === 'index' ? MAX_INDEX : LIMITS[name];
  };
  const walk = (s: Schema, path: string): Schema => {
    const out: Schema = { ...s };
    const types = ([] as unknown[]).concat(s.type ?? []);
    if (Object.keys(s).filter((k) => k !== 'description').length === 0) {
      usesJson = true;
      return { ...(s.description !== undefined && { description: s.description }), ...jsonValueRef() };
    }
    if (types.includes('string') && s.format === 'date-time' && s.pattern === undefined) out.pattern = TIME_PATTERN;
    if (types.includes('string') && !s.enum && !s.const && !s.format) {
      const named = limitOf(path);
      if (named !== undefined) out.maxLength = named;
      else if (s.maxLength === undefined && !(typeof s.pattern === 'string' && BOUNDED_PATTERN.test(s.pattern))) out.maxLength = LIMITS.text;
    }
    if (types.includes('integer')) {
      const named = limitOf(path);
      if (named !== undefined) out.maximum = named;
      else if (s.maximum === undefined) out.maximum = INT32_MAX;
      if (s.minimum === undefined) out.minimum = INT32_MIN;
    }
    if (types.includes('array')) {
      const named = limitOf(path);
      if (named !== undefined) out.maxItems = named;
      else if (s.maxItems === undefined) out.maxItems = LIMITS.items;
      if (s.items && typeof s.items === 'object') out.items = walk(s.items as Schema, `${path}[]`);
      else if (s.items === undefined && !(`${type}.${path}` in CHECKED_BY_VALIDATOR)) {
        usesJson = true; // a list of anything: JSON values
        out.items = jsonValueRef();
      }
    }
    if (types.includes('object') || s.properties) {
      if (s.properties) {
        out.properties = Object.fromEntries(Object.entries(s.properties as Record<string, Schema>)
          .map(([key, value]) => [key, walk(value, path ? `${path}.${key}` : key)]));
      }
      if (s.additionalProperties === undefined && !s.properties) {
        // An open object (error details): JSON values under names, bounded like any JSON value.
        usesJson = true;
        Object.assign(out, { maxProperties: LIMITS.items, propertyNames: { maxLength: LIMITS.name }, additionalProperties: jsonValueRef() });
      } else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        out.additionalProperties = walk(s.additionalProperties as Schema, `${path}.*`);
        if (s.maxProperties === undefined) out.maxProperties = LIMITS.items;
      }
    }
    for (const key of ['oneOf', 'anyOf', 'allOf'] as const) {
      if (Array.isArray(s[key])) out[key] = (s[key] as Schema[]).map((branch) => walk(branch, path));
    }
    return out;
  };
  const { $defs: defs, ...rest } = schema;
  const bounded = walk(rest, '');
  // The JSON value definitions are written anew each time (a changed limit changes them too).
  const otherDefs = Object.entries((defs ?? {}) as Schema).filter(([name]) => !/^json\d+$/.test(name));
  if (!usesJson && !JSON.stringify(bounded).includes('"#/$defs/json')) return otherDefs.length > 0 ? { ...bounded, $defs: Object.fromEntries(otherDefs) } : bounded;
  return { ...bounded, $defs: { ...Object.fromEntries(otherDefs), ...jsonValueDefs() } };
}

/** The files that would be written (none when everything is current). */
export function pendingSchemaFiles(): (SchemaFileChange & { content: string })[] {
  const pending: (SchemaFileChange & { content: string })[] = [];
  for (const type of HAND_WRITTEN_EVENT_TYPES) {
    const newest = newestVersion(type)!;
    const bounded = boundedSchema(type, newest.schema as Schema);
    if (JSON.stringify(bounded) === JSON.stringify(newest.schema)) continue;
    const next = newest.version + 1;
    const schema = { ...bounded, $id: `${type}.v${next}` };
    pending.push({ type, file: `${type}.v${next}.schema.json`, content: `${JSON.stringify(schema, null, 2)}\n` });
  }
  for (const name of GENERIC_ENTITIES) {
    for (const [type] of Object.entries(entityEventSchemas(ENTITIES[name], 1))) {
      const newest = newestVersion(type);
      const version = newest ? newest.version : 1;
      const current = entityEventSchemas(ENTITIES[name], version)[type];
      if (newest && JSON.stringify(withoutId(newest.schema)) === JSON.stringify(withoutId(current))) continue;
      const next = newest ? newest.version + 1 : 1;
      const schema = entityEventSchemas(ENTITIES[name], next)[type];
      pending.push({ type, file: `${type}.v${next}.schema.json`, content: `${JSON.stringify(schema, null, 2)}\n` });
    }
  }
  return pending;
}

if (require.main === module) {
  const check = process.argv.includes('--check');
  const pending = pendingSchemaFiles();
  for (const { file, content } of pending) {
    if (check) console.error(`stale or missing: contracts/events/${file}`);
    else {
      fs.writeFileSync(path.join(EVENTS_SCHEMA_DIR, file), content);
      console.log(`wrote contracts/events/${file}`);
    }
  }
  if (check && pending.length > 0) process.exit(1);
}
