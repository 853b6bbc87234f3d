/**
 * The projections' parked events, as the command side and the API need them (a port: the
 * projection runtime, projections/runtime/parking.ts, implements it; docs/architecture.md, "A
 * projection never stops the service").
 */
export interface ParkedEventsPort {
  /** The projections that may park events (their names). */
  readonly projections: readonly string[];
  /** Retries the chosen parked events (all unresolved when nothing is chosen), each stream's in order. */
  retry(chosen: { projection?: string; ids?: readonly number[] }): Promise<RetryReport>;
}

export interface RetryReport {
  /** The parked events applied now, and resolved. */
  resolved: number;
  /** Those still parked after the retry: each stream's first, with its error now. */
  stillParked: { id: number; projection: string; position: string | null; streamId: string | null; error: string }[];
}
