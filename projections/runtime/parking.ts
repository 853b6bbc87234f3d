import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';
import type { EventStore } from '../../services/shared/eventStore';
import type { ParkedEventsPort, RetryReport } from '../../services/shared/parkedEvents';
import { describeError, isTransient } from '../../services/shared/faults';
import { CHECKPOINT_CHANNEL } from './checkpoints';
import type { Projection } from './projection';

/**
 * Parked events (docs/architecture.md, "A projection never stops the service"). An event a
 * projection cannot apply (an error that is not transient, tried MAX_TRIES times) is parked: a row
 * in `parked_events` written in the same transaction that moves the projection's checkpoint past
 * it, so the projection goes on with the next event. The later events of its stream are parked
 * behind it (`held`): applied out of order they would corrupt the stream's rows. A retry (an
 * administrator's, after a fix) or a rebuild resolves them. The direct and the Kafka projectors
 * and the rebuild all park through this module.
 *
 * failed: the event threw; held: an event of a stream with a parked event before it; invalid: a
 * Kafka message that is not a valid event (nothing to apply).
 */
export type ParkedKind = 'failed' | 'held' | 'invalid';

/** How often a non-transient failure of one event is tried before the event is parked. */
export const MAX_TRIES = 3;
/** The pause before the second try, quadrupling for each next one. */
const FIRST_TRY_PAUSE_MS = 100;
export const tryPause = (attempts: number) => FIRST_TRY_PAUSE_MS * 4 ** (attempts - 1);

/** An event (or a message) to park. */
export interface Parking {
  kind: ParkedKind;
  position: string | null;
  eventId: string | null;
  eventType: string | null;
  streamId: string | null;
  revision: string | null;
  error: string;
  attempts: number;
  firstAttemptAt: Date;
  lastAttemptAt: Date;
  partition?: number | null;
  offset?: string | null;
}

/** The tries of one event, as parking records them. */
export interface Tries { attempts: number; firstAttemptAt: Date; lastAttemptAt: Date; error: unknown }

export function parkingOf(event: EventEnvelope, kind: 'failed' | 'held', error: string, tries?: Omit<Tries, 'error'>, message?: { partition: number; offset: string }): Parking {
  const at = new Date();
  return {
    kind, position: event.position, eventId: event.id, eventType: event.type, streamId: event.streamId, revision: event.revision.toString(), error,
    attempts: tries?.attempts ?? 0, firstAttemptAt: tries?.firstAttemptAt ?? at, lastAttemptAt: tries?.lastAttemptAt ?? at,
    partition: message?.partition ?? null, offset: message?.offset ?? null,
  };
}

/** What a checkpoint listener receives when an event is parked: before the checkpoint's own notification, in the same transaction. */
export const parkedPayload = (projection: string, position: string) => `!${projection}:${position}`;

/**
 * Records parked events (a repeat of an unresolved one changes nothing) and tells the checkpoint
 * listeners of each with a position, so a write waiting for that event learns it at once.
 */
export async function recordParked(trx: Knex.Transaction, projection: string, rows: Parking[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    const inserted: { position: string | null }[] = await trx('parked_events').insert(chunk.map((r) => ({
      projection, kind: r.kind, position: r.position, event_id: r.eventId, event_type: r.eventType, stream_id: r.streamId, revision: r.revision,
      error: r.error.slice(0, 4000), attempts: r.attempts, first_attempt_at: r.firstAttemptAt, last_attempt_at: r.lastAttemptAt,
      kafka_partition: r.partition ?? null, kafka_offset: r.offset ?? null,
      // Administrators are told of the events at fault (services/parking/notices.ts), not of each held behind them.
      notice_id: r.kind === 'held' ? 0 : null,
    }))).onConflict().ignore().returning('position');
    for (const { position } of inserted) if (position !== null) await trx.raw('SELECT pg_notify(?, ?)', [CHECKPOINT_CHANNEL, parkedPayload(projection, String(position))]);
  }
}

/**
 * The streams a projection holds parked, as one process knows them: the position of each stream's
 * first parked event, per checkpoint key (the projection's name, or one Kafka partition's: each
 * is applied by one flow at a time, so no flow's re-read drops what another flow just parked).
 * Re-read inside the batch's transaction whenever the checkpoint row's parked generation is not
 * the one last read (a retry elsewhere resolved some); a stream this flow parks is added once the
 * parking committed.
 */
export class ParkedStreams {
  private readonly keys = new Map<string, { generation: bigint; first: Map<string, string> }>();

  constructor(readonly projection: string) {}

