import type { ExternalImportSaga } from '../../migration/externalImport.saga';
import type { JobKind } from './jobRunner';

/** The jobs a worker runs, by kind (the lease namespace). */
export const externalImportKind = (saga: ExternalImportSaga): JobKind => ({
  kind: 'externalImport',
  candidates: () => saga.candidates(),
  run: (jobId, signal) => saga.run(jobId, signal),
});
