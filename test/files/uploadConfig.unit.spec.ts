import path from 'node:path';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../services/process/config';

describe('configuration of uploads (UPLOAD_DIR, MAX_UPLOAD_BYTES, USER_STORAGE_QUOTA_BYTES, IMPORT_FILE_RETENTION_DAYS)', () => {
  it('defaults to DATA_DIR/uploads, 50 MiB per file, a quota of 10 GiB per user and 30 days for import files', () => {
    expect(loadConfig({})).to.include({ uploadDir: path.resolve('.data', 'uploads'), maxUploadBytes: 50 * 1024 * 1024, userStorageQuotaBytes: 10 * 1024 ** 3, importFileRetentionDays: 30 });
    expect(loadConfig({ DATA_DIR: '/srv/testament' }).uploadDir).to.equal('/srv/testament/uploads');
  });

  it('takes each from the environment (UPLOAD_DIR resolved; a quota of 0 is none, a retention of 0 deletes at the next sweep)', () => {
    expect(loadConfig({ UPLOAD_DIR: 'files', MAX_UPLOAD_BYTES: '1024' })).to.include({ uploadDir: path.resolve('files'), maxUploadBytes: 1024 });
    expect(loadConfig({ USER_STORAGE_QUOTA_BYTES: '0', IMPORT_FILE_RETENTION_DAYS: '0' })).to.include({ userStorageQuotaBytes: 0, importFileRetentionDays: 0 });
    expect(loadConfig({ USER_STORAGE_QUOTA_BYTES: '1073741824', IMPORT_FILE_RETENTION_DAYS: '365' })).to.include({ userStorageQuotaBytes: 1073741824, importFileRetentionDays: 365 });
  });

  for (const bad of ['0', '-1', '1.5', 'lots', '1e3x'])
    it(`refuses MAX_UPLOAD_BYTES=${bad}`, () => expect(() => loadConfig({ MAX_UPLOAD_BYTES: bad })).to.throw(ConfigError, /MAX_UPLOAD_BYTES/));
  for (const bad of ['-1', '1.5', '10GB', ''.padEnd(3, 'x')])
    it(`refuses USER_STORAGE_QUOTA_BYTES=${bad}`, () => expect(() => loadConfig({ USER_STORAGE_QUOTA_BYTES: bad })).to.throw(ConfigError, /USER_STORAGE_QUOTA_BYTES/));
  for (const bad of ['-1', '0.5', '36501', 'forever'])
    it(`refuses IMPORT_FILE_RETENTION_DAYS=${bad}`, () => expect(() => loadConfig({ IMPORT_FILE_RETENTION_DAYS: bad })).to.throw(ConfigError, /IMPORT_FILE_RETENTION_DAYS/));
});
