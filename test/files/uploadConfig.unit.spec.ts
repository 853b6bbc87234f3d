import path from 'node:path';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/config';

describe('configuration of uploads (UPLOAD_DIR, MAX_UPLOAD_BYTES)', () => {
  it('defaults to DATA_DIR/uploads and 50 MiB', () => {
    expect(loadConfig({})).to.include({ uploadDir: path.resolve('.data', 'uploads'), maxUploadBytes: 50 * 1024 * 1024 });
    expect(loadConfig({ DATA_DIR: '/srv/testament' }).uploadDir).to.equal('/srv/testament/uploads');
  });

  it('takes UPLOAD_DIR (resolved) and MAX_UPLOAD_BYTES from the environment', () => {
    expect(loadConfig({ UPLOAD_DIR: 'files', MAX_UPLOAD_BYTES: '1024' })).to.include({ uploadDir: path.resolve('files'), maxUploadBytes: 1024 });
  });

  for (const bad of ['0', '-1', '1.5', 'lots', '1e3x'])
    it(`refuses MAX_UPLOAD_BYTES=${bad}`, () => expect(() => loadConfig({ MAX_UPLOAD_BYTES: bad })).to.throw(ConfigError, /MAX_UPLOAD_BYTES/));
});
