/**
 * `npx tsx scripts/event-schemas.ts`: writes the JSON Schemas of the generic entity events
 * (contracts/entitySchemas.ts) into contracts/events/. A type whose newest file already matches
 * is left alone; a changed shape becomes a new version beside the old ones (published schemas
 * never change). `--check` writes nothing and exits 1 when a file is missing or stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ENTITIES } from '../contracts/entities';
import { GENERIC_ENTITIES } from '../contracts/entityEvents';
import { entityEventSchemas } from '../contracts/entitySchemas';
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

/** The files that would be written (none when everything is current). */
export function pendingSchemaFiles(): (SchemaFileChange & { content: string })[] {
  const pending: (SchemaFileChange & { content: string })[] = [];
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
