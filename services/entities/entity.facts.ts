import type { EntityName } from '../../contracts/entities';

/** What the handler looked up about a referenced row, from that row's own stream. */
export interface Fact {
  entity: EntityName;
  id: number;
  exists: boolean;
  isDeleted: boolean;
  /** The project the row belongs to (null for global configuration). */
  projectId: number | null;
  values: Record<string, unknown>;
}

/** Facts keyed by relation name (one-relations and the targets of links), plus facts about children's references. */
export type Facts = Record<string, Fact | Fact[] | undefined>;
