import { expect } from 'chai';
import { ALL_PROJECTIONS } from '../../projections';

/**
 * An import chunk (TestResultsImported) carries up to a few hundred results with their messages and
 * stack traces. Every projection follows the whole log with its own subscription in `npm start`: one
 * that reads chunks whole without needing them holds megabytes per import in memory for nothing.
 */
describe('projections: import chunks are read whole only by the projection that applies their rows', () => {
  for (const projection of ALL_PROJECTIONS) {
    const needsChunks = projection.name === 'readModel';
    it(`${projection.name} ${needsChunks ? 'reads' : 'does not read'} TestResultsImported whole`, () => {
      expect(projection.shallow ?? [], projection.name).to.satisfy((shallow: readonly string[]) => shallow.includes('TestResultsImported') !== needsChunks);
    });
  }
});
