import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';

for (const [name, property] of [['SEARCH_SECRETS_KEY', 'searchSecretsKey'], ['SECRETS_KEY', 'secretsKey']] as const) {
  describe(`configuration: ${name}`, () => {
    const key = randomBytes(32);

    it('unset: null (the key is derived from the session secret)', () => {
      expect(loadConfig({})[property]).to.equal(null);
    });

    it('32 bytes as 64 hex digits, base64 or base64url', () => {
      for (const written of [key.toString('hex'), key.toString('hex').toUpperCase(), key.toString('base64'), key.toString('base64url'), ` ${key.toString('base64')}\n`]) {
        expect(loadConfig({ [name]: written })[property]?.equals(key), written).to.equal(true);
      }
    });

    it('anything else is refused with what it must be, never showing the value', () => {
      for (const written of ['secret-but-short', key.toString('hex').slice(2), randomBytes(31).toString('base64'), randomBytes(33).toString('base64'), `${key.toString('hex')}00`]) {
        expect(() => loadConfig({ [name]: written }), written).to.throw(ConfigError, new RegExp(`^${name} must be 32 bytes`));
        try {
          loadConfig({ [name]: written });
        } catch (error) {
          expect((error as Error).message).not.to.include(written);
        }
      }
    });
  });
}
