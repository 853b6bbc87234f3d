import type { SealedSecret } from '../../contracts/secrets';

/**
 * Secrets sealed each with a key of its own, the keys kept outside the log (a port: the adapter is
 * infra/crypto/secretVault.ts). Deleting a secret's key forgets it: every copy of the sealed value,
 * in events, read models and backups, stays unreadable for good (crypto-shredding).
 */
export interface SecretVault {
  /** Seals `plaintext` with a new key, kept under a new secret id; `label` says what it is (never the value). */
  seal(plaintext: string, label: string): Promise<SealedSecret>;
  /** The plaintext; null once its key is forgotten. Throws if the value does not open with its key (altered). */
  open(sealed: SealedSecret): Promise<string | null>;
  /** Deletes the secret's key; false when there was none (unknown, or forgotten already). */
  forget(secretId: string): Promise<boolean>;
}
