import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import type { TestamentEvent } from '../../contracts/events';

const META: EventMetadata = { actor: { userId: 1, via: 'api' }, correlationId: 'req-1', causationId: null };

/**
 * Global positions start above 2^53 and step by 2, so a position that ever passes through
 * Number comes out different.
 */
export const FIRST_POSITION = 9007199254740993n;
const STEP = 2n;

/** `2024-03-01T10:<n>:00.000Z`: the n-th minute of the story. */
export const at = (n: number) => `2024-03-01T10:${String(n).padStart(2, '0')}:00.000Z`;
/** The same instant as PostgreSQL returns it from a timestamptz column. */
export const dateAt = (n: number) => new Date(at(n));

export function envelope(streamId: string, revision: bigint, position: bigint, event: TestamentEvent): EventEnvelope {
  return {
    id: randomUUID(), type: event.type, schemaVersion: 1, streamId, revision: revision.toString(), position: position.toString(),
    recordedAt: at(59), data: event.data, metadata: META,
  };
}

/** Envelopes as the log would deliver them: revisions counted per stream, positions increasing. */
export function envelopes(events: [streamId: string, event: TestamentEvent][], first = FIRST_POSITION): EventEnvelope[] {
  const revisions = new Map<string, bigint>();
  return events.map(([streamId, event], i) => {
    const revision = (revisions.get(streamId) ?? -1n) + 1n;
    revisions.set(streamId, revision);
    return envelope(streamId, revision, first + BigInt(i) * STEP, event);
  });
}

/** Every event twice in a row: e1, e1, e2, e2, ... */
export const twice = (events: EventEnvelope[]) => events.flatMap((e) => [e, e]);

export async function checkpoints(knex: Knex): Promise<{ name: string; position: string }[]> {
  return knex('projection_checkpoints').select('name', 'position').orderBy('name');
}
