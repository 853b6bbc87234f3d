import { expect } from 'chai';
import { ALL_PROJECTIONS } from '../../projections';
import { SHALLOW_EVENTS } from '../../projections/search/affected';

/**
 * An import chunk (TestResultsImported, ExternalImportRowsWritten) carries hundreds of rows. Every
 * projection follows the whole log with its own subscription in `npm start`: one that reads chunks
 * whole without needing them holds megabytes per import in memory for nothing. A result import's
 * chunks are applied by the read model alone; an external import's by the read model and the audit
 * trail (which learns the rows' projects from them). A migration's chunk plan (thousands of source
 * ids and their new ids) is the provenance's alone.
 */
const READ_WHOLE: Record<string, readonly string[]> = {
  TestResultsImported: ['readModel'],
  ExternalImportRowsWritten: ['readModel', 'audit'],
  ExternalImportChunkPlanned: ['externalImports'],
};

describe('projections: import chunks are read whole only by the projections that apply their rows', () => {
  for (const projection of ALL_PROJECTIONS) {
    for (const [type, readers] of Object.entries(READ_WHOLE)) {
      const needsChunks = readers.includes(projection.name);
      it(`${projection.name} ${needsChunks ? 'reads' : 'does not read'} ${type} whole`, () => {
        expect(projection.shallow ?? [], projection.name).to.satisfy((shallow: readonly string[]) => shallow.includes(type) !== needsChunks);
      });
    }
  }
});

describe('search indexer: reads import chunks and chunk plans shallow', () => {
  it('lists them', () => {
    expect([...SHALLOW_EVENTS]).to.include.members(['TestResultsImported', 'ExternalImportChunkPlanned']);
  });
});
