import { expect } from 'chai';
import { pendingSchemaFiles } from '../../scripts/event-schemas';

describe('the generated event schemas of catalogue entities', () => {
  it('are written and current (regenerate: npx tsx scripts/event-schemas.ts)', () => {
    expect(pendingSchemaFiles().map((f) => f.file)).to.deep.equal([]);
  });
});
