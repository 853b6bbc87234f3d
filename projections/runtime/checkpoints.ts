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
 * Moves a checkpoint past events its projection does not act on (Projection.types): one statement,
 * no transaction; never backwards (the row is locked by the update, so a projector applying a
 * batch meanwhile is waited for), made if missing; waiters told as by saveCheckpoint. Answers
 * `position` (the checkpoint is there or beyond).
 */
export async function passCheckpoint(knex: Knex, name: string, position: bigint): Promise<bigint> {
  await knex.raw(`WITH moved AS (
      INSERT INTO projection_checkpoints (name, position) VALUES (?, ?)
      ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now() WHERE projection_checkpoints.position < EXCLUDED.position
      RETURNING name)
    SELECT pg_notify(?, ?) FROM moved`, [name, position.toString(), CHECKPOINT_CHANNEL, `${name}:${position}`]);
  return position;
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
