import { expect } from 'chai';
import { isImmutable } from 'immutable';
import type { DomainEvent } from '../../contracts/envelope';
import type { Decider } from '../../services/shared/decider';
import { DomainError } from '../../services/shared/errors';

/**
 * Decider specs: `given(decider, past).when(command).then(events)`, `.thenNothing()` or
 * `.thenFailsWith(code)`. Folding the past also checks that `evolve` copies instead of mutating.
 */
export function given<C, E extends DomainEvent, S>(decider: Decider<C, E, S>, past: E[] = []) {
  const pastBefore = structuredClone(past);
  const state = past.reduce((s, e) => {
    const before = snapshot(s);
    const next = decider.evolve(s, e);
    expect(s, `evolve mutated the state on ${e.type}`).to.deep.equal(before);
    return next;
  }, decider.initialState);
  expect(past, 'evolve mutated an event').to.deep.equal(pastBefore);

  return {
    when(command: C) {
      const decide = () => decider.decide(command, state);
      return {
        then(expected: E[]): void {
          expect(decide()).to.deep.equal(expected);
        },
        thenNothing(): void {
          expect(decide()).to.deep.equal([]);
        },
        thenFailsWith(code: string): void {
          let decided: E[];
          try {
            decided = decide();
          } catch (error) {
            expect(error).to.be.instanceOf(DomainError);
            expect((error as DomainError).code).to.equal(code);
            return;
          }
          expect.fail(`expected DomainError '${code}', but decided ${JSON.stringify(decided)}`);
        },
      };
    },
  };
}

/**
 * A deep copy of a state to compare it with after evolve: structuredClone, except that a persistent
 * (immutable-js) collection is kept as it is: it cannot change, and a clone of it would be a plain object.
 */
function snapshot<T>(value: T): T {
  if (isImmutable(value)) return value;
  if (Array.isArray(value)) return value.map(snapshot) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, snapshot(v)])) as T;
  }
  return structuredClone(value);
}
