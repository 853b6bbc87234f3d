import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import { copyRows } from '../../infra/postgres/copy';

export interface VersionedRow {
  id: number;
  /** Stream revision of the last event applied to this row. */
  revision: bigint;
  [column: string]: unknown;
}

/** Column name → PostgreSQL type, for the table a RowBatch writes. Must include `id` and `revision`. */
export type ColumnTypes = Record<string, string>;

const CHUNK = 5000;

/**
 * From this many rows on, rows are written with COPY: PostgreSQL parses COPY's text several times
 * faster than a JSON parameter, and the text is a third of the bytes (no key repeated per value;
 * a migration's results went from 52 to ~20 MB). Fewer rows: one statement costs less than COPY's
 * round trips (and, for an upsert, a temporary table).
 */
export const COPY_FROM_ROWS = 200;

/**
 * Inserts rows (column → value) into `table`, typed by `types`: with COPY from COPY_FROM_ROWS rows
 * (`copyFrom`: from this many), below it one JSON parameter per 5,000 rows through
 * json_to_recordset. (Not jsonb_to_recordset: `json` parses the text once as it reads it, where
 * `jsonb` first builds the whole document; a third less time per statement at 200,000 events'
 * rebuild, bench/README.md.)
 */
export async function insertRecords(trx: Knex.Transaction, table: string, types: ColumnTypes, rows: Record<string, unknown>[], copyFrom = COPY_FROM_ROWS): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(types);
  if (rows.length >= copyFrom) return copyRows(trx, table, columns, rows.map((row) => copyFieldsOf(row, columns, types)));
  const list = columns.map((c) => `"${c}"`).join(', ');
  const record = columns.map((c) => `"${c}" ${types[c]}`).join(', ');
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx.raw(`INSERT INTO "${table}" (${list}) SELECT ${list} FROM json_to_recordset(?::json) AS x(${record})`, [JSON.stringify(rows.slice(i, i + CHUNK))]);
  }
}

/**
 * Upserts rows (column → value) into `table`, typed by `types`; `onConflict` is the statement's
 * ON CONFLICT clause. From COPY_FROM_ROWS rows (`copyFrom`: from this many) they are copied into a
 * temporary table of the transaction first (COPY has no ON CONFLICT), and upserted from it; below,
 * one JSON parameter per 5,000 rows.
 */
export async function upsertRecords(
  trx: Knex.Transaction, table: string, types: ColumnTypes, rows: Record<string, unknown>[], onConflict: string, copyFrom = COPY_FROM_ROWS,
): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(types);
  const list = columns.map((c) => `"${c}"`).join(', ');
  const record = columns.map((c) => `"${c}" ${types[c]}`).join(', ');
  if (rows.length >= copyFrom) {
    const staging = `copy_${table}`.slice(0, 63);
    await trx.raw(`CREATE TEMPORARY TABLE IF NOT EXISTS "${staging}" (${record}) ON COMMIT DROP`);
    await trx.raw(`TRUNCATE "${staging}"`);
    await copyRows(trx, staging, columns, rows.map((row) => copyFieldsOf(row, columns, types)));
    await trx.raw(`INSERT INTO "${table}" (${list}) SELECT ${list} FROM "${staging}" ${onConflict}`);
    return;
  }
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx.raw(`INSERT INTO "${table}" (${list}) SELECT ${list} FROM json_to_recordset(?::json) AS x(${record}) ${onConflict}`, [JSON.stringify(rows.slice(i, i + CHUNK))]);
  }
}

/** A row's values in the order of `columns`, as COPY's text takes them: JSON for json columns, array literals for arrays. */
function copyFieldsOf(row: Record<string, unknown>, columns: readonly string[], types: ColumnTypes): unknown[] {
  return columns.map((column) => {
    const value = row[column];
    if (value === null || value === undefined) return null;
    const type = types[column] ?? 'bigint';
    if (type === 'jsonb' || type === 'json') return JSON.stringify(value);
    if (type.endsWith('[]')) return arrayLiteral(value as unknown[]);
    return value;
  });
}

/**
 * Rows of one table as written, kept across the batches of one transaction (a rebuild's) so that
 * RowBatch does not read them back. Only for a table nothing but RowBatch writes in that
 * transaction. Bounded: past `limit` rows it starts again empty.
 */
export class RowCache {
  private readonly rows = new Map<number, VersionedRow>();

  constructor(private readonly limit = 250_000) {}

  get(id: number): VersionedRow | undefined {
    return this.rows.get(id);
  }

  delete(id: number): void {
    this.rows.delete(id);
  }

  keep(rows: VersionedRow[]): void {
    if (this.rows.size + rows.length > this.limit) this.rows.clear();
    for (const row of rows) this.rows.set(row.id, row);
  }
}

/**
 * The rows of one table touched by a batch of events, folded in memory and written back with one
 * upsert per table (upsertRecords: COPY for many rows, a JSON parameter for a few): the read model
 * keeps up, and rebuilds, at tens of thousands of events a second instead of one statement per
 * event.
 */
