import { Router, type Request } from 'express';
import { ENTITIES, type EntityDef, isEntityName } from '../../contracts/entities';
import { asyncHandler } from '../shared/http';
import { type CommandDeps, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { HttpError, badRequest } from '../shared/errors';
import { runAggregate, runGroupBy } from './aggregate';
import { type FindOperation, parseAggregateArgs, parseDeleteArgs, parseFindArgs, parseGroupByArgs } from './args';
import { createMany, deleteMany, updateMany, upsert } from './bulk';
import { ENTITY_COMMANDS, assertWritable } from './model.commands';
import { DEFAULT_MAX_ROWS, findRowById, runFind, uniqueRowId } from './query';
import { authorizeWrite, checkVisible, policyFor, targetsOf } from './policy';
import { checkWriteAnswer } from './writeAnswer';
import { parseAsOf, resolveAsOf } from './asOf';
import { parseEntityCreate, parseEntityUpdate } from './writeArgs';
import { STATISTICS_WAIT_MS, statisticsCounted } from './statisticsCounted';

const READS: readonly FindOperation[] = ['findMany', 'findFirst', 'findUnique', 'count'];
/** Like findFirst / findUnique, but no row is a 404 instead of `{ data: null }`. */
const OR_THROW: Record<string, FindOperation> = { findFirstOrThrow: 'findFirst', findUniqueOrThrow: 'findUnique' };
const WRITES = ['create', 'update', 'delete'] as const;
type WriteOperation = (typeof WRITES)[number];
/** Writes over many rows: each row is still its own command and events. */
const BULK = { createMany, updateMany, deleteMany } as const;
const AGGREGATES: readonly string[] = ['aggregate', 'groupBy'];
/** Entities whose writes can change the caller's own access. */
const ACCESS_CHANGING: ReadonlySet<string> = new Set(['project', 'projectAssignment', 'userProjectPermission', 'groupProjectPermission', 'group', 'groupAssignment', 'role', 'rolePermission', 'user']);
const OPERATIONS = [...READS, ...Object.keys(OR_THROW), ...AGGREGATES, ...WRITES, ...Object.keys(BULK), 'upsert'];

/**
 * Which HTTP methods may carry which operation. POST carries all of them (the interface spec);
 * the others follow the ZenStack RPC convention, so that its clients work unchanged: GET for
 * reads and DELETE for delete(Many) with the arguments as `?q=<url-encoded JSON>`, PUT/PATCH for
 * update(Many).
 */
const METHODS: Record<string, (op: string) => boolean> = {
  POST: () => true,
  GET: (op) => (READS as readonly string[]).includes(op) || op in OR_THROW || AGGREGATES.includes(op),
  PUT: (op) => op === 'update' || op === 'updateMany',
  PATCH: (op) => op === 'update' || op === 'updateMany',
  DELETE: (op) => op === 'delete' || op === 'deleteMany',
};

/** The arguments: the JSON body, or for GET and DELETE the `q` query parameter. */
function argumentsOf(req: Request): unknown {
  if (req.method !== 'GET' && req.method !== 'DELETE') return req.body === undefined ? {} : req.body;
  const q = req.query.q;
  if (q === undefined) return {};
  if (typeof q !== 'string') throw badRequest('invalid-argument', 'q must be one URL-encoded JSON value', { path: 'q' });
  try {
    return JSON.parse(q);
  } catch {
    throw badRequest('malformed-json', 'q is not valid JSON', { path: 'q' });
  }
}

/**
 * A read's `asOf` taken out of its arguments and resolved to the position it reads at (asOf.ts);
 * the arguments of a write never take one.
 */
async function readPoint(deps: CommandDeps, entity: EntityDef, operation: string, args: unknown): Promise<{ body: unknown; asOf?: string }> {
  const isRead = (READS as readonly string[]).includes(operation) || operation in OR_THROW || AGGREGATES.includes(operation);
  if (!isRead || args === null || typeof args !== 'object' || Array.isArray(args) || !('asOf' in args)) return { body: args };
  const { asOf, ...body } = args as Record<string, unknown>;
  if (entity.keepsHistory === false) {
    throw badRequest('invalid-argument', `asOf: ${entity.name} is kept as it is now only (statistics: their days are their history, docs/analytics.md)`, { path: 'asOf' });
  }
  return { body, asOf: await resolveAsOf({ knex: deps.knex, store: deps.store, waitMs: deps.writeTimeoutMs }, parseAsOf(asOf)) };
}

/**
 * /api/model/{entity}/{operation} with Prisma-style arguments, answering `{ data }`. A read's
 * answer holds at most `modelMaxRows` rows, included rows counted (400 too-many-rows: page it).
 */
export function modelRoutes(deps: CommandDeps & { modelMaxRows?: number }): Router {
  const router = Router();
  const maxRows = deps.modelMaxRows ?? DEFAULT_MAX_ROWS;
  router.all('/api/model/:entity/:operation', asyncHandler(async (req, res) => {
    const { entity: entityName, operation } = req.params;
    if (!isEntityName(entityName))
      throw badRequest('unknown-entity', `Unknown entity "${entityName}"`, { path: 'entity', entities: Object.keys(ENTITIES) });
    if (!OPERATIONS.includes(operation))
      throw badRequest('unknown-operation', `Unknown operation "${operation}" for ${entityName}`, { path: 'operation', operations: OPERATIONS });
    const allowed = METHODS[req.method];
    if (!allowed || !allowed(operation)) {
      const methods = Object.keys(METHODS).filter((m) => METHODS[m](operation));
      res.setHeader('Allow', methods.join(', '));
      throw new HttpError(405, 'method-not-allowed', `${operation} is not available through ${req.method}`, { allowed: methods });
    }
    const entity = ENTITIES[entityName];
    const { body, asOf } = await readPoint(deps, entity, operation, argumentsOf(req));
    if (entity.countedAfterBatches) await statisticsCounted(deps.knex, Math.max(deps.writeTimeoutMs, STATISTICS_WAIT_MS));
    const policy = await policyFor(deps.knex, req.auth!.user);
    const bounded = { ...policy.read, maxRows, ...(asOf !== undefined && { asOf }) };

    if ((READS as readonly string[]).includes(operation)) {
      const op = operation as FindOperation;
      res.json({ data: await runFind(deps.knex, entity, op, parseFindArgs(entity, op, body), bounded) });
      return;
    }
    if (operation in OR_THROW) {
      const op = OR_THROW[operation];
      const data = await runFind(deps.knex, entity, op, parseFindArgs(entity, op, body), bounded);
      if (data === null) throw new HttpError(404, 'not-found', `No ${entityName} matches the query`, { entity: entityName });
      res.json({ data });
      return;
    }

    if (operation === 'aggregate') {
      res.json({ data: await runAggregate(deps.knex, entity, parseAggregateArgs(entity, body), { ...policy.read, ...(asOf !== undefined && { asOf }) }) });
      return;
    }
    if (operation === 'groupBy') {
      res.json({ data: await runGroupBy(deps.knex, entity, parseGroupByArgs(entity, body), bounded) });
      return;
    }

    assertWritable(entityName); // before any other check: nobody writes a derived or owned entity directly
    const metadata = metadataFor(req.auth!, req);
    const commands = ENTITY_COMMANDS[entityName];
    const writeDeps = withPositionHeader(deps, res);
    if (operation in BULK) {
      const data = await BULK[operation as keyof typeof BULK](writeDeps, entityName, body, metadata, policy);
      res.status(operation === 'createMany' ? 201 : 200).json({ data });
      return;
    }
    if (operation === 'upsert') {
      const { row, created } = await upsert(writeDeps, entityName, body, metadata, policy, maxRows);
      res.status(created ? 201 : 200).json({ data: row });
      return;
    }
    let id: number;
    let shape;
    switch (operation as WriteOperation) {
      case 'create': {
        const args = parseEntityCreate(entity, body);
        shape = args.shape;
        policy.checkWriteAccess(entity, 'create');
        await checkVisible(deps.knex, policy, targetsOf(entity, args.write));
        await authorizeWrite(deps.knex, policy, entity, 'create', { write: args.write });
        await checkWriteAnswer(deps.knex, entity, { write: args.write }, shape, bounded);
        id = await commands.create(writeDeps, args.write, metadata);
        break;
      }
      case 'update': {
        const args = parseEntityUpdate(entity, body);
        shape = args.shape;
        policy.checkWriteAccess(entity, 'update');
        const rowId = await uniqueRowId(deps.knex, entity, args.where, policy.read);
        await checkVisible(deps.knex, policy, [{ entity: entityName, ids: [rowId], path: 'where.id' }, ...targetsOf(entity, args.write)]);
        await authorizeWrite(deps.knex, policy, entity, 'update', { id: rowId, write: args.write });
        await checkWriteAnswer(deps.knex, entity, { id: rowId }, shape, bounded);
        id = await commands.update(writeDeps, rowId, args.write, metadata);
        break;
      }
      case 'delete': {
        const args = parseDeleteArgs(entity, body);
        shape = args.shape;
        policy.checkWriteAccess(entity, 'delete');
        const rowId = await uniqueRowId(deps.knex, entity, args.where, policy.read);
        await checkVisible(deps.knex, policy, [{ entity: entityName, ids: [rowId], path: 'where.id' }]);
        await authorizeWrite(deps.knex, policy, entity, 'delete', { id: rowId });
        await checkWriteAnswer(deps.knex, entity, { id: rowId }, shape, bounded);
        id = await commands.delete(writeDeps, rowId, metadata);
        break;
      }
    }
    // A write that changes who reaches what (a project created, a member added) is answered with the new access.
    const after = ACCESS_CHANGING.has(entityName) ? await policyFor(deps.knex, req.auth!.user) : policy;
    res.status(operation === 'create' ? 201 : 200).json({ data: await findRowById(deps.knex, entity, id, shape, after.read) });
  }));
  return router;
}
