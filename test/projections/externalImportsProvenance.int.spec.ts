import { expect } from 'chai';
import type { Knex } from 'knex';
import type { TestamentEvent } from '../../contracts/events';
import { createKnex } from '../../infra/postgres/database';
import { externalImportsProjection } from '../../projections/externalImports';
import { migrateReadModel } from '../../projections/migrations';
import { createMigratedDatabase, type TestDatabase } from '../support/database';
import { at, envelopes } from './envelopes';

type Planned = Extract<TestamentEvent, { type: 'ExternalImportChunkPlanned' }>;

/** A planned chunk `n` of `sourceIds` (ids n × 1000 + i), the rows at `duplicates` skipped as second rows with their ids. */
function chunk(jobId: number, n: number, sourceIds: string[], duplicates: ReadonlySet<number> = new Set()): Planned {
  return {
    type: 'ExternalImportChunkPlanned',
    data: {
      jobId, dataset: 'repository_cases', entity: 'repositoryCase', chunk: n, lastRow: n * 1000 + sourceIds.length,
      rows: {
        sourceId: sourceIds,
        id: sourceIds.map((_, i) => (duplicates.has(i) ? null : n * 1000 + i)),
        key: sourceIds.map((s) => `KEY\t${s}`),
        createdBy: sourceIds.map(() => 'ada@example.com'),
        createdAt: sourceIds.map(() => '2023-01-01 10:00'),
        skipReason: sourceIds.map((s, i) => (duplicates.has(i) ? `a second row with id ${s}` : null)),
        mapped: sourceIds.map(() => false),
      },
    },
  } as Planned;
}

/**
 * The provenance of a job's planned chunks (projections/externalImports.ts): a second row of the
 * export with an id seen before (in the same chunk or an earlier one), which the plan keeps as
 * skipped, leaves the first row's provenance as it was, and the chunk's other rows are written.
 */
describe('externalImports projection: provenance rows of planned chunks', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createMigratedDatabase('provenance');
    knex = createKnex(db.url, 2);
    await migrateReadModel(knex);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const apply = (events: TestamentEvent[]) => knex.transaction((trx) => externalImportsProjection.apply(trx, envelopes(events.map((e) => ['external-import-7', e]))));
  const rows = () => knex('external_import_rows').where({ job_id: 7 }).orderBy('source_id').select('source_id', 'entity_id', 'source_key', 'skip_reason');

  it('writes every row of chunks of a bulk size, and a repeated source id keeps its first row, in the same chunk or a later one', async () => {
    const size = 250;
    const ids = (from: number) => Array.from({ length: size }, (_, i) => `C${String(from + i).padStart(5, '0')}`);
    const first = ids(0);
    // The second chunk repeats a row of its own (its index 10 is its index 3 again) and one of the first chunk.
    const second = ids(size);
    second[10] = second[3];
    second[20] = first[5];
    await apply([
      { type: 'ExternalImportUploaded', data: { jobId: 7, fileName: 'export.zip', fileSize: 1, sha256: 'a'.repeat(64), storedAs: 'a'.repeat(64), container: 'zip', uploadedAt: at(1) } },
      chunk(7, 0, first),
      chunk(7, 1, second, new Set([10, 20])),
    ]);
    const written = await rows();
    expect(written).to.have.length(size * 2 - 2);
    const byId = new Map(written.map((r) => [r.source_id, r]));
    expect(byId.get(first[5])).to.deep.include({ entity_id: 5, skip_reason: null, source_key: `KEY\t${first[5]}` });
    expect(byId.get(second[3])).to.deep.include({ entity_id: 1003, skip_reason: null });
    expect(byId.get(second[size - 1])).to.deep.include({ entity_id: 1000 + size - 1 });
  });
});
