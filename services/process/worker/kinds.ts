import { type ImportSaga, RESULT_IMPORT_KIND } from '../../imports/importJob.saga';
import type { ExternalImportSaga } from '../../migration/externalImport.saga';
import type { JobKind } from './jobRunner';

/** The jobs a worker runs, by kind (the lease namespace). */
export const externalImportKind = (saga: ExternalImportSaga): JobKind => ({
  kind: 'externalImport',
  candidates: () => saga.candidates(),
  run: (jobId, signal) => saga.run(jobId, signal),
});

/** Result imports (POST /api/junit/import, /api/test-results/import): requested by the API, run here. */
export const resultImportKind = (saga: ImportSaga): JobKind => ({
  kind: RESULT_IMPORT_KIND,
  candidates: () => saga.candidates(),
  run: (jobId, signal) => saga.run(jobId, signal),
});
