import { Router } from 'express';
import { ENTITIES, isEntityName } from '../../contracts/entities';
import { asyncHandler } from '../api/http';
import { type CommandDeps, withPositionHeader } from '../shared/commandBus';
import { metadataFor } from '../shared/context';
import { badRequest } from '../shared/errors';
import { type FindOperation, parseCreateArgs, parseDeleteArgs, parseFindArgs, parseUpdateArgs } from './args';
import { ENTITY_COMMANDS } from './model.commands';
import { findRowById, runFind } from './query';

const READS: readonly FindOperation[] = ['findMany', 'findFirst', 'findUnique', 'count'];
const WRITES = ['create', 'update', 'delete'] as const;
type WriteOperation = (typeof WRITES)[number];

/** POST /api/model/{entity}/{operation} with a Prisma-style JSON body, answering `{ data }`. */
export function modelRoutes(deps: CommandDeps): Router {
  const router = Router();
  router.post('/api/model/:entity/:operation', asyncHandler(async (req, res) => {
    const { entity: entityName, operation } = req.params;
    if (!isEntityName(entityName))
      throw badRequest('unknown-entity', `Unknown entity "${entityName}"`, { path: 'entity', entities: Object.keys(ENTITIES) });
    const entity = ENTITIES[entityName];
    const body = req.body === undefined ? {} : req.body;

    if ((READS as readonly string[]).includes(operation)) {
      const op = operation as FindOperation;
      res.json({ data: await runFind(deps.knex, entity, op, parseFindArgs(entity, op, body)) });
      return;
    }
    if (!(WRITES as readonly string[]).includes(operation))
      throw badRequest('unknown-operation', `Unknown operation "${operation}" for ${entityName}`, { path: 'operation', operations: [...READS, ...WRITES] });

    const metadata = metadataFor(req.auth!, req);
    const commands = ENTITY_COMMANDS[entityName];
    const writeDeps = withPositionHeader(deps, res);
    let id: number;
    let shape;
    switch (operation as WriteOperation) {
      case 'create': {
        const args = parseCreateArgs(entity, body);
        shape = args.shape;
        id = await commands.create(writeDeps, args, metadata);
        break;
      }
      case 'update': {
        const args = parseUpdateArgs(entity, body);
        shape = args.shape;
        id = await commands.update(writeDeps, args, metadata);
        break;
      }
      case 'delete': {
        const args = parseDeleteArgs(entity, body);
        shape = args.shape;
        id = await commands.delete(writeDeps, args, metadata);
        break;
      }
    }
    res.status(operation === 'create' ? 201 : 200).json({ data: await findRowById(deps.knex, entity, id, shape) });
  }));
  return router;
}