export class RowBatch {
  private readonly rows = new Map<number, VersionedRow>();
  /** With a history table: the versions this batch replaced or removed, each closed at the position that did. */
  private readonly closed: VersionedRow[] = [];
  private readonly dirty = new Set<number>();
  private readonly wanted = new Set<number>();
  private readonly removed = new Set<number>();
  private readonly onConflict: string;
  private readonly selectSql: string;
  /** From how many rows a flush writes with COPY (0 with `copy`). */
  private readonly copyFrom: number;
  private readonly history: { table: string; types: ColumnTypes } | null = null;
  private readonly cache: RowCache | null = null;

  /**
   * `history`: the table the replaced versions go to (docs/history.md). The rows then carry
   * `valid_from`, the position of the event that wrote them, and `types` must include it.
   */
  constructor(
    private readonly table: string,
    private readonly types: ColumnTypes,
    history?: string,
    /**
     * `copy`: write with COPY however few the rows (a rebuild's one long transaction); otherwise
     * from COPY_FROM_ROWS rows (a live batch of a few rows would create a temporary table for each).
     */
    options: { copy?: boolean; cache?: RowCache } = {},
  ) {
    this.cache = options.cache ?? null;
    this.copyFrom = options.copy ? 0 : COPY_FROM_ROWS;
    if (history) this.history = { table: history, types: { ...types, valid_to: 'bigint' } };
    const columns = Object.keys(types);
    const updates = columns.filter((c) => c !== 'id').map((c) => `"${c}" = EXCLUDED."${c}"`).join(', ');
    this.onConflict = `ON CONFLICT (id) DO UPDATE SET ${updates}`;
    this.selectSql = `SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM "${table}" WHERE id = ANY(?::integer[])`;
  }

  want(id: number): void {
    this.wanted.add(id);
  }

  async load(trx: Knex.Transaction): Promise<void> {
    const ids = [...this.wanted].filter((id) => {
      if (this.rows.has(id)) return false;
      const cached = this.cache?.get(id);
      if (cached) this.rows.set(id, cached);
      return !cached;
    });
    this.wanted.clear();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const { rows } = await trx.raw(this.selectSql, [ids.slice(i, i + CHUNK)]);
      for (const row of rows) this.rows.set(row.id, { ...row, revision: BigInt(row.revision) });
    }
  }

  /**
   * Runs `change` when the event is newer than what the row holds. `change` receives the current
   * row (undefined if none) and returns the new row, or undefined to leave it alone.
   */
  apply(id: number, event: EventEnvelope, change: (row: VersionedRow | undefined) => { id: number; [column: string]: unknown } | undefined): void {
    const current = this.rows.get(id);
    const revision = BigInt(event.revision);
    if (current && current.revision >= revision) return;
    const next = change(current) as VersionedRow | undefined;
    if (!next) return;
    // `change` returns a fresh object (it never edits `current`): stamp it instead of copying it again.
    next.id = id;
    next.revision = revision;
    if (this.history) {
      if (current) this.close(current, event.position);
      next.valid_from = event.position;
    }
    this.rows.set(id, next);
    this.dirty.add(id);
  }

  private close(version: VersionedRow, position: string): void {
    this.closed.push({ ...version, valid_to: position });
  }

  /** The row as this batch holds it now (after the changes applied so far). */
  peek(id: number): VersionedRow | undefined {
    return this.rows.get(id);
  }

  /** Removes the row (a hard delete) when the event is newer than what the row holds. */
  remove(id: number, event: EventEnvelope): void {
    const current = this.rows.get(id);
    if (current && current.revision >= BigInt(event.revision)) return;
    if (current && this.history) this.close(current, event.position);
    this.rows.delete(id);
    this.dirty.delete(id);
    this.removed.add(id);
  }

  async flush(trx: Knex.Transaction): Promise<void> {
    const removed = [...this.removed].filter((id) => !this.rows.has(id));
    this.removed.clear();
    if (removed.length > 0) await trx.raw(`DELETE FROM "${this.table}" WHERE id = ANY(?::integer[])`, [removed]);
    for (const id of removed) this.cache?.delete(id);
    if (this.history && this.closed.length > 0) {
      const closed = this.closed.splice(0).map((row) => ({ ...row, revision: row.revision.toString() }));
      await insertRecords(trx, this.history.table, this.history.types, closed, this.copyFrom);
    }
    const ids = [...this.dirty];
    this.dirty.clear();
    this.cache?.keep(ids.map((id) => this.rows.get(id)!));
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK).map((id) => {
        const row = this.rows.get(id)!;
        return { ...row, revision: row.revision.toString() };
      });
      await upsertRecords(trx, this.table, this.types, chunk, this.onConflict, this.copyFrom);
    }
  }
}

/** A PostgreSQL array literal: each element quoted (NULL as NULL), nested arrays as nested braces. */
function arrayLiteral(values: unknown[]): string {
  return `{${values.map((v) => {
    if (v === null || v === undefined) return 'NULL';
    if (Array.isArray(v)) return arrayLiteral(v);
    const text = v instanceof Date ? v.toISOString() : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  }).join(',')}}`;
}
