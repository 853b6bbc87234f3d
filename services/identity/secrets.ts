import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hash, verify, Algorithm } from '@node-rs/argon2';

/** argon2id with the OWASP minimum parameters (19 MiB, 2 iterations). */
export function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: Algorithm.Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 });
}

export function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  return verify(passwordHash, password).catch(() => false);
}

/** A hash to verify against when the user does not exist, so both cases take the same time. */
export const DUMMY_PASSWORD_HASH = '$argon2id$v=19$m=19456,t=2,p=1$iILtGd3ImLm6ltZQKWNVdw$qikG3Zw+AMGcJvrjegjOkhseErTufg1BhrrjXFhk5L8';

export const TOKEN_PREFIX = 'tst_';

export interface IssuedToken { value: string; prefix: string; hash: string }

/** A random API token: `tst_` + 32 random bytes (base64url). Shown once; only its HMAC is kept. */
export function issueToken(tokenSecret: string): IssuedToken {
  const value = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { value, prefix: value.slice(0, TOKEN_PREFIX.length + 6), hash: hashToken(tokenSecret, value) };
}

export function hashToken(tokenSecret: string, value: string): string {
  return createHmac('sha256', tokenSecret).update(value).digest('hex');
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}
