/**
 * Secrets inside JSON values that events carry (an integration's `settings.apiToken`): which keys
 * hold one, the form a secret takes in an event once sealed, and the form every answer shows.
 *
 * A value under a key named like a credential is a secret. The command side seals it before it
 * enters an event (services/entities/entitySecrets.ts): the event keeps
 * `{ "$sealed": "v1.<key id>.<iv>.<tag>.<ciphertext>", "secretId": "<uuid>" }`, encrypted with a
 * key of its own that is kept outside the log (table secret_keys), so that deleting the key
 * forgets the secret (docs/compliance.md, "Secrets"). Answers show a sealed secret as
 * `{ "$secret": "<uuid>" }` (written back, it keeps the secret), and a value an older version
 * recorded in clear as REDACTED.
 */

import type { EntityDef } from './entities';
import { entityEventOf } from './entityEvents';

/** Names of credentials, or of values derived from them: never shown, at any depth. */
export const SECRET_NAME = /password|secret|hash$|^token$|[a-z]token$|apikey|api_key|credential/i;

export const isSecretName = (name: string): boolean => SECRET_NAME.test(name);

/** A secret as events and the read model keep it. */
export interface SealedSecret { $sealed: string; secretId: string }

/** A secret as answers show it, and as a write names a secret the row already holds. */
export interface SecretReference { $secret: string }

/** What answers show in place of a secret recorded in clear (before secrets were sealed). */
export const REDACTED = '[redacted]';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const hasExactly = (v: Record<string, unknown>, keys: readonly string[]) => Object.keys(v).length === keys.length && keys.every((k) => Object.hasOwn(v, k));

export function isSealedSecret(value: unknown): value is SealedSecret {
  return isObject(value) && hasExactly(value, ['$sealed', 'secretId']) && typeof value.$sealed === 'string' && typeof value.secretId === 'string' && UUID.test(value.secretId);
}

export function isSecretReference(value: unknown): value is SecretReference {
  return isObject(value) && hasExactly(value, ['$secret']) && typeof value.$secret === 'string' && UUID.test(value.$secret);
}

/**
 * A copy of a JSON value with each value under a secret's name replaced by `replace(value)`; keys
 * and everything else stay. (JSON values are at most 64 levels deep, the model API's bound: the
 * walk recurses.)
 */
export function mapSecrets(value: unknown, replace: (secret: unknown) => unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => mapSecrets(item, replace));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    // Own properties, as JSON.parse makes them (a key named __proto__ is data).
    Object.defineProperty(out, key, { value: isSecretName(key) ? replace(item) : mapSecrets(item, replace), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** A sealed secret as answers name it. */
export const referenceTo = (sealed: SealedSecret): SecretReference => ({ $secret: sealed.secretId });

/**
 * A JSON value as answers show it: each value under a secret's name becomes the secret's
 * reference when sealed, REDACTED when not (null stays null: no secret).
 */
export const redactSecrets = (value: unknown): unknown =>
  mapSecrets(value, (secret) => (secret === null ? null : isSealedSecret(secret) ? referenceTo(secret) : REDACTED));

/** The sealed secrets a JSON value holds, by id (what a write may keep by naming it). */
export function sealedSecretsOf(value: unknown, found = new Map<string, SealedSecret>()): Map<string, SealedSecret> {
  if (Array.isArray(value)) for (const item of value) sealedSecretsOf(item, found);
  else if (isObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (isSecretName(key) && isSealedSecret(item)) found.set(item.secretId, item);
      else sealedSecretsOf(item, found);
    }
  }
  return found;
}

/** Whether a JSON value holds a secret in clear: a value under a secret's name that is neither null nor sealed. */
export function holdsClearSecret(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsClearSecret);
  if (!isObject(value)) return false;
  return Object.entries(value).some(([key, item]) => (isSecretName(key) ? item !== null && !isSealedSecret(item) : holdsClearSecret(item)));
}

/** The fields of an entity whose JSON values may hold secrets (`holdsSecrets` in the catalogue). */
export function secretFieldsOf(entity: EntityDef): readonly string[] {
  let fields = secretFields.get(entity);
  if (!fields) secretFields.set(entity, (fields = Object.entries(entity.fields).filter(([, f]) => f.holdsSecrets).map(([name]) => name)));
  return fields;
}
/** Asked for every row a command or an import writes: computed once per entity. */
const secretFields = new WeakMap<EntityDef, readonly string[]>();

/**
 * An event's data as answers show it (GET /api/events): the secret-holding fields of a catalogue
 * entity's Created or Updated event (`changes` of an update) redacted; any other event as it is.
 */
export function redactEventData(type: string, data: unknown): unknown {
  const of = entityEventOf(type);
  const fields = of ? secretFieldsOf(of.entity) : [];
  if (fields.length === 0 || !isObject(data)) return data;
  const redactFields = (values: Record<string, unknown>) => {
    const out = { ...values };
    for (const field of fields) if (Object.hasOwn(out, field)) out[field] = redactSecrets(out[field]);
    return out;
  };
  return isObject(data.changes) ? { ...data, changes: redactFields(data.changes) } : redactFields(data);
}