  async sync(trx: Knex.Transaction, checkpointKey: string, generation: bigint): Promise<void> {
    if (this.keys.get(checkpointKey)?.generation === generation) return;
    const rows: { stream_id: string; position: string }[] = await trx('parked_events')
      .where({ projection: this.projection }).whereNull('resolved_at').whereNotNull('stream_id').whereNotNull('position')
      .groupBy('stream_id').select('stream_id', trx.raw('min(position)::text AS position'));
    this.keys.set(checkpointKey, { generation, first: new Map(rows.map((r) => [r.stream_id, r.position])) });
  }

  /** The position of the stream's first parked event, or undefined. */
  behind(checkpointKey: string, streamId: string): string | undefined {
    return this.keys.get(checkpointKey)?.first.get(streamId);
  }

  add(checkpointKey: string, streamId: string, position: string): void {
    const first = this.keys.get(checkpointKey)?.first;
    if (first && !first.has(streamId)) first.set(streamId, position);
  }

  /** How many streams are parked (as the key knowing most of them says). */
  get size(): number {
    return Math.max(0, ...[...this.keys.values()].map((k) => k.first.size));
  }
}

export const heldError = (streamId: string, position: string) => `held behind the parked event at position ${position} of stream ${streamId}`;

/** How to apply, wait and park for applyIsolating: a transaction per attempt (projectors) or a savepoint (rebuild). */
export interface Isolation {
  /** Applies the events as one unit (all or nothing), skipping those applied already. */
  attempt(events: EventEnvelope[]): Promise<void>;
  /** Whether an error is not the events' fault (the database away...): then the same work is tried again after `pauseAfter`. */
  transient(error: unknown): Promise<boolean>;
  /** After a transient failure: true to try again (after its pause), false to give up (stopping, budget spent). */
  pauseAfter(error: unknown): Promise<boolean>;
  /** The pause between two tries of one event; false when stopping. */
  pause(ms: number): Promise<boolean>;
  /** Records the event as parked (and moves past it). */
  park(event: EventEnvelope, tries: Tries): Promise<void>;
}

/**
 * Applies `events`; when they fail for a reason that is not transient, halves them to find the
 * events at fault, tries each such event MAX_TRIES times, then parks it and goes on: every other
 * event is applied, in order. False when it gave up (stopping, or transient failures past the budget).
 */
export async function applyIsolating(events: EventEnvelope[], iso: Isolation, maxTries = MAX_TRIES): Promise<boolean> {
  if (events.length === 0) return true;
  for (;;) {
    try {
      await iso.attempt(events);
      return true;
    } catch (error) {
      if (await iso.transient(error)) {
        if (await iso.pauseAfter(error)) continue;
        return false;
      }
      if (events.length > 1) {
        const half = Math.ceil(events.length / 2);
        return (await applyIsolating(events.slice(0, half), iso, maxTries)) && applyIsolating(events.slice(half), iso, maxTries);
      }
      return tryThenPark(events[0], error, iso, maxTries);
    }
  }
}

async function tryThenPark(event: EventEnvelope, firstError: unknown, iso: Isolation, maxTries: number): Promise<boolean> {
  const at = new Date();
  const tries: Tries = { attempts: 1, firstAttemptAt: at, lastAttemptAt: at, error: firstError };
  while (tries.attempts < maxTries) {
    if (!(await iso.pause(tryPause(tries.attempts)))) return false;
    try {
      await iso.attempt([event]);
      return true;
    } catch (error) {
      if (await iso.transient(error)) {
        if (await iso.pauseAfter(error)) continue;
        return false;
      }
      tries.attempts++;
      tries.lastAttemptAt = new Date();
      tries.error = error;
    }
  }
  for (;;) {
    try {
      await iso.park(event, tries);
      return true;
    } catch (error) {
      if (!(await iso.transient(error))) throw error;
      if (!(await iso.pauseAfter(error))) return false;
    }
  }
}

export const triesError = (tries: Tries) => describeError(tries.error);


interface ParkedRow { id: string; projection: string; stream_id: string | null; position: string | null; revision: string | null; kind: ParkedKind }

/**
 * Retries parked events (an administrator's request, after a fix): for each stream with a chosen
 * parked event, the stream's parked events are read again from the event store and applied in
 * their order, each in a savepoint of one transaction per stream that holds the projection's
 * checkpoints (so no projector applies the same rows meanwhile): those that apply are resolved
 * (`retried`), the first that fails stays parked with its new error and tries (the ones behind it
 * stay held), and the checkpoints' parked generation moves, so every projector re-reads its parked
 * streams. A message that was never an event is retried by its position when the store has an
 * event there. The events are applied after later events of other streams: a read model whose rows
 * depend on several streams may differ from what a rebuild gives (a rebuild is exact).
 * Transient errors are thrown (nothing is resolved that did not apply).
 */
