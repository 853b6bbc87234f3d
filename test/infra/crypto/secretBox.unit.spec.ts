import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { deriveSecretKey, keyIdOf, secretBox, SecretUnreadable } from '../../../infra/crypto/secretBox';

const CONTEXT = 'search_connection_settings.password';

function refusal(open: () => string): SecretUnreadable {
  try {
    open();
  } catch (error) {
    expect(error).to.be.instanceOf(SecretUnreadable);
    return error as SecretUnreadable;
  }
  expect.fail('the value opened');
}

/** Flips one bit of a base64url part of a sealed value. */
function flipped(sealed: string, part: number): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[part], 'base64url');
  bytes[0] ^= 1;
  parts[part] = bytes.toString('base64url');
  return parts.join('.');
}

describe('secret box (AES-256-GCM at rest)', () => {
  const key = randomBytes(32);
  const box = secretBox(key);

  it('opens what it sealed, and the sealed value holds neither the plaintext nor the key', () => {
    const plaintext = 'correct horse battery staple ✓';
    const sealed = box.seal(plaintext, CONTEXT);
    expect(box.open(sealed, CONTEXT)).to.equal(plaintext);
    expect(sealed).to.match(/^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed.split('.')[1]).to.equal(box.keyId);
    expect(sealed).not.to.include(plaintext);
    expect(sealed).not.to.include(Buffer.from(plaintext).toString('base64url'));
    expect(sealed).not.to.include(key.toString('base64url'));
    expect(box.open(box.seal('', CONTEXT), CONTEXT)).to.equal('');
  });

  it('a random IV per value: sealing the same plaintext twice gives different values, IVs never repeat', () => {
    const ivs = new Set<string>();
    const values = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const sealed = box.seal('same', CONTEXT);
      values.add(sealed);
      ivs.add(sealed.split('.')[2]);
      expect(Buffer.from(sealed.split('.')[2], 'base64url')).to.have.length(12);
      expect(Buffer.from(sealed.split('.')[3], 'base64url')).to.have.length(16);
    }
    expect(ivs.size).to.equal(1000);
    expect(values.size).to.equal(1000);
  });

  it('refuses a value altered anywhere: ciphertext, tag or IV', () => {
    const sealed = box.seal('hunter2-password', CONTEXT);
    for (const part of [2, 3, 4]) expect(refusal(() => box.open(flipped(sealed, part), CONTEXT)).reason).to.equal('tampered');
  });

  it('refuses a value moved to another context (the context is authenticated)', () => {
    const sealed = box.seal('hunter2-password', CONTEXT);
    expect(refusal(() => box.open(sealed, 'search_connection_settings.api_key')).reason).to.equal('tampered');
  });

  it('refuses a value sealed with another key, naming both key ids', () => {
    const sealed = box.seal('hunter2-password', CONTEXT);
    const other = secretBox(randomBytes(32));
    const error = refusal(() => other.open(sealed, CONTEXT));
    expect(error.reason).to.equal('other-key');
    expect(error.sealedWith).to.equal(box.keyId);
    expect(error.message).to.include(box.keyId).and.include(other.keyId);
    // A value that claims this key's id but was sealed with another still does not open.
    const forged = sealed.split('.');
    forged[1] = other.keyId;
    expect(refusal(() => other.open(forged.join('.'), CONTEXT)).reason).to.equal('tampered');
  });

  it('refuses what is not a sealed value', () => {
    for (const value of ['plaintext', 'v2.00000000.a.b.c', `v1.${box.keyId}.AAAA.BBBB.CCCC`, '']) {
      expect(refusal(() => box.open(value, CONTEXT)).reason).to.equal('malformed');
    }
  });

  it('takes 32-byte keys only', () => {
    expect(() => secretBox(randomBytes(16))).to.throw(/32 bytes/);
  });

  it('a key derived from the server secret (HKDF-SHA256): 32 bytes, stable, different per secret, not the secret', () => {
    const a = deriveSecretKey('s'.repeat(40));
    expect(a).to.have.length(32);
    expect(deriveSecretKey('s'.repeat(40)).equals(a)).to.equal(true);
    expect(deriveSecretKey('t'.repeat(40)).equals(a)).to.equal(false);
    expect(a.toString('utf8')).not.to.include('ssss');
    expect(keyIdOf(a)).to.equal(secretBox(a).keyId);
    // The derivation is fixed (a change would make every stored secret unreadable): a known answer.
    expect(a.toString('hex')).to.equal('af4a25d171ba3695400302f0c8df10af6939245445177bac90a3113cfb992a43');
  });
});
