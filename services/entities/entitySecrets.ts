import type { EntityDef } from '../../contracts/entities';
import { isSealedSecret, isSecretName, isSecretReference, mapSecrets, referenceTo, sealedSecretsOf, secretFieldsOf, type SealedSecret } from '../../contracts/secrets';
import type { CommandDeps } from '../shared/commandBus';
import { badRequest } from '../shared/errors';

/**
 * Secrets are sealed before they enter an event (contracts/secrets.ts): in the values a create or
 * an update of an entity writes, each value under a secret's name in a field that holds secrets
 * (an integration's `settings`) is sealed with a key of its own (deps.secrets); `{ "$secret": id }`
 * keeps a secret the row holds already (an answer's reference, written back); null is no secret.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `values` with their secrets sealed (changed in place). `current`: the row's values before the
 * write (an update), whose sealed secrets a reference may keep; `label`: what the row is.
 */
export async function sealSecrets(
  deps: Pick<CommandDeps, 'secrets'>, entity: EntityDef, values: Record<string, unknown>, current: Record<string, unknown>, label: string,
): Promise<void> {
  refuseUnknownReferences(entity, values, current);
  for (const field of secretFieldsOf(entity)) {
    if (!Object.hasOwn(values, field)) continue;
    values[field] = await sealed(deps, values[field], sealedSecretsOf(current[field]), `${label} ${field}`);
  }
}

/**
 * A 400 invalid-argument for the first `{ "$secret": id }` of `values` that names no secret the
 * row holds (`current`'s): checked before anything is sealed or written, for every row of an
 * updateMany before the first is changed.
 */
export function refuseUnknownReferences(entity: EntityDef, values: Record<string, unknown>, current: Record<string, unknown>): void {
  for (const field of secretFieldsOf(entity)) {
    if (!Object.hasOwn(values, field)) continue;
    const kept = sealedSecretsOf(current[field]);
    const pending: Array<[unknown, string]> = [[values[field], `data.${field}`]];
    while (pending.length > 0) {
      const [value, path] = pending.pop()!;
      if (Array.isArray(value)) value.forEach((item, i) => pending.push([item, `${path}[${i}]`]));
      else if (isObject(value)) {
        for (const [key, item] of Object.entries(value)) {
          const at = `${path}.${key}`;
          if (!isSecretName(key)) pending.push([item, at]);
          else if (isSecretReference(item) && !kept.has(item.$secret)) {
            throw badRequest('invalid-argument', `${at} names a secret this row does not hold (${item.$secret}): give the value itself, or the reference an answer showed`, { path: at });
          }
        }
      }
    }
  }
}

/** The value with its secrets sealed (references, checked before, replaced by the secret they keep). */
async function sealed(deps: Pick<CommandDeps, 'secrets'>, value: unknown, kept: Map<string, SealedSecret>, label: string): Promise<unknown> {
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const [i, item] of value.entries()) items.push(await sealed(deps, item, kept, `${label}[${i}]`));
    return items;
  }
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    let next: unknown;
    if (!isSecretName(key)) next = await sealed(deps, item, kept, `${label}.${key}`);
    else if (item === null) next = null;
    else if (isSecretReference(item)) next = kept.get(item.$secret);
    else {
      if (!deps.secrets) throw new Error(`${label}.${key} holds a secret, and this process has no secret vault to seal it`);
      // A value sealed elsewhere is sealed again as any other: it never brings another row's secret along.
      next = await deps.secrets.seal(typeof item === 'string' ? item : JSON.stringify(item), `${label}.${key}`);
    }
    Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A value as a write gives it back: sealed secrets by reference (kept as they are), everything else as it is. */
export const asWritten = (value: unknown): unknown => mapSecrets(value, (secret) => (isSealedSecret(secret) ? referenceTo(secret) : secret));
