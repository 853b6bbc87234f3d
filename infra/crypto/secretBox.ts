import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Secrets kept at rest (the search engine's password, API key and CA certificate): AES-256-GCM, a
 * random 96-bit IV per value, its 128-bit authentication tag, and the context the value belongs to
 * (say `search_connection_settings.password`) as additional authenticated data, so that a value
 * copied into another column does not open. A sealed value is one string:
 *
 *   v1.<key id>.<iv>.<tag>.<ciphertext>        (base64url parts)
 *
 * `v1` is the format (the algorithm and its parameters); the key id is the first 8 hex digits of
 * SHA-256 over a fixed label and the key: it tells which key sealed a value without revealing it,
 * so that a value sealed with another key is refused by name, not as "tampered".
 */
export interface SecretBox {
  /** The key's id, as written in every value it seals. */
  readonly keyId: string;
  seal(plaintext: string, context: string): string;
  /** The plaintext; throws SecretUnreadable if the value was sealed with another key, altered, or is not a sealed value. */
  open(sealed: string, context: string): string;
}

export class SecretUnreadable extends Error {
  constructor(
    readonly reason: 'other-key' | 'tampered' | 'malformed',
    /** The id of the key that sealed the value, when the value names one. */
    readonly sealedWith: string | null,
    message: string,
  ) {
    super(message);
    this.name = 'SecretUnreadable';
  }
}

const FORMAT = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** HKDF's info when the key is derived from the server secret: changing it changes every derived key. */
export const DERIVED_KEY_INFO = 'testament/search-connection-secrets/v1';

export const keyIdOf = (key: Buffer): string => createHash('sha256').update('testament secret box key id\0').update(key).digest('hex').slice(0, 8);

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== KEY_BYTES) throw new Error(`a secret box key is ${KEY_BYTES} bytes, got ${key.length}`);
  const keyId = keyIdOf(key);
  return {
    keyId,
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [FORMAT, keyId, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
    },
    open(sealed, context) {
      const parts = sealed.split('.');
      if (parts.length !== 5 || parts[0] !== FORMAT || !/^[0-9a-f]{8}$/.test(parts[1])) {
        throw new SecretUnreadable('malformed', null, 'not a sealed value (expected v1.<key id>.<iv>.<tag>.<ciphertext>)');
      }
      const [, sealedWith, iv, tag, ciphertext] = parts;
      if (sealedWith !== keyId) throw new SecretUnreadable('other-key', sealedWith, `sealed with key ${sealedWith}, not with this key (${keyId})`);
      const ivBytes = Buffer.from(iv, 'base64url');
      const tagBytes = Buffer.from(tag, 'base64url');
      if (ivBytes.length !== IV_BYTES || tagBytes.length !== TAG_BYTES) throw new SecretUnreadable('malformed', sealedWith, 'the sealed value\'s IV or tag has the wrong length');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, ivBytes, { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(tagBytes);
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretUnreadable('tampered', sealedWith, 'the sealed value does not authenticate: altered, or moved from another place');
      }
    },
  };
}

/** A 32-byte key derived from the server's secret (HKDF-SHA256, no salt, `info`: a key per purpose). */
export function deriveSecretKey(serverSecret: string, info = DERIVED_KEY_INFO): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(serverSecret, 'utf8'), Buffer.alloc(0), info, KEY_BYTES));
}
