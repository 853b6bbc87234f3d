import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { seedDefaults } from '../../services/entities/seed';
import { verifyBundle } from '../../services/shared/evidenceBundle';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { expectCompleted, postImport } from '../imports/importClient';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';

const DAY_MS = 24 * 60 * 60 * 1000;
const JUNIT = '<testsuite name="retention"><testcase classname="r" name="kept" time="0.1"/><testcase classname="r" name="lost" time="0.2"><failure message="no"/></testcase></testsuite>';

/**
 * Retention without loss: before the sweep deletes a run's result files past the retention, the
 * run's evidence bundle (with those files) is written to ARCHIVE_DIR and checked; a run whose
 * archive cannot be written keeps its files until it can.
 */
describe('files: retention archives the run\'s evidence before its result files go', function () {
  this.timeout(120_000);
  let app: TestApp;
  let dir: string;
  let archiveDir: string;
  let runId: number;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retention-'));
    archiveDir = path.join(dir, 'archive');
    app = await startTestApp({ storedFiles: { importFileRetentionDays: 1, archiveDir } });
    await seedDefaults(app.deps, systemMetadata('test'));
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: 'retention-password-1', access: 'ADMIN' }, systemMetadata('test'));
    const admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: 'retention-password-1' })).status).to.equal(200);
    const token = (await admin.post('/api/tokens', { name: 'ci' })).body.token as string;
    const projectId = (await admin.post('/api/model/project/create', { data: { name: 'Retained' } })).body.data.id as number;
    runId = await expectCompleted(await postImport(app.url, '/api/junit/import', { projectId, name: 'Old run' }, [{ name: 'old.xml', content: JUNIT }], token));
  });
  after(async () => {
    await app?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const kept = async () => (await app.deps.knex('stored_files').where({ owner: 'importJob' }).whereNull('deleted_at').pluck('key')) as string[];

  it('keeps the files while the archive cannot be written (logged), then archives and deletes them', async () => {
    const keys = await kept();
    expect(keys).to.have.length(1);
    app.clock.advance(2 * DAY_MS);
    fs.writeFileSync(archiveDir, 'not a directory');
    expect((await app.storedFiles.sweep()).deleted).to.deep.equal({});
    expect(await kept()).to.deep.equal(keys);
    fs.rmSync(archiveDir);

    expect((await app.storedFiles.sweep()).deleted).to.deep.equal({ retention: 1 });
    expect(await kept()).to.deep.equal([]);
    const archived = fs.readdirSync(archiveDir);
    expect(archived).to.have.length(1);
    expect(archived[0]).to.match(new RegExp(`^run-${runId}-at-\\d+\\.zip$`));
    const report = await verifyBundle(path.join(archiveDir, archived[0]));
    expect(report.problems).to.deep.equal([]);
    expect(report.subject).to.include({ entity: 'testRun', id: runId });
    expect(report.checked.keptFiles, 'the result file, archived before it went').to.equal(1);
  });
});
