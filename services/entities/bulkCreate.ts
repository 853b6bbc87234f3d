import type { Knex } from 'knex';
import type { EventMetadata } from '../../contracts/envelope';
import { ENTITIES, type EntityDef, type EntityName, writtenAs } from '../../contracts/entities';
import { eventFields } from '../../contracts/entityEvents';
import type { CommandDeps } from '../shared/commandBus';
import type { IdAllocator } from '../shared/ids';
import { projectIdOf } from './entity.decider';
import type { Fact } from './entity.facts';
import { sealSecrets } from './entitySecrets';
import { allocateChildIdsOfMany, createdValues, deciderOf, type EntityWrite, factsFor, referencesOfWrite } from './entity.handlers';

/**
 * Many rows of one entity decided at once, for an import that writes them as one event (the
 * external-tool migration's chunks): each row is built and decided exactly as createEntity decides
 * it (values, references that exist and share the project, the entity's rules, the Created
 * event's contract), but nothing is appended here and nothing is claimed: the caller appends the
 * rows' Created data together, and the rows it writes this way have no unique values to claim.
 *
 * The referenced rows are looked up in the read model, one query per referenced entity for all
 * the rows (a row's own stream is read only for a reference the read model does not have): the
 * caller waits for the read model to hold what it refers to before it decides.
 */

export interface BulkRow {
  id: number;
  write: EntityWrite;
  /** The creation time (ISO). */
  at: string;
}

/** A row the domain refused: its index among the rows given, and why. */
export class CreateRefused extends Error {
  constructor(readonly index: number, override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/**
 * The Created event data of each row, in order (children with their ids, from `ids`: the deps'
 * allocator unless given). Throws CreateRefused for the first row refused.
 */
export async function decideCreates(
  deps: CommandDeps, name: EntityName, rows: readonly BulkRow[], metadata: EventMetadata, ids: Pick<IdAllocator, 'nextMany'> = deps.ids,
): Promise<Record<string, unknown>[]> {
  const entity = ENTITIES[name];
  const memo = new Map<string, Promise<unknown>>();
  const created: Array<Record<string, unknown> | Error> = rows.map((row) => {
    try {
      return createdValues(entity, row.write, metadata);
    } catch (err) {
      return err as Error;
    }
  });
  const firstBad = created.findIndex((v) => v instanceof Error);
  const valid = firstBad === -1 ? rows.length : firstBad;
  await loadFacts(deps.knex, referencesOf(entity, created.slice(0, valid) as Record<string, unknown>[], rows.slice(0, valid).map((r) => r.write)), memo);
  const withFacts: CommandDeps = { ...deps, factMemo: memo };
  const decider = deciderOf(entity);
  const valuesOfRows: Record<string, unknown>[] = [];
  const data: Record<string, unknown>[] = [];
  for (const [index, row] of rows.entries()) {
    try {
      const values = created[index];
      if (values instanceof Error) throw values;
      const facts = await factsFor(withFacts, entity, values, Object.keys(row.write.connect), row.write);
      await sealSecrets(deps, entity, values, {}, `${name} ${row.id}`);
      const events = decider.decide({ type: 'Create', id: row.id, values, facts, now: row.at }, decider.initialState);
      deps.store.validate?.(events);
      valuesOfRows.push(values);
      data.push(events[0].data as Record<string, unknown>);
    } catch (err) {
      throw new CreateRefused(index, err);
    }
  }
  // The children's lists are the values' own (the event data holds the same objects): ids given in place.
  await allocateChildIdsOfMany(ids, entity, valuesOfRows, metadata);
  return data;
}

/** The rows a set of created rows refers to, by entity (what factsFor looks up for each). */
function referencesOf(entity: EntityDef, values: readonly Record<string, unknown>[], writes: readonly EntityWrite[]): Map<EntityName, Set<number>> {
  const wanted = new Map<EntityName, Set<number>>();
  writes.forEach((write, i) => {
    for (const { target, ids } of referencesOfWrite(entity, values[i], Object.keys(write.connect), write)) {
      if (!wanted.has(target)) wanted.set(target, new Set());
      for (const id of ids) wanted.get(target)!.add(id);
    }
  });
  return wanted;
}

/** The columns a fact is made of (not the row's bookkeeping: revisions, times, versions), computed once per entity. */
const FACT_COLUMNS = new Map<string, string[]>();
function columnsOfFacts(entity: EntityDef, parentKey: string | undefined): string[] {
  const key = `${entity.name}:${parentKey ?? ''}`;
  let columns = FACT_COLUMNS.get(key);
  if (!columns) {
    const softDelete = entity.softDeleteField ? [entity.fields[entity.softDeleteField].column] : [];
    columns = [...new Set(['id', ...eventFields(entity).map((f) => entity.fields[f].column), ...softDelete, ...(parentKey ? [parentKey] : [])])];
    FACT_COLUMNS.set(key, columns);
  }
  return columns;
}

/**
 * Facts of these rows from the read model, into the memo factOf reads (`<entity>:<id>`). Rows the
 * read model does not have are left out: factOf reads their streams. A row's project comes from
 * its own project column, or from its parent's fact along the project path.
 */
async function loadFacts(knex: Knex, wanted: Map<EntityName, Set<number>>, memo: Map<string, Promise<unknown>>, depth = 0): Promise<Map<string, Fact>> {
  const found = new Map<string, Fact>();
  for (const [name, idSet] of wanted) {
    const entity = ENTITIES[name];
    const ids = [...idSet].filter((id) => !memo.has(`${name}:${id}`));
    if (ids.length === 0) continue;
    const hop = entity.projectPath?.[0];
    const parent = hop && !entity.fields.projectId && depth < 4 ? entity.relations[hop] : undefined;
    const rows = (await knex(entity.table).whereRaw('id = ANY(?::integer[])', [ids]).select(columnsOfFacts(entity, parent?.foreignKey))) as Record<string, unknown>[];
    const parents = parent
      ? await loadFacts(knex, new Map([[parent.target, new Set(rows.map((r) => r[parent.foreignKey] as number).filter((id) => id != null))]]), memo, depth + 1)
      : new Map<string, Fact>();
    for (const row of rows) {
      const id = row.id as number;
      const values: Record<string, unknown> = {};
      for (const field of eventFields(entity)) {
        const value = row[entity.fields[field].column];
        values[field] = value instanceof Date ? value.toISOString() : value ?? null;
      }
      const parentFact = parent ? parents.get(`${parent.target}:${row[parent.foreignKey] as number}`) : undefined;
      const ownDeleted = entity.softDeleteField ? row[entity.fields[entity.softDeleteField].column] === true : false;
      const fact: Fact = {
        entity: name, id, exists: true,
        // An owned child (a case's step) is gone with its parent.
        isDeleted: ownDeleted || (writtenAs(entity) === 'owned' && parentFact?.isDeleted === true),
        projectId: name === 'project' ? id : parent ? parentFact?.projectId ?? null : projectIdOf(entity, values, {}),
        values,
      };
      found.set(`${name}:${id}`, fact);
      memo.set(`${name}:${id}`, Promise.resolve(fact));
    }
  }
  return found;
}
