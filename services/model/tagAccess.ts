import type { Knex } from 'knex';
import { ENTITIES } from '../../contracts/entities';
import { permits, type ProjectAccess } from '../access/projectAccess';
import { HttpError } from '../shared/errors';
import type { EntityWrite } from '../entities/entity.handlers';

/**
 * Tags are global: one tag labels cases, runs and sessions of every project that uses it, so
 * renaming or deleting it changes what all of them show. A non-administrator may do that only when
 * every row it labels (in any state) is in a project where their role may (Tags: canAddEdit to
 * rename, canDelete to delete); a tag used in any other project, one they cannot see included, is
 * an administrator's to change (403 `forbidden`, naming no project). Creating tags, and changing a
 * tag no row uses, stays with the Tags permission in any project (policy.ts).
 */
export async function authorizeTagChange(knex: Knex, access: ProjectAccess, operation: 'update' | 'delete', id: number, write: EntityWrite | undefined): Promise<void> {
  if (access.all) return;
  if (operation === 'update' && write?.data.name === undefined) return;
  const action = operation === 'delete' ? 'canDelete' : 'canAddEdit';
  const beyond = (await projectsUsing(knex, id)).filter((projectId) => {
    const grant = access.projects.get(projectId);
    return !grant || !permits(grant, 'Tags', action);
  });
  if (beyond.length > 0) {
    throw new HttpError(403, 'forbidden',
      `Tag ${id} is used in ${beyond.length === 1 ? 'a project' : `${beyond.length} projects`} where you may not ${operation === 'delete' ? 'delete' : 'edit'} tags: only an administrator may ${operation === 'delete' ? 'delete' : 'rename'} it`,
      { entity: 'tag', operation, id });
  }
}

/** The projects of the rows a tag labels, through each of its link tables (one statement). */
async function projectsUsing(knex: Knex, tagId: number): Promise<number[]> {
  const queries = Object.values(ENTITIES.tag.relations).map((relation) => {
    const target = ENTITIES[relation.target];
    const hop = target.projectPath?.[0];
    if (!relation.through || target.projectPath?.length !== 1 || target.relations[hop!].target !== 'project')
      throw new Error(`tag relation to ${target.name}: its rows' project is not one hop away`);
    return knex({ l: relation.through.table }).join({ r: target.table }, 'r.id', `l.${relation.through.targetKey}`)
      .where(`l.${relation.through.sourceKey}`, tagId).distinct({ projectId: `r.${target.relations[hop!].foreignKey}` });
  });
  const [first, ...rest] = queries;
  const rows: { projectId: number }[] = await first.union(rest, true);
  return [...new Set(rows.map((r) => r.projectId))];
}
