import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { renderEventsDoc } from '../../scripts/events-doc';

describe('docs/events.md', () => {
  it('is generated from the current contracts (regenerate: npx tsx scripts/events-doc.ts > docs/events.md)', () => {
    const committed = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'events.md'), 'utf8');
    expect(committed).to.equal(renderEventsDoc());
  });
});
