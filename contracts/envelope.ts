/** The event envelope of DESIGN.md: what every event store adapter returns and every transport carries. */

export type ActorVia = 'api' | 'session' | 'cli' | 'import' | 'system';

export interface Actor {
  /** Integer id of the user, or null for the system itself (bootstrap, migrations). */
  userId: number | null;
  tokenId?: number;
  /**
   * For `via: 'session'`: which login session, as the first 16 hex digits of SHA-256 of the
   * session id (it names the session without being able to use it). Absent on older events.
   */
  sessionRef?: string;
  via: ActorVia;
}

export interface EventMetadata {
  actor: Actor;
  ip?: string;
  correlationId: string;
  causationId: string | null;
}

/** An event as a decider produces it: a type and its data. */
export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

/** An event about to be appended. */
export interface NewEvent<T extends string = string, D = unknown> extends DomainEvent<T, D> {
  id?: string;
  schemaVersion?: number;
}

/** An event as stored. `position` and `revision` are decimal strings: 64-bit, never `Number`. */
export interface EventEnvelope<T extends string = string, D = unknown> {
  id: string;
  type: T;
  schemaVersion: number;
  streamId: string;
  revision: string;
  position: string;
  recordedAt: string;
  data: D;
  metadata: EventMetadata;
}

/** Stream name convention: `<category>-<id>`. */
export function streamName(category: string, id: string | number): string {
  return `${category}-${id}`;
}

export function streamCategory(streamId: string): string {
  const dash = streamId.indexOf('-');
  return dash === -1 ? streamId : streamId.slice(0, dash);
}
