import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';

describe('configuration: SEARCH_SECRETS_KEY', () => {
  const key = randomBytes(32);

  it('unset: null (the key is derived from the session secret)', () => {
    expect(loadConfig({}).searchSecretsKey).to.equal(null);
  });

  it('32 bytes as 64 hex digits, base64 or base64url', () => {
    for (const written of [key.toString('hex'), key.toString('hex').toUpperCase(), key.toString('base64'), key.toString('base64url'), ` ${key.toString('base64')}\n`]) {
      expect(loadConfig({ SEARCH_SECRETS_KEY: written }).searchSecretsKey?.equals(key), written).to.equal(true);
    }
  });

  it('anything else is refused with what it must be, never showing the value', () => {
    for (const written of ['secret-but-short', key.toString('hex').slice(2), randomBytes(31).toString('base64'), randomBytes(33).toString('base64'), `${key.toString('hex')}00`]) {
      expect(() => loadConfig({ SEARCH_SECRETS_KEY: written }), written).to.throw(ConfigError, /SEARCH_SECRETS_KEY must be 32 bytes/);
      try {
        loadConfig({ SEARCH_SECRETS_KEY: written });
      } catch (error) {
        expect((error as Error).message).not.to.include(written);
      }
    }
  });
});
