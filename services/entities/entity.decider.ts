import { ENTITIES, type EntityDef } from '../../contracts/entities';
import { eventTypesOf, idKeyOf } from '../../contracts/entityEvents';
import type { EntityEvent } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';
import type { Facts } from './entity.facts';
import { checkEntityRules } from './entity.rules';

/**
 * The aggregate behind every catalogue entity that has no decider of its own: create, update
 * (only what changed), delete (soft where the catalogue says so). Pure: what other aggregates are
 * like (does the project exist, which project is that run in) arrives on the command as facts.
 */

export type EntityCommand =
  | { type: 'Create'; id: number; values: Record<string, unknown>; facts: Facts; now: string }
  | {
    type: 'Update'; id: number; values: Record<string, unknown>; facts: Facts; now: string;
    /**
     * The rows the row references and this update leaves as they are, where they belong to a
     * project: checked against the row's project (a result moved to another run keeps its run
     * case), not for existence again.
     */
    kept?: Facts;
    /** The project the row is in before the update (null for global configuration). */
    projectBefore?: number | null;
  }
  | { type: 'Delete'; id: number; now: string };

export interface EntityState {
  exists: boolean;
  isDeleted: boolean;
  /** Every value the events set, keyed by field (links as `<x>Ids`, children by relation name). */
  values: Record<string, unknown>;
}

export const initialEntityState: EntityState = { exists: false, isDeleted: false, values: {} };

export const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function entityDecider(entity: EntityDef) {
  const types = eventTypesOf(entity);
  const idKey = idKeyOf(entity);
  const code = kebab(entity.name);

  function decide(cmd: EntityCommand, s: EntityState): EntityEvent[] {
    switch (cmd.type) {
      case 'Create':
        if (s.exists) throw new DomainError(`${code}-exists`, `${entity.name} ${cmd.id} already exists`);
        checkReferences(entity, cmd.values, cmd.facts);
        checkEntityRules(entity, cmd.values, cmd.facts);
        return [{ type: types.created, data: { [idKey]: cmd.id, ...cmd.values, createdAt: cmd.now } }];
      case 'Update': {
        const restoring = entity.softDeleteField !== undefined && cmd.values[entity.softDeleteField] === false;
        if (!s.exists || (s.isDeleted && !restoring)) throw new DomainError(`${code}-not-found`, `${entity.name} ${cmd.id} does not exist`);
        const changes: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(cmd.values)) {
          if (key === entity.softDeleteField) {
            if (value !== s.isDeleted) changes[key] = value;
          } else if (!same(value, s.values[key])) changes[key] = value;
        }
        if (Object.keys(changes).length === 0) return [];
        const merged = { ...s.values, ...cmd.values };
        checkStaysInProject(entity, merged, cmd.facts, cmd.projectBefore ?? null);
        checkReferences(entity, merged, cmd.facts, cmd.kept);
        checkEntityRules(entity, merged, { ...cmd.kept, ...cmd.facts });
        return [{ type: types.updated, data: { [idKey]: cmd.id, changes, updatedAt: cmd.now } }];
      }
      case 'Delete':
        if (!s.exists) throw new DomainError(`${code}-not-found`, `${entity.name} ${cmd.id} does not exist`);
        if (s.isDeleted) return [];
        return [{ type: types.deleted, data: { [idKey]: cmd.id, deletedAt: cmd.now } }];
      default:
        return assertNever(cmd);
    }
  }

  function evolve(s: EntityState, e: EntityEvent): EntityState {
    const { [idKey]: _id, createdAt: _c, updatedAt: _u, deletedAt: _d, changes, ...values } = e.data;
    switch (e.type) {
      case types.created:
        return { exists: true, isDeleted: false, values };
      case types.updated: {
        const { [entity.softDeleteField ?? '']: deleted, ...rest } = changes as Record<string, unknown>;
        return { ...s, isDeleted: typeof deleted === 'boolean' ? deleted : s.isDeleted, values: { ...s.values, ...rest } };
      }
      case types.deleted:
        return { ...s, isDeleted: true };
      default:
        return s;
    }
  }

  return { initialState: initialEntityState, decide, evolve };
}

/** The project a row with these values belongs to: its own projectId, or its parent's along projectPath. */
export function projectIdOf(entity: EntityDef, values: Record<string, unknown>, facts: Facts): number | null {
  if (entity.fields.projectId) return (values.projectId as number | undefined) ?? null;
  if (!entity.projectPath || entity.projectPath.length === 0) return null;
  const parent = facts[entity.projectPath[0]];
  return parent && !Array.isArray(parent) ? parent.projectId : null;
}

/**
 * No update moves a row into another project, along any relation (its project, its run, its
 * session, its folder, ...): a row's project decides who sees and changes it and its children,
 * and what refers to it stays behind. No relation is an exception (docs/access.md).
 */
function checkStaysInProject(entity: EntityDef, values: Record<string, unknown>, facts: Facts, before: number | null): void {
  if (entity.name === 'project' || before === null) return;
  const after = projectIdOf(entity, values, facts);
  if (after === null || after === before) return;
  const hop = entity.projectPath![0];
  throw new DomainError('cross-project-move', `${entity.name} rows do not move to another project (from ${before} to ${after})`, { path: `data.${hop}`, from: before, to: after });
}

/**
 * Every referenced row exists and is not deleted, and belongs to the same project as this one
 * (a case cannot sit in another project's folder, a run cannot use another project's milestone).
 * References an update leaves as they are (`kept`) are checked for their project only.
 */
function checkReferences(entity: EntityDef, values: Record<string, unknown>, facts: Facts, kept: Facts = {}): void {
  const projectId = entity.name === 'project' ? null : projectIdOf(entity, values, facts);
  const all = [...Object.entries(facts).map(([relation, fact]) => [relation, fact, true] as const), ...Object.entries(kept).map(([relation, fact]) => [relation, fact, false] as const)];
  for (const [relation, fact, named] of all) {
    for (const f of Array.isArray(fact) ? fact : fact ? [fact] : []) {
      if (named && (!f.exists || f.isDeleted)) throw new DomainError(`${kebab(f.entity)}-not-found`, `${f.entity} ${f.id} does not exist`, { path: relation, id: f.id });
      if (projectId !== null && f.projectId !== null && f.projectId !== projectId && ENTITIES[f.entity].projectPath !== undefined) {
        throw new DomainError(`${kebab(f.entity)}-in-other-project`, `${f.entity} ${f.id} belongs to another project`, { path: relation, id: f.id });
      }
    }
  }
}
