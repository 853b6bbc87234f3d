import { hash } from 'node:crypto';

/**
 * What makes an imported test the same test again (docs/imports.md, "Identity"): an id the file
 * states, else its suites, class, variant (parameters, example row, ...) and name. The key is a
 * SHA-256, so names of any length index alike. It is built in two steps, the scope (everything but
 * the name) and then the name, so that renaming a case can derive the key its new name would have:
 * the old key stays as an alias and the next import under either name lands on the case.
 */

export interface IdentityParts {
  suitePath: readonly string[];
  className: string | null;
  name: string;
  variant: string | null;
  externalId: string | null;
}

/**
 * The first 22 base64url characters (132 bits) of SHA-256: a chunk carries two per new case, so the
 * log stays small. Copied out of the 43-character digest: a slice would keep the whole digest alive
 * for as long as the key (an import keeps every key of its job).
 */
const sha256 = (text: string) => Buffer.from(hash('sha256', text, 'base64url').slice(0, 22), 'latin1').toString('latin1');

export function identityScope(parts: Pick<IdentityParts, 'suitePath' | 'className' | 'variant'>): string {
  return sha256(JSON.stringify(['scope', parts.suitePath, parts.className, parts.variant]));
}

/** The key of a name within a scope: what a renamed case's new key is. */
export function keyInScope(scope: string, name: string): string {
  return sha256(`${scope}\u0000${name}`);
}

/** The key of a test: of the id the file states, else of its name within its scope (null for a test with an id). */
export function caseKey(parts: Pick<IdentityParts, 'name' | 'externalId'>, scope: string | null): string {
  return parts.externalId !== null ? sha256(`id\u0000${parts.externalId}`) : keyInScope(scope!, parts.name);
}
