import { createHash } from 'node:crypto';

/**
 * What makes an imported test the same test again (docs/imports.md, "Identity"): an id the file
 * states, else its suites, class, variant (parameters, example row, ...) and name. The key is a
 * SHA-256, so names of any length index alike. It is built in two steps, the scope (everything but
 * the name) and then the name, so that renaming a case can derive the key its new name would have:
 * the old key stays as an alias and the next import under either name lands on the case.
 */

export interface CaseIdentity {
  /** SHA-256 (hex) of scope and name, or of the explicit id. */
  key: string;
  /** SHA-256 (hex) of suites, class and variant; null for a case identified by an explicit id (a rename keeps its key). */
  scope: string | null;
}

export interface IdentityParts {
  suitePath: readonly string[];
  className: string | null;
  name: string;
  variant: string | null;
  externalId: string | null;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function identityScope(parts: Pick<IdentityParts, 'suitePath' | 'className' | 'variant'>): string {
  return sha256(JSON.stringify(['scope', parts.suitePath, parts.className, parts.variant]));
}

/** The key of a name within a scope: what a renamed case's new key is. */
export function keyInScope(scope: string, name: string): string {
  return sha256(`${scope}\u0000${name}`);
}

export function caseIdentity(parts: IdentityParts): CaseIdentity {
  if (parts.externalId !== null) return { key: sha256(`id\u0000${parts.externalId}`), scope: null };
  const scope = identityScope(parts);
  return { key: keyInScope(scope, parts.name), scope };
}
