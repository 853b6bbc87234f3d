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
   * Event types whose nested data this projection does not read (ReadAllOptions.shallow): the
   * direct transport then reads their top-level keys and scalars only. An optimisation: `apply`
   * must still work when given the whole event (Kafka, EventStoreDB, rebuilds).
   */
  shallow?: readonly string[];
}
