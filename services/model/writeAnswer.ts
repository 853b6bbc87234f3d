import type { Knex } from 'knex';
import { ENTITIES, type EntityDef } from '../../contracts/entities';
import type { EntityWrite } from '../entities/entity.handlers';
import type { Shape, Where } from './args';
import { HttpError } from '../shared/errors';
import { answerRows, type ReadOptions, refuseOverRows, runFind } from './query';
import type { ApiObject } from './shape';

/**
 * A write answers its row read back with its include/select, after the write. That answer is
 * bounded like a read's (`maxRows`, included rows counted), and checked before anything is
 * written, so that a write is never done and then refused: an existing row (update, delete) is
 * read now with the answer's shape; a new row has, of its relations, the rows its write connects
 * and links, and the children it creates, read now with theirs.
 */
export async function checkWriteAnswer(
  knex: Knex, entity: EntityDef, row: { id: number } | { write: EntityWrite }, shape: Shape, options: ReadOptions & { maxRows: number },
): Promise<void> {
  if (Object.keys(shape.relations).length === 0) return;
  const rows = 'id' in row
    ? await rowsOf(knex, entity, [row.id], shape, options, options.maxRows)
    : await newRowRows(knex, entity, row.write, shape, options, options.maxRows);
  refuseOverRows(rows, options.maxRows);
}

/** The rows of these rows' answers with `shape`, now (refused past `room`). */
async function rowsOf(knex: Knex, entity: EntityDef, ids: number[], shape: Shape, options: ReadOptions, room: number, where?: Where, take?: number): Promise<number> {
  if (ids.length === 0) return 0;
  if (room < 1) return room + 1;
  const byId: Where = { kind: 'in', field: 'id', negated: false, values: ids, insensitive: false };
  try {
    const args = { where: where ? { kind: 'and', items: [byId, where] } as Where : byId, orderBy: [], shape, ...(take !== undefined && { take: Math.abs(take) }) };
    const objects = await runFind(knex, entity, 'findMany', args, { ...options, maxRows: room });
    return answerRows(objects as ApiObject[], shape, room);
  } catch (error) {
    if (error instanceof HttpError && error.code === 'too-many-rows') return room + 1; // refused by the caller, with the whole bound
    throw error;
  }
}

async function newRowRows(knex: Knex, entity: EntityDef, write: Pick<EntityWrite, 'connect' | 'links' | 'children'>, shape: Shape, options: ReadOptions, room: number): Promise<number> {
  let rows = 1;
  for (const [name, load] of Object.entries(shape.relations)) {
    if (rows > room) break;
    const relation = entity.relations[name];
    const target = ENTITIES[relation.target];
    if (relation.kind === 'one') {
      const id = write.connect[name];
      if (typeof id === 'number') rows += await rowsOf(knex, target, [id], load.shape, options, room - rows);
    } else if (write.links?.[name]) {
      const links = write.links[name];
      const ids = [...new Set([...(links.set ?? []), ...(links.connect ?? [])])];
      rows += await rowsOf(knex, target, ids, load.shape, options, room - rows, load.where, load.take);
    } else if (write.children?.[name]?.create) {
      for (const child of write.children[name].create!.slice(0, load.take === undefined ? undefined : Math.abs(load.take))) {
        rows += await newRowRows(knex, target, { connect: child.connect }, load.shape, options, room - rows);
        if (rows > room) break;
      }
    }
  }
  return rows;
}
