/** An event that does not match its JSON Schema: a programming error, never written. */
export class ContractViolation extends Error {
  readonly code = 'event-contract-violation';
  constructor(
    readonly eventType: string,
    readonly errors: unknown,
  ) {
    super(`Event ${eventType} violates its contract: ${JSON.stringify(errors)}`);
    this.name = 'ContractViolation';
  }
}
