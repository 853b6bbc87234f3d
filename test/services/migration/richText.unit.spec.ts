import { expect } from 'chai';
import { plainTextOf } from '../../../services/migration/richText';

describe('migration: rich text to plain text', () => {
  it('keeps paragraphs, lists and links as text; text without markup passes as it is', () => {
    expect(plainTextOf('<p>One</p><ul><li>a</li><li>b</li></ul><a href="https://x.example">x</a>')).to.equal('One\n\n* a\n* b\n\nx [https://x.example]');
    expect(plainTextOf('  no markup  ')).to.equal('no markup');
    expect(plainTextOf('')).to.equal(null);
  });

  it('markup nested 200,000 levels deep is cut below 64 levels, not followed to a stack overflow', () => {
    const deep = `<p>before</p>${'<div>'.repeat(200_000)}inside${'</div>'.repeat(200_000)}<p>after</p>`;
    expect(plainTextOf(deep)).to.equal('before\n\n...\n\nafter');
  });
});
