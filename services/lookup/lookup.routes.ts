import { Router } from 'express';
import type { Knex } from 'knex';
import { ENTITIES, type EntityName } from '../../contracts/entities';
import { lookupExternal } from '../migration/externalLookup';
import { asyncHandler } from '../shared/http';
import { createEntity } from '../entities/entity.handlers';
import { type Policy, policyFor } from '../model/policy';
import { applyScope, isRowVisible, sqlContext } from '../model/query';
import { type CommandDeps, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { badRequest, HttpError, notFound } from '../shared/errors';
import { parseId } from '../shared/validate';

/**
 * POST /api/lookup {type, name, projectId?, createIfMissing?}: a name → its id, for the CLI and
 * scripts, seen exactly as the model API shows rows (services/model/policy.ts: a row the caller's
 * read scope leaves out, a project they cannot see, anything for access NONE, is not found). Names
 * match exactly. 404 `not-found` for none, 409 `ambiguous-name` for several (except test runs: the
 * newest of that name). Tags missing with `createIfMissing` are created when the caller may
 * create tags.
 */

export const LOOKUP_TYPES = ['project', 'state', 'config', 'milestone', 'tag', 'folder', 'testRun', 'template'] as const;
export type LookupType = (typeof LOOKUP_TYPES)[number];
/** The entity each type names. */
const ENTITY_OF: Record<LookupType, EntityName> = {
  project: 'project', state: 'workflow', config: 'configuration', milestone: 'milestone', tag: 'tag', folder: 'repositoryFolder', testRun: 'testRun', template: 'template',
};
/** Types whose names are unique only within a project. */
const IN_PROJECT: ReadonlySet<LookupType> = new Set(['milestone', 'folder', 'testRun']);

interface Candidate { id: number; name: string }

export function lookupRoutes(deps: CommandDeps): Router {
  const router = Router();
  router.post('/api/lookup', asyncHandler(async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    // By the id a row had in the tool it was migrated from (services/migration/externalLookup.ts).
    if (body.externalId !== undefined) return void res.json({ data: await lookupExternal(deps.knex, await policyFor(deps.knex, req.auth!.user), body) });
    for (const key of Object.keys(body)) {
      if (!['type', 'name', 'projectId', 'createIfMissing'].includes(key)) throw badRequest('invalid-argument', `Unknown field "${key}"`, { path: key });
    }
    const type = body.type as LookupType;
    if (!LOOKUP_TYPES.includes(type)) throw badRequest('invalid-argument', `type must be one of ${LOOKUP_TYPES.join(', ')}`, { path: 'type', allowed: LOOKUP_TYPES });
    const name = typeof body.name === 'string' ? body.name.trim() : '';
    if (name === '' || name.length > 2000) throw badRequest('invalid-argument', 'name must be a non-empty string', { path: 'name' });
    const projectId = body.projectId === undefined ? undefined : parseId('projectId', body.projectId, 'json');
    if (IN_PROJECT.has(type) && projectId === undefined) throw badRequest('invalid-argument', `A ${type} is looked up in a project: give projectId`, { path: 'projectId' });
    if (body.createIfMissing !== undefined && typeof body.createIfMissing !== 'boolean')
      throw badRequest('invalid-argument', 'createIfMissing must be a boolean', { path: 'createIfMissing' });
    if (body.createIfMissing === true && type !== 'tag') throw badRequest('invalid-argument', 'Only tags are created when missing', { path: 'createIfMissing' });

    const policy = await policyFor(deps.knex, req.auth!.user);
    if (projectId !== undefined && (!(await isRowVisible(deps.knex, ENTITIES.project, projectId as number, policy.read))
      || !(await deps.knex('projects').where({ id: projectId, is_deleted: false }).first('id'))))
      throw notFound(`Project ${projectId} does not exist`, { path: 'projectId', id: projectId });

    const seen = await candidates(deps.knex, policy, type, name, projectId as number | undefined);
    if (seen.length === 1 || (type === 'testRun' && seen.length > 1)) return void res.json({ data: { id: seen[0].id, name: seen[0].name } });
    if (seen.length > 1) {
      throw new HttpError(409, 'ambiguous-name', `${seen.length} ${type}s are named "${name}"; give an id instead`, { type, name, ids: seen.map((c) => c.id) });
    }
    if (body.createIfMissing === true) {
      policy.checkWriteAccess(ENTITIES.tag, 'create');
      const id = await createEntity(withPositionHeader(deps, res), 'tag', { data: { name }, connect: {} }, metadataFor(req.auth!, req));
      return void res.status(201).json({ data: { id, name, created: true } });
    }
    throw new HttpError(404, 'not-found', `No ${type} is named "${name}"${projectId !== undefined ? ` in project ${projectId}` : ''}`, { type, name, ...(projectId !== undefined && { projectId }) });
  }));
  return router;
}

/** Rows of the type named exactly so (not deleted) that the caller sees; test runs newest first. */
async function candidates(knex: Knex, policy: Policy, type: LookupType, name: string, projectId: number | undefined): Promise<Candidate[]> {
  const entity = ENTITIES[ENTITY_OF[type]];
  const sql = sqlContext(knex, policy.read);
  const t = sql.nextAlias();
  const query = knex({ [t]: entity.table }).where({ [`${t}.name`]: name, [`${t}.is_deleted`]: false }).limit(20).select(`${t}.id`, `${t}.name`);
  if (entity.fields.projectId && projectId !== undefined) query.where(`${t}.project_id`, projectId);
  if (type === 'state') query.where({ [`${t}.scope`]: 'RUNS', [`${t}.is_enabled`]: true });
  query.orderBy(type === 'testRun' ? [{ column: `${t}.created_at`, order: 'desc' }, { column: `${t}.id`, order: 'desc' }] : [{ column: `${t}.id`, order: 'asc' }]);
  applyScope(sql, query, entity, t);
  return query;
}