export async function retryParked(
  deps: { knex: Knex; store: EventStore; projections: readonly Projection[] },
  chosen: { projection?: string; ids?: readonly number[] },
): Promise<RetryReport> {
  const { knex, store } = deps;
  const picked: { projection: string; stream_id: string | null; id: string }[] = await knex('parked_events').whereNull('resolved_at')
    .modify((q) => {
      if (chosen.projection !== undefined) q.where({ projection: chosen.projection });
      if (chosen.ids !== undefined) q.whereIn('id', chosen.ids.map(String));
    }).orderBy('id').select('projection', 'stream_id', 'id');
  const report: RetryReport = { resolved: 0, stillParked: [] };
  const streams = new Map<string, { projection: Projection; streamId: string | null; ids: string[] }>();
  for (const row of picked) {
    const projection = deps.projections.find((p) => p.name === row.projection);
    if (!projection) continue;
    // A message without a stream is retried alone; the events of a stream together, in order.
    const key = row.stream_id === null ? `${row.projection}\0#${row.id}` : `${row.projection}\0${row.stream_id}`;
    const entry = streams.get(key) ?? { projection, streamId: row.stream_id, ids: [] };
    entry.ids.push(row.id);
    streams.set(key, entry);
  }
  for (const { projection, streamId, ids } of streams.values()) {
    const rows: ParkedRow[] = await knex('parked_events').whereNull('resolved_at').where({ projection: projection.name })
      .modify((q) => (streamId === null ? q.whereIn('id', ids) : q.where({ stream_id: streamId })))
      .orderByRaw('position NULLS LAST, id').select('id', 'projection', 'stream_id', 'position', 'revision', 'kind');
    const events = await parkedEventsOf(store, streamId, rows);
    await knex.transaction(async (trx) => {
      await trx.raw(`SELECT name FROM projection_checkpoints WHERE name = ? OR name LIKE ? ORDER BY name FOR UPDATE`, [projection.name, `${projection.name}#%`]);
      const resolved: string[] = [];
      for (const row of rows) {
        const event = row.position === null ? undefined : events.get(row.position);
        let error: string | null = event ? null : 'the event store has no event at this position';
        if (event) {
          try {
            await trx.transaction((sp) => projection.apply(sp, [event]));
            resolved.push(row.id);
            continue;
          } catch (e) {
            if (isTransient(e)) throw e;
            error = describeError(e);
          }
        }
        await trx('parked_events').where({ id: row.id })
          .update({ kind: row.kind === 'held' ? 'failed' : row.kind, error: error!.slice(0, 4000), attempts: trx.raw('attempts + 1'), last_attempt_at: trx.fn.now() });
        report.stillParked.push({ id: Number(row.id), projection: projection.name, position: row.position, streamId: row.stream_id, error: error! });
        break;
      }
      if (resolved.length > 0) {
        await trx('parked_events').whereIn('id', resolved)
          .update({ resolved_at: trx.fn.now(), resolution: 'retried', attempts: trx.raw('attempts + 1'), last_attempt_at: trx.fn.now() });
        report.resolved += resolved.length;
      }
      await trx.raw(`UPDATE projection_checkpoints SET parked_generation = parked_generation + 1 WHERE name = ? OR name LIKE ?`, [projection.name, `${projection.name}#%`]);
    });
  }
  return report;
}

/** The parked rows' events, by position, read again from the store (the stream from the first parked revision). */
async function parkedEventsOf(store: EventStore, streamId: string | null, rows: ParkedRow[]): Promise<Map<string, EventEnvelope>> {
  const wanted = new Set(rows.flatMap((r) => (r.position === null ? [] : [r.position])));
  const found = new Map<string, EventEnvelope>();
  if (wanted.size === 0) return found;
  if (streamId !== null) {
    const revisions = rows.flatMap((r) => (r.revision === null ? [] : [BigInt(r.revision)]));
    const from = rows.every((r) => r.revision !== null) ? revisions.reduce((a, b) => (b < a ? b : a)) : 0n;
    for (let next = from; ;) {
      const page = await store.readStream(streamId, { fromRevision: next, maxCount: 1000 });
      for (const e of page) if (wanted.has(e.position)) found.set(e.position, e);
      if (page.length < 1000 || found.size === wanted.size) break;
      next = BigInt(page[page.length - 1].revision) + 1n;
    }
    return found;
  }
  // No stream (a message that was not an event, without a key): the event at its position, if any.
  for (const position of wanted) {
    const [event] = await store.readAll({ after: (BigInt(position) - 1n).toString(), maxCount: 1 });
    if (event?.position === position) found.set(position, event);
  }
  return found;
}

/** The port the API's administration uses (services/parking/). */
export function parkedEventsPort(deps: { knex: Knex; store: EventStore; projections: readonly Projection[] }): ParkedEventsPort {
  return { projections: deps.projections.map((p) => p.name), retry: (chosen) => retryParked(deps, chosen) };
}
