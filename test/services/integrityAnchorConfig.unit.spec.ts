import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';

describe('configuration of integrity anchors (INTEGRITY_ANCHOR_*)', () => {
  it('anchors every hour by default, in the log only', () => {
    expect(loadConfig({}).integrityAnchor).to.deep.equal({ intervalMs: 3_600_000, file: null, url: null, token: null });
  });

  it('takes the interval (0: off), the file, the URL and its token', () => {
    expect(loadConfig({
      INTEGRITY_ANCHOR_INTERVAL_MS: '0', INTEGRITY_ANCHOR_FILE: '/var/lib/anchors.ndjson', INTEGRITY_ANCHOR_URL: 'https://stamps.example.com/t', INTEGRITY_ANCHOR_TOKEN: 'tkn',
    }).integrityAnchor).to.deep.equal({ intervalMs: 0, file: '/var/lib/anchors.ndjson', url: 'https://stamps.example.com/t', token: 'tkn' });
  });

  for (const [env, message] of [
    [{ INTEGRITY_ANCHOR_INTERVAL_MS: '-1' }, /INTEGRITY_ANCHOR_INTERVAL_MS/],
    [{ INTEGRITY_ANCHOR_INTERVAL_MS: 'hourly' }, /INTEGRITY_ANCHOR_INTERVAL_MS/],
    [{ INTEGRITY_ANCHOR_URL: 'ftp://stamps' }, /INTEGRITY_ANCHOR_URL/],
    [{ INTEGRITY_ANCHOR_URL: 'not a url' }, /INTEGRITY_ANCHOR_URL/],
    [{ INTEGRITY_ANCHOR_TOKEN: 'tkn' }, /set that too/],
  ] as [Record<string, string>, RegExp][]) {
    it(`refuses ${JSON.stringify(env)}`, () => {
      expect(() => loadConfig(env)).to.throw(ConfigError, message);
    });
  }
});
