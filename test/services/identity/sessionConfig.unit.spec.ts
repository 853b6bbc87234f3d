import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../../services/process/config';

describe('configuration of sessions (SESSION_IDLE_TIMEOUT_MS, SESSION_ABSOLUTE_TIMEOUT_MS, ALLOWED_ORIGINS)', () => {
  it('defaults to 30 minutes idle, 12 hours in all, no other origin', () => {
    expect(loadConfig({})).to.deep.include({ sessionIdleTimeoutMs: 30 * 60_000, sessionAbsoluteTimeoutMs: 12 * 3_600_000, allowedOrigins: [] });
  });

  it('takes both timeouts from the environment', () => {
    expect(loadConfig({ SESSION_IDLE_TIMEOUT_MS: '60000', SESSION_ABSOLUTE_TIMEOUT_MS: '3600000' }))
      .to.include({ sessionIdleTimeoutMs: 60_000, sessionAbsoluteTimeoutMs: 3_600_000 });
  });

  it('still reads SESSION_MAX_AGE_MS, the former name of the idle timeout, and refuses both names at once', () => {
    expect(loadConfig({ SESSION_MAX_AGE_MS: '28800000' }).sessionIdleTimeoutMs).to.equal(28_800_000);
    expect(() => loadConfig({ SESSION_MAX_AGE_MS: '1000', SESSION_IDLE_TIMEOUT_MS: '1000' })).to.throw(ConfigError, /SESSION_MAX_AGE_MS/);
  });

  for (const [name, bad] of [['SESSION_IDLE_TIMEOUT_MS', '999'], ['SESSION_IDLE_TIMEOUT_MS', 'soon'], ['SESSION_ABSOLUTE_TIMEOUT_MS', '-1'], ['SESSION_MAX_AGE_MS', '1.5']])
    it(`refuses ${name}=${bad}`, () => expect(() => loadConfig({ [name]: bad })).to.throw(ConfigError, new RegExp(name)));

  it('ALLOWED_ORIGINS: a comma list of origins, normalised', () => {
    expect(loadConfig({ ALLOWED_ORIGINS: 'https://App.Example.com, http://localhost:5173/,https://x.example:443' }).allowedOrigins)
      .to.deep.equal(['https://app.example.com', 'http://localhost:5173', 'https://x.example']);
  });

  for (const bad of ['app.example.com', 'https://app.example.com/ui', 'ftp://files.example', 'https://app.example.com?x=1', 'https://user@app.example.com', 'null'])
    it(`refuses ALLOWED_ORIGINS=${bad}`, () => expect(() => loadConfig({ ALLOWED_ORIGINS: bad })).to.throw(ConfigError, /ALLOWED_ORIGINS/));
});
