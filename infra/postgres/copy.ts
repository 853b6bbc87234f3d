import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Knex } from 'knex';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/**
 * COPY … FROM STDIN inside a knex transaction (on its own connection): the bulk path of the read
 * model, several times cheaper for PostgreSQL than INSERT … SELECT. Rows are arrays in the order of
 * `columns`; null is NULL; objects are written as JSON; dates as ISO 8601. No ON CONFLICT: the
 * caller's checkpoint makes sure rows are written once.
 */
export async function copyRows(trx: Knex.Transaction, table: string, columns: readonly string[], rows: Iterable<readonly unknown[]>): Promise<void> {
  const connection = (await (trx as unknown as { client: { acquireConnection(): Promise<pg.PoolClient> } }).client.acquireConnection());
  const list = columns.map((c) => `"${c}"`).join(', ');
  await pipeline(Readable.from(textOf(rows)), connection.query(copyFrom(`COPY "${table}" (${list}) FROM STDIN`)));
}

/** COPY's text format, 64 KiB at a time. */
function* textOf(rows: Iterable<readonly unknown[]>): Generator<string> {
  let buffer = '';
  for (const row of rows) {
    buffer += row.map(field).join('\t') + '\n';
    if (buffer.length >= 65536) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer) yield buffer;
}

function field(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : JSON.stringify(value);
  return /[\\\t\n\r]/.test(text) ? text.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : text;
}
