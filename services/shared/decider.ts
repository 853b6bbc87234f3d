import type { DomainEvent, EventEnvelope, EventMetadata } from '../../contracts/envelope';
import { ConcurrencyError } from './errors';
import type { EventStore } from './eventStore';

/** A pure aggregate: `decide(command, state) → events`, `evolve(state, event) → state`. */
export interface Decider<C, E extends DomainEvent, S> {
  initialState: S;
  evolve(state: S, event: E): S;
  decide(command: C, state: S): E[];
}

export interface CommandOutcome<E> {
  events: E[];
  streamId: string;
  /** Global position of the last event appended, or null when the command changed nothing. */
  position: string | null;
}

/** Folds a stream into the decider's state; also returns the stream's revision. */
export async function loadAggregate<E extends DomainEvent, S>(
  store: EventStore,
  streamId: string,
  decider: Pick<Decider<unknown, E, S>, 'initialState' | 'evolve'>,
): Promise<{ state: S; revision: bigint | null }> {
  const events = await store.readStream(streamId);
  let state = decider.initialState;
  for (const e of events) state = decider.evolve(state, { type: e.type, data: e.data } as E);
  const last: EventEnvelope | undefined = events[events.length - 1];
  return { state, revision: last ? BigInt(last.revision) : null };
}

/**
 * Load → decide → append with the expected revision; on a concurrency conflict, load and decide
 * again (the decision may differ now), a few times. `load`: how the state is had (the whole
 * stream folded, unless a stream of large events has a cheaper way for this command).
 */
export async function handleCommand<C, E extends DomainEvent, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C,
  metadata: EventMetadata,
  attempts = 5,
  load: () => Promise<{ state: S; revision: bigint | null }> = () => loadAggregate(store, streamId, decider),
): Promise<CommandOutcome<E>> {
  for (let attempt = 1; ; attempt++) {
    const { state, revision } = await load();
    const events = decider.decide(command, state);
    if (events.length === 0) return { events, streamId, position: null };
    try {
      const result = await store.append(streamId, events, {
        expectedRevision: revision === null ? 'no-stream' : revision,
        metadata,
      });
      return { events, streamId, position: result.position };
    } catch (error) {
      if (!(error instanceof ConcurrencyError) || attempt >= attempts) throw error;
    }
  }
}
