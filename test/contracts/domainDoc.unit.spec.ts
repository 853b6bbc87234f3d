import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { renderDomainDoc } from '../../scripts/domain-doc';

describe('docs/domain.md', () => {
  it('is generated from the current catalogue (regenerate: npx tsx scripts/domain-doc.ts > docs/domain.md)', () => {
    const committed = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'domain.md'), 'utf8');
    expect(committed).to.equal(renderDomainDoc());
  });
});
