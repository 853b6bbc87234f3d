import type { Knex } from 'knex';

export const CHECKPOINT_CHANNEL = 'projection_checkpoint';

/** Locks the projection's checkpoint row for this transaction and returns its position. */
export async function lockCheckpoint(trx: Knex.Transaction, name: string): Promise<bigint> {
  return (await lockCheckpointRow(trx, name)).position;
}

/**
 * Locks the checkpoint row and returns its position and its parked generation: the number a retry
 * of parked events moves (projections/runtime/parking.ts), so a projector knows to re-read which
 * of its streams are parked.
 */
export async function lockCheckpointRow(trx: Knex.Transaction, name: string): Promise<{ position: bigint; generation: bigint }> {
  // One statement per batch once the row exists (a projector applies thousands of batches); the first batch makes it.
  const select = 'SELECT position, parked_generation FROM projection_checkpoints WHERE name = ? FOR UPDATE';
  let { rows } = await trx.raw(select, [name]);
  if (rows.length === 0) {
    await trx.raw('INSERT INTO projection_checkpoints (name, position) VALUES (?, 0) ON CONFLICT (name) DO NOTHING', [name]);
    ({ rows } = await trx.raw(select, [name]));
  }
  return { position: BigInt(rows[0].position), generation: BigInt(rows[0].parked_generation) };
}

/** Moves the checkpoint (its row locked by lockCheckpointRow); waiters are told on commit (NOTIFY is transactional). One statement. */
export async function saveCheckpoint(trx: Knex.Transaction, name: string, position: bigint): Promise<void> {
  await trx.raw(`WITH moved AS (UPDATE projection_checkpoints SET position = ?, updated_at = now() WHERE name = ? RETURNING name)
    SELECT pg_notify(?, ?) FROM moved`, [position.toString(), name, CHECKPOINT_CHANNEL, `${name}:${position}`]);
}

/**
 * Moves a checkpoint past events its projection does not act on (Projection.types): no
 * transaction of its own; never backwards (the row is locked by the update, so a projector
 * applying a batch meanwhile is waited for), made if missing; waiters told as by saveCheckpoint.
 * Answers `position` (the checkpoint is there or beyond) once it is stored.
 *
 * The passes of a process are written together: those asked for while a write is under way go
 * in the next one, one statement for all of them (a group commit). A commit that notifies holds
 * PostgreSQL's one notification lock until it is flushed, so notifying commits never overlap:
 * with nine projections on six Kafka partitions, a pass per partition batch made some 230 of them
 * a second, and a pass of one statement took ~70 ms in the queue, ~36 ms written together
 * (bench/README.md, "The Kafka path's lag, taken apart" and "Passes written together").
 */
export function passCheckpoint(knex: Knex, name: string, position: bigint): Promise<bigint> {
  let passes = PASSES.get(knex);
  if (!passes) PASSES.set(knex, (passes = new CheckpointPasses(knex)));
  return passes.pass(name, position);
}

const PASSES = new WeakMap<Knex, CheckpointPasses>();

class CheckpointPasses {
  private waiting = new Map<string, { position: bigint; settle: Array<{ resolve: () => void; reject: (error: unknown) => void }> }>();
  private writing = false;

  constructor(private readonly knex: Knex) {}

  async pass(name: string, position: bigint): Promise<bigint> {
    await new Promise<void>((resolve, reject) => {
      const entry = this.waiting.get(name);
      if (entry) {
        if (position > entry.position) entry.position = position;
        entry.settle.push({ resolve, reject });
      } else this.waiting.set(name, { position, settle: [{ resolve, reject }] });
      if (!this.writing) {
        this.writing = true;
        // After this turn's other passes have joined.
        queueMicrotask(() => void this.write());
      }
    });
    return position;
  }

  /** Writes what waits, then what came meanwhile, until nothing waits. */
  private async write(): Promise<void> {
    try {
      while (this.waiting.size > 0) {
        const batch = this.waiting;
        this.waiting = new Map();
        // In name order: two processes writing passes of the same checkpoints lock them in one order.
        const names = [...batch.keys()].sort();
        try {
          await this.knex.raw(`WITH moved AS (
              INSERT INTO projection_checkpoints (name, position) SELECT * FROM unnest(?::text[], ?::bigint[])
              ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now() WHERE projection_checkpoints.position < EXCLUDED.position
              RETURNING name, position)
            SELECT pg_notify(?, name || ':' || position) FROM moved`, [names, names.map((n) => batch.get(n)!.position.toString()), CHECKPOINT_CHANNEL]);
          for (const entry of batch.values()) for (const s of entry.settle) s.resolve();
        } catch (error) {
          for (const entry of batch.values()) for (const s of entry.settle) s.reject(error);
        }
      }
    } finally {
      this.writing = false;
    }
  }
}

export async function readCheckpoints(knex: Knex): Promise<Map<string, bigint>> {
  const rows: { name: string; position: string }[] = await knex('projection_checkpoints').select('name', 'position');
  return new Map(rows.map((r) => [r.name, BigInt(r.position)]));
}

/** Moves a checkpoint forward to `position` if it is behind (never backwards); answers the checkpoint. */
export async function advanceCheckpoint(knex: Knex, name: string, position: bigint): Promise<bigint> {
  return knex.transaction(async (trx) => {
    const current = await lockCheckpoint(trx, name);
    if (position <= current) return current;
    await saveCheckpoint(trx, name, position);
    return position;
  });
}
