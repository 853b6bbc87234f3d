import type { Knex } from 'knex';
import type { EventEnvelope } from '../../contracts/envelope';

/**
 * A read model fed by the global log. `apply` receives events in position order, inside the
 * transaction that also moves the projection's checkpoint, and must be idempotent: rows keyed by
 * aggregate carry the stream revision they last applied, and older or equal revisions change nothing.
 */
export interface Projection {
  /** Checkpoint key and the name given to `npm run rebuild -- <name>`. */
  name: string;
  /** Tables this projection owns: emptied by a rebuild. */
  tables: string[];
  apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void>;
  /**
   * The event types `apply` acts on, for a projection that acts on a few (its own filter uses this
   * same set, so the two cannot disagree); absent: every event. The projectors give it only these:
   * a batch with none of them moves its checkpoint with one statement, no transaction
   * (projections/runtime/applyBatch.ts), and an event of another type is never held behind a
   * parked one. `apply` must still ignore the others (rebuilds give it every event).
   */
  types?: ReadonlySet<string>;
  /**
   * Event types whose nested data this projection does not read (ReadAllOptions.shallow): the
   * direct transport then reads their top-level keys and scalars only. An optimisation: `apply`
   * must still work when given the whole event (Kafka, EventStoreDB, rebuilds).
   */
  shallow?: readonly string[];
  /**
   * A rebuild applies every event in one transaction, so nothing it writes is read before it
   * ends: a projection may gather work across the rebuild's batches and do it once. When present,
   * a rebuild applies its batches with the session's `apply` (same contract as `apply`) and calls
   * `finish` after the last one, in the same transaction, before the tables' indexes are built.
   */
  rebuilding?(): RebuildSession;
}

export interface RebuildSession {
  apply(trx: Knex.Transaction, events: EventEnvelope[]): Promise<void>;
  finish(trx: Knex.Transaction): Promise<void>;
  /**
   * What the session holds now: the function returned puts it back. A rebuild applies each page
   * in a savepoint and, when the page fails, rolls the savepoint back and calls it, so the session
   * holds nothing of the failed page. Needed when `apply` keeps anything between pages.
   */
  mark?(): () => void;
}
