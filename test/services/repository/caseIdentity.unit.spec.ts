import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { caseKey, identityScope, type IdentityParts, keyInScope } from '../../../services/repository/caseIdentity';

/** What docs/imports.md ("Identity") says a key is: the first 22 base64url characters of SHA-256. */
const digest22 = (text: string) => createHash('sha256').update(text).digest('base64url').slice(0, 22);

/** Keys are stored (repository_cases.identity_key, aliases, chunk events): their derivation never changes. */
describe('case identity keys', () => {
  const parts: IdentityParts = { suitePath: ['src/cart/total.test.js'], className: 'Cart', variant: '[1, 2]', name: 'adds the prices', externalId: null };

  it('a scope is the digest of its suites, class and variant; a key the digest of scope and name', () => {
    const scope = identityScope(parts);
    expect(scope).to.equal(digest22(JSON.stringify(['scope', parts.suitePath, parts.className, parts.variant])));
    expect(caseKey(parts, scope)).to.equal(digest22(`${scope}\u0000${parts.name}`));
    expect(caseKey(parts, scope)).to.equal(keyInScope(scope, parts.name)); // a renamed case's new key is derived alike
    expect(scope).to.match(/^[A-Za-z0-9_-]{22}$/);
  });

  it('a test with an id the file states is known by the id alone', () => {
    const key = caseKey({ ...parts, externalId: 'TC-42' }, null);
    expect(key).to.equal(digest22('id\u0000TC-42'));
    expect(caseKey({ ...parts, name: 'renamed', externalId: 'TC-42' }, null)).to.equal(key);
  });

  it('tests that differ in suites, class, variant or name have different keys', () => {
    const keyOf = (p: IdentityParts) => caseKey(p, identityScope(p));
    const keys = [parts, { ...parts, suitePath: ['src/checkout/total.test.js'] }, { ...parts, className: null }, { ...parts, variant: null }, { ...parts, name: 'rounds' }].map(keyOf);
    expect(new Set(keys).size).to.equal(keys.length);
  });
});
