import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';

export interface VersionedRow {
  id: number;
  /** Stream revision of the last event applied to this row. */
  revision: bigint;
  [column: string]: unknown;
}

const UPSERT_CHUNK = 1000;

/**
 * The rows of one table touched by a batch of events, folded in memory and written back with one
 * multi-row upsert per table: the read model keeps up (and rebuilds) at tens of thousands of
 * events a second instead of one statement per event.
 */
export class RowBatch {
  private readonly rows = new Map<number, VersionedRow>();
  private readonly dirty = new Set<number>();
  private readonly wanted = new Set<number>();

  constructor(
    private readonly table: string,
    private readonly columns: string[],
  ) {}

  want(id: number): void {
    this.wanted.add(id);
  }

  async load(trx: Knex.Transaction): Promise<void> {
    const ids = [...this.wanted].filter((id) => !this.rows.has(id));
    this.wanted.clear();
    for (let i = 0; i < ids.length; i += UPSERT_CHUNK) {
      const found = await trx(this.table).select(this.columns).whereIn('id', ids.slice(i, i + UPSERT_CHUNK));
      for (const row of found) this.rows.set(row.id, { ...row, revision: BigInt(row.revision) });
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
    const next = change(current);
    if (!next) return;
    this.rows.set(id, { ...next, id, revision });
    this.dirty.add(id);
  }

  async flush(trx: Knex.Transaction): Promise<void> {
    const rows = [...this.dirty].map((id) => {
      const row = this.rows.get(id)!;
      return { ...row, revision: row.revision.toString() };
    });
    this.dirty.clear();
    const updatable = this.columns.filter((c) => c !== 'id');
    for (let i = 0; i < rows.length; i += UPSERT_CHUNK) {
      await trx(this.table).insert(rows.slice(i, i + UPSERT_CHUNK)).onConflict('id').merge(updatable);
    }
  }
}
