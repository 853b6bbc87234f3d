import { ENTITIES, isEntityName } from './entities';
import { streamOf } from './entityEvents';

/**
 * A unique value (a user's e-mail, a project's name) is claimed on a stream of its own before the
 * row that holds it is written (`UniqueValueClaimed`), and given up when that row never comes
 * (`UniqueValueReleased`). A claim's scope is `<entity>.<field>` (or `<entity>.<a>+<b>` for
 * fields unique together); its owner is the row of that entity with the claim's `ownerId`.
 */

/** The stream of the row that owns a claim of this scope, or null for a scope that names no entity (an import's upload). */
export function claimOwnerStream(scope: string, ownerId: number): string | null {
  const entity = scope.slice(0, scope.indexOf('.'));
  return isEntityName(entity) ? streamOf(ENTITIES[entity], ownerId) : null;
}
