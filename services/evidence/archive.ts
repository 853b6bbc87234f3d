import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { FileStore } from '../files/fileStore';
import type { EventStore } from '../shared/eventStore';
import { writeEvidenceZip } from './bundle';
import { collectEvidence } from './collect';
import { verifyBundle } from '../shared/evidenceBundle';

/**
 * Retention without loss (docs/compliance.md): before the file sweep deletes a run's kept result
 * files past IMPORT_FILE_RETENTION_DAYS, the run's evidence bundle (its events, records and those
 * very files) is written to ARCHIVE_DIR and checked as an auditor would; only a bundle that
 * checks intact lets the files go. Answers the bundle's path.
 */
export async function archiveRun(deps: { knex: Knex; store: EventStore; files: FileStore; clock: () => Date }, runId: number, dir: string): Promise<string> {
  const run = (await deps.knex('test_runs').where({ id: runId }).first('project_id')) as { project_id: number } | undefined;
  if (!run) throw new Error(`run ${runId} is not in the read model`);
  const evidence = await collectEvidence(deps, { entity: 'testRun', id: runId, projectId: run.project_id });
  await fs.promises.mkdir(dir, { recursive: true });
  const file = path.join(dir, `run-${runId}-at-${evidence.head.position}.zip`);
  const partial = `${file}.part`;
  const out = fs.createWriteStream(partial);
  try {
    await writeEvidenceZip(evidence, out, { files: deps.files, generatedAt: deps.clock(), generatedBy: { userId: 0, name: 'retention archive' } });
    const handle = await fs.promises.open(partial, 'r');
    await handle.sync();
    await handle.close();
    const report = await verifyBundle(partial);
    if (!report.ok) throw new Error(`the archive of run ${runId} does not verify: ${report.problems.slice(0, 3).map((p) => p.detail).join('; ')}`);
    await fs.promises.rename(partial, file);
    return file;
  } catch (err) {
    out.destroy();
    await fs.promises.rm(partial, { force: true });
    throw err;
  }
}
